package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// DCGMExporterPort is the port dcgm-exporter listens on (NVIDIA/dcgm-exporter: --address
// default ":9400"; the GPU Operator's nvidia-dcgm-exporter Service and pods use it).
const DCGMExporterPort = 9400

// dcgmExporters serves one dcgm-exporter page per simulated node on 127.0.0.1, and routes each
// nvidia-dcgm-exporter pod's port 9400 there (a kwok PortForward named as the pod), so that
// `kubectl port-forward` and ain reach a node's exporter through the API server as on a cluster.
type dcgmExporters struct {
	a     *agent
	ports map[string]int // node -> local port
	srv   []*http.Server
}

// startDCGM starts the per-node pages and keeps the exporter pods' port-forwards until ctx ends.
func (a *agent) startDCGM(ctx context.Context) (*dcgmExporters, error) {
	d := &dcgmExporters{a: a, ports: map[string]int{}}
	for i := 1; i <= a.st.Config.Nodes; i++ {
		node := NodeName(i)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			d.close()
			return nil, err
		}
		d.ports[node] = ln.Addr().(*net.TCPAddr).Port
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/metrics" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			a.writeDCGMPage(w, node)
		})}
		d.srv = append(d.srv, srv)
		go func() { _ = srv.Serve(ln) }()
	}
	go d.forwardLoop(ctx)
	return d, nil
}

func (d *dcgmExporters) close() {
	for _, s := range d.srv {
		_ = s.Close()
	}
}

// forwardLoop gives every exporter pod a PortForward to its node's page, as pods come.
func (d *dcgmExporters) forwardLoop(ctx context.Context) {
	done := map[string]bool{}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		pods, _ := d.a.lister.Pods(GPUOperatorNamespace).List(labels.SelectorFromSet(labels.Set{"app": "nvidia-dcgm-exporter"}))
		for _, p := range pods {
			port, ok := d.ports[p.Spec.NodeName]
			if !ok || done[p.Name] {
				continue
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "kwok.x-k8s.io/v1alpha1",
				"kind":       "PortForward",
				"metadata":   map[string]any{"name": p.Name, "namespace": p.Namespace},
				"spec": map[string]any{"forwards": []any{map[string]any{
					"ports":  []any{int64(DCGMExporterPort)},
					"target": map[string]any{"address": "127.0.0.1", "port": int64(port)},
				}}},
			}}
			if err := d.a.kube.apply(ctx, obj); err != nil {
				if !errors.Is(ctx.Err(), context.Canceled) {
					fmt.Fprintf(d.a.log, "sandbox agent: dcgm-exporter %s: %v\n", p.Name, err)
				}
				continue
			}
			done[p.Name] = true
		}
		select {
		case <-ctx.Done():
			d.close()
			return
		case <-t.C:
		}
	}
}

// dcgmField is one field of the page: name, type and HELP as dcgm-exporter's default counters
// (etc/default-counters.csv, dcp-metrics-included.csv) write them.
type dcgmField struct{ name, typ, help string }

var dcgmFields = []dcgmField{
	{"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."},
	{"DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned (in %)."},
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active (in %)."},
	{"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."},
	{"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."},
	{"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."},
	{"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."},
	{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (bitmask)."},
	{"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."},
}

// gpuState is what one simulated GPU shows.
type gpuState struct {
	pod, namespace, container string
	busy                      bool
	fault                     string
}

// writeDCGMPage writes node's page: every GPU of the node, a GPU that a running pod holds busy
// (its pod labels as the exporter's Kubernetes mapping writes them), the others idle, and the
// scenario's faults.
func (a *agent) writeDCGMPage(w io.Writer, node string) {
	a.mu.Lock()
	a.reload() // a scenario switched since (SetScenario) shows at once
	nGPU, faults := a.st.Config.GPUsPerNode, a.sc.Nodes.GPUFaults
	a.mu.Unlock()
	gpus := make([]gpuState, nGPU)
	pods := a.podsOn(node)
	sort.Slice(pods, func(i, j int) bool { return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name })
	next := 0
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range p.Spec.Containers {
			q, ok := c.Resources.Limits["nvidia.com/gpu"]
			for n := int64(0); ok && n < q.Value() && next < nGPU; n++ {
				gpus[next] = gpuState{pod: p.Name, namespace: p.Namespace, container: c.Name, busy: true}
				next++
			}
		}
	}
	nodeNo := strings.TrimPrefix(node, "gpu-node-")
	for i := range gpus {
		gpus[i].fault = faults[nodeNo+"/"+strconv.Itoa(i)]
	}
	for _, f := range dcgmFields {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for i, g := range gpus {
			fmt.Fprintf(w, "%s{gpu=\"%d\",UUID=\"GPU-%08x-0000-4000-8000-%012x\",pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"%s\",DCGM_FI_DRIVER_VERSION=\"570.133.20\"",
				f.name, i, nodeHash(node), i, 0x18+0x10*i, i, node)
			if g.pod != "" {
				fmt.Fprintf(w, ",container=\"%s\",namespace=\"%s\",pod=\"%s\"", g.container, g.namespace, g.pod)
			}
			fmt.Fprintf(w, "} %s\n", g.value(f.name))
		}
	}
}

func nodeHash(node string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(node); i++ {
		h = (h ^ uint32(node[i])) * 16777619
	}
	return h
}

// value is field's value on g, as DCGM formats it (integers for int64 fields, six decimals for
// the profiling ratios).
func (g gpuState) value(field string) string {
	util, sm, tensor, fb, power, temp := 0, 0.0, 0.0, 0, 72.0, 34
	if g.busy {
		util, sm, tensor, fb, power, temp = 97, 0.82, 0.45, 61440, 610.0, 71
	}
	clocks, xid := 0, 0
	switch g.fault {
	case "thermal":
		clocks, temp = 0x20|0x40, 89 // SW thermal slowdown | HW thermal slowdown (nvml clocks event reasons)
	case "power-brake":
		clocks = 0x80 // HW power brake slowdown
	case "xid79", "xid48":
		xid, _ = strconv.Atoi(strings.TrimPrefix(g.fault, "xid"))
		if g.fault == "xid79" {
			util, sm, tensor = 0, 0, 0 // a GPU that fell off the bus does no work
		}
	}
	switch field {
	case "DCGM_FI_DEV_GPU_UTIL":
		return strconv.Itoa(util)
	case "DCGM_FI_PROF_SM_ACTIVE":
		return strconv.FormatFloat(sm, 'f', 6, 64)
	case "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":
		return strconv.FormatFloat(tensor, 'f', 6, 64)
	case "DCGM_FI_DEV_FB_USED":
		return strconv.Itoa(fb)
	case "DCGM_FI_DEV_FB_FREE":
		return strconv.Itoa(81559 - fb)
	case "DCGM_FI_DEV_POWER_USAGE":
		return strconv.FormatFloat(power, 'f', 6, 64)
	case "DCGM_FI_DEV_GPU_TEMP":
		return strconv.Itoa(temp)
	case "DCGM_FI_DEV_CLOCKS_EVENT_REASONS":
		return strconv.Itoa(clocks)
	case "DCGM_FI_DEV_XID_ERRORS":
		return strconv.Itoa(xid)
	}
	return "0"
}
