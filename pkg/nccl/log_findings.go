// The findings: problems and warnings with their evidence and fixes, and the one-line summary.

package nccl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
)

func (a *LogAnalyzer) envValue(name string) (string, bool) {
	if i, ok := a.envIdx[name]; ok {
		return a.env[i].Value, true
	}
	return "", false
}

func (a *LogAnalyzer) envEvidence(name string) []Evidence {
	if i, ok := a.envIdx[name]; ok {
		e := a.env[i]
		return []Evidence{{File: e.File, Line: e.Line, Text: e.text}}
	}
	return nil
}

const fixNoDevice = "check, in this order: (1) the pod requests the RDMA resource (e.g. rdma/rdma_shared_device_a: 1) and " +
	"/dev/infiniband is present; (2) securityContext.capabilities.add includes IPC_LOCK; (3) NCCL_IB_HCA, if set, " +
	"names devices that exist (`ibv_devices`); (4) the image has libibverbs and the provider (libmlx5); " +
	"(5) the port is ACTIVE: NCCL skips INIT/ARMED ports silently, so check the node's ports"

// findings turns what the reader saw into the report's problems and warnings, in the order
// they are printed: the device and transport first, then the plugin, the runtime errors, the
// other warnings, and last what the log cannot tell.
func (a *LogAnalyzer) findings(r *LogReport) {
	ibDisable, _ := a.envValue("NCCL_IB_DISABLE")
	a.noDeviceFinding(r)
	if ibDisable == "1" {
		r.Warnings = append(r.Warnings, Finding{
			Code:    CodeIBDisabled,
			Message: "NCCL_IB_DISABLE=1 turns the IB/RoCE transport off: NCCL uses sockets on purpose",
			Fix:     "unset NCCL_IB_DISABLE unless sockets are what you want",
			Lines:   a.envEvidence("NCCL_IB_DISABLE"),
		})
	}
	a.verbsMissingFinding(r)
	if r.Transport == TransportSocket {
		r.Problems = append(r.Problems, a.socketFallback(ibDisable))
	}
	a.netPluginFinding(r)
	whenSeen(&r.Problems, a.shm, Finding{
		Code:    CodeShm,
		Message: "NCCL could not create its shared-memory segment in /dev/shm (containers get 64 MiB by default)",
		Fix:     "mount a memory-backed /dev/shm in the pod: volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}] with volumeMounts: [{name: dshm, mountPath: /dev/shm}] (docker: --shm-size=8g)",
	})
	whenSeen(&r.Problems, a.ibCompl, Finding{
		Code:    CodeIBCompletion,
		Message: "an IB work request completed with an error (status 12 = transport retry exceeded: the peer or the path went away)",
		Fix:     "check the peer rank's log and the ports on both nodes; on RoCE check NCCL_IB_GID_INDEX/NCCL_IB_TC and PFC/ECN on the switches; consider NCCL_IB_TIMEOUT=22",
		Next:    []next.Command{"doctor ib-ports"},
	})
	if r.GDR != nil && !*r.GDR && (r.Transport == TransportIB || r.Transport == TransportRoCE) {
		f := Finding{
			Code:    CodeGDRDisabled,
			Message: "GPUDirect RDMA is not used: data goes through host memory, costing bandwidth and CPU",
			Fix:     "load nvidia-peermem (or use DMA-BUF with an open kernel module), keep GPU and NIC under the same PCIe switch, and check NCCL_NET_GDR_LEVEL (e.g. SYS)",
			Lines:   a.gdrOff,
		}
		r.Warnings = append(r.Warnings, f)
	}
	if a.warnCount > 0 {
		msg := fmt.Sprintf("%d other NCCL WARN line(s)", a.warnCount)
		r.Warnings = append(r.Warnings, Finding{Code: CodeNCCLWarn, Message: msg, Lines: a.warnLines[:min(len(a.warnLines), maxEvidencePerKind)]})
	}
	if r.Transport == TransportNone && len(a.netMissing) == 0 {
		r.Warnings = append(r.Warnings, Finding{
			Code:    CodeSingleNode,
			Message: "no network transport was used: all peers were reached over P2P/SHM (a single-node run)",
		})
	}
	if a.ncclLines == 0 {
		// Not an NCCL log at all: say so as a problem rather than "transport unknown".
		r.Problems = append(r.Problems, a.noNCCLLines())
		return
	}
	if r.Transport == TransportUnknown {
		// A problem, not a warning: "OK: transport unknown" read as a pass for logs that
		// cannot tell (NCCL lines of other subsystems only, or a log cut before init).
		r.Problems = append(r.Problems, Finding{
			Code: CodeNoEvidence,
			Message: fmt.Sprintf("the log does not say which transport NCCL used: none of its %d NCCL line(s) is a NET/IB, NET/Socket, "+
				"net plugin or channel (via NET/..., P2P, SHM) line; it is not the part of the log written at NCCL's init, or "+
				"NCCL_DEBUG_SUBSYS left out INIT and NET", a.ncclLines),
			Fix: "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,TUNING (the default subsystems print no NET or channel lines) and give the whole log from the start",
		})
	}
}

// noDeviceFinding reports NCCL finding no IB/RoCE device, blaming NCCL_IB_HCA when it is set.
func (a *LogAnalyzer) noDeviceFinding(r *LogReport) {
	hca, hcaSet := a.envValue("NCCL_IB_HCA")
	switch {
	case len(a.noDevice) > 0 && hcaSet:
		r.Problems = append(r.Problems, Finding{
			Code:    CodeIBHCANoMatch,
			Message: fmt.Sprintf("NCCL_IB_HCA=%s matched no usable IB device, so NCCL found none", hca),
			Fix: "list the devices and ports with `ibv_devinfo` and set NCCL_IB_HCA to them, e.g. " +
				"`=mlx5_0:1,mlx5_1:1` (`=` for exact names: without it `mlx5_1` also matches mlx5_10..19; `^` excludes); " +
				"also check that the matched ports are ACTIVE",
			Next:  []next.Command{"doctor ib-ports"},
			Lines: append(a.envEvidence("NCCL_IB_HCA"), a.noDevice...),
		})
	case len(a.noDevice) > 0:
		r.Problems = append(r.Problems, Finding{
			Code:    CodeNoIBDevice,
			Message: "NCCL found no usable InfiniBand/RoCE device (`NET/IB : No device found`)",
			Fix:     fixNoDevice,
			Next:    []next.Command{"doctor ib-ports"},
			Lines:   a.noDevice,
		})
	}
}

// verbsMissingFinding reports a missing libibverbs: a problem when the run fell back to
// sockets (or cannot tell), a warning when a net plugin carried the traffic.
func (a *LogAnalyzer) verbsMissingFinding(r *LogReport) {
	if len(a.verbsMissing) == 0 {
		return
	}
	f := Finding{
		Code: CodeVerbsMissing,
		Message: "NCCL could not load libibverbs (the RDMA userspace library), so it never tried InfiniBand/RoCE: " +
			"the image lacks it, whatever the node has",
		Fix: "install rdma-core's libibverbs and the provider in the image (Debian/Ubuntu: libibverbs1 ibverbs-providers; " +
			"RHEL: libibverbs; or start from an NGC/CUDA image that has them), then check the pod gets /dev/infiniband " +
			"(the RDMA device-plugin resource) and IPC_LOCK",
		Lines: a.verbsMissing,
	}
	if r.Transport == TransportSocket || r.Transport == TransportUnknown {
		r.Problems = append(r.Problems, f)
	} else {
		// A net plugin (aws-ofi on EFA) was used: libibverbs was not needed by this run.
		f.Message = "NCCL could not load libibverbs; this run used " + r.Transport + ", which does not need it"
		f.Fix = "nothing to do unless you expected NCCL's own IB/RoCE transport"
		r.Warnings = append(r.Warnings, f)
	}
}

// socketFallback is the problem of a run that moved its data over TCP sockets; its fix points
// at the cause when one was found above.
func (a *LogAnalyzer) socketFallback(ibDisable string) Finding {
	f := Finding{
		Code:    CodeSocketFallback,
		Message: "NCCL moved data over TCP sockets, not RDMA: expect a fraction of the fabric's bandwidth",
		Fix:     fixNoDevice,
		Next:    []next.Command{"doctor ib-ports"},
	}
	if len(a.noDevice) > 0 || ibDisable == "1" || len(a.verbsMissing) > 0 {
		f.Fix = "fix the cause above; sockets are NCCL's fallback when no IB/RoCE device is usable"
	}
	for _, e := range a.evidence {
		if strings.Contains(e.Text, "Socket") && len(f.Lines) < maxEvidencePerKind {
			f.Lines = append(f.Lines, e)
		}
	}
	return f
}

// netPluginFinding reports the network named by NCCL_NET missing (a problem), or else no
// external net plugin loaded (a warning).
func (a *LogAnalyzer) netPluginFinding(r *LogReport) {
	if len(a.netMissing) == 0 {
		whenSeen(&r.Warnings, a.pluginMiss, Finding{
			Code:    CodePluginNotFound,
			Message: "no external net plugin was loaded; NCCL uses its internal IB/Socket transports",
			Fix:     "fine on InfiniBand/RoCE; on EFA, Slingshot or TCPX/TCPXO the plugin must be in the image and on LD_LIBRARY_PATH",
		})
		return
	}
	name := a.netMissingName
	f := Finding{
		Code:    CodeNetNotFound,
		Message: fmt.Sprintf("the network NCCL was told to use (%q, from NCCL_NET) is not available, so communicator init failed", name),
		Fix:     "install the net plugin in the image (aws-ofi-nccl for \"AWS Libfabric\"/EFA/Slingshot: libnccl-net-ofi.so or libnccl-net.so on LD_LIBRARY_PATH) or unset NCCL_NET to let NCCL choose",
		Lines:   append(append([]Evidence{}, a.pluginMiss...), a.netMissing...),
	}
	if name == "" {
		f.Message = "the network NCCL was told to use is not available, so communicator init failed"
	}
	r.Problems = append(r.Problems, f)
}

// noNCCLLines is the problem of an input that holds no NCCL line: empty, binary, or a log
// written without NCCL_DEBUG.
func (a *LogAnalyzer) noNCCLLines() Finding {
	f := Finding{
		Code: CodeNoNCCLLines,
		Message: fmt.Sprintf("the input holds no NCCL line (%d line(s) read): it is not an NCCL log, or NCCL_DEBUG was not set "+
			"when it was written", a.lines),
		Fix: "pass the ranks' stdout/stderr (kubectl logs, the launcher's log) of a run with NCCL_DEBUG=INFO " +
			"NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,TUNING; NCCL prints nothing at its default level",
	}
	switch {
	case a.lines == 0:
		f.Message = "the input is empty: there is no NCCL log to read"
	case a.binary != "":
		f.Message = fmt.Sprintf("%s is binary data (it holds NUL bytes), not a text log; no NCCL line in %d line(s)", a.binary, a.lines)
	}
	return f
}

// whenSeen adds f to list when the lines that are its evidence were seen (they become its Lines):
// the findings whose only condition is their evidence.
func whenSeen(list *[]Finding, lines []Evidence, f Finding) {
	if len(lines) > 0 {
		f.Lines = lines
		*list = append(*list, f)
	}
}

func (r *LogReport) hasProblem(code string) bool {
	for _, f := range r.Problems {
		if f.Code == code {
			return true
		}
	}
	return false
}

// Verdict is a one-line summary for humans.
func (r *LogReport) Verdict() string {
	var b strings.Builder
	switch {
	case r.hasProblem(CodeNoNCCLLines):
		return "not an NCCL log: no NCCL line in the input"
	case r.Transport == TransportIB:
		b.WriteString("NCCL used InfiniBand (RDMA)")
	case r.Transport == TransportRoCE:
		b.WriteString("NCCL used RoCE (RDMA over Ethernet)")
	case r.Transport == TransportSocket:
		b.WriteString("NCCL used TCP sockets, not RDMA")
	case r.Transport == TransportNone && r.hasProblem(CodeNetNotFound):
		b.WriteString("NCCL found no usable network: the requested net plugin is missing")
	case r.Transport == TransportNone:
		b.WriteString("NCCL used no network (P2P/SHM only)")
	case strings.HasPrefix(r.Transport, pluginPrefix):
		b.WriteString("NCCL used the external net plugin " + strings.TrimPrefix(r.Transport, pluginPrefix))
	default:
		b.WriteString("transport unknown: no NCCL line says which transport was used")
	}
	if r.GDR != nil {
		if *r.GDR {
			b.WriteString(", GPUDirect RDMA on")
		} else {
			b.WriteString(", GPUDirect RDMA off")
		}
	}
	if r.NCCLVersion != nil {
		b.WriteString(" (NCCL " + *r.NCCLVersion)
		if r.Ranks != nil {
			b.WriteString(", " + strconv.Itoa(*r.Ranks) + " ranks")
		}
		b.WriteString(")")
	}
	return b.String()
}
