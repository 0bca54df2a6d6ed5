// Package profile describes how a cluster does RDMA (its fabric profile), kept apart from
// recipes so recipes stay portable: the fabric (ib, roce, socket), the RDMA device-plugin
// resource, Multus networks, HCAs, the RoCE GID index and traffic class, the socket interface,
// the GPU resource, node placement and the NIC line rate. Values come from built-in defaults (a
// cluster like the course's), then a profile file, then command-line flags; Origins records
// which for every field.
package profile

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/next"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/strict"
	"github.com/ain-hpc/ain/pkg/userdir"
)

// APIVersion and Kind of a profile file.
const (
	APIVersion = "ain.dev/v1alpha1"
	Kind       = "FabricProfile"
)

// Fabrics ain knows.
const (
	FabricIB     = "ib"
	FabricRoCE   = "roce"
	FabricSocket = "socket"
)

// Profile is a decoded fabric profile.
type Profile struct {
	APIVersion string   `yaml:"apiVersion" json:"apiVersion"`
	Kind       string   `yaml:"kind" json:"kind"`
	Metadata   Metadata `yaml:"metadata,omitempty" json:"metadata,omitempty"`
	Spec       Spec     `yaml:"spec" json:"spec"`

	// Origins maps field paths (spec.fabric ...) to where the value came from:
	// "default", "FILE:LINE" or a flag such as "--fabric".
	Origins map[string]string `yaml:"-" json:"-"`
	// Source is the profile file used, or "" for the built-in defaults.
	Source string `yaml:"-" json:"-"`
}

// Metadata names a profile.
type Metadata struct {
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
}

// Spec is what the builders derive pods and NCCL settings from.
type Spec struct {
	// Fabric is ib, roce or socket (the TCP baseline).
	Fabric string `yaml:"fabric" json:"fabric"`
	// GPUResource is the extended resource of a GPU (nvidia.com/gpu).
	GPUResource string `yaml:"gpuResource" json:"gpuResource"`
	// RDMA is the device-plugin resource each RDMA pod requests.
	RDMA RDMAResource `yaml:"rdma" json:"rdma"`
	// Networks are Multus NetworkAttachmentDefinitions: "name", "ns/name" or "name@ifname".
	Networks []string `yaml:"networks,omitempty" json:"networks,omitempty"`
	// HCAs lists the RDMA devices NCCL may use ("mlx5_0:1"); empty leaves discovery to NCCL.
	HCAs []string `yaml:"hcas,omitempty" json:"hcas,omitempty"`
	// GIDIndex is the RoCE GID index ("auto" or a number; RoCE v2 IPv4 is often 3).
	GIDIndex string `yaml:"gidIndex,omitempty" json:"gidIndex,omitempty"`
	// AddrRange is the RoCE network's subnet (e.g. 192.168.100.0/24, the Multus network's IPAM
	// range). NCCL then picks the RoCE v2 GID whose address is in it (NCCL_IB_ADDR_FAMILY and
	// NCCL_IB_ADDR_RANGE), i.e. the pod's own interface's GID, not a host netdev's.
	AddrRange string `yaml:"addrRange,omitempty" json:"addrRange,omitempty"`
	// TrafficClass is the RoCE traffic class (NCCL_IB_TC), e.g. 106 for DSCP 26 lossless.
	TrafficClass *int `yaml:"trafficClass,omitempty" json:"trafficClass,omitempty"`
	// SocketIfname is the interface for bootstrap and socket traffic (NCCL_SOCKET_IFNAME).
	SocketIfname string `yaml:"socketIfname,omitempty" json:"socketIfname,omitempty"`
	// GDRLevel sets NCCL_NET_GDR_LEVEL (LOC, PIX, PXB, PHB, SYS) when GPUDirect RDMA should be forced on/off.
	GDRLevel string `yaml:"gdrLevel,omitempty" json:"gdrLevel,omitempty"`
	// LineRate is the rate of one NIC, e.g. 400Gb, 200Gb, 100Gb (bits per second).
	LineRate string `yaml:"lineRate" json:"lineRate"`
	// NodeSelector and Tolerations place every GPU pod.
	NodeSelector map[string]string `yaml:"nodeSelector,omitempty" json:"nodeSelector,omitempty"`
	Tolerations  []Toleration      `yaml:"tolerations,omitempty" json:"tolerations,omitempty"`
	// JobAPI forces the workload API jobs are submitted as: auto (default: the best one the
	// cluster serves), trainer (TrainJob), mpi-operator (kubeflow.org/v2beta1 MPIJob, MPI
	// recipes) or training-operator (kubeflow.org/v1). --api overrides it.
	JobAPI string `yaml:"jobAPI,omitempty" json:"jobAPI,omitempty"`
	// RequireBench makes `ain train` run only on nodes that a passing `ain bench allreduce`
	// measured (course 12.1.5: validate the nodes first); --require-bench overrides it.
	RequireBench *RequireBench `yaml:"requireBench,omitempty" json:"requireBench,omitempty"`
}

// RequireBench names where the bench results are and how old the last one may be.
type RequireBench struct {
	// Results is the folder `ain bench allreduce --out` saves under (relative: to the
	// directory ain runs in).
	Results string `yaml:"results" json:"results"`
	// MaxAge is how old the last bench may be (a Go duration, e.g. 24h; "0" any age; default 24h).
	MaxAge string `yaml:"maxAge,omitempty" json:"maxAge,omitempty"`
}

// DefaultBenchMaxAge is how old a validating bench may be when nothing says otherwise.
const DefaultBenchMaxAge = 24 * time.Hour

// BenchMaxAge is MaxAge as a duration (DefaultBenchMaxAge when unset; Validate refuses a bad one).
func (r *RequireBench) BenchMaxAge() time.Duration {
	if r == nil || r.MaxAge == "" {
		return DefaultBenchMaxAge
	}
	d, err := time.ParseDuration(r.MaxAge)
	if err != nil {
		return DefaultBenchMaxAge
	}
	return d
}

// JobAPIs are the values of spec.jobAPI (pkg/jobs.API names them).
var JobAPIs = []string{"auto", "trainer", "mpi-operator", "training-operator"}

// RDMAResource is a device-plugin resource and the count each pod requests.
type RDMAResource struct {
	Resource string `yaml:"resource" json:"resource"`
	Count    int    `yaml:"count" json:"count"`
}

// Toleration mirrors the Kubernetes toleration fields a profile may set.
type Toleration struct {
	Key      string `yaml:"key,omitempty" json:"key,omitempty"`
	Operator string `yaml:"operator,omitempty" json:"operator,omitempty"`
	Value    string `yaml:"value,omitempty" json:"value,omitempty"`
	Effect   string `yaml:"effect,omitempty" json:"effect,omitempty"`
}

// Defaults: a cluster like the course's.
const (
	DefaultFabric       = FabricIB
	DefaultGPUResource  = "nvidia.com/gpu"
	DefaultRDMAResource = "rdma/rdma_shared_device_a"
	DefaultRDMACount    = 1
	DefaultGIDIndex     = "auto"
	DefaultLineRate     = "400Gb"
)

// Default returns the built-in profile.
func Default() *Profile {
	p := &Profile{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: "default"}, Origins: map[string]string{}}
	p.fill()
	return p
}

// fill sets defaults for every empty field, recording the origin.
func (p *Profile) fill() {
	s := &p.Spec
	def := func(path string, empty bool, set func()) {
		if empty {
			set()
			p.Origins[path] = "default"
		}
	}
	def("spec.fabric", s.Fabric == "", func() { s.Fabric = DefaultFabric })
	def("spec.gpuResource", s.GPUResource == "", func() { s.GPUResource = DefaultGPUResource })
	def("spec.rdma.resource", s.RDMA.Resource == "", func() { s.RDMA.Resource = DefaultRDMAResource })
	def("spec.rdma.count", s.RDMA.Count == 0, func() { s.RDMA.Count = DefaultRDMACount })
	def("spec.gidIndex", s.GIDIndex == "", func() { s.GIDIndex = DefaultGIDIndex })
	def("spec.lineRate", s.LineRate == "", func() { s.LineRate = DefaultLineRate })
}

// Options say where to look for a profile and which flags override it.
type Options struct {
	Path   string              // --profile; empty: $AIN_PROFILE, then DefaultPath if it exists
	Fabric string              // --fabric
	Getenv func(string) string // for AIN_PROFILE, XDG_CONFIG_HOME, HOME
}

// DefaultPath is $XDG_CONFIG_HOME/ain/profile.yaml (or ~/.config/ain/profile.yaml).
func DefaultPath(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	dir, err := userdir.Config(getenv, "")
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "profile.yaml")
}

// Load returns the effective profile for o.
func Load(o Options) (*Profile, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	path, explicit := o.Path, o.Path != ""
	if path == "" {
		if env := getenv("AIN_PROFILE"); env != "" {
			path, explicit = env, true
		} else if def := DefaultPath(getenv); def != "" {
			if _, err := os.Stat(def); err == nil {
				path = def
			}
		}
	}
	var p *Profile
	if path == "" {
		p = Default()
	} else {
		data, err := input.ReadFile(path, MaxFileBytes)
		var large *input.TooLargeError
		switch {
		case errors.As(err, &large):
			return nil, fmt.Errorf("profile %s is larger than %s: a profile is a few KiB of YAML", path, input.Size(MaxFileBytes))
		case err == nil:
			if p, err = Parse(path, data); err != nil {
				return nil, err
			}
		case !explicit && errors.Is(err, os.ErrNotExist):
			p = Default() // the default file went away between Stat and ReadFile
		default:
			return nil, fmt.Errorf("profile %s: %w", path, err)
		}
	}
	if o.Fabric != "" {
		p.Spec.Fabric = o.Fabric
		p.Origins["spec.fabric"] = "--fabric"
		if err := p.Validate(nil); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// MaxFileBytes bounds a profile file, read whole (a profile is a few KiB; /dev/zero is refused
// after reading this much).
const MaxFileBytes = 4 << 20

// Parse decodes a profile file, fills defaults and validates it.
func Parse(source string, data []byte) (*Profile, error) {
	doc, err := strict.Parse(source, data)
	if err != nil {
		return nil, err
	}
	p := &Profile{Source: source, Origins: map[string]string{}}
	if ps := doc.Decode(p); len(ps) > 0 {
		return nil, ps
	}
	for _, path := range fieldPaths {
		if doc.Has(path) {
			pos := doc.Pos(path)
			p.Origins[path] = fmt.Sprintf("%s:%d", pos.Source, pos.Line)
		}
	}
	p.fill()
	if err := p.Validate(doc); err != nil {
		return nil, err
	}
	return p, nil
}

// fieldPaths are the spec fields `ain profile show` reports origins for.
var fieldPaths = []string{
	"spec.fabric", "spec.gpuResource", "spec.rdma.resource", "spec.rdma.count", "spec.networks",
	"spec.hcas", "spec.gidIndex", "spec.addrRange", "spec.trafficClass", "spec.socketIfname", "spec.gdrLevel",
	"spec.lineRate", "spec.nodeSelector", "spec.tolerations",
}

// FieldPaths returns the fields whose origin is tracked, in display order.
func FieldPaths() []string { return append([]string(nil), fieldPaths...) }

// Validate checks the profile; doc (may be nil) supplies line numbers.
func (p *Profile) Validate(doc *strict.Doc) error {
	var ps strict.Problems
	add := func(path, format string, args ...any) {
		if doc != nil {
			ps = append(ps, doc.Problemf(path, format, args...))
			return
		}
		src := p.Origins[path]
		if src == "" {
			src = "profile"
		}
		ps = append(ps, strict.Problem{Source: src, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if p.APIVersion != APIVersion {
		add("apiVersion", "expected %s, got %q", APIVersion, p.APIVersion)
	}
	if p.Kind != Kind {
		add("kind", "expected %s, got %q", Kind, p.Kind)
	}
	s := p.Spec
	if s.JobAPI != "" && !slices.Contains(JobAPIs, s.JobAPI) {
		msg := fmt.Sprintf("%q is not a job API: use %s", s.JobAPI, strings.Join(JobAPIs, ", "))
		if sug := strict.Suggest(s.JobAPI, JobAPIs); sug != "" && sug != s.JobAPI {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		add("spec.jobAPI", "%s", msg)
	}
	if rb := s.RequireBench; rb != nil {
		if strings.TrimSpace(rb.Results) == "" {
			add("spec.requireBench.results", "name the folder the allreduce benchmark's --out saves under (e.g. ain-results)")
			ps[len(ps)-1].Next = []next.Command{"bench allreduce --out DIR"}
		}
		if d, err := time.ParseDuration(rb.MaxAge); rb.MaxAge != "" && (err != nil || d < 0) {
			add("spec.requireBench.maxAge", "%q is not a duration of 0 or more (e.g. 24h, 90m, 0 for any age)", rb.MaxAge)
		}
	}
	switch s.Fabric {
	case FabricIB, FabricRoCE, FabricSocket:
	default:
		msg := fmt.Sprintf("%q is not a fabric: use ib, roce or socket", s.Fabric)
		if sug := strict.Suggest(s.Fabric, []string{FabricIB, FabricRoCE, FabricSocket}); sug != "" && sug != s.Fabric {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		add("spec.fabric", "%s", msg)
	}
	if errs := validation.IsQualifiedName(s.GPUResource); len(errs) > 0 || !strings.Contains(s.GPUResource, "/") {
		add("spec.gpuResource", "%q is not an extended resource name (vendor/name, e.g. nvidia.com/gpu)", s.GPUResource)
	}
	if errs := validation.IsQualifiedName(s.RDMA.Resource); len(errs) > 0 || !strings.Contains(s.RDMA.Resource, "/") {
		add("spec.rdma.resource", "%q is not an extended resource name (e.g. rdma/rdma_shared_device_a or nvidia.com/sriov_rdma)", s.RDMA.Resource)
	}
	if s.RDMA.Count < 1 {
		add("spec.rdma.count", "must be at least 1, got %d", s.RDMA.Count)
	}
	for i, n := range s.Networks {
		if err := checkNetwork(n); err != "" {
			add(fmt.Sprintf("spec.networks[%d]", i), "%s", err)
		}
	}
	for i, h := range s.HCAs {
		dev, port, ok := strings.Cut(h, ":")
		if dev == "" || strings.ContainsAny(h, ",=^ ") {
			add(fmt.Sprintf("spec.hcas[%d]", i), "%q: give one device per entry, as mlx5_0 or mlx5_0:1", h)
			continue
		}
		if ok {
			if n, err := strconv.Atoi(port); err != nil || n < 1 {
				add(fmt.Sprintf("spec.hcas[%d]", i), "%q: the port after ':' must be a number from 1", h)
			}
		}
	}
	if s.GIDIndex != "auto" {
		if n, err := strconv.Atoi(s.GIDIndex); err != nil || n < 0 || n > 255 {
			add("spec.gidIndex", "%q: use auto or a GID index 0-255 (the RoCE v2 IPv4 entry, which the port check finds)", s.GIDIndex)
			ps[len(ps)-1].Next = []next.Command{"doctor ib-ports"}
		}
	}
	if s.AddrRange != "" {
		if pf, err := netip.ParsePrefix(s.AddrRange); err != nil || pf.Masked() != pf {
			add("spec.addrRange", "%q: give the RoCE network's subnet as address/length with the host bits zero, e.g. 192.168.100.0/24", s.AddrRange)
		}
	}
	if s.TrafficClass != nil && (*s.TrafficClass < 0 || *s.TrafficClass > 255) {
		add("spec.trafficClass", "must be 0-255, got %d", *s.TrafficClass)
	}
	if s.GDRLevel != "" {
		if c := nccl.CheckVar("NCCL_NET_GDR_LEVEL", s.GDRLevel); c.Problem != "" {
			add("spec.gdrLevel", "%s", c.Problem)
		}
	}
	if _, err := ParseLineRate(s.LineRate); err != nil {
		add("spec.lineRate", "%v", err)
	}
	for k, v := range s.NodeSelector {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			add("spec.nodeSelector."+k, "invalid label key: %s", errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			add("spec.nodeSelector."+k, "invalid label value %q", v)
		}
	}
	for i, t := range s.Tolerations {
		p := fmt.Sprintf("spec.tolerations[%d]", i)
		switch t.Operator {
		case "", "Equal", "Exists":
		default:
			add(p+".operator", "%q: use Equal or Exists", t.Operator)
		}
		switch t.Effect {
		case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
		default:
			add(p+".effect", "%q: use NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
		}
		if t.Operator == "Exists" && t.Value != "" {
			add(p+".value", "must be empty when operator is Exists")
		}
	}
	return ps.Err()
}

func checkNetwork(n string) string {
	name := n
	if _, rest, ok := strings.Cut(name, "/"); ok {
		ns := name[:strings.Index(name, "/")]
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Sprintf("%q: namespace %q is not valid", n, ns)
		}
		name = rest
	}
	if base, ifname, ok := strings.Cut(name, "@"); ok {
		if ifname == "" || len(ifname) > 15 {
			return fmt.Sprintf("%q: the interface name after @ must be 1-15 characters", n)
		}
		name = base
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Sprintf("%q is not a NetworkAttachmentDefinition reference (name, ns/name or name@ifname)", n)
	}
	return ""
}

// ParseLineRate parses a NIC rate into bits per second: 400Gb, 400G, 400Gbps, 400Gb/s, 200GbE,
// 1.6Tb, 800Mb, or a bare number, read as Gb/s (the unit NICs are sold and ibstat reports in).
// It is the one parser of line rates: profiles (spec.lineRate) and flags (bench model --link).
func ParseLineRate(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, suf := range []string{"/sec", "/s", "ps", "e", "bit", "b"} {
		t = strings.TrimSuffix(t, suf)
	}
	mult := 1e9
	switch {
	case strings.HasSuffix(t, "t"):
		mult, t = 1e12, strings.TrimSuffix(t, "t")
	case strings.HasSuffix(t, "g"):
		t = strings.TrimSuffix(t, "g")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a line rate: use a number of Gb/s with or without its unit, e.g. 400Gb, 200G, 1.6Tb, 100", s)
	}
	return v * mult, nil
}

// LineRateGBps is the line rate in GB/s (decimal, bytes), the unit nccl-tests prints bandwidth in.
func (p *Profile) LineRateGBps() float64 {
	bps, err := ParseLineRate(p.Spec.LineRate)
	if err != nil {
		return 0
	}
	return bps / 8 / 1e9
}

// RDMA reports whether the fabric uses RDMA (ib or roce).
func (p *Profile) RDMA() bool { return p.Spec.Fabric == FabricIB || p.Spec.Fabric == FabricRoCE }

// NCCLFabric is the profile as input for nccl.FabricEnv.
func (p *Profile) NCCLFabric() nccl.Fabric {
	return nccl.Fabric{
		Kind: p.Spec.Fabric, HCAs: p.Spec.HCAs, GIDIndex: p.Spec.GIDIndex, AddrRange: p.Spec.AddrRange,
		TrafficClass: p.Spec.TrafficClass, SocketIfname: p.Spec.SocketIfname, GDRLevel: p.Spec.GDRLevel,
	}
}

// RDMAQuantity is the RDMA resource count as a quantity.
func (p *Profile) RDMAQuantity() resource.Quantity {
	return *resource.NewQuantity(int64(p.Spec.RDMA.Count), resource.DecimalSI)
}
