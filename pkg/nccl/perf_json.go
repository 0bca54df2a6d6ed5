package nccl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"
)

// PerIter summarises the per-iteration timings of one half of a row (nccl-tests -I 1, from
// 2.19.2). The text table prints i_min, i_max, i_p99 and i_cv% (the max over processes of each
// iteration's time); the JSON file (-J) adds the average, median, p95, standard deviation and
// how many samples it holds.
type PerIter struct {
	MinUs   float64  `json:"minUs"`
	MaxUs   float64  `json:"maxUs"`
	P99Us   float64  `json:"p99Us"`
	CVPct   float64  `json:"cvPct"`
	AvgUs   *float64 `json:"avgUs,omitempty"`
	P50Us   *float64 `json:"p50Us,omitempty"`
	P95Us   *float64 `json:"p95Us,omitempty"`
	StdevUs *float64 `json:"stdevUs,omitempty"`
	Samples int      `json:"samples,omitempty"`
	Skipped int      `json:"skipped,omitempty"`
}

// SourceJSON is PerfRun.Source for runs read from nccl-tests' JSON file (-J).
const SourceJSON = "json"

// perfJSON is nccl-tests' -J file (nccl-tests >= 2.17, src/util.cu). Its writer prints doubles
// with %lf, NaN as the string "nan", booleans as the strings "true"/"false", and the root as a
// "%6i" string; 2.17-2.18 spelled the average "average_bus_bandwidith"/"bandwidith".
type perfJSON struct {
	Version     *int            `json:"version"`
	Args        []string        `json:"args"`
	NCCLVersion *int            `json:"nccl_version"`
	Config      *perfJSONConfig `json:"config"`
	Results     []perfJSONRow   `json:"results"`
	OutOfBounds *struct {
		Count *int64 `json:"count"`
	} `json:"out_of_bounds"`
	AvgBW    *perfJSONAvg `json:"average_bus_bandwidth"`
	AvgBWOld *perfJSONAvg `json:"average_bus_bandwidith"`
	Errors   []string     `json:"errors"`
}

type perfJSONConfig struct {
	Devices []struct {
		Rank *int `json:"rank"`
	} `json:"devices"`
}

type perfJSONAvg struct {
	Bandwidth    json.RawMessage `json:"bandwidth"`
	BandwidthOld json.RawMessage `json:"bandwidith"`
	Okay         json.RawMessage `json:"okay"`
}

type perfJSONRow struct {
	Size     *int64          `json:"size"`
	Count    *int64          `json:"count"`
	Type     string          `json:"type"`
	Redop    string          `json:"redop"`
	Root     json.RawMessage `json:"root"`
	OOP      *perfJSONCell   `json:"out_of_place"`
	IP       *perfJSONCell   `json:"in_place"`
	OOPIter  *perfJSONIter   `json:"out_of_place_per_iter"`
	IPIter   *perfJSONIter   `json:"in_place_per_iter"`
	ActIters *int            `json:"actual_iterations"`
	Name     json.RawMessage `json:"experiment_name"`
}

type perfJSONCell struct {
	Time    json.RawMessage `json:"time"`
	CPUTime json.RawMessage `json:"cpu_time"`
	AlgBW   json.RawMessage `json:"alg_bw"`
	BusBW   json.RawMessage `json:"bus_bw"`
	NWrong  json.RawMessage `json:"nwrong"`
}

type perfJSONIter struct {
	Skipped json.RawMessage   `json:"skipped_iterations"`
	Min     json.RawMessage   `json:"min_us"`
	Max     json.RawMessage   `json:"max_us"`
	Avg     json.RawMessage   `json:"avg_us"`
	P50     json.RawMessage   `json:"p50_us"`
	P95     json.RawMessage   `json:"p95_us"`
	P99     json.RawMessage   `json:"p99_us"`
	Stdev   json.RawMessage   `json:"stdev_us"`
	CV      json.RawMessage   `json:"cv_pct"`
	Times   []json.RawMessage `json:"times_us"`
}

// parsePerfJSON reads one or more concatenated nccl-tests JSON documents.
func parsePerfJSON(r *bufio.Reader) ([]*PerfRun, error) {
	dec := json.NewDecoder(r)
	var runs []*PerfRun
	for {
		var doc perfJSON
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return runs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading nccl-tests JSON (-J output) near byte %d: %w; the file must be the JSON written by -J, whole", dec.InputOffset(), err)
		}
		if doc.Version == nil && doc.Results == nil {
			return nil, fmt.Errorf("the JSON object ending at byte %d is not nccl-tests -J output (no \"version\" or \"results\")", dec.InputOffset())
		}
		r := doc.run()
		r.finish()
		runs = append(runs, r)
	}
}

func (d *perfJSON) run() *PerfRun {
	r := &PerfRun{Rows: []PerfRow{}, maxRank: -1, Source: SourceJSON}
	if len(d.Args) > 0 {
		if b := path.Base(d.Args[0]); strings.HasSuffix(strings.TrimSuffix(b, "_mpi"), "_perf") {
			r.Collective = strings.TrimSuffix(b, "_mpi")
		}
	}
	if d.NCCLVersion != nil && *d.NCCLVersion > 0 {
		r.NCCLVersion = ncclVersionString(*d.NCCLVersion)
	}
	if d.Config != nil {
		for _, dev := range d.Config.Devices {
			if dev.Rank != nil && *dev.Rank >= 0 && *dev.Rank < 1<<20 {
				r.maxRank = max(r.maxRank, *dev.Rank)
			}
		}
	}
	for i := range d.Results {
		if len(r.Rows) >= maxPerfRows {
			break
		}
		if row, ok := d.Results[i].row(); ok {
			r.Rows = append(r.Rows, row)
		}
	}
	if d.OutOfBounds != nil && d.OutOfBounds.Count != nil {
		v := *d.OutOfBounds.Count
		r.OutOfBounds = &v
	}
	avg := d.AvgBW
	if avg == nil {
		avg = d.AvgBWOld
	}
	if avg != nil {
		raw := avg.Bandwidth
		if raw == nil {
			raw = avg.BandwidthOld
		}
		if s := strings.TrimSpace(string(raw)); isJSONNumber(s) && s != "" && s[0] != '"' {
			n := json.Number(s)
			r.AvgBusbw = &n
		}
		if ok := strings.Trim(string(avg.Okay), `" `); ok == "false" && len(r.Errors) < maxPerfErrors {
			r.Errors = append(r.Errors, "average bus bandwidth "+r.avgText()+" GB/s is below NCCL_TESTS_MIN_BW")
		}
	}
	for _, e := range d.Errors {
		if len(r.Errors) >= maxPerfErrors {
			break
		}
		r.Errors = append(r.Errors, e[:min(len(e), maxTextLen)])
	}
	r.closed = true
	return r
}

func (r *PerfRun) avgText() string {
	if r.AvgBusbw == nil {
		return "?"
	}
	return r.AvgBusbw.String()
}

// ncclVersionString turns NCCL_VERSION_CODE (22703) into "2.27.3".
func ncclVersionString(code int) string {
	if code < 10000 { // NCCL < 2.9 encoded MAJOR*1000+MINOR*100+PATCH
		return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
}

func (j *perfJSONRow) row() (PerfRow, bool) {
	if j.Size == nil || j.Count == nil || *j.Size < 0 || *j.Count < 0 {
		return PerfRow{}, false
	}
	row := PerfRow{Size: *j.Size, Count: *j.Count, Type: j.Type, Redop: j.Redop}
	if s := strings.TrimSpace(strings.Trim(string(j.Root), `"`)); s != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			row.Root = &n
		}
	}
	row.OOP = j.OOP.cell(j.OOPIter)
	row.IP = j.IP.cell(j.IPIter)
	if row.OOP == nil {
		// Trace replays print in-place only ("out_of_place": null); keep the invariant that a
		// row has its first half.
		row.OOP, row.IP = row.IP, nil
	}
	if row.OOP == nil {
		return PerfRow{}, false
	}
	return row, true
}

func (c *perfJSONCell) cell(it *perfJSONIter) *PerfCell {
	if c == nil {
		return nil
	}
	t := c.Time
	if t == nil {
		t = c.CPUTime
	}
	pc := &PerfCell{TimeUs: jsonFloat(t), Algbw: jsonFloat(c.AlgBW), Busbw: jsonFloat(c.BusBW)}
	if s := strings.TrimSpace(string(c.NWrong)); s != "" && s != "null" {
		if v := jsonFloat(c.NWrong); v >= 0 && v < math.MaxInt64 {
			n := int64(v)
			pc.Wrong = &n
		}
	}
	if it != nil {
		p := &PerIter{MinUs: jsonFloat(it.Min), MaxUs: jsonFloat(it.Max), P99Us: jsonFloat(it.P99), CVPct: jsonFloat(it.CV),
			AvgUs: jsonFloatPtr(it.Avg), P50Us: jsonFloatPtr(it.P50), P95Us: jsonFloatPtr(it.P95), StdevUs: jsonFloatPtr(it.Stdev),
			Samples: len(it.Times), Skipped: int(jsonFloat(it.Skipped))}
		pc.PerIter = p
	}
	return pc
}

// jsonFloat reads a number nccl-tests wrote; "nan", "inf", null and junk read as 0 so that the
// report always marshals.
func jsonFloat(raw json.RawMessage) float64 {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func jsonFloatPtr(raw json.RawMessage) *float64 {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	v := jsonFloat(raw)
	return &v
}
