// Package dcgm reads the Prometheus text exposition of NVIDIA's dcgm-exporter (the GPU Operator's
// nvidia-dcgm-exporter DaemonSet; its pods' metrics port, 9400 by default; /metrics) and says,
// per GPU and per pod holding it, what the key DCGM fields show and what a person should do
// about it.
//
// # Input
//
// The page is parsed by the Prometheus project's own parser (github.com/prometheus/common/expfmt),
// so anything Prometheus scrapes reads here too: a node's /metrics page, or Prometheus's
// /federate output for the DCGM_ series. Each series of a field is one GPU (or one MIG instance,
// or one pod sharing a GPU), named by the labels dcgm-exporter writes in this order
// (internal/pkg/rendermetrics/render_metrics.go): gpu, UUID (its name is configurable; uuid and
// gpu_uuid are read too), pci_bus_id, device, modelName, GPU_I_PROFILE and GPU_I_ID on MIG,
// Hostname (hostname since dcgm-exporter's rename of the label), then the pod attributes
// container, namespace and pod when the exporter maps GPUs to pods (its kubernetes
// transformation; container_name, pod_namespace and pod_name instead when it runs with
// --use-old-namespace, DCGM_EXPORTER_USE_OLD_NAMESPACE: internal/pkg/transformation/const.go),
// and label fields such as DCGM_FI_DRIVER_VERSION. The exporter's --kubernetes-gpu-id-type
// (device-name on GKE, whose device plugin names GPUs nvidia0...) changes only how it finds a
// GPU's pod, not the labels it writes: gpu is still the index and device the nvidiaN name
// (internal/pkg/collector: Metric.GetIDOfType; the render template), so pods map the same.
//
// # Fields
//
// The fields read, as dcgm-exporter names them (etc/default-counters.csv; DCGM's dcgm_fields.h):
// DCGM_FI_DEV_GPU_UTIL (%), DCGM_FI_PROF_SM_ACTIVE and DCGM_FI_PROF_PIPE_TENSOR_ACTIVE (ratios
// 0..1), DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE (MiB), DCGM_FI_DEV_POWER_USAGE (W),
// DCGM_FI_DEV_GPU_TEMP (C), DCGM_FI_DEV_CLOCKS_EVENT_REASONS (field 112, a bitmask; called
// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS before DCGM 3.2, both read), DCGM_FI_DEV_XID_ERRORS (the
// last XID seen), DCGM_FI_PROF_NVLINK_TX_BYTES/RX_BYTES and DCGM_FI_PROF_PCIE_TX_BYTES/RX_BYTES
// (bytes per second). A value DCGM could not read is one of its blank values (DCGM_INT64_BLANK
// 0x7ffffffffffffff0, DCGM_INT32_BLANK 0x7ffffff0 or DCGM_FP64_BLANK 2^47, each up to +15) and
// counts as absent, as does NaN or an infinity.
package dcgm

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ain-hpc/ain/pkg/input"
)

// MaxInput bounds one input: an 8-GPU node's page with pod labels is about 100 KiB, and a
// /federate dump of a few hundred nodes fits too.
const MaxInput = 64 << 20

// Field names, as dcgm-exporter emits them.
const (
	FieldGPUUtil          = "DCGM_FI_DEV_GPU_UTIL"
	FieldSMActive         = "DCGM_FI_PROF_SM_ACTIVE"
	FieldTensorActive     = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
	FieldGREngineActive   = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
	FieldFBUsed           = "DCGM_FI_DEV_FB_USED"
	FieldFBFree           = "DCGM_FI_DEV_FB_FREE"
	FieldPower            = "DCGM_FI_DEV_POWER_USAGE"
	FieldTemp             = "DCGM_FI_DEV_GPU_TEMP"
	FieldClocksEvent      = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
	FieldClockThrottleOld = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
	FieldXID              = "DCGM_FI_DEV_XID_ERRORS"
	FieldNVLinkTx         = "DCGM_FI_PROF_NVLINK_TX_BYTES"
	FieldNVLinkRx         = "DCGM_FI_PROF_NVLINK_RX_BYTES"
	FieldPCIeTx           = "DCGM_FI_PROF_PCIE_TX_BYTES"
	FieldPCIeRx           = "DCGM_FI_PROF_PCIE_RX_BYTES"
)

// GPU is one GPU (or MIG instance) as one pod sees it: the exporter writes one series per GPU,
// or per GPU and pod when it maps GPUs to pods. Absent fields are nil.
type GPU struct {
	Host      string `json:"host,omitempty"`
	GPU       string `json:"gpu"` // the exporter's gpu label: the GPU's index on its node
	UUID      string `json:"uuid,omitempty"`
	Device    string `json:"device,omitempty"` // nvidia0...
	PCIBusID  string `json:"pci_bus_id,omitempty"`
	Model     string `json:"model,omitempty"`
	MIG       string `json:"mig_profile,omitempty"` // GPU_I_PROFILE
	MIGID     string `json:"mig_instance,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	// ReadAt is when its page was read, on a live read (NodeReader); zero for a file.
	ReadAt time.Time `json:"read_at,omitzero"`

	UtilPct      *float64 `json:"gpu_util_pct,omitempty"`
	SMActive     *float64 `json:"sm_active,omitempty"`     // 0..1
	TensorActive *float64 `json:"tensor_active,omitempty"` // 0..1
	// GREngineActive is the fraction of time the graphics engine (any kernel) was active, 0..1:
	// on by default in dcgm-exporter's counters, and read on MIG instances, where GPU_UTIL is 0.
	GREngineActive *float64 `json:"gr_engine_active,omitempty"`
	FBUsedMiB      *float64 `json:"fb_used_mib,omitempty"`
	FBFreeMiB      *float64 `json:"fb_free_mib,omitempty"`
	PowerW         *float64 `json:"power_w,omitempty"`
	TempC          *float64 `json:"temp_c,omitempty"`
	ClockEvents    *uint64  `json:"clock_event_reasons,omitempty"` // DCGM's bitmask
	ClockReasons   []string `json:"clock_reasons,omitempty"`       // its bits, decoded
	XID            *int64   `json:"xid,omitempty"`                 // the last XID; 0: none
	NVLinkTxBps    *float64 `json:"nvlink_tx_bytes_per_s,omitempty"`
	NVLinkRxBps    *float64 `json:"nvlink_rx_bytes_per_s,omitempty"`
	PCIeTxBps      *float64 `json:"pcie_tx_bytes_per_s,omitempty"`
	PCIeRxBps      *float64 `json:"pcie_rx_bytes_per_s,omitempty"`
}

// Name is how verdicts name the GPU: host, index (and MIG instance), and the pod holding it.
func (g *GPU) Name() string {
	var b strings.Builder
	if g.Host != "" {
		b.WriteString(g.Host + " ")
	}
	b.WriteString("GPU " + g.GPU)
	if g.MIGID != "" {
		b.WriteString(" MIG " + g.MIGID)
		if g.MIG != "" {
			b.WriteString(" (" + g.MIG + ")")
		}
	}
	if g.Pod != "" {
		b.WriteString(" pod " + g.PodName())
	}
	return b.String()
}

// PodName is namespace/pod, or "" for a GPU no pod holds.
func (g *GPU) PodName() string {
	if g.Pod == "" {
		return ""
	}
	if g.Namespace == "" {
		return g.Pod
	}
	return g.Namespace + "/" + g.Pod
}

// Busy is the GPU's utilisation in percent: DCGM_FI_DEV_GPU_UTIL, else SM activity, else the
// graphics engine's activity; ok is false when the page has none. On a MIG instance GPU_UTIL
// is not read: dcgm-exporter reports it as 0 there (NVIDIA/dcgm-exporter#216, whose maintainers
// point to DCGM_FI_PROF_GR_ENGINE_ACTIVE).
func (g *GPU) Busy() (pct float64, ok bool) {
	if g.UtilPct != nil && g.MIGID == "" {
		return *g.UtilPct, true
	}
	if g.SMActive != nil {
		return *g.SMActive * 100, true
	}
	if g.GREngineActive != nil {
		return *g.GREngineActive * 100, true
	}
	return 0, false
}

// Sample is what a page holds: its GPUs, sorted by host, index, MIG instance and pod, and how many
// DCGM_ series it had (any DCGM field counts, read or not).
type Sample struct {
	GPUs []GPU `json:"gpus"`
	// Series counts the DCGM_ samples on the page; 0 means it is not a dcgm-exporter page.
	Series int `json:"series"`
}

// FormatError is an input that is not the Prometheus text format (an HTML page, JSON from
// Prometheus's query API, a truncated line): expfmt's error, with its line.
type FormatError struct{ Err error }

func (e *FormatError) Error() string { return "not the Prometheus text format: " + e.Err.Error() }
func (e *FormatError) Unwrap() error { return e.Err }

// NoMetricsError is a page in the Prometheus text format without any DCGM_ series: not a
// dcgm-exporter page.
type NoMetricsError struct{}

func (NoMetricsError) Error() string { return "no DCGM metrics (DCGM_FI_*) in it: no GPU seen" }

// ParsePage is Parse for an input that must be a dcgm-exporter page: its GPUs, or a
// *FormatError, or a NoMetricsError.
func ParsePage(r io.Reader) ([]GPU, error) {
	s, err := Parse(r)
	switch {
	case err != nil:
		return nil, err
	case s.Series == 0:
		return nil, NoMetricsError{}
	}
	return s.GPUs, nil
}

// Parse reads one dcgm-exporter page (at most MaxInput bytes). A page that is not the Prometheus
// text format is a *FormatError; one in that format without any DCGM_ series parses to a Sample
// with Series 0, which the caller reports.
func Parse(r io.Reader) (*Sample, error) {
	b, err := input.ReadAll(r, "input", MaxInput)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return nil, &FormatError{err}
	}
	return fromFamilies(fams), nil
}

type gpuKey struct{ host, gpu, uuid, mig, ns, pod, container string }

func fromFamilies(fams map[string]*dto.MetricFamily) *Sample {
	s := &Sample{GPUs: []GPU{}}
	idx := map[gpuKey]int{}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasPrefix(name, "DCGM_") {
			continue
		}
		for _, m := range fams[name].GetMetric() {
			s.Series++
			v, ok := value(m)
			if !ok {
				continue
			}
			l := labels(m)
			k := gpuKey{
				host: first(l, "Hostname", "hostname"), gpu: l["gpu"],
				uuid: first(l, "UUID", "uuid", "gpu_uuid"), mig: l["GPU_I_ID"],
				ns: first(l, "namespace", "pod_namespace"), pod: first(l, "pod", "pod_name"),
				container: first(l, "container", "container_name"),
			}
			if k.gpu == "" && k.uuid == "" || l["nvlink"] != "" || l["nvswitch"] != "" {
				continue // a link, switch or CPU series, not a GPU's
			}
			i, seen := idx[k]
			if !seen {
				i = len(s.GPUs)
				idx[k] = i
				s.GPUs = append(s.GPUs, GPU{
					Host: k.host, GPU: k.gpu, UUID: k.uuid, MIGID: k.mig, MIG: l["GPU_I_PROFILE"],
					Namespace: k.ns, Pod: k.pod, Container: k.container,
					Device: l["device"], PCIBusID: l["pci_bus_id"], Model: first(l, "modelName", "model_name"),
				})
			}
			set(&s.GPUs[i], name, v)
		}
	}
	sortGPUs(s.GPUs)
	return s
}

// sortGPUs orders GPUs by host, index (numerically), MIG instance and pod.
func sortGPUs(gpus []GPU) {
	sort.SliceStable(gpus, func(i, j int) bool {
		a, b := &gpus[i], &gpus[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		if a.GPU != b.GPU {
			ai, aerr := strconv.Atoi(a.GPU)
			bi, berr := strconv.Atoi(b.GPU)
			if aerr == nil && berr == nil {
				return ai < bi
			}
			return a.GPU < b.GPU
		}
		if a.MIGID != b.MIGID {
			return a.MIGID < b.MIGID
		}
		return a.PodName() < b.PodName()
	})
}

func set(g *GPU, field string, v float64) {
	f := func(p **float64) { x := v; *p = &x }
	switch field {
	case FieldGPUUtil:
		f(&g.UtilPct)
	case FieldSMActive:
		f(&g.SMActive)
	case FieldTensorActive:
		f(&g.TensorActive)
	case FieldGREngineActive:
		f(&g.GREngineActive)
	case FieldFBUsed:
		f(&g.FBUsedMiB)
	case FieldFBFree:
		f(&g.FBFreeMiB)
	case FieldPower:
		f(&g.PowerW)
	case FieldTemp:
		f(&g.TempC)
	case FieldNVLinkTx:
		f(&g.NVLinkTxBps)
	case FieldNVLinkRx:
		f(&g.NVLinkRxBps)
	case FieldPCIeTx:
		f(&g.PCIeTxBps)
	case FieldPCIeRx:
		f(&g.PCIeRxBps)
	case FieldClocksEvent, FieldClockThrottleOld:
		if v < 0 || v >= 1<<63 || v != math.Trunc(v) {
			return
		}
		bits := uint64(v)
		g.ClockEvents = &bits
		g.ClockReasons = ClockReasons(bits)
	case FieldXID:
		if v < 0 || v > math.MaxInt32 || v != math.Trunc(v) {
			return
		}
		x := int64(v)
		g.XID = &x
	}
}

// value is a sample's value, unless DCGM could not read it (a blank) or it is not finite.
func value(m *dto.Metric) (float64, bool) {
	var v float64
	switch {
	case m.Gauge != nil:
		v = m.Gauge.GetValue()
	case m.Counter != nil:
		v = m.Counter.GetValue()
	case m.Untyped != nil:
		v = m.Untyped.GetValue()
	default:
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || Blank(v) {
		return 0, false
	}
	return v, true
}

// Blank reports whether v is one of DCGM's blank values (dcgm_structs.h: DCGM_INT32_BLANK,
// DCGM_INT64_BLANK, DCGM_FP64_BLANK, each with its 15 codes above it): the field was not read.
func Blank(v float64) bool {
	const fp64Blank = 1 << 47
	const int32Blank = 0x7ffffff0
	const int64Blank = 0x7ffffffffffffff0 // 9223372036854775792, exact as a float64
	return (v >= fp64Blank && v < fp64Blank+16) || (v >= int32Blank && v < int32Blank+16) || v >= int64Blank
}

func labels(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.GetLabel()))
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

func first(l map[string]string, names ...string) string {
	for _, n := range names {
		if v := l[n]; v != "" {
			return v
		}
	}
	return ""
}

// Clock event reason bits (DCGM's dcgm_fields.h, DCGM_CLOCKS_EVENT_REASON_*; NVML's
// nvmlClocksEventReason* are the same bits).
const (
	ClockGPUIdle       = 0x001
	ClockSetting       = 0x002
	ClockSWPowerCap    = 0x004
	ClockHWSlowdown    = 0x008
	ClockSyncBoost     = 0x010
	ClockSWThermal     = 0x020
	ClockHWThermal     = 0x040
	ClockHWPowerBrake  = 0x080
	ClockDisplayClocks = 0x100
)

var clockBits = []struct {
	bit  uint64
	name string
}{
	{ClockGPUIdle, "gpu_idle"},
	{ClockSetting, "clocks_setting"},
	{ClockSWPowerCap, "sw_power_cap"},
	{ClockHWSlowdown, "hw_slowdown"},
	{ClockSyncBoost, "sync_boost"},
	{ClockSWThermal, "sw_thermal"},
	{ClockHWThermal, "hw_thermal"},
	{ClockHWPowerBrake, "hw_power_brake"},
	{ClockDisplayClocks, "display_clocks"},
}

// ClockReasons names the bits set in a clock event bitmask, in bit order; a bit DCGM does not
// document is "bit N".
func ClockReasons(bits uint64) []string {
	out := []string{}
	for _, b := range clockBits {
		if bits&b.bit != 0 {
			out = append(out, b.name)
			bits &^= b.bit
		}
	}
	for i := 0; bits != 0; i++ {
		if bits&1 != 0 {
			out = append(out, fmt.Sprintf("bit %d", i))
		}
		bits >>= 1
	}
	return out
}
