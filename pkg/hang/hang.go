// Package hang names the ranks behind a hung collective from what the job itself recorded:
//
//   - NCCL RAS (NCCL >= 2.24): the output of the `ncclras` client (text, or JSON with -f json
//     from NCCL 2.28.7), which lists missing and dead processes, communicators whose ranks have
//     launched different numbers of operations, and errors;
//   - PyTorch's Flight Recorder (PyTorch >= 2.5): the per-rank dumps written on a watchdog
//     timeout (TORCH_NCCL_DUMP_ON_TIMEOUT=1, files TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>, in
//     pickle format) or as JSON, which hold each process group's last enqueued, started and
//     completed collective sequence numbers and the recent collectives.
//
// The verdict names the collective the ranks that got furthest wait in (its sequence number or
// operation count), the ranks that did not enter it (StuckRanks: look at these), the ranks that
// entered it and wait (AheadRanks), and the ranks no data came from (MissingRanks).
//
// Formats are from NCCL's docs/userguide/source/troubleshooting/ras.rst and src/ras/client_support.cc,
// and PyTorch's flight recorder tutorial and torch/distributed/flight_recorder (see testdata/README.md).
package hang

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"

	"github.com/ain-hpc/ain/pkg/input"
)

// Statuses. The RAS ones are as ncclras prints them; FR's are named the same way.
const (
	StatusOK           = "OK"
	StatusMismatch     = "MISMATCH"      // ranks disagree on how far they got
	StatusIncomplete   = "INCOMPLETE"    // no data from some ranks (missing dump, unresponsive process)
	StatusDead         = "DEAD"          // RAS declared a process dead
	StatusError        = "ERROR"         // RAS: init or asynchronous NCCL errors
	StatusInCollective = "IN_COLLECTIVE" // FR: every rank entered the collective and none completed it
)

// Formats recognised.
const (
	FormatRASText        = "ncclras"
	FormatRASJSON        = "ncclras-json"
	FormatFlightRecorder = "flight-recorder"
)

// Evidence is one fact the verdict rests on, with where it was read.
type Evidence struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Text string `json:"text"`
}

// Report is the verdict. Its JSON keys are a stable interface (issue 17).
type Report struct {
	Status       string     `json:"status"`
	NRanks       int        `json:"nranks"`
	MissingRanks []int      `json:"missingRanks"`
	StuckRanks   []int      `json:"stuckRanks"`
	AheadRanks   []int      `json:"aheadRanks"`
	Collective   string     `json:"collective"`
	Evidence     []Evidence `json:"evidence"`

	// Format is what was read; Fix says what to do next, Next the ain commands it suggests.
	// Not in the JSON (its keys are fixed).
	Format string         `json:"-"`
	Fix    string         `json:"-"`
	Next   []next.Command `json:"-"`
}

// OK reports whether nothing is hung or missing.
func (r *Report) OK() bool { return r.Status == StatusOK }

// Input is one file given to Analyze.
type Input struct {
	Name string // file name (FR dumps carry their rank in it); "" or "-" for stdin
	Data []byte
}

// maxInput bounds what is read of one input, all of it held in memory: ncclras output is a few
// KiB per query, a Flight Recorder dump of the default 2000 entries with their stack frames a few
// MiB.
const maxInput = 256 << 20

// ReadInput reads one input, bounded: a larger one is an *input.TooLargeError.
func ReadInput(name string, r io.Reader) (Input, error) {
	b, err := input.ReadAll(r, displayName(name), maxInput)
	if err != nil {
		return Input{}, err
	}
	return Input{Name: name, Data: b}, nil
}

func displayName(n string) string {
	if n == "" || n == "-" {
		return "standard input"
	}
	return n
}

// Detect names the format of one input, or "" when it is none of them.
func Detect(b []byte) string {
	t := bytes.TrimLeft(b, " \t\r\n\ufeff")
	switch {
	case len(t) > 0 && t[0] == 0x80: // pickle PROTO opcode
		return FormatFlightRecorder
	case len(t) > 0 && t[0] == '{':
		head := t[:min(len(t), 1<<16)]
		switch {
		case bytes.Contains(head, []byte(`"communicators"`)) || bytes.Contains(head, []byte(`"communicators_count"`)):
			return FormatRASJSON
		case bytes.Contains(head, []byte(`"entries"`)) || bytes.Contains(head, []byte(`"pg_config"`)) || bytes.Contains(head, []byte(`"pg_status"`)):
			return FormatFlightRecorder
		}
	case bytes.Contains(b, []byte("Communicators...")) || bytes.Contains(b, []byte("Job summary\n")) ||
		bytes.Contains(b, []byte("ranks have launched up to operation")) || bytes.Contains(b, []byte("Missing communicator data")) ||
		bytes.Contains(b, []byte("Communicator ranks have different")) || bytes.Contains(b, []byte("job process is considered dead")) ||
		bytes.Contains(b, []byte("Status  Errors")):
		return FormatRASText
	}
	return ""
}

// Analyze reads the inputs: one or more ncclras outputs (the last one is the verdict; earlier
// ones show whether the counts moved), or the Flight Recorder dumps of the ranks (one per rank).
func Analyze(inputs []Input) (*Report, error) {
	if len(inputs) == 0 {
		return nil, fmt.Errorf("no input")
	}
	var ras, fr []Input
	var rasFormats []string
	for _, in := range inputs {
		switch f := Detect(in.Data); f {
		case FormatRASText, FormatRASJSON:
			ras = append(ras, in)
			rasFormats = append(rasFormats, f)
		case FormatFlightRecorder:
			fr = append(fr, in)
		default:
			if len(bytes.TrimSpace(in.Data)) == 0 {
				return nil, fmt.Errorf("%s is empty: give the output of `ncclras` (NCCL >= 2.24) or the files TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank> "+
					"that PyTorch wrote with TORCH_NCCL_DUMP_ON_TIMEOUT=1", displayName(in.Name))
			}
			return nil, fmt.Errorf("%s is neither ncclras output (text or -f json) nor a Flight Recorder dump (pickle or JSON): "+
				"give the output of `ncclras` (NCCL >= 2.24) or the files TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank> that PyTorch "+
				"wrote with TORCH_NCCL_DUMP_ON_TIMEOUT=1", displayName(in.Name))
		}
	}
	if len(ras) > 0 && len(fr) > 0 {
		return nil, fmt.Errorf("give either ncclras output or Flight Recorder dumps, not both (%s is ncclras output, %s a dump)",
			displayName(ras[0].Name), displayName(fr[0].Name))
	}
	if len(fr) > 0 {
		return analyzeFR(fr)
	}
	reps := make([]*Report, len(ras))
	for i, in := range ras {
		if rasFormats[i] == FormatRASText {
			reps[i] = analyzeRASText(in)
			continue
		}
		r, err := analyzeRASJSON(in)
		if err != nil {
			return nil, err
		}
		reps[i] = r
	}
	return compareQueries(ras, reps), nil
}

// compareQueries returns the last query's report; with several queries of a MISMATCH it says
// whether the counts moved between them (RAS's own advice: a spread that stays is a hang, one
// that moves is a busy job).
func compareQueries(ins []Input, reps []*Report) *Report {
	last := reps[len(reps)-1]
	if len(reps) < 2 || last.Status != StatusMismatch {
		return last
	}
	first := reps[0]
	if first.Collective != "" && first.Collective == last.Collective {
		last.Evidence = append(last.Evidence, Evidence{File: ins[len(ins)-1].Name,
			Text: fmt.Sprintf("the same spread (%s) in %d queries from %s to %s: the job is not moving", last.Collective, len(reps), displayName(ins[0].Name), displayName(ins[len(ins)-1].Name))})
	} else {
		last.Evidence = append(last.Evidence, Evidence{File: ins[len(ins)-1].Name,
			Text: fmt.Sprintf("the counts moved between queries (%q then %q): NCCL outpaces RAS's query, this is a busy job, not a hang", first.Collective, last.Collective)})
		last.Fix = "nothing is stuck while the counts move; query again if the job stops progressing"
		last.Next = nil
	}
	return last
}

// sortedInts returns the keys of a set, sorted; never nil (the JSON has [] not null).
func sortedInts(set map[int]bool) []int {
	if out := slices.Sorted(maps.Keys(set)); out != nil {
		return out
	}
	return []int{}
}

func newReport(format string) *Report {
	return &Report{Status: StatusOK, MissingRanks: []int{}, StuckRanks: []int{}, AheadRanks: []int{}, Evidence: []Evidence{}, Format: format}
}

// rankFromName reads the rank from a dump's file name: the trailing digits, as torch's
// flight_recorder loader does (TORCH_NCCL_DEBUG_INFO_TEMP_FILE defaults to /tmp/nccl_trace_rank_).
func rankFromName(name string) (int, bool) {
	b := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	if ext := filepath.Ext(name); ext != ".json" && ext != ".pkl" && ext != ".pickle" {
		b = filepath.Base(name)
	}
	i := len(b)
	for i > 0 && b[i-1] >= '0' && b[i-1] <= '9' {
		i--
	}
	if i == len(b) || len(b)-i > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(b[i:])
	return n, err == nil
}

// lines iterates over the lines of b with their numbers.
func lines(b []byte, f func(no int, s string)) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	no := 0
	for sc.Scan() {
		no++
		f(no, sc.Text())
	}
}
