package cli

import (
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/figure"
)

// benchPlotOptions are the flags of `ain bench plot`.
type benchPlotOptions struct {
	Out           string
	Title         string
	Width, Height int
	Files         []string
}

func (a *App) benchPlotCommand() *ucli.Command {
	o := &benchPlotOptions{}
	return &ucli.Command{
		Name:      "plot",
		Usage:     "redraw busbw vs message size (log x) from saved `ain bench allreduce` runs, one line per variant, line rate drawn",
		ArgsUsage: "RESULT.json|DIR ...",
		Description: "The format follows -o's extension: .png or .svg.\n\n" +
			"Example:\n  ain bench plot results/*.json -o busbw.png",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the plot file, `FILE`.png or FILE.svg", Required: true, Destination: &o.Out},
			&ucli.StringFlag{Name: "title", Usage: "plot title", Destination: &o.Title},
			&ucli.IntFlag{Name: "width", Value: figure.DefaultWidth, Usage: "width in pixels (SVG: x 0.75 points)", Destination: &o.Width},
			&ucli.IntFlag{Name: "height", Value: figure.DefaultHeight, Usage: "height in pixels", Destination: &o.Height},
		},
		Action: func(c *ucli.Context) error {
			o.Files = c.Args().Slice()
			return a.runBenchPlot(o)
		},
	}
}

func (a *App) runBenchPlot(o *benchPlotOptions) error {
	format := figure.FormatOf(o.Out)
	if format == "" {
		return ainerr.Usagef("-o %s: the plot file must end in .png or .svg", o.Out)
	}
	if len(o.Files) == 0 {
		return ainerr.Usagef("give one or more saved results (result.json or their folders)")
	}
	if o.Width < 100 || o.Height < 100 || o.Width > 10000 || o.Height > 10000 {
		return ainerr.Usagef("--width/--height: 100 to 10000 pixels, got %dx%d", o.Width, o.Height)
	}
	results, err := loadBenchResults(o.Files)
	if err != nil {
		return err
	}
	series := bench.SeriesOf(results, o.Files)
	if err := figure.WriteFile(o.Out, func(w io.Writer) error {
		return bench.Plot(w, series, figure.Options{Format: format, Width: o.Width, Height: o.Height, Title: o.Title})
	}); err != nil {
		return ainerr.New(ainerr.Failure, err, "")
	}
	labels := make([]string, len(series))
	for i, s := range series {
		labels[i] = s.Label
	}
	fmt.Fprintf(a.Streams.Err, "wrote %s (%dx%d, %d series: %s)\n", o.Out, o.Width, o.Height, len(series), strings.Join(labels, ", "))
	return nil
}
