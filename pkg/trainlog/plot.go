package trainlog

import (
	"fmt"
	"io"

	"github.com/ain-hpc/ain/pkg/figure"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot draws training loss against step for both runs (solid lines) and their evaluation loss
// (points), as PNG or SVG (o.Format), drawn like ain's other plots (figure.Render).
func Plot(w io.Writer, c *Comparison, o figure.Options) error {
	p := plot.New()
	p.Title.Text = o.Title
	if p.Title.Text == "" {
		p.Title.Text = fmt.Sprintf("training loss: %s vs %s (%s)", c.Run.Name, c.Archive.Name, c.Verdict)
	}
	p.X.Label.Text = c.Axis
	p.Y.Label.Text = "loss"
	p.Add(plotter.NewGrid())
	n := 0
	for i, r := range []*Run{c.Run, c.Archive} {
		label := []string{"run ", "archive "}[i] + r.Name
		if xy := finitePoints(r.Entries, func(e Entry) (float64, *Num) { return e.Step, e.Loss }); len(xy) > 0 {
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			l.Color = figure.Palette[i]
			l.Width = vg.Points(2)
			if i == 1 {
				l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			}
			p.Add(l)
			p.Legend.Add(label, l)
			n++
		}
		if ev := finitePoints(r.Evals, func(e Eval) (float64, *Num) { return e.Step, e.EvalLoss }); len(ev) > 0 {
			s, err := plotter.NewScatter(ev)
			if err != nil {
				return err
			}
			s.Color = figure.Palette[i]
			s.Shape = draw.CircleGlyph{}
			s.Radius = vg.Points(3)
			p.Add(s)
			p.Legend.Add(label+" (eval)", s)
		}
	}
	if n == 0 {
		return fmt.Errorf("nothing to plot: neither run logged a training loss")
	}
	p.X.Min = 0
	p.Legend.Top = true
	p.Legend.Left = false
	return figure.Render(w, p, o)
}

// finitePoints: the (step, value) of each record whose value is there and finite (a NaN loss is
// reported by the verdict, not drawn).
func finitePoints[T any](recs []T, at func(T) (float64, *Num)) plotter.XYs {
	var xy plotter.XYs
	for _, r := range recs {
		if x, y := at(r); y != nil && y.finite() {
			xy = append(xy, plotter.XY{X: x, Y: float64(*y)})
		}
	}
	return xy
}
