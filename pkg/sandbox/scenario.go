package sandbox

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// data holds the kwok stages and the scenarios; samples holds the recorded workload output.
//
//go:embed data/stages/*.yaml data/scenarios/*.yaml
var data embed.FS

//go:embed samples
var samples embed.FS

// Scenario shapes the simulated cluster: which nodes lack the RDMA resource, pod timing and,
// through its rules, which recorded sample each pod logs and how it ends. It is data
// (data/scenarios/NAME.yaml); its rules are tried before those of data/scenarios/base.yaml.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Timing for every pod unless a rule says otherwise.
	Timing Timing `json:"timing"`
	Nodes  struct {
		// WithoutRDMA lists node numbers (1-based) that do not advertise the RDMA resource.
		WithoutRDMA []int `json:"withoutRDMA,omitempty"`
		// LinkRates gives a node (by number, 1-based) another port rate than DefaultLinkRate, as
		// sysfs prints it ("100 Gb/sec (2X HDR)": a link that trained at half width). The IB port
		// probe's sysfs and the perftest samples follow it.
		LinkRates map[string]string `json:"linkRates,omitempty"`
		// TrafficPort, when set ("mlx5_1:1"), is where the simulated collectives' bytes cross,
		// whatever HCAs their NCCL log names: a rail mapping that sends the traffic elsewhere.
		TrafficPort string `json:"trafficPort,omitempty"`
		// GPUFaults gives a node's GPU (by node number, 1-based, then GPU index: "2/0") a fault
		// its dcgm-exporter page shows: "xid79" (fallen off the bus), "xid48" (double-bit ECC),
		// "thermal" (clocks held by heat), "power-brake".
		GPUFaults map[string]string `json:"gpuFaults,omitempty"`
	} `json:"nodes"`
	Rules []Rule `json:"rules,omitempty"`
}

// Timing is a pod's simulated life: Pending→Running after StartAfter, Ready after ReadyAfter
// more, then (for pods with an outcome) Succeeded/Failed after CompleteAfter.
type Timing struct {
	StartAfter    Duration `json:"startAfter,omitempty"`
	ReadyAfter    Duration `json:"readyAfter,omitempty"`
	CompleteAfter Duration `json:"completeAfter,omitempty"`
}

// Duration is a time.Duration written as "10s" in YAML.
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	d.Duration = v
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// Rule gives matching pods a sample and an outcome. The first rule whose Match fits wins.
type Rule struct {
	Match Match `json:"match"`
	// Sample is a file under samples/ (a text/template, see SampleData), or empty for no logs.
	Sample string `json:"sample,omitempty"`
	// Outcome is Succeeded, Failed or Running (never completes). Empty: Succeeded for pods of a
	// PyTorchJob, MPIJob or Job (a v2beta1 MPIJob's launcher, a JobSet's pods), Running for the rest.
	Outcome  string `json:"outcome,omitempty"`
	ExitCode int    `json:"exitCode,omitempty"`
	Timing   Timing `json:"timing,omitempty"`
}

// Match selects pods; every field set must hold.
type Match struct {
	// Owner is the kind of the pod's controlling owner (PyTorchJob, MPIJob, ReplicaSet, Job), or "none".
	Owner string `json:"owner,omitempty"`
	// Role is the pod's role in its job, in lower case: the training-operator's replica type
	// (master, worker, launcher), the mpi-operator's job role (launcher, worker), or the JobSet
	// replicated job's name (Trainer v2: node, launcher).
	Role string `json:"role,omitempty"`
	// Command is a substring of any container's command and args joined by spaces.
	Command string `json:"command,omitempty"`
	// Env maps a container env var to its value ("" matches a var that is unset or empty).
	Env map[string]string `json:"env,omitempty"`
	// Node is the node name the pod is bound to.
	Node string `json:"node,omitempty"`
	// Fabric is the sandbox's fabric (ib or roce).
	Fabric string `json:"fabric,omitempty"`
	// InitContainer names an init container the pod must have; NoInitContainer one it must not.
	InitContainer   string            `json:"initContainer,omitempty"`
	NoInitContainer string            `json:"noInitContainer,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
	// WorkersReady, when set, must equal whether every worker of the pod's job (role worker or
	// node, at least one) was Ready when the agent picked the pod's rule: a launcher started
	// before its workers are Ready (v2beta1 launcherCreationPolicy AtStartup, a TrainJob launcher
	// without dependsOn) sees false, one held back by WaitForWorkersReady or dependsOn sees true.
	WorkersReady *bool `json:"workersReady,omitempty"`
}

// Scenarios lists the scenario names.
func Scenarios() []string {
	entries, _ := fs.ReadDir(data, "data/scenarios")
	var names []string
	for _, e := range entries {
		n := strings.TrimSuffix(e.Name(), ".yaml")
		if n != "base" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// LoadScenario reads a scenario by name, with the base rules appended and timing defaulted.
func LoadScenario(name string) (*Scenario, error) {
	if name == "" {
		name = DefaultScenario
	}
	var sc, base Scenario
	if err := readYAML("data/scenarios/"+name+".yaml", &sc); err != nil || name == "base" {
		return nil, fmt.Errorf("unknown sandbox scenario %q (known: %s)", name, strings.Join(Scenarios(), ", "))
	}
	if err := readYAML("data/scenarios/base.yaml", &base); err != nil {
		return nil, err
	}
	sc.Rules = append(sc.Rules, base.Rules...)
	sc.Timing = sc.Timing.or(base.Timing)
	for _, r := range sc.Rules {
		if r.Sample != "" {
			if _, err := fs.Stat(samples, path.Join("samples", r.Sample)); err != nil {
				return nil, fmt.Errorf("scenario %s: sample %s: %w", name, r.Sample, err)
			}
		}
	}
	return &sc, nil
}

func readYAML(name string, v any) error {
	raw, err := data.ReadFile(name)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(raw, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (t Timing) or(d Timing) Timing {
	if t.StartAfter.Duration == 0 {
		t.StartAfter = d.StartAfter
	}
	if t.ReadyAfter.Duration == 0 {
		t.ReadyAfter = d.ReadyAfter
	}
	if t.CompleteAfter.Duration == 0 {
		t.CompleteAfter = d.CompleteAfter
	}
	return t
}

// stagesYAML returns the kwok stage configuration.
func stagesYAML() ([]byte, error) {
	var out []byte
	for _, f := range []string{"data/stages/node.yaml", "data/stages/pod.yaml"} {
		b, err := data.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, "---\n"...)
		out = append(out, b...)
	}
	return out, nil
}
