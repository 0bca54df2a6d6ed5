// Package figure draws ain's plots (bench plot's bus bandwidth, train compare's loss curves,
// bench serve's sweeps) at one size, resolution and palette, as PNG or SVG.
package figure

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Options size and format a plot.
type Options struct {
	Format string // png or svg
	// Width and Height in pixels at 96 dpi (SVG sizes are written in points: pixels x 0.75).
	Width, Height int
	Title         string
}

// Default plot size in pixels; DPI is the resolution sizes in pixels are at.
const (
	DefaultWidth  = 1000
	DefaultHeight = 600
	DPI           = 96
)

// Palette is the colour of series i (cycled).
var Palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, // pink
	{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
	{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, // olive
}

// Render draws a plot as PNG or SVG (o.Format) of o.Width x o.Height pixels at 96 dpi; other
// commands' plots (train compare's loss curves) use it so every ain plot looks the same.
func Render(w io.Writer, p *plot.Plot, o Options) error {
	o, err := o.Sized()
	if err != nil {
		return err
	}
	wpt := vg.Length(float64(o.Width) * 72 / DPI)
	hpt := vg.Length(float64(o.Height) * 72 / DPI)
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch strings.ToLower(o.Format) {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(wpt, hpt), vgimg.UseDPI(DPI))}
	case "svg":
		c = vgsvg.New(wpt, hpt)
	default:
		return fmt.Errorf("plot format %q: use png or svg", o.Format)
	}
	p.Draw(draw.New(c))
	_, err = c.WriteTo(w)
	return err
}

// Sized fills in the default size and checks the limit.
func (o Options) Sized() (Options, error) {
	if o.Width <= 0 {
		o.Width = DefaultWidth
	}
	if o.Height <= 0 {
		o.Height = DefaultHeight
	}
	if o.Width > 10000 || o.Height > 10000 {
		return o, fmt.Errorf("plot size %dx%d: at most 10000 pixels a side", o.Width, o.Height)
	}
	return o, nil
}

// FormatOf is the plot format file's extension names: "png" or "svg", else "".
func FormatOf(file string) string {
	switch f := strings.TrimPrefix(strings.ToLower(filepath.Ext(file)), "."); f {
	case "png", "svg":
		return f
	}
	return ""
}

// WriteFile writes what draw draws to file, whole or not at all (a plot that fails to draw
// leaves no file).
func WriteFile(file string, draw func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := draw(&buf); err != nil {
		return err
	}
	return os.WriteFile(file, buf.Bytes(), 0o644)
}
