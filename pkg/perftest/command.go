package perftest

import (
	"fmt"
	"strconv"
	"strings"
)

// Tests ain runs between two nodes (`ain bench rdma`).
var Tests = []string{"ib_write_bw", "ib_read_bw", "ib_write_lat"}

// DefaultPort is where a perftest server listens for the client's out-of-band connection
// (perftest README: "-p, --port=<port> Listen on/connect to port <port> (default: 18515)").
const DefaultPort = 18515

// Command is one perftest invocation. perftest's README: "The SAME OPTIONS must be passed to
// both server and client"; the client adds the server's address as its last argument.
type Command struct {
	Test string // ib_write_bw, ib_read_bw or ib_write_lat
	// Device is the RDMA device (-d mlx5_0) and Port its port (-i); empty/0: perftest's
	// defaults, the first device found and port 1.
	Device string
	Port   int
	// GIDIndex is -x, the GID table entry the QPs use. RoCE needs it (the RoCE v2 IPv4 GID of
	// the pod's interface); InfiniBand routes by LID and leaves it out.
	GIDIndex *int
	// GIDFromAddress (RoCE, GIDIndex nil): each pod chooses its own -x at start, the RoCE v2 GID
	// of its own interface's IPv4 address (gid.go), and prints the choice (FindGIDChoice reads
	// it); without Device, the first port with such a GID gives -d and -i too.
	GIDFromAddress bool
	// QPs is -q, queue pairs in the process (bandwidth tests only; default 1).
	QPs int
	// CUDA is --use_cuda=<gpu index>: the buffers live in GPU memory (GPUDirect RDMA). Only
	// binaries built with CUDA support have the flag (README "GPUDirect usage").
	CUDA *int
	// Size is -s in bytes; 0 runs every size from 2 to 2^23 (-a).
	Size int64
	// Iters is -n (at least 100; 0: perftest's 1000, 5000 for bw -a).
	Iters int
	// TCPPort is -p (0: DefaultPort).
	TCPPort int
}

// Kind is "bw" or "lat".
func (c Command) Kind() string {
	if strings.HasSuffix(c.Test, "_lat") {
		return "lat"
	}
	return "bw"
}

// FieldError is a Command field Validate refused: Field is the field's name (Test, QPs, CUDA,
// Iters, Size, Device), so a caller can name its own flag for it.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Validate checks the command before any pod runs it; its errors are *FieldError.
func (c Command) Validate() error {
	known := false
	for _, t := range Tests {
		known = known || t == c.Test
	}
	if !known {
		return fieldErr("Test", "perftest test %q: one of %s", c.Test, strings.Join(Tests, ", "))
	}
	if c.QPs < 0 || c.QPs > 1024 {
		return fieldErr("QPs", "queue pairs %d: 1 to 1024", c.QPs)
	}
	if c.QPs > 1 && c.Kind() == "lat" {
		return fieldErr("QPs", "%s measures one queue pair's latency: -q (queue pairs) is for the bandwidth tests", c.Test)
	}
	// perftest's own rule (src/perftest_parameters.c: "Perftest supports CUDA latency tests with
	// read/send verbs only"): it exits 1 on ib_write_lat --use_cuda.
	if c.CUDA != nil && c.Test == "ib_write_lat" {
		return fieldErr("CUDA", "%s with GPU memory: perftest supports CUDA latency tests with read/send verbs only; drop --gpu, or measure bandwidth", c.Test)
	}
	if c.Iters != 0 && c.Iters < 100 {
		return fieldErr("Iters", "iterations %d: perftest needs at least 100", c.Iters)
	}
	if c.Size < 0 || c.Size > 1<<30 {
		return fieldErr("Size", "message size %d: 1 byte to 1 GiB", c.Size)
	}
	if c.Device != "" && strings.ContainsAny(c.Device, " \t\n'\"$`;|&<>\\") {
		return fieldErr("Device", "device %q: a device name such as mlx5_0", c.Device)
	}
	return nil
}

// Args is the argument list; server is "" for the server side, else its IP address.
// -F keeps a node with cpufreq scaling from failing the test ("Do not fail even if cpufreq_ondemand
// module is loaded"); --report_gbits prints bandwidth in Gb/s, the unit of a line rate.
func (c Command) Args(server string) []string {
	a := []string{c.Test}
	auto := c.gidInPod()
	switch {
	case c.Device != "":
		a = append(a, "-d", c.Device)
	case auto:
		a = append(a, "-d", `"$ain_dev"`, "-i", `"$ain_port"`)
	}
	if c.Port > 0 && c.Device != "" {
		a = append(a, "-i", strconv.Itoa(c.Port))
	}
	switch {
	case c.GIDIndex != nil:
		a = append(a, "-x", strconv.Itoa(*c.GIDIndex))
	case auto:
		a = append(a, "-x", `"$ain_gid"`)
	}
	if c.Kind() == "bw" {
		a = append(a, "-q", strconv.Itoa(max(c.QPs, 1)), "--report_gbits")
	}
	if c.Size > 0 {
		a = append(a, "-s", strconv.FormatInt(c.Size, 10))
	} else {
		a = append(a, "-a")
	}
	if c.Iters > 0 {
		a = append(a, "-n", strconv.Itoa(c.Iters))
	}
	if c.CUDA != nil {
		a = append(a, "--use_cuda="+strconv.Itoa(*c.CUDA))
	}
	p := c.TCPPort
	if p == 0 {
		p = DefaultPort
	}
	a = append(a, "-F", "-p", strconv.Itoa(p))
	if server != "" {
		a = append(a, server)
	}
	return a
}

// gidInPod: the pods choose -x themselves (GIDFromAddress and no fixed index).
func (c Command) gidInPod() bool { return c.GIDFromAddress && c.GIDIndex == nil }

// prologue is the in-pod GID choice before perftest, when the pods choose -x.
func (c Command) prologue() string {
	if !c.gidInPod() {
		return ""
	}
	return gidScript(c.Device, c.Port) + "\n"
}

// Chosen is c as a pod ran it after choosing its GID: the index, and the device and port when
// c left them open, in place of the script's variables (for the record of what ran).
func (c Command) Chosen(g GIDChoice) Command {
	if !c.gidInPod() {
		return c
	}
	idx := g.Index
	c.GIDIndex, c.GIDFromAddress = &idx, false
	if c.Device == "" {
		c.Device, c.Port = g.Device, g.Port
	}
	return c
}

// ServerScript is the server pod's shell command: the server serves one client and exits.
func (c Command) ServerScript() string { return c.prologue() + strings.Join(c.Args(""), " ") }

// ClientScript is the client pod's shell command. The server pod is Running before the client
// is created, but its process may not listen yet: the client tries again for up to a minute
// while the connection is refused, and prints what each try said (the parser reads the last run).
// The GID choice (when the pods choose) runs once, before the tries.
func (c Command) ClientScript(server string) string {
	cmd := strings.Join(c.Args(server), " ")
	return c.prologue() + "i=0; while :; do " + cmd + " && exit 0; i=$((i+1)); " +
		"if [ $i -ge 30 ]; then echo \"ain: " + c.Test + " could not complete against " + server + " after $i tries\"; exit 1; fi; sleep 2; done"
}
