package nccl

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/strict"
)

// Fabric is what the NCCL environment is derived from: the cluster's fabric as a profile
// describes it.
type Fabric struct {
	Kind         string   // ib, roce or socket
	HCAs         []string // explicit HCA list (mlx5_0:1 ...); empty leaves discovery to NCCL
	GIDIndex     string   // "auto" or a number (RoCE)
	TrafficClass *int     // RoCE traffic class (NCCL_IB_TC)
	SocketIfname string   // bootstrap/socket interface (NCCL_SOCKET_IFNAME)
	GDRLevel     string   // NCCL_NET_GDR_LEVEL when set
	// AddrRange is the RoCE network's subnet (192.168.100.0/24): NCCL then picks, per device, the
	// RoCE v2 GID whose address is in it (NCCL_IB_ADDR_FAMILY + NCCL_IB_ADDR_RANGE), which is the
	// GID of the pod's own interface when the RDMA NIC is a Multus secondary network.
	AddrRange string
	// Bench adds TUNING to NCCL_DEBUG_SUBSYS: one line per collective call, right for a benchmark
	// or a diagnosis, noise for a training run.
	Bench bool
}

// Debug settings ain always sets, so the transport can be verified from the logs: INIT and NET
// print the network chosen and the per-channel transport ("via NET/IB/0"), GRAPH the topology.
// TUNING prints one line per collective call (the algorithm/protocol chosen): benchmarks only.
const (
	DebugLevel       = "INFO"
	DebugSubsys      = "INIT,ENV,NET,GRAPH"
	DebugSubsysBench = DebugSubsys + ",TUNING"
)

// FabricEnv returns the NCCL environment for a fabric, as name → value.
func FabricEnv(f Fabric) map[string]string {
	env := map[string]string{
		"NCCL_DEBUG":        DebugLevel,
		"NCCL_DEBUG_SUBSYS": DebugSubsys,
	}
	if f.Bench {
		env["NCCL_DEBUG_SUBSYS"] = DebugSubsysBench
	}
	if f.SocketIfname != "" {
		env["NCCL_SOCKET_IFNAME"] = f.SocketIfname
	}
	switch f.Kind {
	case "socket":
		env["NCCL_IB_DISABLE"] = "1"
	case "ib", "roce":
		if len(f.HCAs) > 0 {
			// "=" asks for exact matches: without it mlx5_1 would also match mlx5_10..mlx5_19.
			env["NCCL_IB_HCA"] = "=" + strings.Join(f.HCAs, ",")
		}
		if f.GDRLevel != "" {
			env["NCCL_NET_GDR_LEVEL"] = f.GDRLevel
		}
		if f.Kind == "roce" {
			// RoCE needs the GID of the RoCE v2 IPv4 entry of the pod's interface. A number is
			// rendered as given. "auto" renders no NCCL_IB_GID_INDEX: NCCL >= 2.21 selects by
			// itself, and NCCL < 2.21 rejects -1. With the network's subnet known, NCCL's
			// address-based selection finds the GID on the pod's interface on every device.
			if gid := f.GIDIndex; gid != "" && gid != "auto" {
				env["NCCL_IB_GID_INDEX"] = gid
			}
			if f.AddrRange != "" {
				env["NCCL_IB_ADDR_FAMILY"] = "AF_INET"
				if strings.Contains(f.AddrRange, ":") {
					env["NCCL_IB_ADDR_FAMILY"] = "AF_INET6"
				}
				env["NCCL_IB_ADDR_RANGE"] = f.AddrRange
			}
			if f.TrafficClass != nil {
				env["NCCL_IB_TC"] = strconv.Itoa(*f.TrafficClass)
			}
		}
	}
	return env
}

// SortedNames returns the keys of env in order, for deterministic output.
func SortedNames(env map[string]string) []string { return slices.Sorted(maps.Keys(env)) }

// Check is the outcome of checking one NCCL variable: a Problem stops the recipe, a Warning does not.
type Check struct {
	Problem string
	Warning string
}

// KnownVars lists the NCCL environment variables ain recognises (NCCL 2.4 .. 2.30).
var KnownVars = []string{
	"NCCL_ALGO", "NCCL_ASYNC_ERROR_HANDLING", "NCCL_BLOCKING_WAIT", "NCCL_BUFFSIZE", "NCCL_CHECKS_DISABLE",
	"NCCL_CHECK_POINTERS", "NCCL_COLLNET_ENABLE", "NCCL_COLLNET_NODE_THRESHOLD", "NCCL_COMM_BLOCKING",
	"NCCL_CONF_FILE", "NCCL_CREATE_THREAD_CONTEXT", "NCCL_CROSS_NIC", "NCCL_CUMEM_ENABLE", "NCCL_DEBUG",
	"NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS", "NCCL_DMABUF_ENABLE", "NCCL_GDRCOPY_ENABLE", "NCCL_GRAPH_DUMP_FILE",
	"NCCL_GRAPH_FILE", "NCCL_HOSTID", "NCCL_IB_ADAPTIVE_ROUTING", "NCCL_IB_ADDR_FAMILY", "NCCL_IB_ADDR_RANGE",
	"NCCL_IB_AR_THRESHOLD", "NCCL_IB_CUDA_SUPPORT", "NCCL_IB_DATA_DIRECT", "NCCL_IB_DISABLE", "NCCL_IB_ECE_ENABLE",
	"NCCL_IB_FIFO_TC", "NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "NCCL_IB_MERGE_NICS", "NCCL_IB_MERGE_VFS",
	"NCCL_IB_PCI_RELAXED_ORDERING", "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_RETRY_CNT", "NCCL_IB_RETURN_ASYNC_EVENTS",
	"NCCL_IB_ROCE_VERSION_NUM", "NCCL_IB_SL", "NCCL_IB_SPLIT_DATA_ON_QPS", "NCCL_IB_TC", "NCCL_IB_TIMEOUT",
	"NCCL_IB_USE_INLINE", "NCCL_IGNORE_CPU_AFFINITY", "NCCL_IGNORE_DISABLED_P2P", "NCCL_LAUNCH_MODE",
	"NCCL_LL128_BUFFSIZE", "NCCL_LL_BUFFSIZE", "NCCL_LL_THRESHOLD", "NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS",
	"NCCL_MAX_NRINGS", "NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS", "NCCL_MIN_NRINGS", "NCCL_MNNVL_ENABLE",
	"NCCL_NCHANNELS_PER_NET_PEER", "NCCL_NET", "NCCL_NET_DISABLE_INTRA", "NCCL_NET_FORCE_FLUSH",
	"NCCL_NET_GDR_C2C", "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ", "NCCL_NET_MERGE_LEVEL", "NCCL_NET_PLUGIN",
	"NCCL_NET_SHARED_BUFFERS", "NCCL_NET_SHARED_COMMS", "NCCL_NSOCKS_PERTHREAD", "NCCL_NTHREADS",
	"NCCL_NVB_DISABLE", "NCCL_NVLS_CHUNKSIZE", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
	"NCCL_P2P_NET_CHUNKSIZE", "NCCL_P2P_NVL_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE", "NCCL_P2P_PXN_LEVEL",
	"NCCL_PROFILER_PLUGIN", "NCCL_PROTO", "NCCL_PXN_DISABLE", "NCCL_RAS_ENABLE", "NCCL_RINGS",
	"NCCL_RUNTIME_CONNECT", "NCCL_SET_STACK_SIZE", "NCCL_SET_THREAD_NAME", "NCCL_SHM_DISABLE",
	"NCCL_SHM_USE_CUDA_MEMCPY", "NCCL_SINGLE_RING_THRESHOLD", "NCCL_SOCKET_FAMILY", "NCCL_SOCKET_IFNAME",
	"NCCL_SOCKET_NTHREADS", "NCCL_TOPO_DUMP_FILE", "NCCL_TOPO_FILE", "NCCL_TREE_THRESHOLD",
	"NCCL_TUNER_PLUGIN", "NCCL_WORK_FIFO_DEPTH",
}

var knownVarSet = func() map[string]bool {
	m := make(map[string]bool, len(KnownVars))
	for _, v := range KnownVars {
		m[v] = true
	}
	return m
}()

// Algorithms and protocols NCCL_ALGO / NCCL_PROTO accept (case-insensitive).
var (
	Algorithms = []string{"Ring", "Tree", "NVLS", "NVLSTree", "CollnetDirect", "CollnetChain", "PAT"}
	Protocols  = []string{"LL", "LL128", "Simple"}
	gdrLevels  = []string{"LOC", "PIX", "PXB", "PHB", "SYS"}
	debugLevel = []string{"VERSION", "WARN", "INFO", "TRACE", "ABORT", "NONE"}
)

// CheckVar validates one NCCL variable and its value.
func CheckVar(name, value string) Check {
	if !strings.HasPrefix(name, "NCCL_") {
		return Check{Problem: fmt.Sprintf("%q is not an NCCL variable: nccl.env takes NCCL_* names (put others in spec.env)", name)}
	}
	if !knownVarSet[name] {
		msg := fmt.Sprintf("unknown NCCL variable %s (passed through as written)", name)
		if s := strict.Suggest(name, KnownVars); s != "" {
			msg += fmt.Sprintf(": did you mean %s?", s)
		}
		return Check{Warning: msg}
	}
	v := strings.TrimSpace(value)
	switch name {
	case "NCCL_ALGO":
		return checkList(name, v, Algorithms, true)
	case "NCCL_PROTO":
		return checkList(name, v, Protocols, false)
	case "NCCL_IB_QPS_PER_CONNECTION":
		return checkInt(name, v, 1, 128)
	case "NCCL_IB_GID_INDEX":
		return checkInt(name, v, -1, 255)
	case "NCCL_IB_TC", "NCCL_IB_FIFO_TC":
		return checkInt(name, v, 0, 255)
	case "NCCL_IB_SL":
		return checkInt(name, v, 0, 15)
	case "NCCL_IB_TIMEOUT":
		return checkInt(name, v, 1, 31)
	case "NCCL_IB_RETRY_CNT":
		return checkInt(name, v, 0, 7)
	case "NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_NVLS_ENABLE", "NCCL_CUMEM_ENABLE",
		"NCCL_IB_PCI_RELAXED_ORDERING", "NCCL_PXN_DISABLE", "NCCL_NVB_DISABLE", "NCCL_COLLNET_ENABLE",
		"NCCL_CHECKS_DISABLE", "NCCL_IB_SPLIT_DATA_ON_QPS", "NCCL_IB_ADAPTIVE_ROUTING", "NCCL_NET_GDR_READ",
		"NCCL_DMABUF_ENABLE", "NCCL_GDRCOPY_ENABLE", "NCCL_IB_CUDA_SUPPORT", "NCCL_RAS_ENABLE":
		return checkInt(name, v, 0, 1)
	case "NCCL_CROSS_NIC":
		return checkInt(name, v, 0, 2)
	case "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "NCCL_BUFFSIZE",
		"NCCL_NTHREADS", "NCCL_NSOCKS_PERTHREAD", "NCCL_SOCKET_NTHREADS", "NCCL_NCHANNELS_PER_NET_PEER":
		return checkInt(name, v, 1, 1<<40)
	case "NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL":
		if _, err := strconv.Atoi(v); err == nil {
			return checkInt(name, v, 0, 5)
		}
		return checkList(name, v, gdrLevels, false)
	case "NCCL_DEBUG":
		return checkList(name, v, debugLevel, false)
	case "NCCL_IB_HCA":
		return checkHCA(v)
	case "NCCL_SOCKET_IFNAME", "NCCL_NET", "NCCL_DEBUG_SUBSYS":
		if v == "" {
			return Check{Problem: name + " is empty: remove it or give a value"}
		}
	}
	return Check{}
}

func checkInt(name, v string, lo, hi int64) Check {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return Check{Problem: fmt.Sprintf("%s=%q: expected an integer from %d to %d", name, v, lo, hi)}
	}
	if n < lo || n > hi {
		return Check{Problem: fmt.Sprintf("%s=%d is out of range %d-%d", name, n, lo, hi)}
	}
	return Check{}
}

// checkList checks a comma-separated list of names, optionally starting with ^ (exclude).
// For NCCL_ALGO, newer NCCL also accepts per-collective forms such as "allreduce:ring,tree;^broadcast:ring".
func checkList(name, v string, allowed []string, perColl bool) Check {
	if v == "" {
		return Check{Problem: fmt.Sprintf("%s is empty: use one or more of %s", name, strings.Join(allowed, ", "))}
	}
	for _, group := range strings.Split(v, ";") {
		group = strings.TrimSpace(group)
		if perColl {
			if _, rest, ok := strings.Cut(group, ":"); ok {
				group = rest
			}
		}
		group = strings.TrimPrefix(group, "^")
		for _, item := range strings.Split(group, ",") {
			item = strings.TrimSpace(item)
			if !containsFold(allowed, item) {
				msg := fmt.Sprintf("%s: %q is not one of %s", name, item, strings.Join(allowed, ", "))
				if s := strict.Suggest(item, allowed); s != "" {
					msg += fmt.Sprintf(": did you mean %s?", s)
				}
				return Check{Problem: msg}
			}
		}
	}
	return Check{}
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func checkHCA(v string) Check {
	if v == "" || v == "=" || v == "^" || v == "^=" {
		return Check{Problem: "NCCL_IB_HCA names no device: remove it to let NCCL discover the HCAs, or list them (=mlx5_0:1,mlx5_1:1)"}
	}
	list := strings.TrimPrefix(v, "^")
	exact := strings.HasPrefix(list, "=")
	list = strings.TrimPrefix(list, "=")
	for _, item := range strings.Split(list, ",") {
		dev, port, hasPort := strings.Cut(strings.TrimSpace(item), ":")
		if dev == "" {
			return Check{Problem: fmt.Sprintf("NCCL_IB_HCA=%q has an empty entry", v)}
		}
		if hasPort {
			if n, err := strconv.Atoi(port); err != nil || n < 1 {
				return Check{Problem: fmt.Sprintf("NCCL_IB_HCA entry %q: the port after ':' must be a number from 1", item)}
			}
		}
	}
	if !exact {
		return Check{Warning: fmt.Sprintf("NCCL_IB_HCA=%s matches by prefix (mlx5_1 also matches mlx5_10..mlx5_19): prefer the exact form =%s", v, list)}
	}
	return Check{}
}
