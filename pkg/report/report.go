// Package report puts the measured paths of one course run side by side (course step 12.4.1):
// the training path (NCCL allreduce busbw against line rate, the transport NCCL used, the bytes
// the job moved per HCA), the fabric beneath it (perftest and the TCP baseline between two
// nodes), and the serving path (TTFT and throughput, through the HTTPS entry and against a pod
// directly). Every number says which file it came from; inputs that cannot be compared are said
// to disagree rather than set side by side.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/version"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/preflight"
)

// MaxFileBytes bounds one input file: a result of ain or vLLM is far smaller (a bench result
// with every rank's raw output is a few MiB).
const MaxFileBytes = 64 << 20

// Path names the part of the system a row measures.
type Path string

// The paths of 12.4.1.
const (
	Training Path = "training"
	Fabric   Path = "fabric"
	Serving  Path = "serving"
	Storage  Path = "storage"
)

// Row is one measurement.
type Row struct {
	Path    Path     `json:"path"`
	Measure string   `json:"measure"`
	Value   float64  `json:"value"`
	Unit    string   `json:"unit"`
	Against string   `json:"against,omitempty"` // what the value is judged against, in words
	Pct     *float64 `json:"pctOfReference,omitempty"`
	// Source is the file the number came from and what wrote it.
	Source string `json:"source"`
	Detail string `json:"detail,omitempty"`
}

// Report is the side-by-side view of the inputs.
type Report struct {
	Rows []Row `json:"rows"`
	// Comparisons are derived from two rows (entry vs direct, NCCL vs RDMA).
	Comparisons []string `json:"comparisons,omitempty"`
	// Disagreements say where inputs describe different systems or runs.
	Disagreements []string `json:"disagreements,omitempty"`
	// Missing names each path with no measurement among the inputs and what measures it.
	Missing []Missing `json:"missing,omitempty"`
	// Skipped are input files that are not a result this report reads, with why.
	Skipped []string `json:"skipped,omitempty"`
}

// Missing is a path the inputs say nothing about.
type Missing struct {
	Path Path `json:"path"`
	// Measure is what would measure it, as data (the caller words the command).
	Measure string `json:"measure"`
}

// InputError is a file or folder that could not be read, or a result this ain cannot read
// (Err a *VersionError).
type InputError struct {
	Path string
	Err  error
}

func (e *InputError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// VersionError is a result of ain's whose field (its "kind", ain.dev/VERSION/NAME) names a kind
// this report reads in another version: a newer ain's, whose fields may mean other things.
type VersionError struct {
	Field, Got string
	// Reads is the kind of that name this report reads; Newer: Got's version is later.
	Reads string
	Newer bool
}

func (e *VersionError) Error() string {
	if e.Newer {
		return fmt.Sprintf("field %q is %s: a result of a newer ain (this one reads %s); report on it with that ain or a later one", e.Field, e.Got, e.Reads)
	}
	return fmt.Sprintf("field %q is %s: a version this ain does not read (it reads %s)", e.Field, e.Got, e.Reads)
}

// readKinds are the kinds of ain's own result files this report reads.
var readKinds = []string{bench.Kind, bench.RDMAKind, preflight.Kind}

// checkKind refuses a kind of ain's (ain.dev/VERSION/NAME) whose NAME is one this report reads
// but whose VERSION is not; any other kind is for the caller to classify.
func checkKind(kind string) error {
	ver, name, ok := splitKind(kind)
	if !ok {
		return nil
	}
	for _, k := range readKinds {
		if k == kind {
			return nil
		}
		if kv, kn, _ := splitKind(k); kn == name {
			// Kubernetes' order of API versions: v1alpha1 < v1beta1 < v1 < v2alpha1 ...
			return &VersionError{Field: "kind", Got: kind, Reads: k, Newer: version.CompareKubeAwareVersionStrings(ver, kv) > 0}
		}
	}
	return nil
}

func splitKind(kind string) (ver, name string, ok bool) {
	rest, ok := strings.CutPrefix(kind, "ain.dev/")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "/")
}

// ErrNoResults is returned when no input is a result the report reads.
var ErrNoResults = errors.New("no result of bench allreduce, bench rdma, bench serve or preflight --read-throughput among the inputs")

// MaxFiles bounds the JSON files a report reads (a folder given by mistake, such as /, would
// otherwise be walked whole).
const MaxFiles = 10000

// Input is one file to read. Given is set for a file named by the user: when it is not a result,
// the report says so; a file found by walking a folder is passed over without a word.
type Input struct {
	Path  string
	Given bool
}

// Files lists the JSON files under paths (a file is taken as given; a folder is walked), in a
// stable order.
func Files(paths []string) ([]Input, error) {
	var out []Input
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, &InputError{Path: p, Err: err}
		}
		if !fi.IsDir() {
			out = append(out, Input{Path: p, Given: true})
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(f, ".json") {
				if len(out)+len(found) >= MaxFiles {
					return fmt.Errorf("more than %d JSON files: give the result folders themselves", MaxFiles)
				}
				found = append(found, f)
			}
			return nil
		})
		if err != nil {
			return nil, &InputError{Path: p, Err: err}
		}
		sort.Strings(found)
		for _, f := range found {
			out = append(out, Input{Path: f})
		}
	}
	return out, nil
}

// Build reads every input and builds the report.
func Build(inputs []Input) (*Report, error) {
	b := &builder{r: &Report{}}
	for _, in := range inputs {
		data, err := readBounded(in.Path)
		if err != nil && !in.Given {
			continue // found by a walk: passed over, as any other file that is no result
		}
		if err != nil {
			return nil, &InputError{Path: in.Path, Err: err}
		}
		if err := b.add(in, data); err != nil {
			return nil, &InputError{Path: in.Path, Err: err}
		}
	}
	if len(b.r.Rows) == 0 {
		return b.r, ErrNoResults
	}
	b.compare()
	return b.r, nil
}

func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d MiB: not a result of ain or vLLM", MaxFileBytes>>20)
	}
	return data, nil
}

type builder struct {
	r         *Report
	allreduce []*bench.Result
	rdma      []*bench.RDMAResult
	serving   []servingRun
	storage   int // storage rows
}

// skip records why a file named by the user is not read.
func (b *builder) skip(in Input, format string, args ...any) {
	if in.Given {
		b.r.Skipped = append(b.r.Skipped, in.Path+": "+fmt.Sprintf(format, args...))
	}
}

// add classifies one file by its content. Its error is a result of a version this report does
// not read (a *VersionError), found by a walk or named: passing over it would hide a result.
func (b *builder) add(in Input, data []byte) error {
	file := in.Path
	var head struct {
		Kind             string            `json:"kind"`
		OutputThroughput *float64          `json:"output_throughput"`
		Checks           []json.RawMessage `json:"checks"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		b.skip(in, "not JSON (%v)", err)
		return nil
	}
	if err := checkKind(head.Kind); err != nil {
		return err
	}
	switch {
	case head.Kind == bench.Kind:
		var res bench.Result
		if err := json.Unmarshal(data, &res); err != nil {
			b.skip(in, "a bench allreduce result that does not decode: %v", err)
			return nil
		}
		if res.PlannedNICs == 0 && res.GPUsPerNode > 0 && res.NICsPerNode > res.GPUsPerNode {
			// Saved by an ain that judged busbw against every HCA of the node: judged again.
			old := res.NICsPerNode
			res.Summarize()
			b.r.Disagreements = append(b.r.Disagreements, fmt.Sprintf("%s was judged against %d NICs per node by an older ain; judged again here: %s", file, old, res.NICsNote))
		}
		b.allreduce = append(b.allreduce, &res)
		b.training(file, &res)
	case head.Kind == bench.RDMAKind:
		var res bench.RDMAResult
		if err := json.Unmarshal(data, &res); err != nil {
			b.skip(in, "a bench rdma result that does not decode: %v", err)
			return nil
		}
		b.rdma = append(b.rdma, &res)
		b.fabric(file, &res)
	case head.OutputThroughput != nil:
		var run servingRun
		if err := json.Unmarshal(data, &run); err != nil {
			b.skip(in, "a vLLM benchmark result that does not decode: %v", err)
			return nil
		}
		run.file = file
		b.serving = append(b.serving, run)
		b.serve(run)
	case head.Kind == preflight.Kind || head.Kind == "" && head.Checks != nil: // no kind: saved by an older ain
		var res preflight.Result
		if err := json.Unmarshal(data, &res); err != nil {
			b.skip(in, "a preflight result that does not decode: %v", err)
			return nil
		}
		if n, why := b.storageRows(file, &res); n == 0 && why != "" {
			b.skip(in, "a preflight result whose read test timed nothing: %s", why)
		} else if n == 0 {
			b.skip(in, "a preflight result without a read test (run it with --read-throughput)")
		}
	default:
		b.skip(in, "not a result of bench allreduce, bench rdma (-o json), bench serve (--save-result) or preflight --read-throughput (-o json)")
	}
	return nil
}

// storageRows adds a row for each model read a preflight measured (--read-throughput): the read
// throughput of its weight files from the shared volume, one stream. why is what a read test
// that timed nothing said.
func (b *builder) storageRows(file string, res *preflight.Result) (n int, why string) {
	for _, c := range res.Checks {
		r := c.Read
		if r == nil {
			continue
		}
		if r.Seconds <= 0 {
			why = r.String()
			continue
		}
		how := "O_DIRECT"
		if !r.Direct {
			how = "through the page cache: may be served from memory"
		}
		detail := fmt.Sprintf("%s of %d weight file(s) in %.2f s, one stream of 16 MiB requests (%s): a lower bound of a loader's rate",
			counters.HumanBytes(uint64(r.Bytes)), r.Files, r.Seconds, how)
		if r.Cut != "" {
			detail += "; cut at the time budget"
		}
		measure := "model read, " + r.Path
		if r.Sandbox {
			measure += " (sandbox: simulated volume)"
			detail += "; the sandbox's sparse files on its machine's disk: says nothing of a cluster's storage"
		}
		b.r.Rows = append(b.r.Rows, Row{Path: Storage, Measure: measure, Value: r.BytesPerSecond() / 1e9, Unit: "GB/s",
			Source: fmt.Sprintf("%s (preflight --read-throughput, claim %s, node %s)", file, r.Claim, orDash(r.Node)), Detail: detail})
		n++
	}
	b.storage += n
	return n, why
}

func pct(v float64) *float64 { return &v }

// training adds the allreduce rows: each valid variant's peak busbw against the line rate, its
// transport, and the bytes its nodes' HCAs moved.
func (b *builder) training(file string, res *bench.Result) {
	src := fmt.Sprintf("%s (bench allreduce %s, %d nodes x %d GPUs, %s)", file, res.Name, res.Nodes, res.GPUsPerNode, res.Fabric)
	variants := map[string]*bench.VariantResult{}
	for _, v := range res.Variants {
		variants[v.Name] = v
	}
	against := "no line rate in the result"
	if res.LimitGBps > 0 {
		against = fmt.Sprintf("line rate %s x %d NIC(s) = %.4g GB/s", res.LineRate, res.NICsPerNode, res.LimitGBps)
	}
	for _, p := range res.Peaks {
		v := variants[p.Variant]
		detail := ""
		if v != nil {
			detail = "transport " + orDash(v.Transport)
			if !v.Valid {
				detail += "; INVALID"
				if len(v.Problems) > 0 {
					detail += ": " + strings.Join(v.Problems, "; ")
				}
			}
		}
		measure := "allreduce busbw peak, " + p.Variant
		if p.Size > 0 {
			measure += " (" + bench.SizeLabel(p.Size) + ")"
		}
		b.r.Rows = append(b.r.Rows, Row{Path: Training, Measure: measure, Value: p.Busbw, Unit: "GB/s", Against: against,
			Pct: p.PctLineRate, Source: src, Detail: detail})
	}
	for _, v := range res.Variants {
		if v.Wire == nil {
			continue
		}
		for _, n := range v.Wire.Nodes {
			if n.Err != "" {
				continue
			}
			var of *float64
			if v.Wire.FloorBytes > 0 {
				of = pct(100 * float64(n.Sent) / float64(v.Wire.FloorBytes))
			}
			b.r.Rows = append(b.r.Rows, Row{Path: Training, Measure: fmt.Sprintf("bytes sent on the RDMA ports of %s, %s", n.Node, v.Name),
				Value: float64(n.Sent), Unit: "B", Against: "the least any allreduce sends per node, " + counters.HumanBytes(v.Wire.FloorBytes),
				Pct: of, Source: src, Detail: portsText(n)})
		}
	}
}

func portsText(n bench.WireNode) string {
	names := make([]string, 0, len(n.Ports))
	for p := range n.Ports {
		names = append(names, p)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, p := range names {
		parts = append(parts, fmt.Sprintf("%s sent %s", p, counters.HumanBytes(n.Ports[p].XmitBytes)))
	}
	return strings.Join(parts, ", ")
}

// fabric adds the two-node rows: perftest's bandwidth (or latency) and the TCP baseline.
func (b *builder) fabric(file string, res *bench.RDMAResult) {
	src := fmt.Sprintf("%s (bench rdma %s, %s -> %s, %s)", file, res.Test, res.Client, res.Server, res.Fabric)
	against := fmt.Sprintf("line rate %.4g Gb/s (%s)", res.ExpectedGbps, res.ExpectedSource)
	switch {
	case res.RDMAGbps != nil:
		b.r.Rows = append(b.r.Rows, Row{Path: Fabric, Measure: res.Test + " bandwidth", Value: *res.RDMAGbps, Unit: "Gb/s",
			Against: against, Pct: res.PctLineRate, Source: src, Detail: fmt.Sprintf("device %s, %d QP(s)", orDash(res.Device), res.QPs)})
	case res.TypicalUs != nil:
		b.r.Rows = append(b.r.Rows, Row{Path: Fabric, Measure: res.Test + " typical latency", Value: *res.TypicalUs, Unit: "us",
			Source: src, Detail: fmt.Sprintf("device %s", orDash(res.Device))})
	}
	if res.TCP != nil && res.ExpectedGbps > 0 {
		b.r.Rows = append(b.r.Rows, Row{Path: Fabric, Measure: "TCP baseline (iperf3)", Value: res.TCP.Gbps, Unit: "Gb/s",
			Against: against, Pct: pct(100 * res.TCP.Gbps / res.ExpectedGbps), Source: src, Detail: fmt.Sprintf("%d stream(s), %d s", res.TCP.Streams, res.TCP.Seconds)})
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
