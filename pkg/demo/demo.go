// Package demo runs the course flow on a local sandbox: the offline steps while the sandbox's
// components build, then each cluster step in the course's order, and reports what passed.
//
// Each step is an ain command exactly as a user would type it, run through Options.Run (the
// command layer's own entry point): what the demo teaches is the commands and what they print,
// so it shows their real output rather than a library's results re-worded.
package demo

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
	"github.com/ain-hpc/ain/recipes"
)

// Host is the ingress host of the demo's model server: a reserved .test name that no DNS
// resolves, reached at the address the stand-in ingress controller publishes.
const Host = "llm.ain-demo.test"

// Step is one command of the course flow.
type Step struct {
	Title string
	Args  func() []string // built when the step runs (some need files earlier steps wrote)
	// Cluster steps get --kubeconfig of the demo's sandbox appended.
	Cluster bool
	// SaveOut, when set, is a file that keeps a copy of the step's stdout (the detected profile).
	SaveOut string
}

// Runner runs one ain command (args without the program name) with getenv as its environment
// and returns its exit status; tee, when not nil, gets a copy of its standard output.
type Runner func(ctx context.Context, args []string, getenv func(string) string, tee io.Writer) int

// Options are the demo's inputs.
type Options struct {
	StateDir string // the sandbox's state folder; made when empty
	Out      string // results and plots; made when empty, else must be writable
	Keep     bool   // leave the sandbox running at the end
	Cache    string // the sandbox's binary cache
	Getenv   func(string) string
	Now      func() time.Time
	Run      Runner
	// Event, when set, receives the demo's progress, one call at a time (the stand-in ingress
	// reports from a goroutine of its own).
	Event func(Event)
	// BuildEvery is how often a waiting build reports its progress (15 s when zero).
	BuildEvery time.Duration
}

// EventKind says what an Event reports.
type EventKind int

// The events, in the order a run sends them.
const (
	Started   EventKind = iota // the model server listens at Text; StateDir and Out are set
	Building                   // the sandbox build's progress line is Text
	StepStart                  // Step.Title and Step.Command are set
	StepEnd                    // Step is complete
	Warning                    // Text is a problem that does not stop the demo
)

// Event is one piece of the demo's progress.
type Event struct {
	Kind EventKind
	Text string
	Step StepResult
	// BlankBefore is set on the first Building line of a wait (the renderer's cue to set it apart).
	BlankBefore bool
	// StateDir and Out are set on Started: the folders the run uses.
	StateDir, Out string
}

// StepResult is what one step did.
type StepResult struct {
	Title   string
	Command string // as a user would type it
	Code    int
	Err     error // set instead of Code for a step that is not a command (the build) or could not run
	Took    time.Duration
}

// Result is a whole run.
type Result struct {
	Steps       []StepResult
	Took        time.Duration
	StateDir    string
	Out         string
	Interrupted bool
}

// Failed counts the steps that did not pass.
func (r *Result) Failed() int {
	n := 0
	for _, s := range r.Steps {
		if s.Code != 0 || s.Err != nil {
			n++
		}
	}
	return n
}

// Run runs the demo. Its error is for what stopped it before any step ran; a failed step is in
// the Result.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Event == nil {
		o.Event = func(Event) {}
	}
	var evMu sync.Mutex
	event := o.Event
	o.Event = func(e Event) {
		evMu.Lock()
		defer evMu.Unlock()
		event(e)
	}
	if o.BuildEvery == 0 {
		o.BuildEvery = 15 * time.Second
	}
	var err error
	if o.Out == "" {
		if o.Out, err = os.MkdirTemp("", "ain-demo-results-"); err != nil {
			return nil, err
		}
	}
	if o.StateDir == "" {
		if o.StateDir, err = os.MkdirTemp("", "ain-demo-sandbox-"); err != nil {
			return nil, err
		}
	}
	qaFile, err := writeQA(o.Out)
	if err != nil {
		return nil, err
	}
	// The simulated model server that the simulated vLLM pods forward to.
	srvCtx, stopSrv := context.WithCancel(context.Background())
	defer stopSrv()
	addr, err := startModelServer(srvCtx)
	if err != nil {
		return nil, err
	}
	o.Event(Event{Kind: Started, Text: addr, StateDir: o.StateDir, Out: o.Out})
	d := &run{o: o, kubeconfig: sandbox.Layout{Dir: o.StateDir}.Kubeconfig(), profile: filepath.Join(o.Out, "profile.yaml"),
		res: &Result{StateDir: o.StateDir, Out: o.Out}}
	start := o.Now()
	build := sandbox.StartBuild(ctx, o.Cache, sandbox.DefaultStack, o.Now)
	offline, err := OfflineSteps(o.Out)
	if err != nil {
		return nil, err
	}
	for _, s := range offline {
		if ctx.Err() != nil {
			break
		}
		if build != nil {
			o.Event(Event{Kind: Building, Text: build.Line(), BlankBefore: true})
		}
		d.step(ctx, s)
	}
	steps := d.clusterSteps(addr, qaFile)
	if build != nil && ctx.Err() == nil {
		first := true
		err := build.Wait(ctx, o.BuildEvery, func(line string) {
			o.Event(Event{Kind: Building, Text: line, BlankBefore: first})
			first = false
		})
		if err != nil && ctx.Err() == nil {
			r := StepResult{Title: "build the sandbox components", Command: "(background build)", Err: err}
			d.res.Steps = append(d.res.Steps, r)
			o.Event(Event{Kind: StepEnd, Step: r})
			steps = nil // no sandbox, no flow
		}
	}
	for i, s := range steps {
		if ctx.Err() != nil {
			d.res.Interrupted = true
			break
		}
		r := d.step(ctx, s)
		if i == 0 && r.Code != 0 {
			break // no sandbox, no flow
		}
		if i == 0 {
			// The sandbox has no ingress controller: a loopback stand-in serves the Ingress
			// `ain serve` creates, from its rules and TLS Secret, in front of the simulated
			// model server; clients find it through the Ingress's status like a real one.
			go d.ingress(srvCtx, "http://"+addr)
		}
	}
	if !o.Keep {
		d.step(ctx, Step{Title: "stop the sandbox", Args: fixed("sandbox", "down", "--state-dir", o.StateDir, "--purge")})
	}
	stopSrv()
	d.res.Took = o.Now().Sub(start)
	return d.res, nil
}

type run struct {
	o          Options
	kubeconfig string
	profile    string // what `ain profile detect` wrote
	res        *Result
}

func fixed(args ...string) func() []string { return func() []string { return args } }

// clusterSteps are the course's steps on the sandbox, in the course's order: detect the fabric,
// then run on what was found (the built-in profile says 400Gb while the sandbox's ports run at
// 200 Gb/s: judged against it, every bench said LINE RATE MISMATCH about a healthy fabric).
func (d *run) clusterSteps(addr, qaFile string) []Step {
	out := d.o.Out
	return []Step{
		{"start the sandbox (3 GPU nodes, InfiniBand)", fixed("sandbox", "up", "--state-dir", d.o.StateDir, "--nodes", "3", "--forward", "8000="+addr), false, ""},
		{"detect the fabric: the profile every later step uses (10.1, 10.4)", fixed("profile", "detect"), true, d.profile},
		{"readiness preflight (10.1-10.2, 10.7)", fixed("preflight", "allreduce"), true, ""},
		{"GPU-to-NIC topology of a node: ideal or constrained, GPUDirect RDMA, rails (9.8, 10.4.1)", fixed("doctor", "topo", "--node", "gpu-node-1"), true, ""},
		{"GPU metrics from each node's dcgm-exporter (10.1.3-10.1.4)", fixed("doctor", "gpu", "--node", "gpu-node-1,gpu-node-2,gpu-node-3"), true, ""},
		{"the fine-tune's shared volume, model files and image, and the model's read throughput (12.1, 12.4.1)",
			fixed("preflight", "qlora", "--read-throughput", "256M", "--save-result", filepath.Join(out, "storage.json")), true, ""},
		{"QLoRA fine-tune, 3 nodes x 1 GPU, its GPUs read while it runs (12.2.2, 10.1.4)", fixed("train", "qlora", "--gpu-metrics", "--timeout", "5m"), true, ""},
		{"allreduce with NCCL_ALGO=Ring (10.3)", fixed("bench", "allreduce", "--algo", "ring", "--out", filepath.Join(out, "ring"), "--timeout", "5m"), true, ""},
		{"auto vs ring vs tree (10.5)", fixed("bench", "allreduce", "--algo", "all", "--out", filepath.Join(out, "all"), "--timeout", "10m"), true, ""},
		// After the allreduce benches: their busbw is the table's NCCL column (the results folder).
		{"line rate vs two-node RDMA vs three-node NCCL, with the TCP baseline (10.6.1, 3.10)", fixed("bench", "rdma", "--tcp", "--results", out, "--timeout", "3m"), true, ""},
		{"plot busbw by size (10.5.2)", func() []string {
			args := append([]string{"bench", "plot"}, findJSON(filepath.Join(out, "all"))...)
			return append(args, "-o", filepath.Join(out, "busbw.png"))
		}, false, ""},
		{"two single-GPU vLLM replicas behind an HTTPS entry (12.3.1-12.3.2)", fixed("serve", "vllm", "--replicas", "2", "--host", Host, "--timeout", "5m"), true, ""},
		{"list the served models (12.3.3)", fixed("models"), true, ""},
		{"chat, streaming (12.3.3)", fixed("chat", "What is RoCEv2?", "--max-tokens", "128"), true, ""},
		{"archived Q&A checks (12.3.4)", fixed("chat", "test", "--golden", qaFile), true, ""},
		{"serving benchmark", fixed("bench", "serve", "--requests", "50", "--concurrency", "8", "--input-len", "64", "--output-len", "32",
			"--label", "entry", "--save-result", filepath.Join(out, "serve-entry.json")), true, ""},
		{"the measured paths side by side: training, fabric, storage, serving (12.4.1)", fixed("report", out), false, ""},
		{"release the jobs, keep the service (12.4.2)", fixed("release", "--yes"), true, ""},
		// Last: the agent's record holds every pod the steps ran, the deleted ones included.
		{"what ran: which pods ran their real programs, which were simulated, and why", fixed("sandbox", "status", "--state-dir", d.o.StateDir), false, ""},
	}
}

// getenv is the steps' environment: the demo's sandbox and, once detected, its profile; never
// the user's cluster, endpoint or key.
func (d *run) getenv(k string) string {
	switch k {
	case "AIN_SANDBOX_STATE":
		return d.o.StateDir
	case "AIN_PROFILE":
		if fi, err := os.Stat(d.profile); err == nil && fi.Size() > 0 {
			return d.profile
		}
		return ""
	case "KUBECONFIG", "AIN_ENDPOINT", "AIN_API_KEY":
		return ""
	}
	return d.o.Getenv(k)
}

// step runs s, reports it and records its result.
func (d *run) step(ctx context.Context, s Step) StepResult {
	args := s.Args()
	if s.Cluster {
		args = append(args, "--kubeconfig", d.kubeconfig)
	}
	r := StepResult{Title: s.Title, Command: "ain " + strings.Join(QuoteArgs(args), " ")}
	d.o.Event(Event{Kind: StepStart, Step: r})
	t0 := d.o.Now()
	var tee io.Writer
	var saved *os.File
	if s.SaveOut != "" {
		f, err := os.Create(s.SaveOut)
		if err != nil {
			r.Err = fmt.Errorf("cannot keep the output in %s: %w", s.SaveOut, err)
			d.res.Steps = append(d.res.Steps, r)
			d.o.Event(Event{Kind: StepEnd, Step: r})
			return r
		}
		saved, tee = f, f
	}
	r.Code = d.o.Run(ctx, args, d.getenv, tee)
	if saved != nil {
		if err := saved.Close(); err != nil || r.Code != 0 {
			_ = os.Remove(s.SaveOut) // later steps fall back to the built-in profile
		}
	}
	r.Took = d.o.Now().Sub(t0)
	d.res.Steps = append(d.res.Steps, r)
	d.o.Event(Event{Kind: StepEnd, Step: r})
	return r
}

// ingress runs the stand-in ingress controller for the demo's Ingress until ctx ends.
func (d *run) ingress(ctx context.Context, backend string) {
	kc, err := kube.Load(kube.Options{Kubeconfig: d.kubeconfig, Getenv: d.o.Getenv})
	if err != nil {
		d.o.Event(Event{Kind: Warning, Text: "demo ingress: " + err.Error()})
		return
	}
	p := &vllmsim.IngressProxy{Kube: kc.Kube, Namespace: kc.Namespace, Name: "vllm", Backend: backend}
	if err := p.Run(ctx, nil); err != nil && ctx.Err() == nil {
		d.o.Event(Event{Kind: Warning, Text: "demo ingress: " + err.Error()})
	}
}

// writeQA writes the course's archived Q&A checks, from the binary, into out.
func writeQA(out string) (string, error) {
	qa, err := fs.ReadFile(recipes.FS, "qa/course-qa.yaml")
	if err != nil {
		return "", err
	}
	qaFile := filepath.Join(out, "course-qa.yaml")
	return qaFile, os.WriteFile(qaFile, qa, 0o644)
}

// startModelServer starts the simulated model server until ctx ends and returns its address.
func startModelServer(ctx context.Context) (string, error) {
	ready := make(chan string, 1)
	srvErr := make(chan error, 1)
	go func() {
		srvErr <- vllmsim.ListenAndServe(ctx, "127.0.0.1:0", vllmsim.Options{
			Models: []string{"Qwen2.5-7B-Instruct"}, Root: "/shared/models/Qwen2.5-7B-Instruct",
			FirstTokenDelay: 40 * time.Millisecond, TokenInterval: 8 * time.Millisecond,
		}, ready)
	}()
	select {
	case addr := <-ready:
		return addr, nil
	case err := <-srvErr:
		return "", fmt.Errorf("starting the simulated model server: %w", err)
	}
}

func findJSON(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, "course-qa.json") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// QuoteArgs quotes the arguments a shell would split or expand.
func QuoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, s := range args {
		if strings.ContainsAny(s, " \t\"'$") {
			s = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
		out[i] = s
	}
	return out
}

// OfflineSteps are the course steps that need no cluster: what a recipe's fields mean and
// what it becomes, NCCL's cost model for the demo's fabric, and the doctor on the recorded NCCL
// log of one rank of the QLoRA job on InfiniBand (written into out from the sandbox's samples).
func OfflineSteps(out string) ([]Step, error) {
	d := sandbox.SampleData{Pod: "qlora-worker-1", Namespace: "default", Node: "gpu-node-2", NodeIndex: 2,
		PodIP: "10.244.2.5", Job: "qlora", Role: "worker", Rank: 1, WorldSize: 3, Fabric: "ib",
		Env: map[string]string{}, PID: 41, GPUs: 1, Time: time.Date(2026, 12, 2, 14, 25, 28, 0, time.UTC)}
	log, err := sandbox.RenderSample("nccl/pytorch-rank.txt", d)
	if err != nil {
		return nil, err
	}
	logFile := filepath.Join(out, "recorded-nccl-rank1.log")
	if err := os.WriteFile(logFile, []byte(log), 0o644); err != nil {
		return nil, err
	}
	return []Step{
		{"what each field of the QLoRA recipe means (12.2)", fixed("recipes", "show", "qlora"), false, ""},
		{"the Kubernetes objects it becomes, no cluster needed (12.2.1)", fixed("render", "qlora"), false, ""},
		{"NCCL's cost model: ring vs tree on 3 nodes x 8 GPUs, 400 Gb/s (10.4)", fixed("bench", "model", "--nodes", "3", "--gpus-per-node", "8", "--link", "400Gb"), false, ""},
		{"doctor on a recorded NCCL log of one rank: which transport it really used (10.6)", fixed("doctor", "nccl-log", logFile), false, ""},
	}, nil
}
