package report

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPlotFile(t *testing.T) {
	if f, err := PlotFormat("x/Busbw.SVG"); err != nil || f != "svg" {
		t.Errorf("PlotFormat(.SVG) = %q, %v", f, err)
	}
	if _, err := PlotFormat("plot.pdf"); err == nil || err.Error() != "plot.pdf: the plot file must end in .png or .svg" {
		t.Errorf("PlotFormat(.pdf): %v", err)
	}
	file := filepath.Join(t.TempDir(), "r.png")
	if err := (&Report{}).PlotFile(file); err == nil {
		t.Error("an empty report was plotted")
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("a failed plot left a file")
	}
}
