// Package nccl holds what ain knows about NCCL: the environment it derives for a fabric, and
// three offline analysers that take an io.Reader:
//
//   - LogAnalyzer reads NCCL logs (NCCL 2.4 to 2.30, one file per rank or interleaved multi-rank
//     output with launcher prefixes such as "[1,0]<stdout>:" or "N: ") and decides which transport
//     NCCL used: ib, roce, socket, plugin:<name> (aws-ofi, IBext, ...), none (P2P/SHM only) or
//     unknown, whether GPUDirect RDMA was on, and the known problems with their fixes. It streams:
//     memory is bounded by the number of processes (capped) and small fixed-size summaries, never by
//     the size of the log. Worker goroutines read blocks in turn and split them into lines in
//     parallel (log_split.go) while the caller's goroutine analyses the lines in order; a line
//     seen before with a known effect (a rank's TUNING or channel line, repeated for every call)
//     is applied from a cache (log_repeat.go) instead of being parsed, and once its repeats are
//     known to only count, the workers count its copies, as they count the per-call COLL lines
//     (log_coll.go) and the lines without "NCCL ", so that the analyser reads only the rest;
//     results are identical to a full parse.
//   - ParsePerf reads nccl-tests output of any *_perf binary, old and new column sets, the
//     per-iteration columns of -I 1 and the JSON file of -J (recognised by its leading '{'), and
//     returns the rows and trailer values (the average bus bandwidth kept exactly as printed).
//   - AllReduceModel predicts ring and tree allreduce times with the alpha-beta model of NCCL's
//     tuner and the size where ring overtakes tree. Its formulas and limits are documented in
//     model.go: Simple protocol only (small-message times are pessimistic), no NVLS, CollNet or
//     PAT, no congestion; a measured run is the truth.
//
// Line formats are taken from NCCL's and nccl-tests' sources and from real logs; the shared
// corpus tests (corpus_test files) keep the analysers honest on real-world samples.
//
// The log analyser is split by concern: log.go (the report types), log_reader.go (feeding lines,
// processes, evidence), log_lines.go (one parser per message kind), log_verdict.go (transport per
// process and per run), log_findings.go (problems, warnings, fixes), log_prefix.go (launcher
// prefixes and byte helpers), and for speed log_split.go (the parallel line splitter),
// log_repeat.go (the repeat cache) and log_coll.go (the per-call COLL lines, only counted).
package nccl

import "github.com/ain-hpc/ain/pkg/next"

// Transport values of LogReport.Transport.
const (
	TransportIB      = "ib"
	TransportRoCE    = "roce"
	TransportSocket  = "socket"
	TransportNone    = "none"
	TransportUnknown = "unknown"
	pluginPrefix     = "plugin:"
)

// Finding codes of LogReport.Problems and LogReport.Warnings.
const (
	CodeNoIBDevice       = "ib-no-device"
	CodeSocketFallback   = "socket-transport"
	CodeIBHCANoMatch     = "ib-hca-no-match"
	CodeIBDisabled       = "ib-disabled-by-env"
	CodeShm              = "dev-shm"
	CodeNetNotFound      = "net-not-found"
	CodePluginNotFound   = "net-plugin-not-found"
	CodeMixedTransport   = "mixed-transport"
	CodeGDRDisabled      = "gdr-disabled"
	CodeIBCompletion     = "ib-completion-error"
	CodeNCCLWarn         = "nccl-warn"
	CodeNoEvidence       = "no-transport-evidence"
	CodeSingleNode       = "single-node"
	CodeDebugSubsysLimit = "debug-subsys"
	CodeVerbsMissing     = "ib-verbs-missing"
	CodeNoNCCLLines      = "no-nccl-lines"
)

// Limits that keep the analyser's memory constant whatever the log size.
const (
	maxLineBytes = 1 << 20 // longer lines are cut (bufio.Scanner would fail on them)
	// maxLongLine: a longer line is an error (an *input.LineTooLongError), not cut: the input
	// is no log (/dev/zero, binary data) and reading it to its end may never end. Generous, for a
	// progress bar redrawn with '\r' for days is one line to a log reader.
	maxLongLine        = 256 << 20
	maxEvidencePerKind = 3
	maxEvidence        = 60
	maxProcs           = 4096
	maxDevices         = 64
	maxEnv             = 64
	maxTuning          = 128
	maxWarnLines       = 20
	maxTextLen         = 400
)

// Evidence is one log line that supports the verdict.
type Evidence struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Finding is a problem or warning with what to do about it.
type Finding struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
	// Next are the ain commands the fix suggests running.
	Next  []next.Command `json:"next,omitempty"`
	Lines []Evidence     `json:"evidence,omitempty"`
}

// EnvEcho is an NCCL variable that NCCL reported as "set by environment".
type EnvEcho struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	File  string `json:"file,omitempty"`
	Line  int    `json:"line"`
	text  string // the log line, for evidence
}

// TuningChoice summarises the TUNING lines for one collective/algorithm/protocol choice.
type TuningChoice struct {
	Collective string `json:"collective"`
	Algo       string `json:"algo"`
	Proto      string `json:"proto"`
	MinBytes   int64  `json:"minBytes"`
	MaxBytes   int64  `json:"maxBytes"`
	Count      int64  `json:"count"`
}

// RankReport is the verdict for one NCCL process (one host:pid).
type RankReport struct {
	Rank      *int     `json:"rank"`
	Label     string   `json:"label,omitempty"`
	Host      string   `json:"host,omitempty"`
	Pid       int      `json:"pid,omitempty"`
	File      string   `json:"file,omitempty"`
	Transport string   `json:"transport"`
	GDR       *bool    `json:"gdr"`
	Devices   []string `json:"devices"`
}

// LogReport is the verdict of the NCCL log analyser. The JSON names are a stable interface.
type LogReport struct {
	Transport   string         `json:"transport"`
	GDR         *bool          `json:"gdr"`
	NCCLVersion *string        `json:"ncclVersion"`
	Ranks       *int           `json:"ranks"`
	Nodes       *int           `json:"nodes,omitempty"`
	Devices     []string       `json:"devices"`
	Evidence    []Evidence     `json:"evidence"`
	Warnings    []Finding      `json:"warnings"`
	Problems    []Finding      `json:"problems"`
	PerRank     []RankReport   `json:"perRank,omitempty"`
	Env         []EnvEcho      `json:"env,omitempty"`
	Tuning      []TuningChoice `json:"tuning,omitempty"`
	Lines       int64          `json:"lines"`
	NCCLLines   int64          `json:"ncclLines"`
}

// OK reports whether the log shows no problem.
func (r *LogReport) OK() bool { return len(r.Problems) == 0 }
