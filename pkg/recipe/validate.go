package recipe

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ain-hpc/ain/pkg/image"
	"github.com/ain-hpc/ain/pkg/lazyre"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/strict"
)

// MaxNodes and MaxReplicas bound what a recipe, --set or a flag may ask for: ain renders and
// applies objects per node or replica, so a typo such as --replicas 1000000 must be refused, not
// built (issue 19: it ran 22 minutes and reached 23.7 GB). 4096 nodes of 8 GPUs is beyond the
// largest single NCCL jobs; 1024 replicas of at least one GPU each is beyond one model's fleet.
const (
	MaxNodes    = 4096
	MaxReplicas = 1024
)

// MaxNameLen bounds metadata.name: pod names add "-worker-NN" and Service names must stay DNS labels.
const MaxNameLen = 48

type validator struct {
	doc      *strict.Doc
	problems strict.Problems
	warnings strict.Problems
}

func (v *validator) addf(path, format string, args ...any) {
	v.problems = append(v.problems, v.doc.Problemf(path, format, args...))
}

func (v *validator) warnf(path, format string, args ...any) {
	v.warnings = append(v.warnings, v.doc.Problemf(path, format, args...))
}

func (v *validator) required(path, value string) {
	if strings.TrimSpace(value) == "" {
		v.addf(path, "required: set it (the built-in recipes show an example)")
		v.problems[len(v.problems)-1].Next = []next.Command{"recipes show"}
	}
}

// image checks a container image reference against the registry grammar (distribution/reference's,
// the parser containerd and the kubelet use: checkImageRef), so `image: 5`, `UPPER/Case:tag` or a name with a
// space fail here with the file and line, not as ErrImagePull minutes later on a node.
func (v *validator) image(path, value string) {
	if strings.TrimSpace(value) == "" {
		return // required() reports it
	}
	if tag := v.doc.ScalarTag(path); tag != "" && tag != "!!str" {
		v.addf(path, "%s is a %s, not an image reference: write the image as registry/repository:tag (e.g. nvcr.io/nvidia/pytorch:24.05-py3)", value, strings.TrimPrefix(tag, "!!"))
		return
	}
	if err := checkImageRef(value); err != nil {
		msg := err.Error()
		if strings.ContainsAny(value, " \t") {
			msg = "it contains whitespace"
		}
		v.addf(path, "%q is not a valid image reference (%s): use lowercase registry/repository[:tag][@sha256:digest], e.g. nvcr.io/nvidia/pytorch:24.05-py3", value, msg)
		return
	}
	if w := image.MovingWarning(value); w != "" {
		v.warnf(path, "%s", w)
	}
}

// architectures checks kubernetes.io/arch values (GOARCH names, as nodes report them).
func (v *validator) architectures(path string, arches []string) {
	for i, a := range arches {
		p := fmt.Sprintf("%s[%d]", path, i)
		// uname -m's names, which people copy from a node's shell.
		if goarch, ok := map[string]string{"x86_64": "amd64", "aarch64": "arm64"}[a]; ok {
			v.addf(p, "%q is uname's name: nodes report kubernetes.io/arch=%s, write %s", a, goarch, goarch)
			continue
		}
		v.oneOf(p, a, image.ValidArches...)
	}
}

func (v *validator) max(path string, value, max int) {
	if value > max {
		v.addf(path, "must be at most %d, got %d", max, value)
	}
}

func (v *validator) min(path string, value, min int) {
	if value < min {
		v.addf(path, "must be at least %d, got %d", min, value)
	}
}

func (v *validator) quantity(path, value string) {
	if value == "" {
		return
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		v.addf(path, "%q is not a Kubernetes quantity (examples: 500m, 8, 64Gi)", value)
		return
	}
	if q.Sign() <= 0 {
		v.addf(path, "must be positive, got %q", value)
	}
}

func (v *validator) oneOf(path, value string, allowed ...string) {
	for _, a := range allowed {
		if value == a {
			return
		}
	}
	msg := fmt.Sprintf("%q is not one of %s", value, strings.Join(allowed, ", "))
	if s := strict.Suggest(value, allowed); s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
	}
	v.addf(path, "%s", msg)
}

// Warnings are problems that do not stop a recipe from being used (e.g. an unknown NCCL_* name).
func (r *Recipe) Warnings() strict.Problems {
	v := &validator{doc: r.doc}
	r.validate(v)
	return v.warnings
}

// Validate checks the whole recipe and returns every problem (as strict.Problems), or nil.
func (r *Recipe) Validate() error {
	v := &validator{doc: r.doc}
	r.validate(v)
	return v.problems.Err()
}

func (r *Recipe) validate(v *validator) {
	if r.APIVersion == "" {
		v.addf("apiVersion", "required: set apiVersion: %s", APIVersion)
	} else if r.APIVersion != APIVersion {
		v.addf("apiVersion", "unsupported version %q: this ain reads %s", r.APIVersion, APIVersion)
	}
	switch r.Kind {
	case KindTraining, KindMPI, KindServing:
	case "":
		v.addf("kind", "required: one of %s", strings.Join(Kinds, ", "))
	default:
		v.oneOf("kind", r.Kind, Kinds...)
	}
	v.required("metadata.name", r.Metadata.Name)
	if n := r.Metadata.Name; n != "" {
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			v.addf("metadata.name", "%q is not a valid name: lower-case letters, digits and '-', starting and ending with a letter or digit", n)
		} else if len(n) > MaxNameLen {
			v.addf("metadata.name", "%q is %d characters; at most %d (pod and service names are derived from it)", n, len(n), MaxNameLen)
		}
	}
	for k, val := range r.Metadata.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			v.addf("metadata.labels."+k, "invalid label key: %s", errs[0])
		}
		if errs := validation.IsValidLabelValue(val); len(errs) > 0 {
			v.addf("metadata.labels."+k, "invalid label value %q: %s", val, errs[0])
		}
	}
	if w := r.Workload(); w != nil {
		r.validateWorkload(w, v)
	}
	if t := r.Training; t != nil {
		if t.MasterPort < 1 || t.MasterPort > 65535 {
			v.addf("spec.masterPort", "must be a port number 1-65535, got %d", t.MasterPort)
		}
		if len(t.Command) == 0 {
			v.addf("spec.command", "required: the command every rank runs, e.g. [torchrun, train.py]")
		}
	}
	if m := r.MPI; m != nil {
		if m.SSHPort < 1 || m.SSHPort > 65535 {
			v.addf("spec.sshPort", "must be a port number 1-65535 (where the image's sshd listens), got %d", m.SSHPort)
		}
		v.quantity("spec.launcher.resources.cpu", m.Launcher.Resources.CPU)
		v.quantity("spec.launcher.resources.memory", m.Launcher.Resources.Memory)
		switch {
		case m.NCCLTests != nil && len(m.Command) > 0:
			v.addf("spec.ncclTests", "set either spec.command or spec.ncclTests, not both")
		case m.NCCLTests == nil && len(m.Command) == 0:
			v.addf("spec.command", "required: the program mpirun starts on every slot (or set spec.ncclTests)")
		}
		if t := m.NCCLTests; t != nil {
			v.required("spec.ncclTests.binary", t.Binary)
			if t.Binary != "" && !path.IsAbs(t.Binary) && strings.Contains(t.Binary, "/") {
				v.addf("spec.ncclTests.binary", "%q: give an absolute path in the image or a bare program name on PATH", t.Binary)
			}
			minB, errMin := ParseBytes(t.MinBytes)
			if errMin != nil {
				v.addf("spec.ncclTests.minBytes", "%v", errMin)
			}
			maxB, errMax := ParseBytes(t.MaxBytes)
			if errMax != nil {
				v.addf("spec.ncclTests.maxBytes", "%v", errMax)
			}
			if errMin == nil && errMax == nil && minB > maxB {
				v.addf("spec.ncclTests.maxBytes", "%s is smaller than minBytes %s", t.MaxBytes, t.MinBytes)
			}
			v.min("spec.ncclTests.stepFactor", t.StepFactor, 2)
			v.min("spec.ncclTests.gpusPerThread", t.GPUsPerThread, 1)
			if t.Iters < 0 {
				v.addf("spec.ncclTests.iters", "must not be negative")
			}
			if t.WarmupIters < 0 {
				v.addf("spec.ncclTests.warmupIters", "must not be negative")
			}
			if t.Check != nil && *t.Check < 0 {
				v.addf("spec.ncclTests.check", "must be 0 (no check) or a positive number of check iterations")
			}
			if r.MPI.GPUsPerNode > 0 && t.GPUsPerThread > r.MPI.GPUsPerNode {
				v.addf("spec.ncclTests.gpusPerThread", "%d GPUs per thread but only %d GPUs per node", t.GPUsPerThread, r.MPI.GPUsPerNode)
			}
		}
	}
	if s := r.Serving; s != nil {
		r.validateServing(s, v)
	}
}

var envNameRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (r *Recipe) validateWorkload(w *Workload, v *validator) {
	v.required("spec.image", w.Image)
	v.image("spec.image", w.Image)
	v.architectures("spec.architectures", w.Architectures)
	v.oneOf("spec.imagePullPolicy", w.ImagePullPolicy, "Always", "IfNotPresent", "Never")
	v.min("spec.nodes", w.Nodes, 1)
	v.max("spec.nodes", w.Nodes, MaxNodes)
	if w.GPUsPerNode < 0 {
		v.addf("spec.gpusPerNode", "must not be negative, got %d", w.GPUsPerNode)
	}
	v.quantity("spec.resources.cpu", w.Resources.CPU)
	v.quantity("spec.resources.memory", w.Resources.Memory)
	v.quantity("spec.shmSize", w.ShmSize)
	if w.Resources.Memory != "" && w.ShmSize != "" {
		mem, err1 := resource.ParseQuantity(w.Resources.Memory)
		shm, err2 := resource.ParseQuantity(w.ShmSize)
		if err1 == nil && err2 == nil && shm.Cmp(mem) >= 0 {
			v.addf("spec.shmSize", "%s is not less than resources.memory %s: a Memory-backed /dev/shm counts against the pod's memory", w.ShmSize, w.Resources.Memory)
		}
	}
	for i, c := range w.Command {
		if strings.TrimSpace(c) == "" {
			v.addf(fmt.Sprintf("spec.command[%d]", i), "empty argument")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(w.Env)) {
		p := "spec.env." + k
		if !envNameRE().MatchString(k) {
			v.addf(p, "%q is not a valid environment variable name", k)
		}
		if strings.HasPrefix(k, "NCCL_") {
			v.addf(p, "NCCL variables belong in spec.nccl.env, where they are validated and applied over the profile's")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(w.NCCL.Env)) {
		p := "spec.nccl.env." + k
		res := nccl.CheckVar(k, w.NCCL.Env[k])
		if res.Problem != "" {
			v.addf(p, "%s", res.Problem)
		}
		if res.Warning != "" {
			v.warnf(p, "%s", res.Warning)
		}
	}
	r.validateVolumes(w.Volumes, v)
	rp := w.RunPolicy
	v.oneOf("spec.runPolicy.cleanPodPolicy", rp.CleanPodPolicy, "None", "Running", "All")
	if r.MPI != nil && rp.CleanPodPolicy == "None" {
		v.warnf("spec.runPolicy.cleanPodPolicy", "None keeps the MPI workers (sleep 365d) holding their GPUs and RDMA devices after the launcher ends; use Running (the default: the launcher and its log stay)")
	}
	if rp.BackoffLimit != nil && *rp.BackoffLimit < 0 {
		v.addf("spec.runPolicy.backoffLimit", "must not be negative")
	}
	if rp.ActiveDeadlineSeconds != nil && *rp.ActiveDeadlineSeconds <= 0 {
		v.addf("spec.runPolicy.activeDeadlineSeconds", "must be positive")
	}
	if rp.TTLSecondsAfterFinished != nil && *rp.TTLSecondsAfterFinished < 0 {
		v.addf("spec.runPolicy.ttlSecondsAfterFinished", "must not be negative")
	}
}

func (r *Recipe) validateVolumes(vols []Volume, v *validator) {
	names, mounts := map[string]int{}, map[string]int{}
	for i, vol := range vols {
		p := fmt.Sprintf("spec.volumes[%d]", i)
		v.required(p+".name", vol.Name)
		v.required(p+".claimName", vol.ClaimName)
		v.required(p+".mountPath", vol.MountPath)
		if vol.Name != "" {
			if errs := validation.IsDNS1123Label(vol.Name); len(errs) > 0 {
				v.addf(p+".name", "%q is not a valid volume name (lower-case letters, digits, '-')", vol.Name)
			} else if vol.Name == "dshm" {
				v.addf(p+".name", "\"dshm\" is reserved for the memory-backed /dev/shm ain adds")
			}
			if j, dup := names[vol.Name]; dup {
				v.addf(p+".name", "duplicate volume name %q (also spec.volumes[%d])", vol.Name, j)
			}
			names[vol.Name] = i
		}
		if vol.ClaimName != "" {
			if errs := validation.IsDNS1123Subdomain(vol.ClaimName); len(errs) > 0 {
				v.addf(p+".claimName", "%q is not a valid PersistentVolumeClaim name", vol.ClaimName)
			}
		}
		if vol.MountPath != "" {
			switch {
			case !path.IsAbs(vol.MountPath):
				v.addf(p+".mountPath", "%q must be an absolute path", vol.MountPath)
			case path.Clean(vol.MountPath) == "/dev/shm":
				v.addf(p+".mountPath", "/dev/shm is provided by ain (memory-backed, sized by spec.shmSize)")
			}
			if j, dup := mounts[path.Clean(vol.MountPath)]; dup {
				v.addf(p+".mountPath", "%q is already mounted by spec.volumes[%d]", vol.MountPath, j)
			}
			mounts[path.Clean(vol.MountPath)] = i
		}
	}
}

// ParseBytes parses an nccl-tests size: a number with an optional K, M or G suffix (powers of
// 1024, as nccl-tests' -b/-e read them), optionally followed by B or iB (8B, 2KB, 1GiB). It is
// ain's one byte grammar: recipe fields and command-line flags (--min, --max, --expect-bytes)
// both read sizes with it, so a flag never accepts what the recipe then rejects.
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	num := s
	if strings.HasSuffix(num, "B") {
		num = strings.TrimSuffix(strings.TrimSuffix(num, "B"), "i")
		if strings.HasSuffix(s, "iB") && !strings.ContainsAny(num[max(len(num)-1, 0):], "KMGkmg") {
			num = "" // "iB" only follows a unit: 1KiB, not 1iB
		}
	}
	mult := int64(1)
	if num != "" {
		switch strings.ToUpper(num[len(num)-1:]) {
		case "K":
			mult = 1 << 10
		case "M":
			mult = 1 << 20
		case "G":
			mult = 1 << 30
		}
	}
	if mult != 1 {
		num = num[:len(num)-1]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size: use bytes with an optional K, M or G suffix (8, 1M, 8G)", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}
