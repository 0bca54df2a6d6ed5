package recipe

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ain-hpc/ain/pkg/image"
)

// Defaults, in one place. Every value filled in is recorded in Recipe.Defaulted so that
// `ain recipes show` can print it.
const (
	DefaultMasterPort      = 23456
	DefaultShmSize         = "16Gi"
	DefaultImagePullPolicy = "IfNotPresent"
	DefaultCleanPodPolicy  = "None"
	// DefaultMPICleanPodPolicy: MPI workers run `sleep 365d` (the operator's default command) and
	// would hold their GPUs and RDMA devices after the launcher ends; Running deletes the pods
	// still running when the job finishes (the workers) and keeps the launcher, whose log has
	// every rank's output (training-operator v1.8.1 pkg/controller.v1/common/job.go).
	DefaultMPICleanPodPolicy = "Running"
	DefaultLauncherCPU       = "1"
	DefaultLauncherMemory    = "2Gi"
	DefaultMinBytes          = "8"
	DefaultMaxBytes          = "8G"
	DefaultStepFactor        = 2
)

func (r *Recipe) noteDefault(path, value string) {
	r.Defaulted = append(r.Defaulted, DefaultedField{Path: path, Value: value})
}

// orDefault sets *field to def when it is unset (its zero value) and records that path took
// the default: note, or def itself when note is "".
func orDefault[T comparable](r *Recipe, field *T, path string, def T, note string) {
	var zero T
	if *field != zero {
		return
	}
	*field = def
	if note == "" {
		note = fmt.Sprint(def)
	}
	r.noteDefault(path, note)
}

// Default fills unset optional fields. It is idempotent.
func (r *Recipe) Default() {
	if w := r.Workload(); w != nil {
		r.defaultWorkload(w)
	}
	if r.Training != nil {
		orDefault(r, &r.Training.MasterPort, "spec.masterPort", DefaultMasterPort, "")
	}
	if m := r.MPI; m != nil {
		orDefault(r, &m.Launcher.Resources.CPU, "spec.launcher.resources.cpu", DefaultLauncherCPU, "")
		orDefault(r, &m.Launcher.Resources.Memory, "spec.launcher.resources.memory", DefaultLauncherMemory, "")
		if m.SSHPort == 0 {
			m.SSHPort = 22
			note := "22 (the port the image's sshd listens on)"
			if strings.HasPrefix(imageRepository(m.Image), MPIOperatorImagePrefix) {
				m.SSHPort, note = 2222, "2222 (mpioperator/* images run sshd on 2222: mpi-operator build/base/Dockerfile)"
			}
			r.noteDefault("spec.sshPort", note)
		}
		if m.WorkerGate == nil {
			on := true
			m.WorkerGate = &on
			r.noteDefault("spec.workerGate", "true (the launcher waits for Ready workers)")
		}
		if t := m.NCCLTests; t != nil {
			orDefault(r, &t.MinBytes, "spec.ncclTests.minBytes", DefaultMinBytes, "")
			orDefault(r, &t.MaxBytes, "spec.ncclTests.maxBytes", DefaultMaxBytes, "")
			// nccl-tests' -b/-e take 8, 1K, 64M, 8G: a size written 1GiB or 2KB is passed on as 1G, 2K.
			t.MinBytes, t.MaxBytes = bareSize(t.MinBytes), bareSize(t.MaxBytes)
			orDefault(r, &t.StepFactor, "spec.ncclTests.stepFactor", DefaultStepFactor, "")
			orDefault(r, &t.GPUsPerThread, "spec.ncclTests.gpusPerThread", 1, "")
			if t.Check == nil {
				one := 1
				t.Check = &one
				r.noteDefault("spec.ncclTests.check", "1")
			}
		}
	}
	if r.Serving != nil {
		r.defaultServing(r.Serving)
	}
}

func (r *Recipe) defaultWorkload(w *Workload) {
	if !r.doc.Has("spec.gpusPerNode") { // an explicit 0 is refused by Validate, not replaced
		orDefault(r, &w.GPUsPerNode, "spec.gpusPerNode", 1, "")
	}
	orDefault(r, &w.ImagePullPolicy, "spec.imagePullPolicy", DefaultImagePullPolicy, "")
	if len(w.Architectures) == 0 && !r.doc.Has("spec.architectures") {
		if f, ok := image.Known(w.Image); ok {
			w.Architectures = slices.Clone(f.Arches)
			r.noteDefault("spec.architectures", strings.Join(f.Arches, ",")+" (the image's build: "+f.Source+")")
		}
	}
	if w.ShmSize == "" {
		w.ShmSize = DefaultShmSize
		if q, err := resource.ParseQuantity(w.Resources.Memory); err == nil && !q.IsZero() {
			// Half the pod's memory: NCCL's shared-memory segments and DataLoader workers live
			// there, and a Memory emptyDir counts against the pod's memory.
			half := resource.NewQuantity(q.Value()/2, resource.BinarySI)
			w.ShmSize = roundGi(half)
		}
		r.noteDefault("spec.shmSize", w.ShmSize+" (memory-backed /dev/shm)")
	}
	if w.RunPolicy.CleanPodPolicy == "" && r.MPI != nil {
		w.RunPolicy.CleanPodPolicy = DefaultMPICleanPodPolicy
		r.noteDefault("spec.runPolicy.cleanPodPolicy", DefaultMPICleanPodPolicy+" (the idle workers are deleted when the job ends; the launcher and its log stay)")
	}
	orDefault(r, &w.RunPolicy.CleanPodPolicy, "spec.runPolicy.cleanPodPolicy", DefaultCleanPodPolicy, DefaultCleanPodPolicy+" (pods are kept so every rank's log can be read)")
}

// Requests parses the CPU and memory requests (Kubernetes quantities); an unset one is left
// out. An error names the field under path ("spec.resources.cpu: ...").
func (r Resources) Requests(path string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, f := range []struct {
		name  corev1.ResourceName
		field string
		value string
	}{{corev1.ResourceCPU, "cpu", r.CPU}, {corev1.ResourceMemory, "memory", r.Memory}} {
		if f.value == "" {
			continue
		}
		q, err := resource.ParseQuantity(f.value)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", path, f.field, err)
		}
		out[f.name] = q
	}
	return out, nil
}

// roundGi prints a quantity in whole Gi when it is at least 1Gi, else in Mi.
func roundGi(q *resource.Quantity) string {
	const gi = 1 << 30
	v := q.Value()
	if v >= gi {
		return fmt.Sprintf("%dGi", v/gi)
	}
	return fmt.Sprintf("%dMi", v/(1<<20))
}

// bareSize drops the B or iB of a valid size (1GiB -> 1G); anything else is left for Validate.
func bareSize(s string) string {
	if _, err := ParseBytes(s); err != nil || !strings.HasSuffix(s, "B") {
		return s
	}
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(s), "B"), "i")
}
