package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/userdir"
)

// Config is what a user chooses with `ain sandbox up`.
type Config struct {
	Nodes        int    `json:"nodes"`
	GPUsPerNode  int    `json:"gpusPerNode"`
	Fabric       string `json:"fabric"`       // ib or roce
	Scenario     string `json:"scenario"`     // a name from Scenarios()
	RDMAResource string `json:"rdmaResource"` // extended resource name of the RDMA device plugin
	RDMACount    int    `json:"rdmaCount"`
	// PortForwards route `kubectl port-forward pod/<any sandbox pod> PORT` to a local address, so a
	// local server (an OpenAI-compatible test server, say) can stand behind simulated pods.
	PortForwards []PortForward `json:"portForwards,omitempty"`
	// Stack is the set of job controllers (DefaultStack when empty). A state written before
	// stacks existed has none and ran the legacy stack (LoadState says so).
	Stack Stack `json:"stack,omitempty"`
	// SimulatePods plays every pod from recorded samples. Unset (the default), the pods whose
	// image is in the real-image table (realpods.go) run their programs as real processes
	// (pkg/sandbox/podrun), where the machine can: root, iproute2, util-linux, openssh-server and
	// Open MPI (scripts/debian-packages.sh); State.RealPodsOff says why not otherwise.
	SimulatePods bool `json:"simulatePods"`
	// NoGPUOperator leaves out the GPU Operator's operand DaemonSets (gpuoperator.go), which
	// the sandbox otherwise runs as a cluster with the GPU Operator does: large sandboxes for
	// scale tests, and tests of a cluster without them.
	NoGPUOperator bool `json:"noGPUOperator,omitempty"`
}

// PortForward sends a pod port, for every simulated pod, to Target (host:port on this machine).
type PortForward struct {
	PodPort int32  `json:"podPort"`
	Target  string `json:"target"`
}

// Defaults for Config.
const (
	DefaultNodes        = 3
	DefaultGPUsPerNode  = 8
	DefaultFabric       = "ib"
	DefaultScenario     = "healthy"
	DefaultRDMAResource = "rdma/rdma_shared_device_a"
	DefaultRDMACount    = 63

	// Bounds of the Config fields given as flags. 0 is no count: WithDefaults reads it as "the
	// default" (--nodes 0 started 3 nodes), so the flags refuse it.
	MaxNodes       = 5000
	MaxGPUsPerNode = 64
	MaxRDMACount   = 1024
)

// WithDefaults fills the zero fields of c.
func (c Config) WithDefaults() Config {
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.GPUsPerNode == 0 {
		c.GPUsPerNode = DefaultGPUsPerNode
	}
	if c.Fabric == "" {
		c.Fabric = DefaultFabric
	}
	if c.Scenario == "" {
		c.Scenario = DefaultScenario
	}
	if c.RDMAResource == "" {
		c.RDMAResource = DefaultRDMAResource
	}
	if c.RDMACount == 0 {
		c.RDMACount = DefaultRDMACount
	}
	if c.Stack == "" {
		c.Stack = DefaultStack
	}
	return c
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		errs = append(errs, fmt.Errorf("--nodes must be between 1 and %d, got %d", MaxNodes, c.Nodes))
	}
	if c.GPUsPerNode < 0 || c.GPUsPerNode > MaxGPUsPerNode {
		errs = append(errs, fmt.Errorf("--gpus-per-node must be between 0 and %d, got %d", MaxGPUsPerNode, c.GPUsPerNode))
	}
	if c.RDMACount < 0 || c.RDMACount > MaxRDMACount {
		errs = append(errs, fmt.Errorf("--rdma-count must be between 0 and %d, got %d", MaxRDMACount, c.RDMACount))
	}
	if c.Fabric != "ib" && c.Fabric != "roce" {
		errs = append(errs, fmt.Errorf("--fabric must be ib or roce, got %q", c.Fabric))
	}
	if _, err := LoadScenario(c.Scenario); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParseStack(string(c.Stack)); err != nil {
		errs = append(errs, err)
	}
	if !strings.Contains(c.RDMAResource, "/") {
		errs = append(errs, fmt.Errorf("the RDMA resource %q must be a domain-qualified extended resource name", c.RDMAResource))
	}
	for _, pf := range c.PortForwards {
		if pf.PodPort <= 0 || pf.PodPort > 65535 {
			errs = append(errs, fmt.Errorf("port-forward pod port %d out of range", pf.PodPort))
		}
		if _, _, err := splitHostPort(pf.Target); err != nil {
			errs = append(errs, fmt.Errorf("port-forward target %q: %w", pf.Target, err))
		}
	}
	return errors.Join(errs...)
}

// ParsePortForward parses "PODPORT=HOST:PORT" (or "PODPORT=PORT" for 127.0.0.1).
func ParsePortForward(s string) (PortForward, error) {
	pod, target, ok := strings.Cut(s, "=")
	if !ok {
		return PortForward{}, fmt.Errorf("port-forward %q: want PODPORT=HOST:PORT", s)
	}
	p, err := strconv.Atoi(pod)
	if err != nil {
		return PortForward{}, fmt.Errorf("port-forward %q: pod port: %w", s, err)
	}
	if !strings.Contains(target, ":") {
		target = "127.0.0.1:" + target
	}
	pf := PortForward{PodPort: int32(p), Target: target}
	if _, _, err := splitHostPort(target); err != nil {
		return PortForward{}, fmt.Errorf("port-forward %q: %w", s, err)
	}
	return pf, nil
}

func splitHostPort(s string) (string, int32, error) {
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("want HOST:PORT")
	}
	p, err := strconv.Atoi(s[i+1:])
	if err != nil || p <= 0 || p > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", s)
	}
	return s[:i], int32(p), nil
}

// Proc is one started process.
type Proc struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	PID     int      `json:"pid"`
	Binary  string   `json:"binary"`
	Args    []string `json:"args"`
	// Env is what was added to the environment, its paths only (KUBECONFIG, TMPDIR), so a test
	// can start it again as it was.
	Env []string `json:"env,omitempty"`
	Log string   `json:"log"`
	// Ports this process listens on, by role (all on 127.0.0.1).
	Ports map[string]int `json:"ports,omitempty"`
}

// State is what `up` records in the state folder (state.json) for status and down.
type State struct {
	Config     Config    `json:"config"`
	StartedAt  time.Time `json:"startedAt"`
	Dir        string    `json:"dir"`
	Kubeconfig string    `json:"kubeconfig"`
	Server     string    `json:"server"`
	Procs      []Proc    `json:"procs"`
	Ports      Ports     `json:"ports"`
	// Webhook says whether the stack's admission webhooks are served, and why not (the legacy
	// stack's training-operator can only serve it from one sandbox per machine, see webhook.go).
	Webhook WebhookState `json:"webhook"`
	// Webhooks lists each served admission webhook configuration and where it points.
	Webhooks []WebhookEndpoint `json:"webhooks,omitempty"`
	// RealPodsOff is why this machine runs no real pods although the config asks for them
	// (not root, a program missing): Up found it and fell back to samples.
	RealPodsOff string `json:"realPodsOff,omitempty"`
}

// RealPods reports whether the sandbox runs the mapped images' pods as real processes.
func (s *State) RealPods() bool { return !s.Config.SimulatePods && s.RealPodsOff == "" }

// WebhookEndpoint is one admission webhook configuration the sandbox registered.
type WebhookEndpoint struct {
	Component string   `json:"component"`
	Kind      string   `json:"kind"` // ValidatingWebhookConfiguration or MutatingWebhookConfiguration
	Name      string   `json:"name"`
	URLs      []string `json:"urls"`
}

// Stack is the stack the sandbox runs.
func (s *State) Stack() Stack {
	if s.Config.Stack == "" {
		return StackLegacy
	}
	return s.Config.Stack
}

// WebhookState says whether the stack's webhooks are served (for the legacy stack, the
// training-operator's, which only one sandbox per machine can serve).
type WebhookState struct {
	On     bool   `json:"on"`
	URL    string `json:"url,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Ports are the sandbox's listening ports, all on 127.0.0.1.
type Ports struct {
	EtcdClient     int `json:"etcdClient"`
	EtcdPeer       int `json:"etcdPeer"`
	APIServer      int `json:"apiServer"`
	ControllerMgr  int `json:"controllerManager"`
	Scheduler      int `json:"scheduler"`
	Kwok           int `json:"kwok"`
	Webhook        int `json:"webhook"`
	OperatorMetric int `json:"operatorMetrics"`
	OperatorHealth int `json:"operatorHealth"`
	// The current stack's controllers (see Stack).
	MPIOperatorHealth int `json:"mpiOperatorHealth,omitempty"`
	JobSetWebhook     int `json:"jobsetWebhook,omitempty"`
	JobSetHealth      int `json:"jobsetHealth,omitempty"`
	TrainerWebhook    int `json:"trainerWebhook,omitempty"`
	TrainerHealth     int `json:"trainerHealth,omitempty"`
}

func (p Ports) list() []int {
	return []int{p.EtcdClient, p.EtcdPeer, p.APIServer, p.ControllerMgr, p.Scheduler, p.Kwok, p.Webhook, p.OperatorMetric, p.OperatorHealth,
		p.MPIOperatorHealth, p.JobSetWebhook, p.JobSetHealth, p.TrainerWebhook, p.TrainerHealth}
}

func newPorts() (Ports, error) {
	n, err := freePorts(len(Ports{}.list()))
	if err != nil {
		return Ports{}, err
	}
	return Ports{EtcdClient: n[0], EtcdPeer: n[1], APIServer: n[2], ControllerMgr: n[3], Scheduler: n[4], Kwok: n[5],
		Webhook: n[6], OperatorMetric: n[7], OperatorHealth: n[8],
		MPIOperatorHealth: n[9], JobSetWebhook: n[10], JobSetHealth: n[11], TrainerWebhook: n[12], TrainerHealth: n[13]}, nil
}

func (p Ports) allFree() bool {
	for _, n := range p.list() {
		if n == 0 || !portFree(n) {
			return false
		}
	}
	return true
}

// StateDir is the sandbox's state folder: $AIN_SANDBOX_STATE, else $XDG_STATE_HOME/ain/sandbox,
// else ~/.local/state/ain/sandbox.
func StateDir(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv("AIN_SANDBOX_STATE"); d != "" {
		return filepath.Abs(d)
	}
	// HOME through getenv, not os.UserHomeDir: a caller that passes its own environment (the CLI's
	// App.Getenv, every test) must not reach the real home folder and a sandbox left there.
	d, err := userdir.State(getenv, "sandbox")
	if err != nil {
		return "", errors.New("finding the sandbox state folder: $HOME is not set (set AIN_SANDBOX_STATE or XDG_STATE_HOME)")
	}
	return d, nil
}

// Layout names the files in a state folder.
type Layout struct{ Dir string }

func (l Layout) State() string      { return filepath.Join(l.Dir, "state.json") }
func (l Layout) Kubeconfig() string { return filepath.Join(l.Dir, "kubeconfig") }
func (l Layout) PKI() string        { return filepath.Join(l.Dir, "pki") }
func (l Layout) Logs() string       { return filepath.Join(l.Dir, "logs") }
func (l Layout) Etcd() string       { return filepath.Join(l.Dir, "etcd") }
func (l Layout) Config() string     { return filepath.Join(l.Dir, "config") }
func (l Layout) PodLogs() string    { return filepath.Join(l.Dir, "podlogs") }
func (l Layout) Lock() string       { return filepath.Join(l.Dir, "lock") }

// LoadState reads the state of the sandbox in dir; it returns os.ErrNotExist when none was started.
func LoadState(dir string) (*State, error) {
	data, err := os.ReadFile(Layout{dir}.State())
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("reading %s: %w", Layout{dir}.State(), err)
	}
	// A state written when real pods were opt-in has no simulatePods, and realPods: true only
	// where they were asked for: its agent plays samples otherwise.
	var old struct {
		Config struct {
			SimulatePods *bool `json:"simulatePods"`
			RealPods     bool  `json:"realPods"`
		} `json:"config"`
	}
	if json.Unmarshal(data, &old) == nil && old.Config.SimulatePods == nil {
		s.Config.SimulatePods = !old.Config.RealPods
	}
	return &s, nil
}

func saveState(s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(Layout{s.Dir}.State(), data, 0o600)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Proc returns the named process of the state, if recorded.
func (s *State) Proc(name string) *Proc {
	for i := range s.Procs {
		if s.Procs[i].Name == name {
			return &s.Procs[i]
		}
	}
	return nil
}
