package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ain-hpc/ain/pkg/figure"
	"github.com/ain-hpc/ain/pkg/nccl"
)

// File names inside a result folder.
const (
	ResultJSON = "result.json"
	ResultCSV  = "result.csv"
	PlotPNG    = "busbw.png"
	PlotSVG    = "busbw.svg"
)

// DefaultDir is ./ain-results/<timestamp>-<name>.
func DefaultDir(now time.Time, name string) string {
	return filepath.Join("ain-results", now.UTC().Format("20060102-150405")+"-"+name)
}

// MakeDir creates the result folder. Results are never overwritten: an explicit folder must be
// new or empty; the default one gets a -2, -3 ... suffix when it exists.
func MakeDir(dir string, explicit bool) (string, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	for i := 1; i < 100; i++ {
		d := dir
		if i > 1 {
			d = fmt.Sprintf("%s-%d", dir, i)
		}
		err := os.Mkdir(d, 0o755)
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		if explicit {
			entries, rerr := os.ReadDir(d)
			if rerr == nil && len(entries) == 0 {
				return d, nil
			}
			return "", fmt.Errorf("%s already holds files: results are never overwritten; choose another --out", d)
		}
	}
	return "", fmt.Errorf("%s: too many result folders with this name", dir)
}

// ResultDir makes the result folder of a bench named name started at start: out when given
// (MakeDir: new or empty), else DefaultDir (a fresh suffix when it exists).
func ResultDir(out string, start time.Time, name string) (string, error) {
	if out == "" {
		return MakeDir(DefaultDir(start, name), false)
	}
	return MakeDir(out, true)
}

// Finish ends the bench at now: its duration, what Summarize derives, and the result folder
// (Save). It returns Save's files and error; the result is whole (to print) whatever Save says.
func (res *Result) Finish(now time.Time, dir string) ([]string, error) {
	res.Finished = now
	res.Seconds = res.Finished.Sub(res.Started).Seconds()
	res.Summarize()
	return Save(res, dir)
}

// Save writes the result folder: result.json (everything, raw output included), result.csv,
// busbw.png and busbw.svg, and each variant's launcher output as <variant>.log. It refuses to
// replace an existing file. It returns the paths written.
func Save(res *Result, dir string) ([]string, error) {
	var written []string
	write := func(name string, fill func(io.Writer) error) error {
		var buf bytes.Buffer
		if err := fill(&buf); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		p := filepath.Join(dir, name)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(buf.Bytes()); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		written = append(written, p)
		return nil
	}
	if err := write(ResultJSON, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}); err != nil {
		return written, err
	}
	if err := write(ResultCSV, func(w io.Writer) error { return WriteCSV(w, res) }); err != nil {
		return written, err
	}
	series := SeriesOf([]*Result{res}, nil)
	title := fmt.Sprintf("all_reduce_perf busbw, %d ranks (%d nodes x %d GPU), %s", res.Ranks, res.Nodes, res.GPUsPerNode, res.Fabric)
	for _, f := range []struct{ name, format string }{{PlotPNG, "png"}, {PlotSVG, "svg"}} {
		if err := write(f.name, func(w io.Writer) error {
			return Plot(w, series, figure.Options{Format: f.format, Title: title})
		}); err != nil {
			return written, err
		}
	}
	for _, v := range res.Variants {
		if err := write(v.Name+".log", func(w io.Writer) error { _, err := io.WriteString(w, v.Raw); return err }); err != nil {
			return written, err
		}
	}
	return written, nil
}

// CSVHeader is the header of result.csv: one row per variant and size.
var CSVHeader = []string{"variant", "size", "oop_time_us", "oop_algbw", "oop_busbw", "oop_wrong", "ip_time_us", "ip_algbw", "ip_busbw", "ip_wrong",
	"pct_line_rate", "model_busbw", "deviation", "nccl_algo", "nccl_proto", "transport", "valid"}

// WriteCSV writes one row per variant and size.
func WriteCSV(w io.Writer, res *Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(CSVHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	fp := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'g', 6, 64)
	}
	for i, v := range res.Variants {
		if v.Perf == nil {
			continue
		}
		for _, row := range v.Perf.Rows {
			rec := []string{v.Name, strconv.FormatInt(row.Size, 10)}
			for _, c := range []*nccl.PerfCell{row.OOP, row.IP} {
				if c == nil {
					rec = append(rec, "", "", "", "")
					continue
				}
				wrong := ""
				if c.Wrong != nil {
					wrong = strconv.FormatInt(*c.Wrong, 10)
				}
				rec = append(rec, f(c.TimeUs), f(c.Algbw), f(c.Busbw), wrong)
			}
			var cell *Cell
			for _, sr := range res.Sizes {
				if sr.Size == row.Size && i < len(sr.Cells) {
					cell = sr.Cells[i]
				}
			}
			if cell == nil {
				cell = &Cell{}
			}
			rec = append(rec, fp(cell.PctLineRate), fp(cell.ModelBusbw), fp(cell.Deviation), cell.Algo, cell.Proto, v.Transport, strconv.FormatBool(v.Valid))
			_ = cw.Write(rec)
		}
	}
	cw.Flush()
	return cw.Error()
}
