package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ain-hpc/ain/pkg/figure"
)

// ErrNothingToPlot is Plot's error when no measurement has a reference to be a share of.
var ErrNothingToPlot = errors.New("nothing to plot: no measurement is judged against a line rate")

// Plot draws how close each path comes to its reference: one horizontal bar per measurement
// judged against a line rate (allreduce busbw, perftest, TCP), in percent, with 100% marked.
// Byte counts (a share of the least an allreduce sends) and serving times have no line rate and
// are left to the table.
func (r *Report) Plot(w io.Writer, o figure.Options) error {
	var vals plotter.Values
	var labels []string
	for _, row := range r.Rows {
		if row.Pct == nil || row.Unit == "B" {
			continue
		}
		vals = append(vals, *row.Pct)
		labels = append(labels, string(row.Path)+": "+row.Measure)
	}
	if len(vals) == 0 {
		return ErrNothingToPlot
	}
	p := plot.New()
	p.Title.Text = o.Title
	if p.Title.Text == "" {
		p.Title.Text = "measured paths, % of line rate"
	}
	p.X.Label.Text = "% of line rate"
	bars, err := plotter.NewBarChart(vals, vg.Points(14))
	if err != nil {
		return err
	}
	bars.Horizontal = true
	bars.Color = figure.Palette[0]
	bars.LineStyle.Width = 0
	p.Add(bars)
	full, err := plotter.NewLine(plotter.XYs{{X: 100, Y: -0.5}, {X: 100, Y: float64(len(vals)) - 0.5}})
	if err != nil {
		return err
	}
	full.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	p.Add(full)
	p.NominalY(labels...)
	p.X.Min = 0
	p.X.Max = 110
	for _, v := range vals {
		p.X.Max = max(p.X.Max, v*1.05)
	}
	return figure.Render(w, p, o)
}

// PlotFormat is the image format plot file's name asks for, by its extension: png or svg.
func PlotFormat(file string) (string, error) {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(file)), ".")
	if format != "png" && format != "svg" {
		return "", fmt.Errorf("%s: the plot file must end in .png or .svg", file)
	}
	return format, nil
}

// PlotFile draws the report (Plot) into file, PNG or SVG by its extension (PlotFormat).
func (r *Report) PlotFile(file string) error {
	format, err := PlotFormat(file)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := r.Plot(&buf, figure.Options{Format: format}); err != nil {
		return err
	}
	return os.WriteFile(file, buf.Bytes(), 0o644)
}
