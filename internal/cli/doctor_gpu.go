package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/dcgm"
	"github.com/ain-hpc/ain/pkg/kube"
)

// dcgmPageHint says what doctor gpu reads and how to save it.
const dcgmPageHint = "give dcgm-exporter's /metrics page (Prometheus text format, lines such as " +
	`DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-...",...} 97), one file per node: ` +
	"kubectl -n gpu-operator get pods -l app=nvidia-dcgm-exporter -o wide lists the exporter pods; save one with " +
	"kubectl get --raw /api/v1/namespaces/gpu-operator/pods/POD:9400/proxy/metrics > NODE.prom"

// doctorGPUDescription is doctor gpu's help text.
var doctorGPUDescription = "Reads the Prometheus text exposition of NVIDIA's dcgm-exporter (the GPU Operator's nvidia-dcgm-exporter,\n" +
	"port 9400) with the Prometheus project's parser, and prints per GPU (and per pod, from the exporter's pod,\n" +
	"namespace and container labels) the key DCGM fields: DCGM_FI_DEV_GPU_UTIL, DCGM_FI_PROF_SM_ACTIVE,\n" +
	"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, DCGM_FI_DEV_FB_USED/FREE, DCGM_FI_DEV_POWER_USAGE, DCGM_FI_DEV_GPU_TEMP,\n" +
	"DCGM_FI_DEV_CLOCKS_EVENT_REASONS (or the older DCGM_FI_DEV_CLOCK_THROTTLE_REASONS), DCGM_FI_DEV_XID_ERRORS,\n" +
	"DCGM_FI_PROF_NVLINK_TX/RX_BYTES and DCGM_FI_PROF_PCIE_TX/RX_BYTES. Fields the exporter does not collect show -.\n" +
	"Problems, each naming the host, GPU and pod with what to do: an XID (with its meaning from NVIDIA's Xid\n" +
	"catalog for the well-known ones), clocks throttled by heat, a hardware slowdown or a power brake (a power cap\n" +
	"alone is a warning), a rank's GPU idle (<=5%) while GPUs of the same job (namespace and pod name without its\n" +
	"rank and role) work (>=50%), and a GPU a pod holds at 0%. A page is one moment: sample again before acting\n" +
	"on an idle GPU. An input with no DCGM metrics (not the text format, or another exporter's page) fails\n" +
	"the check too (5): no GPU was seen, and the message says what to give. An input over " + fmt.Sprint(dcgm.MaxInput>>20) + " MiB is refused (1)."

func (a *App) doctorGPUCommand() *ucli.Command {
	o := &doctorOptions{}
	var nodes, prom string
	return &ucli.Command{
		Name:      "gpu",
		Usage:     "per GPU and pod: utilisation, SM/tensor activity, memory, power, heat, throttling, XIDs, NVLink/PCIe",
		ArgsUsage: "FILE... (dcgm-exporter's /metrics page, one per node, or Prometheus /federate output; - for stdin) | JOB (the pages of its nodes, its pods' GPUs) | --node NODE[,NODE...]",
		Description: doctorGPUDescription + "\n\nLive: --node reads each node's dcgm-exporter pod (GPU Operator: app=nvidia-dcgm-exporter; Helm chart:\n" +
			"app.kubernetes.io/name=dcgm-exporter; any namespace) through the API server, as kubectl port-forward does to its port\n" +
			"9400 (needs list on pods and create on pods/portforward there); JOB does the same for the nodes of a job's pods and\n" +
			"keeps the GPUs the exporter maps to them. With --prometheus URL both read the series from Prometheus instead.\n\n" + doctorExitNote,
		Flags: []ucli.Flag{outputFlag(&o.Output, "text", "output format: text or json", "json"),
			&ucli.StringFlag{Name: "node", Usage: "read the live dcgm-exporter page of these nodes (comma-separated)", Destination: &nodes},
			&ucli.StringFlag{Name: "prometheus", Usage: "with --node or JOB: read the DCGM series from this Prometheus `URL` (one /federate request; no access to the exporter's namespace needed) instead of the exporter pods", Destination: &prom, Action: httpURL("prometheus")}},
		Action: func(c *ucli.Context) error {
			o.Files = c.Args().Slice()
			read := dcgm.FromPrometheus(&http.Client{Timeout: 30 * time.Second}, prom)
			if nodes != "" {
				if len(o.Files) > 0 {
					return ainerr.Usagef("--node reads the live pages: give no FILE or JOB with it")
				}
				return a.runDoctorGPULive(c.Context, o, dcgm.Live{Nodes: strings.Split(nodes, ","), Read: read}, "")
			}
			if job, ok := jobArg(o.Files); ok {
				return a.runDoctorGPUJob(c.Context, o, job, read)
			}
			if prom != "" {
				return ainerr.Usagef("--prometheus reads live series: give --node NODE or a JOB with it, not a FILE")
			}
			return a.runDoctorGPU(c.Context, o)
		},
	}
}

// runDoctorGPUJob judges a job's pods' GPUs from the live pages of their nodes.
func (a *App) runDoctorGPUJob(ctx context.Context, o *doctorOptions, name string, read func(context.Context, []string) ([]dcgm.GPU, error)) error {
	_, _, _, pods, err := a.jobPods(ctx, o, name)
	if err != nil {
		return err
	}
	return a.runDoctorGPULive(ctx, o, dcgm.Live{Pods: pods, Read: read}, name)
}

// runDoctorGPULive reads the live pages l selects (of job's pods, when job is not "") and judges
// them as the file form does.
func (a *App) runDoctorGPULive(ctx context.Context, o *doctorOptions, l dcgm.Live, job string) error {
	if err := o.validate(0, 0, ""); err != nil {
		return err
	}
	var kc *kube.Clients
	var err error
	if l.Read == nil || l.Pods != nil { // --prometheus --node asks no cluster
		if kc, err = a.clients(); err != nil {
			return err
		}
		a.sandboxNote(kc)
	}
	l.Progress = func(e dcgm.Exporter) { fmt.Fprintln(a.Streams.Err, "reading dcgm-exporter", e) }
	res, err := dcgm.ReadLive(ctx, kc.RESTOrNil(), kc.KubeOrNil(), l)
	if mapped, ok := libError(err, code[*dcgm.ScrapeError](ainerr.Failure), code[*dcgm.NoExporterError](ainerr.CheckFailed),
		code[*dcgm.NotScrapedError](ainerr.CheckFailed), code[*dcgm.PrometheusError](ainerr.Unreachable)); ok && ctx.Err() == nil {
		return mapped
	}
	switch {
	case ctx.Err() != nil:
		return ainerr.New(ainerr.Cancelled, errors.New("interrupted while reading the dcgm-exporter pages: no verdict"), "")
	case errors.As(err, &dcgm.NoNodeError{}):
		return ainerr.New(ainerr.Failure, fmt.Errorf("no pod of %s is on a node yet", job), "`ain status "+job+"` says why they are Pending")
	case err != nil:
		return kc.Classify(err, "reading the dcgm-exporter pages")
	case res.Partial != nil:
		fmt.Fprintf(a.Streams.Err, "warning: %v: those GPUs are not judged\n", res.Partial)
	}
	if res.Unmapped {
		fmt.Fprintln(a.Streams.Err, "warning: the exporter maps no GPU to a pod (its Kubernetes mapping is off): every GPU of the job's nodes is shown")
	}
	r := dcgm.Analyze(res.GPUs)
	return a.verdict(o.Output, r, func() error { r.WriteText(a.Streams.Out, a.Streams.IsTTY, withNext); return nil }, r.OK)
}

func (a *App) runDoctorGPU(ctx context.Context, o *doctorOptions) error {
	if err := o.validate(1, 0, "dcgm-exporter's /metrics page(s)"); err != nil {
		return err
	}
	var gpus []dcgm.GPU
	for _, name := range o.Files {
		gs, err := parseInput(ctx, a, name, dcgm.ParsePage)
		if errors.As(err, new(*dcgm.FormatError)) || errors.As(err, new(dcgm.NoMetricsError)) {
			return ainerr.New(ainerr.CheckFailed, err, dcgmPageHint)
		} else if err != nil {
			return err
		}
		gpus = append(gpus, gs...)
	}
	r := dcgm.Analyze(gpus)
	return a.verdict(o.Output, r, func() error { r.WriteText(a.Streams.Out, a.Streams.IsTTY, withNext); return nil }, r.OK)
}
