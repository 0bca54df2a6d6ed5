// Package recipe defines ain's versioned recipe schema (what to run), its strict decoding with
// file:line:field errors, --set overrides, defaults (applied in one place: Default) and
// validation (Validate, which collects every problem). Recipes say nothing about the cluster's
// fabric: that is the profile's job (package profile).
package recipe

import "github.com/ain-hpc/ain/pkg/strict"

// APIVersion is the only recipe schema version so far.
const APIVersion = "ain.dev/v1alpha1"

// Kinds of recipe.
const (
	KindTraining = "TrainingJob" // a PyTorchJob running torchrun on every node
	KindMPI      = "MPIJob"      // an MPIJob: a launcher running mpirun over workers
	KindServing  = "Serving"     // vLLM replicas behind a Service and an Ingress
)

// Kinds lists the recipe kinds, for messages.
var Kinds = []string{KindTraining, KindMPI, KindServing}

// Recipe is one decoded recipe file. Exactly one of Training, MPI and Serving is set, matching Kind.
type Recipe struct {
	APIVersion string   `yaml:"apiVersion" json:"apiVersion"`
	Kind       string   `yaml:"kind" json:"kind"`
	Metadata   Metadata `yaml:"metadata" json:"metadata"`

	Training *TrainingSpec `yaml:"-" json:"-"`
	MPI      *MPISpec      `yaml:"-" json:"-"`
	Serving  *ServingSpec  `yaml:"-" json:"-"`

	// Source names where the recipe came from: a file path or "builtin:NAME".
	Source string `yaml:"-" json:"-"`
	// Raw is the recipe file as written (comments included).
	Raw []byte `yaml:"-" json:"-"`
	// Defaulted lists the field paths Default filled in, with the value it chose.
	Defaulted []DefaultedField `yaml:"-" json:"-"`

	doc *strict.Doc
}

// DefaultedField is one value Default filled in.
type DefaultedField struct {
	Path  string
	Value string
}

// Metadata names and describes a recipe.
type Metadata struct {
	Name        string            `yaml:"name" json:"name"`
	Description string            `yaml:"description,omitempty" json:"description,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
}

// Workload is what training and MPI recipes share: the pods that run on GPU nodes.
type Workload struct {
	// Image is the container image of every rank.
	Image string `yaml:"image" json:"image"`
	// ImagePullPolicy is Always, IfNotPresent or Never (default IfNotPresent).
	ImagePullPolicy string `yaml:"imagePullPolicy,omitempty" json:"imagePullPolicy,omitempty"`
	// Architectures are the CPU architectures (kubernetes.io/arch values) the image is built
	// for; the GPU ranks (and an MPI launcher, which runs the same image) are held to nodes of
	// these. Default: what ain knows of its own default images (pkg/image), else unset (any node).
	Architectures []string `yaml:"architectures,omitempty" json:"architectures,omitempty"`
	// Nodes is the number of nodes (pods), one rank group per node.
	Nodes int `yaml:"nodes" json:"nodes"`
	// GPUsPerNode is the GPUs each pod requests (and torchrun's nproc-per-node / MPI slots).
	GPUsPerNode int `yaml:"gpusPerNode" json:"gpusPerNode"`
	// Command is the program every rank runs (torchrun ... for training; the MPI program for MPI jobs).
	Command []string `yaml:"command" json:"command"`
	// WorkingDir is the container's working directory.
	WorkingDir string `yaml:"workingDir,omitempty" json:"workingDir,omitempty"`
	// Env is extra environment for every rank (not NCCL_*: put those in nccl.env).
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Resources are the CPU and memory each pod requests.
	Resources Resources `yaml:"resources,omitempty" json:"resources,omitempty"`
	// ShmSize sizes the memory-backed /dev/shm (default: half of resources.memory, else 16Gi).
	ShmSize string `yaml:"shmSize,omitempty" json:"shmSize,omitempty"`
	// Volumes are PersistentVolumeClaims mounted into every rank (model and data on shared NFS).
	Volumes []Volume `yaml:"volumes,omitempty" json:"volumes,omitempty"`
	// NCCL holds NCCL settings that win over the profile's.
	NCCL NCCL `yaml:"nccl,omitempty" json:"nccl,omitempty"`
	// RunPolicy bounds the job's life.
	RunPolicy RunPolicy `yaml:"runPolicy,omitempty" json:"runPolicy,omitempty"`
}

// Resources are per-pod CPU and memory (Kubernetes quantities).
type Resources struct {
	// CPU is the CPU request, e.g. "8" or "7500m".
	CPU string `yaml:"cpu,omitempty" json:"cpu,omitempty"`
	// Memory is the memory request and limit, e.g. 64Gi (a memory-backed /dev/shm counts against it).
	Memory string `yaml:"memory,omitempty" json:"memory,omitempty"`
}

// Volume mounts a PersistentVolumeClaim.
type Volume struct {
	// Name of the volume in the pod (a DNS label; "dshm" is reserved).
	Name string `yaml:"name" json:"name"`
	// ClaimName is the PersistentVolumeClaim, e.g. the shared NFS disk.
	ClaimName string `yaml:"claimName" json:"claimName"`
	// MountPath is where it appears in the container (absolute).
	MountPath string `yaml:"mountPath" json:"mountPath"`
	// SubPath mounts a folder of the volume instead of its root.
	SubPath string `yaml:"subPath,omitempty" json:"subPath,omitempty"`
	// ReadOnly mounts it read-only.
	ReadOnly bool `yaml:"readOnly,omitempty" json:"readOnly,omitempty"`
}

// NCCL holds recipe-level NCCL settings.
type NCCL struct {
	// Env sets NCCL_* variables; they win over what the profile derives and are validated.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
}

// RunPolicy maps onto the training-operator's runPolicy.
type RunPolicy struct {
	// BackoffLimit is how many times a failed job is retried.
	BackoffLimit *int32 `yaml:"backoffLimit,omitempty" json:"backoffLimit,omitempty"`
	// ActiveDeadlineSeconds ends the job after this long.
	ActiveDeadlineSeconds *int64 `yaml:"activeDeadlineSeconds,omitempty" json:"activeDeadlineSeconds,omitempty"`
	// TTLSecondsAfterFinished removes the finished job after this long (on a TrainJob, its JobSet
	// with the Jobs and pods: the TrainJob itself keeps its status).
	TTLSecondsAfterFinished *int32 `yaml:"ttlSecondsAfterFinished,omitempty" json:"ttlSecondsAfterFinished,omitempty"`
	// CleanPodPolicy is None, Running or All (default None: pods stay so their logs can be read).
	CleanPodPolicy string `yaml:"cleanPodPolicy,omitempty" json:"cleanPodPolicy,omitempty"`
}

// TrainingSpec is a PyTorchJob: one Master and nodes-1 Workers, each running Command (torchrun).
type TrainingSpec struct {
	Workload `yaml:",inline" json:",inline"`
	// MasterPort is the rendezvous port on the master (default 23456).
	MasterPort int32 `yaml:"masterPort,omitempty" json:"masterPort,omitempty"`
}

// MPISpec is an MPIJob: a launcher running mpirun over Nodes workers with GPUsPerNode slots each.
type MPISpec struct {
	Workload `yaml:",inline" json:",inline"`
	// Launcher sizes the launcher pod (no GPU).
	Launcher Launcher `yaml:"launcher,omitempty" json:"launcher,omitempty"`
	// MPIRunArgs are extra mpirun arguments placed before the program.
	MPIRunArgs []string `yaml:"mpirunArgs,omitempty" json:"mpirunArgs,omitempty"`
	// NCCLTests, when set, builds Command from an nccl-tests binary and its flags.
	NCCLTests *NCCLTests `yaml:"ncclTests,omitempty" json:"ncclTests,omitempty"`
	// WorkerGate makes the launcher wait (bounded) until every worker is Ready before mpirun
	// starts, and gives workers a readiness probe (default true). false reproduces the
	// "launcher started before workers were ready" failure, for the lesson.
	WorkerGate *bool `yaml:"workerGate,omitempty" json:"workerGate,omitempty"`
	// SSHPort is the port the image's sshd listens on, which the workers' readiness probe
	// connects to: 22 for most images (coreweave/nccl-tests), 2222 for the mpi-operator's own
	// (mpioperator/*: build/base/Dockerfile sets Port 2222 in sshd_config and ssh_config).
	SSHPort int `yaml:"sshPort,omitempty" json:"sshPort,omitempty"`
}

// Launcher is the MPI launcher pod's size.
type Launcher struct {
	Resources Resources `yaml:"resources,omitempty" json:"resources,omitempty"`
}

// NCCLTests describes an nccl-tests run (the program is Binary with these flags).
type NCCLTests struct {
	// Binary is the path of the *_perf program in the image.
	Binary string `yaml:"binary" json:"binary"`
	// MinBytes, MaxBytes are -b and -e (sizes such as 8, 1M, 8G).
	MinBytes string `yaml:"minBytes,omitempty" json:"minBytes,omitempty"`
	MaxBytes string `yaml:"maxBytes,omitempty" json:"maxBytes,omitempty"`
	// StepFactor is -f (default 2).
	StepFactor int `yaml:"stepFactor,omitempty" json:"stepFactor,omitempty"`
	// GPUsPerThread is -g (default 1: one rank per GPU).
	GPUsPerThread int `yaml:"gpusPerThread,omitempty" json:"gpusPerThread,omitempty"`
	// Iters is -n; WarmupIters is -w (0 keeps nccl-tests' defaults).
	Iters       int `yaml:"iters,omitempty" json:"iters,omitempty"`
	WarmupIters int `yaml:"warmupIters,omitempty" json:"warmupIters,omitempty"`
	// Check is -c (default 1: validate results, so "#wrong" is meaningful).
	Check *int `yaml:"check,omitempty" json:"check,omitempty"`
}
