package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Status is what `ain sandbox status` shows.
type Status struct {
	Dir        string            `json:"dir"`
	Running    bool              `json:"running"`
	Kubeconfig string            `json:"kubeconfig"`
	Server     string            `json:"server"`
	Config     Config            `json:"config"`
	Scenario   string            `json:"scenarioDescription"`
	StartedAt  time.Time         `json:"startedAt"`
	Components []ComponentStatus `json:"components"`
	Nodes      []NodeStatus      `json:"nodes,omitempty"`
	NodesError string            `json:"nodesError,omitempty"`
	Webhook    WebhookState      `json:"webhook"`
	// Stack is the job controllers the sandbox runs and APIs the job kinds they serve.
	Stack     Stack             `json:"stack"`
	APIs      []string          `json:"apis"`
	Webhooks  []WebhookEndpoint `json:"webhooks,omitempty"`
	Simulated string            `json:"simulated"`
	Logs      string            `json:"logs"`
	// RealPodsOff is why the sandbox runs no pod as a real process ("" when it does).
	RealPodsOff string `json:"realPodsOff,omitempty"`
	// PodRuns is every pod the agent ran so far: as a real process, or simulated and why.
	PodRuns      []PodRunGroup `json:"podRuns,omitempty"`
	PodRunsError string        `json:"podRunsError,omitempty"`
}

// ComponentStatus is one process.
type ComponentStatus struct {
	Name    string         `json:"name"`
	Version string         `json:"version,omitempty"`
	PID     int            `json:"pid"`
	Running bool           `json:"running"`
	Ports   map[string]int `json:"ports,omitempty"`
	RSSKiB  int64          `json:"rssKiB,omitempty"`
	Log     string         `json:"log"`
}

// NodeStatus is one simulated node.
type NodeStatus struct {
	Name        string            `json:"name"`
	Ready       bool              `json:"ready"`
	Allocatable map[string]string `json:"allocatable"`
	Taints      []string          `json:"taints,omitempty"`
}

// GetStatus reports on the sandbox in dir; ErrNotRunning (wrapped) when it was never started.
func GetStatus(ctx context.Context, dir string) (*Status, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := LoadState(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%w in %s", ErrNotRunning, dir)
		}
		return nil, err
	}
	s := &Status{Dir: dir, Kubeconfig: st.Kubeconfig, Server: st.Server, Config: st.Config, StartedAt: st.StartedAt,
		Webhook: st.Webhook, Simulated: simulatedNote(st), Logs: Layout{dir}.Logs(),
		Stack: st.Stack(), APIs: st.Stack().APIs(), Webhooks: st.Webhooks}
	s.Config.Stack = st.Stack()
	s.RealPodsOff = realPodsOff(st)
	if s.PodRuns, err = ReadPodRuns(dir); err != nil {
		s.PodRunsError = err.Error()
	}
	if sc, err := LoadScenario(st.Config.Scenario); err == nil {
		s.Scenario = sc.Description
	}
	all := true
	for _, p := range st.Procs {
		c := ComponentStatus{Name: p.Name, Version: p.Version, PID: p.PID, Running: alive(p), Ports: p.Ports, Log: p.Log}
		if c.Running {
			c.RSSKiB = rssKiB(p.PID)
		} else {
			all = false
		}
		s.Components = append(s.Components, c)
	}
	s.Running = len(st.Procs) > 0 && all
	if len(st.Procs) == 0 {
		return s, nil
	}
	cfg, err := restConfig(st.Kubeconfig)
	if err != nil {
		s.NodesError = err.Error()
		return s, nil
	}
	cfg.Timeout = 5 * time.Second
	k, err := newKube(cfg)
	if err != nil {
		s.NodesError = err.Error()
		return s, nil
	}
	list, err := k.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelSimulated + "=true"})
	if err != nil {
		s.NodesError = err.Error()
		return s, nil
	}
	for _, n := range list.Items {
		ns := NodeStatus{Name: n.Name, Ready: nodeReady(&n), Allocatable: map[string]string{}}
		for name, q := range n.Status.Allocatable {
			if q.IsZero() && strings.HasPrefix(string(name), "hugepages") {
				continue
			}
			ns.Allocatable[string(name)] = q.String()
		}
		for _, t := range n.Spec.Taints {
			ns.Taints = append(ns.Taints, t.Key+":"+string(t.Effect))
		}
		s.Nodes = append(s.Nodes, ns)
	}
	sort.Slice(s.Nodes, func(i, j int) bool { return nodeLess(s.Nodes[i].Name, s.Nodes[j].Name) })
	return s, nil
}

func nodeLess(a, b string) bool {
	ai, errA := strconv.Atoi(strings.TrimPrefix(a, "gpu-node-"))
	bi, errB := strconv.Atoi(strings.TrimPrefix(b, "gpu-node-"))
	if errA == nil && errB == nil {
		return ai < bi
	}
	return a < b
}

// TotalRSSKiB sums the resident memory of the running components.
func (s *Status) TotalRSSKiB() int64 {
	var t int64
	for _, c := range s.Components {
		t += c.RSSKiB
	}
	return t
}

// rssKiB reads VmRSS of pid from /proc (0 when unknown).
func rssKiB(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				v, _ := strconv.ParseInt(f[1], 10, 64)
				return v
			}
		}
	}
	return 0
}

// RESTConfigFor returns a REST config for the admin user of the sandbox in dir.
func RESTConfigFor(dir string) (*rest.Config, error) {
	return restConfig(Layout{dir}.Kubeconfig())
}

// ForwardPort makes `kubectl port-forward pod/<any sandbox pod> PODPORT` reach target
// (host:port on this machine) through the real API server and kwok, e.g. a local
// OpenAI-compatible test server standing behind simulated vLLM pods. It is recorded in the
// sandbox's state so that status shows it.
func ForwardPort(ctx context.Context, dir string, pf PortForward) error {
	if _, _, err := splitHostPort(pf.Target); err != nil {
		return err
	}
	st, k, err := connect(dir)
	if err != nil {
		return err
	}
	if err := k.applyPortForward(ctx, pf); err != nil {
		return err
	}
	unlock, err := lockFile(Layout{st.Dir}.Lock(), 0o600)
	if err != nil {
		return err
	}
	defer unlock()
	if st, err = LoadState(dir); err != nil {
		return err
	}
	kept := st.Config.PortForwards[:0]
	for _, old := range st.Config.PortForwards {
		if old.PodPort != pf.PodPort {
			kept = append(kept, old)
		}
	}
	st.Config.PortForwards = append(kept, pf)
	return saveState(st)
}

// SetScenario switches the running sandbox in dir to another scenario: nodes are updated (RDMA
// resource per the scenario) and the agent applies the new rules to pods created from now on.
// Pods already started keep their course.
func SetScenario(ctx context.Context, dir, name string) error {
	sc, err := LoadScenario(name)
	if err != nil {
		return err
	}
	unlock, err := lockFile(Layout{dir}.Lock(), 0o600)
	if err != nil {
		return err
	}
	defer unlock()
	st, k, err := connect(dir)
	if err != nil {
		return err
	}
	st.Config.Scenario = sc.Name
	if err := k.ensureNodes(ctx, st.Config, sc, 0); err != nil {
		return err
	}
	return saveState(st)
}

// connect loads the state of the sandbox in dir and connects to its API server.
func connect(dir string) (*State, *kube, error) {
	st, err := LoadState(dir)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := restConfig(st.Kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	k, err := newKube(cfg)
	return st, k, err
}
