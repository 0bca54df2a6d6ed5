package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ain-hpc/ain/pkg/input"
)

// Series is one variant of one saved run: what a plot draws and a comparison puts in a column.
type Series struct {
	Label        string  `json:"label"`
	Source       string  `json:"source,omitempty"` // the file it was read from
	Run          string  `json:"run"`
	Variant      string  `json:"variant"`
	Fabric       string  `json:"fabric"`
	LineRateGBps float64 `json:"lineRateGBps"` // the busbw limit of its run (Result.LimitGBps)
	Ranks        int     `json:"ranks"`
	Valid        bool    `json:"valid"`
	Points       []Point `json:"points"`
}

// Point is one size of a series (out-of-place numbers).
type Point struct {
	Size   int64   `json:"size"`
	TimeUs float64 `json:"timeUs"`
	Algbw  float64 `json:"algbw"`
	Busbw  float64 `json:"busbw"`
}

// maxResultBytes bounds a result file read by Load: Save writes a few KiB per variant.
const maxResultBytes = 64 << 20

// Load reads a result file written by Save (result.json), or the folder holding it.
func Load(path string) (*Result, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, ResultJSON)
	}
	b, err := input.ReadFile(path, maxResultBytes)
	if err != nil {
		return nil, err
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: not an ain bench result: %w", path, err)
	}
	if res.Kind != Kind {
		return nil, fmt.Errorf("%s: kind %q is not an ain bench allreduce result (%s)", path, res.Kind, Kind)
	}
	return &res, nil
}

// SeriesOf lists every variant of every result as a series, labelled by the variant's name
// where that is unique, else prefixed with the fabric, else with the run's name or file.
func SeriesOf(results []*Result, sources []string) []Series {
	var out []Series
	for i, res := range results {
		src := ""
		if i < len(sources) {
			src = sources[i]
		}
		for _, v := range res.Variants {
			s := Series{Source: src, Run: res.Name, Variant: v.Name, Fabric: res.Fabric, LineRateGBps: res.LimitGBps, Ranks: res.Ranks, Valid: v.Valid, Points: []Point{}}
			if v.Perf != nil {
				for _, r := range v.Perf.Rows {
					if r.OOP != nil {
						s.Points = append(s.Points, Point{Size: r.Size, TimeUs: r.OOP.TimeUs, Algbw: r.OOP.Algbw, Busbw: r.OOP.Busbw})
					}
				}
			}
			sort.Slice(s.Points, func(a, b int) bool { return s.Points[a].Size < s.Points[b].Size })
			out = append(out, s)
		}
	}
	labels := []func(Series) string{
		func(s Series) string { return s.Variant },
		func(s Series) string { return s.Fabric + "/" + s.Variant },
		func(s Series) string { return s.Run + "/" + s.Variant },
		func(s Series) string {
			return strings.TrimSuffix(filepath.Base(filepath.Dir(s.Source)), "/") + "/" + s.Variant
		},
	}
	for _, f := range labels {
		seen := map[string]int{}
		for _, s := range out {
			seen[f(s)]++
		}
		unique := true
		for _, n := range seen {
			unique = unique && n == 1
		}
		if unique {
			for i := range out {
				out[i].Label = f(out[i])
			}
			return out
		}
	}
	for i := range out {
		out[i].Label = fmt.Sprintf("%d:%s", i+1, out[i].Variant)
	}
	return out
}

// Comparison puts series side by side, size by size, with each series' busbw as a ratio of the
// first series' (the baseline).
type Comparison struct {
	Baseline string       `json:"baseline"`
	Series   []Series     `json:"series"`
	Rows     []CompareRow `json:"rows"`
	// PeakRatio is each series' peak busbw over the baseline's.
	Peaks     []float64  `json:"peakBusbw"`
	PeakRatio []*float64 `json:"peakRatio"`
}

// CompareRow is one size: busbw per series and its ratio to the baseline's (nil where missing;
// from the times when known, see busbwRatio).
type CompareRow struct {
	Size  int64      `json:"size"`
	Busbw []*float64 `json:"busbw"`
	Ratio []*float64 `json:"ratio"`
}

// Compare builds the side-by-side table of two or more series.
func Compare(series []Series) (*Comparison, error) {
	if len(series) < 2 {
		return nil, fmt.Errorf("compare needs at least two series (variants), got %d", len(series))
	}
	c := &Comparison{Baseline: series[0].Label, Series: series}
	sizes := map[int64]bool{}
	for _, s := range series {
		for _, p := range s.Points {
			sizes[p.Size] = true
		}
	}
	list := make([]int64, 0, len(sizes))
	for s := range sizes {
		list = append(list, s)
	}
	sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
	for _, size := range list {
		row := CompareRow{Size: size, Busbw: make([]*float64, len(series)), Ratio: make([]*float64, len(series))}
		pts := make([]*Point, len(series))
		for i, s := range series {
			for j := range s.Points {
				if p := &s.Points[j]; p.Size == size {
					b := p.Busbw
					row.Busbw[i], pts[i] = &b, p
				}
			}
		}
		for i := range series {
			row.Ratio[i] = busbwRatio(pts[i], pts[0], series[i].Ranks, series[0].Ranks)
		}
		c.Rows = append(c.Rows, row)
	}
	for _, s := range series {
		pk := 0.0
		for _, p := range s.Points {
			pk = math.Max(pk, p.Busbw)
		}
		c.Peaks = append(c.Peaks, pk)
	}
	for i := range series {
		c.PeakRatio = append(c.PeakRatio, ratio(&c.Peaks[i], &c.Peaks[0]))
	}
	return c, nil
}

// busbwRatio is a's bus bandwidth over b's at the same size, computed from the times when both
// are known (nccl-tests rounds busbw to 0.01 GB/s, which makes small-size ratios meaningless):
// busbw = size/time x 2(n-1)/n, so the ratio is (tb/ta) x (fa/fb).
func busbwRatio(a, b *Point, na, nb int) *float64 {
	if a == nil || b == nil {
		return nil
	}
	if a.TimeUs > 0 && b.TimeUs > 0 && na > 0 && nb > 0 {
		f := func(n int) float64 {
			if n == 1 {
				return 1
			}
			return 2 * float64(n-1) / float64(n)
		}
		r := b.TimeUs / a.TimeUs * f(na) / f(nb)
		return &r
	}
	return ratio(&a.Busbw, &b.Busbw)
}

// ratio is a/b, nil when either is missing or b is zero (nccl-tests prints 0.00 for tiny sizes).
func ratio(a, b *float64) *float64 {
	if a == nil || b == nil || *b == 0 {
		return nil
	}
	r := *a / *b
	return &r
}
