package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/figure"
)

func TestPlotPNG(t *testing.T) {
	res := threeVariants(t, 25)
	series := SeriesOf([]*Result{res}, nil)
	var buf bytes.Buffer
	if err := Plot(&buf, series, figure.Options{Format: "png", Width: 900, Height: 500, Title: "test"}); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 900 || b.Dy() != 500 {
		t.Fatalf("PNG is %dx%d, want 900x500", b.Dx(), b.Dy())
	}
	// One series per variant: each variant's colour is drawn, the next palette colour is not;
	// the line rate's grey is there.
	count := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			count[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}]++
		}
	}
	for i := range series {
		if count[figure.Palette[i]] < 200 {
			t.Errorf("series %d (%s): %d pixels of its colour %v", i, series[i].Label, count[figure.Palette[i]], figure.Palette[i])
		}
	}
	if n := count[figure.Palette[len(series)]]; n != 0 {
		t.Errorf("%d pixels of an unused series colour", n)
	}
	if count[LineRateColor] < 100 {
		t.Errorf("line rate not drawn (%d pixels)", count[LineRateColor])
	}
}

func TestPlotSVG(t *testing.T) {
	a := threeVariants(t, 25)
	s := synthetic("socket", 0.1)
	series := SeriesOf([]*Result{a, s}, nil)
	var buf bytes.Buffer
	if err := Plot(&buf, series, figure.Options{Format: "svg"}); err != nil {
		t.Fatal(err)
	}
	// Valid XML with the right size: 1000x600 px at 96 dpi = 750x450 pt.
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	var root *xml.StartElement
	var texts []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			if root == nil {
				e := v.Copy()
				root = &e
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(v)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if root == nil || root.Name.Local != "svg" {
		t.Fatalf("root %v", root)
	}
	attr := map[string]string{}
	for _, at := range root.Attr {
		attr[at.Name.Local] = at.Value
	}
	if attr["width"] != "750pt" || attr["height"] != "450pt" {
		t.Errorf("SVG size %s x %s, want 750pt x 450pt", attr["width"], attr["height"])
	}
	// One series per variant (4 here: auto, ring, tree and the socket run's auto), each in its
	// colour and in the legend; the two line-rate limits (25 and 100 GB/s) are drawn.
	svg := buf.String()
	strokes := map[string]bool{}
	for _, m := range regexp.MustCompile(`stroke:(#[0-9a-fA-F]{6})`).FindAllStringSubmatch(svg, -1) {
		strokes[strings.ToLower(m[1])] = true
	}
	hex := func(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }
	for i, s := range series {
		if !strokes[hex(figure.Palette[i])] {
			t.Errorf("series %s: no stroke %s (strokes %v)", s.Label, hex(figure.Palette[i]), strokes)
		}
	}
	if strokes[hex(figure.Palette[len(series)])] {
		t.Error("an extra series is drawn")
	}
	legend := strings.Join(texts, "|")
	for _, want := range []string{"ib/auto", "ib/ring", "ib/tree", "socket/auto", "line rate 25 GB/s", "line rate 100 GB/s", "1 MiB", "1 GiB"} {
		if !strings.Contains(legend, want) {
			t.Errorf("SVG text lacks %q: %s", want, legend)
		}
	}
}

func TestPlotErrors(t *testing.T) {
	if err := Plot(io.Discard, nil, figure.Options{Format: "png"}); err == nil {
		t.Error("empty plot accepted")
	}
	series := SeriesOf([]*Result{synthetic("ib", 0.9)}, nil)
	if err := Plot(io.Discard, series, figure.Options{Format: "gif"}); err == nil {
		t.Error("gif accepted")
	}
}

func TestChart(t *testing.T) {
	res := threeVariants(t, 25)
	c := Chart(SeriesOf([]*Result{res}, nil), 25, 10)
	lines := strings.Split(strings.TrimRight(c, "\n"), "\n")
	if len(lines) != 13 || !strings.Contains(c, "* auto   o ring   + tree   - line rate 25 GB/s") || !strings.HasPrefix(lines[0], "  25.0 |") {
		t.Errorf("chart:\n%s", c)
	}
	if !strings.Contains(lines[11], "8B") || !strings.Contains(lines[11], "1KiB") || !strings.Contains(lines[11], "1MiB") || !strings.Contains(lines[11], "1GiB") {
		t.Errorf("size axis: %q", lines[11])
	}
	t.Logf("\n%s", c)
}
