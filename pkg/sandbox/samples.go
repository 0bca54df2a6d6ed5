package sandbox

// What the agent's simulated programs print and move: the recorded samples rendered for a pod,
// the RDMA traffic a simulated collective adds to its nodes' port counters, and the CRI log
// format kwok serves logs in.

import (
	"bytes"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ain-hpc/ain/pkg/lazyre"
	"github.com/ain-hpc/ain/pkg/nccl"
)

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

type sampleError struct{ err error }

func (e *sampleError) Error() string { return e.err.Error() }
func (e *sampleError) Unwrap() error { return e.err }

// SampleData is what a sample template sees.
type SampleData struct {
	Pod, Namespace, Node, PodIP, HostIP string
	NodeIndex                           int // N of gpu-node-N
	Job, Role                           string
	Index                               int // replica index
	Rank, WorldSize                     int // from the container env (RANK, WORLD_SIZE), else derived
	Fabric                              string
	Hosts                               []string // the job's worker pod names, sorted (MPI launchers)
	NodesOf                             []string // the job's nodes, one per worker
	Env                                 map[string]string
	GPUs                                int
	PID                                 int // a plausible process id, stable per pod
	Time                                time.Time
	// LinkRate is this node's port rate as sysfs prints it (the scenario's nodes.linkRates, else
	// DefaultLinkRate). PathGbps is the rate in Gb/s of the slower end between this pod's node and
	// the nodes of the other pods of its pair run (perftest server and client): what a two-node
	// test between them can reach.
	LinkRate string
	PathGbps float64
	// Command is the first container's command and args joined by spaces.
	Command string
	// Traffic is what the simulated collectives sent (and received) over this node's RDMA ports
	// so far, by port ("mlx5_0:1"): the counter samples add it to their counters (Counter).
	Traffic map[string]uint64
}

// Counter is the value of an RDMA port counter on this node: a plausible reading since boot
// (different per node) plus what the simulated collectives moved. port_xmit_data and
// port_rcv_data count 4-byte words (kernel Documentation/ABI/stable/sysfs-class-infiniband);
// packets are 4 KiB (the IB MTU); error counters stay 0.
func (d SampleData) Counter(port, name string) uint64 {
	base := uint64(1_000_000_000) + uint64(d.NodeIndex)*7_340_033
	moved := d.Traffic[port]
	switch name {
	case "port_xmit_data", "port_rcv_data":
		return base + moved/4
	case "port_xmit_packets", "port_rcv_packets":
		return base/1024 + moved/4096
	}
	return 0
}

// DefaultLinkRate is every simulated port's rate unless the scenario says otherwise: 4X HDR, the
// fabric the nccl-tests samples' numbers are modelled on.
const DefaultLinkRate = "200 Gb/sec (4X HDR)"

// labelPairRun groups the pods of one probe or pair run (pkg/preflight's LabelProbeRun) and
// labelPairRole marks the server and client of a pair run (LabelPairRole); not imported:
// preflight's tests use the sandbox.
const (
	labelPairRun  = "ain.dev/probe-run"
	labelPairRole = "ain.dev/pair-role"
)

func (a *agent) sampleData(pod *corev1.Pod) SampleData {
	d := SampleData{
		Pod: pod.Name, Namespace: pod.Namespace, Node: pod.Spec.NodeName,
		PodIP: pod.Status.PodIP, HostIP: pod.Status.HostIP,
		Fabric: a.st.Config.Fabric, Env: map[string]string{}, Time: time.Now().UTC(),
	}
	jobKey := ""
	jobKey, d.Job, d.Role, d.Index = podJob(pod)
	d.NodeIndex, _ = strconv.Atoi(strings.TrimPrefix(pod.Spec.NodeName, "gpu-node-"))
	d.Traffic = maps.Clone(a.traffic[pod.Spec.NodeName])
	d.LinkRate = linkRate(a.sc, pod.Spec.NodeName)
	d.PathGbps = rateGbps(d.LinkRate)
	// Only a pair's two pods share a link; a probe run's pods (one per node, 1000 in a large
	// preflight) do not, and looking each one's peers up would cost the agent O(nodes) a pod.
	if run := pod.Labels[labelPairRun]; run != "" && pod.Labels[labelPairRole] != "" {
		peers, _ := a.lister.Pods(pod.Namespace).List(labels.SelectorFromSet(labels.Set{labelPairRun: run}))
		for _, p := range peers {
			if p.Spec.NodeName != "" {
				d.PathGbps = min(d.PathGbps, rateGbps(linkRate(a.sc, p.Spec.NodeName)))
			}
		}
	}
	if len(pod.Spec.Containers) > 0 {
		c := pod.Spec.Containers[0]
		d.Command = commandLine(c)
	}
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Value != "" {
				d.Env[e.Name] = e.Value
			}
		}
		if q, ok := c.Resources.Limits["nvidia.com/gpu"]; ok {
			d.GPUs += int(q.Value())
		}
	}
	h := 0
	for _, c := range string(pod.UID) {
		h = (h*31 + int(c)) % 90000
	}
	d.PID = 100 + h
	if d.Job != "" {
		sel := labels.SelectorFromSet(labels.Set{jobKey: d.Job})
		pods, _ := a.lister.Pods(pod.Namespace).List(sel)
		type w struct {
			idx        int
			name, node string
		}
		var ws []w
		hasMaster := false
		for _, p := range pods {
			_, _, role, i := podJob(p)
			switch role {
			case "worker", "node": // "node": Trainer v2's replicated job of training nodes
				ws = append(ws, w{i, p.Name, p.Spec.NodeName})
			case "master":
				hasMaster = true
			}
		}
		sort.Slice(ws, func(i, j int) bool { return ws[i].idx < ws[j].idx })
		for _, x := range ws {
			d.Hosts = append(d.Hosts, x.name)
			d.NodesOf = append(d.NodesOf, x.node)
		}
		d.WorldSize = len(ws)
		if hasMaster {
			d.WorldSize++
			if d.Role == "worker" {
				d.Rank = d.Index + 1
			}
		} else {
			d.Rank = d.Index
		}
	}
	if v, err := strconv.Atoi(d.Env["RANK"]); err == nil {
		d.Rank = v
	} else if v, err := strconv.Atoi(d.Env["PET_NODE_RANK"]); err == nil {
		d.Rank = v
	}
	if v, err := strconv.Atoi(d.Env["WORLD_SIZE"]); err == nil {
		d.WorldSize = v
	} else if v, err := strconv.Atoi(d.Env["PET_NNODES"]); err == nil {
		d.WorldSize = v
	}
	if d.WorldSize == 0 {
		d.WorldSize = 1
	}
	if d.GPUs == 0 {
		d.GPUs = 1
	}
	return d
}

// account adds what a simulated nccl-tests allreduce sent to its nodes' RDMA ports, when its
// output says NCCL used IB or RoCE (a socket fallback moves nothing there): per node 2(n-1)/n x
// size for each timed iteration of both the out-of-place and in-place passes, plus the warm-up,
// spread over the devices NCCL's log names.
func (a *agent) account(d SampleData, text string) {
	if !strings.Contains(text, "# Collective test starting") {
		a.accountTraining(d, text)
		return
	}
	if len(d.NodesOf) < 2 {
		return
	}
	runs, err := nccl.ParsePerf(strings.NewReader(text))
	if err != nil || len(runs) == 0 {
		return
	}
	rep, err := nccl.AnalyzeLog(strings.NewReader(text))
	if err != nil || (rep.Transport != nccl.TransportIB && rep.Transport != nccl.TransportRoCE) {
		return
	}
	iters, warm := 20, 5 // nccl-tests' -n and -w defaults
	if m := itersHeader().FindStringSubmatch(text); m != nil {
		warm, _ = strconv.Atoi(m[1])
		iters, _ = strconv.Atoi(m[2])
	}
	n := float64(len(d.NodesOf))
	var sent float64
	for _, row := range runs[len(runs)-1].Rows {
		sent += 2 * (n - 1) / n * float64(row.Size) * float64(2*iters+warm)
	}
	a.addTraffic(d.NodesOf, a.trafficDevices(rep.Devices), sent)
	fmt.Fprintf(a.log, "sandbox agent: %s/%s: all_reduce_perf over %s moved %.0f bytes per node\n", d.Namespace, d.Pod, rep.Transport, sent)
}

// Simulated gradient traffic of one training rank (the qlora samples): the ring allreduce of
// the LoRA adapters' bf16 gradients (41,943,040 trainable parameters, as the samples print, x 2
// bytes) for trainSteps optimizer steps. The number is illustrative: ain's check of a training
// job only asks that every node's HCAs moved.
const (
	trainGradBytes = 41_943_040 * 2
	trainSteps     = 80
)

// accountTraining adds what a training rank of a multi-rank job sent to its own node's RDMA
// ports, when its log says NCCL set up its communicator over IB or RoCE (a socket fallback
// moves nothing there). Each rank's pod accounts its own node.
func (a *agent) accountTraining(d SampleData, text string) {
	if d.WorldSize < 2 || d.Node == "" || !strings.Contains(text, "Init COMPLETE") {
		return
	}
	rep, err := nccl.AnalyzeLog(strings.NewReader(text))
	if err != nil || (rep.Transport != nccl.TransportIB && rep.Transport != nccl.TransportRoCE) {
		return
	}
	n := float64(d.WorldSize)
	sent := 2 * (n - 1) / n * trainGradBytes * trainSteps
	a.addTraffic([]string{d.Node}, a.trafficDevices(rep.Devices), sent)
	fmt.Fprintf(a.log, "sandbox agent: %s/%s: training rank %d/%d over %s moved %.0f bytes on %s\n", d.Namespace, d.Pod, d.Rank, d.WorldSize, rep.Transport, sent, d.Node)
}

// trafficDevices are the ports simulated traffic crosses: the scenario's trafficPort (a
// wrong-HCA scenario), else the devices NCCL's log names, else mlx5_0:1.
func (a *agent) trafficDevices(logged []string) []string {
	switch {
	case a.sc != nil && a.sc.Nodes.TrafficPort != "":
		return []string{a.sc.Nodes.TrafficPort}
	case len(logged) > 0:
		return logged
	}
	return []string{"mlx5_0:1"}
}

// addTraffic spreads sent bytes per node over devs on each of nodes.
func (a *agent) addTraffic(nodes, devs []string, sent float64) {
	if a.traffic == nil {
		a.traffic = map[string]map[string]uint64{}
	}
	for _, node := range nodes {
		if a.traffic[node] == nil {
			a.traffic[node] = map[string]uint64{}
		}
		for _, dev := range devs {
			a.traffic[node][dev] += uint64(sent / float64(len(devs)))
		}
	}
}

var itersHeader = lazyre.New(`warmup iters: (\d+) iters: (\d+)`)

// linkRate is the port rate of a node (gpu-node-N) in scenario sc.
func linkRate(sc *Scenario, node string) string {
	if sc != nil {
		if r, ok := sc.Nodes.LinkRates[strings.TrimPrefix(node, "gpu-node-")]; ok {
			return r
		}
	}
	return DefaultLinkRate
}

// rateGbps reads "200 Gb/sec (4X HDR)" as 200 (0 when it is not a rate).
func rateGbps(rate string) float64 {
	f := strings.Fields(rate)
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// RenderSample renders the sample file (relative to samples/) for d.
func RenderSample(name string, d SampleData) (string, error) {
	raw, err := samples.ReadFile("samples/" + name)
	if err != nil {
		return "", fmt.Errorf("sample %s: %w", name, err)
	}
	if d.LinkRate == "" {
		d.LinkRate = DefaultLinkRate
	}
	if d.PathGbps == 0 {
		d.PathGbps = rateGbps(d.LinkRate)
	}
	t, err := template.New(name).Funcs(sampleFuncs).Option("missingkey=zero").Parse(string(raw))
	if err != nil {
		return "", fmt.Errorf("sample %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("sample %s: %w", name, err)
	}
	return strings.TrimLeft(b.String(), "\n"), nil
}

var sampleFuncs = template.FuncMap{
	"add": func(a, b int) int { return a + b },
	"mul": func(a, b int) int { return a * b },
	"sub": func(a, b int) int { return a - b },
	"mod": func(a, b int) int {
		if b == 0 {
			return 0
		}
		return a % b
	},
	"seq": func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		return s
	},
	"index0": func(ss []string, i int) string {
		if i < 0 || i >= len(ss) {
			return ""
		}
		return ss[i]
	},
	"or0": func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	},
	"hex":      func(i int) string { return fmt.Sprintf("%x", i) },
	"contains": strings.Contains,
	"list2":    func(a, b string) []string { return []string{a, b} },
	"atoi": func(s string) int {
		n, _ := strconv.Atoi(s)
		return max(n, 1)
	},
	"arg":         argOf,
	"bwRows":      perftestBWRows,
	"latRows":     perftestLatRows,
	"iperfReport": iperfReport,
}

// CRILog formats text as a container runtime log (one "TIME stdout F line" per line), the
// format kwok serves logs from.
func CRILog(text string, start time.Time) []byte {
	var b bytes.Buffer
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, line := range lines {
		criRecord(&b, start.Add(time.Duration(i)*time.Millisecond).Format(criTime), "F", []byte(line))
	}
	return b.Bytes()
}
