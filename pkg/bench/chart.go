package bench

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// chartMarks mark series i in the terminal chart.
var chartMarks = []byte{'*', 'o', '+', 'x', '#', '@', '%', '&', '='}

// Chart draws busbw against size as text for a terminal: one column per size (log x), height
// rows, one mark per series ('-' is the line rate), then a legend and the size axis.
func Chart(series []Series, lineRateGBps float64, height int) string {
	if height < 4 {
		height = 4
	}
	sizeSet := map[int64]bool{}
	top := lineRateGBps
	for _, s := range series {
		for _, p := range s.Points {
			sizeSet[p.Size] = true
			top = math.Max(top, p.Busbw)
		}
	}
	if len(sizeSet) == 0 || !(top > 0) {
		return ""
	}
	sizes := make([]int64, 0, len(sizeSet))
	for s := range sizeSet {
		sizes = append(sizes, s)
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	col := map[int64]int{}
	for i, s := range sizes {
		col[s] = i
	}
	const cw = 2 // characters per size
	grid := make([][]byte, height)
	for r := range grid {
		grid[r] = []byte(strings.Repeat(" ", len(sizes)*cw))
	}
	row := func(v float64) int {
		r := height - 1 - int(math.Round(v/top*float64(height-1)))
		return min(max(r, 0), height-1)
	}
	if lineRateGBps > 0 {
		r := row(lineRateGBps)
		for i := range grid[r] {
			grid[r][i] = '-'
		}
	}
	for i, s := range series {
		m := chartMarks[i%len(chartMarks)]
		for _, p := range s.Points {
			grid[row(p.Busbw)][col[p.Size]*cw] = m
		}
	}
	var b strings.Builder
	for r := range grid {
		label := ""
		switch r {
		case 0:
			label = fmt.Sprintf("%6.1f", top)
		case height - 1:
			label = fmt.Sprintf("%6.1f", 0.0)
		}
		fmt.Fprintf(&b, "%6s |%s\n", label, strings.TrimRight(string(grid[r]), " "))
	}
	fmt.Fprintf(&b, "%6s +%s\n", "GB/s", strings.Repeat("-", len(sizes)*cw))
	// Size axis: the first size and the powers of 1024 (1KiB, 1MiB, 1GiB) where they fit, else
	// every size that fits.
	axis := []byte(strings.Repeat(" ", len(sizes)*cw+12))
	place := func(only1024 bool) int {
		for i := range axis {
			axis[i] = ' '
		}
		next, n := 0, 0
		for i, s := range sizes {
			if only1024 && i > 0 && !isPow1024(s) {
				continue
			}
			l := strings.ReplaceAll(SizeLabel(s), " ", "")
			at := i * cw
			if at < next {
				continue
			}
			copy(axis[at:], l)
			next = at + len(l) + 2
			n++
		}
		return n
	}
	if place(true) < 3 {
		place(false)
	}
	fmt.Fprintf(&b, "        %s\n", strings.TrimRight(string(axis), " "))
	var legend []string
	for i, s := range series {
		legend = append(legend, fmt.Sprintf("%c %s", chartMarks[i%len(chartMarks)], s.Label))
	}
	if lineRateGBps > 0 {
		legend = append(legend, fmt.Sprintf("- line rate %.4g GB/s", lineRateGBps))
	}
	fmt.Fprintf(&b, "        %s\n", strings.Join(legend, "   "))
	return b.String()
}

func isPow1024(n int64) bool {
	for n >= 1024 && n%1024 == 0 {
		n /= 1024
	}
	return n == 1
}
