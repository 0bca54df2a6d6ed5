// Package jobs turns a recipe plus a fabric profile into Kubernetes objects (pure builders, no
// I/O): a kubeflow.org/v1 PyTorchJob for training recipes, an MPIJob for MPI recipes, each pod
// carrying the GPU and RDMA resources, IPC_LOCK, a memory-backed /dev/shm, the Multus
// annotation and the NCCL environment of the fabric.
package jobs

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ain-hpc/ain/pkg/image"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// Names the workloads use (ain's labels live in pkg/kube; see conventions.go).
const (
	// LabelRole tells a run's GPU ranks (RoleRank: master, workers) from its MPI launcher; the
	// ranks' anti-affinity selects on it.
	LabelRole    = "ain.dev/role"
	RoleRank     = "rank"
	RoleLauncher = "launcher"
	// HostnameTopologyKey is the node label that makes "one rank per node" a scheduling rule.
	HostnameTopologyKey = "kubernetes.io/hostname"
	// MultusAnnotation is where Multus reads a pod's secondary networks.
	MultusAnnotation = "k8s.v1.cni.cncf.io/networks"

	// PyTorchContainer is the container name the training-operator requires in PyTorchJob pods.
	PyTorchContainer = "pytorch"
	// PyTorchPortName is the port name the training-operator looks for on the master.
	PyTorchPortName = "pytorchjob-port"
	// MPIContainer names the launcher and worker containers of an MPIJob.
	MPIContainer = "mpi"
	// ShmVolume is the memory-backed /dev/shm volume.
	ShmVolume = "dshm"
)

// Options are per-run settings that are not part of the recipe.
type Options struct {
	// Name overrides the job name (default: the recipe's metadata.name).
	Name string
	// Namespace for every object (empty leaves it to the client's default).
	Namespace string
	// GangScheduling sets runPolicy.schedulingPolicy.minAvailable to every pod of the job, so a
	// gang scheduler places all of them or none. Set it only when the cluster serves one the
	// training-operator can use (OperatorGang); the operator honours it when started with
	// --gang-scheduler-name (Volcano or scheduler-plugins), and ignores it otherwise. On a
	// TrainJob it renders the runtime's podGroupPolicy instead (addPodGroupPolicy).
	GangScheduling bool
	// GangSchedulers are the gang schedulers the cluster serves (GangAPIs): with GangScheduling,
	// a TrainJob's runtime asks the Trainer for a PodGroup of the first it can use
	// (trainerPodGroupPolicy).
	GangSchedulers []string
}

// Bundle is what one recipe renders to, in apply order.
type Bundle struct {
	Objects []runtime.Object
}

// Build renders r for the cluster described by p.
func Build(r *recipe.Recipe, p *profile.Profile, o Options) (*Bundle, error) {
	name, err := jobName(r, o)
	if err != nil {
		return nil, err
	}
	if err := checkDerivedNames(APITrainingOperator, r, name); err != nil {
		return nil, err
	}
	switch {
	case r.Training != nil:
		job, err := buildPyTorchJob(r, p, name, o.Namespace)
		if err != nil {
			return nil, err
		}
		if o.GangScheduling {
			job.Spec.RunPolicy.SchedulingPolicy = minAvailable(r.Training.Nodes)
		}
		return &Bundle{Objects: []runtime.Object{job}}, nil
	case r.MPI != nil:
		job, err := buildMPIJob(r, p, name, o.Namespace)
		if err != nil {
			return nil, err
		}
		if o.GangScheduling {
			job.Spec.RunPolicy.SchedulingPolicy = minAvailable(r.MPI.Nodes + 1) // the workers and the launcher
		}
		return &Bundle{Objects: []runtime.Object{job}}, nil
	case r.Serving != nil:
		return nil, next.With(fmt.Errorf("recipe %s is kind Serving: deploy it as a model server, not as a job", r.Metadata.Name), "serve")
	}
	return nil, fmt.Errorf("recipe %s has no spec", r.Metadata.Name)
}

// jobName is the run's name: o.Name, else the recipe's, checked as a DNS label.
func jobName(r *recipe.Recipe, o Options) (string, error) {
	name := o.Name
	if name == "" {
		name = r.Metadata.Name
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 || len(name) > recipe.MaxNameLen {
		return "", fmt.Errorf("job name %q: use at most %d lower-case letters, digits and '-', starting and ending with a letter or digit", name, recipe.MaxNameLen)
	}
	return name, nil
}

func minAvailable(pods int) *kubeflowv1.SchedulingPolicy {
	n := int32(pods)
	return &kubeflowv1.SchedulingPolicy{MinAvailable: &n}
}

// Labels returns the labels ain puts on a run's objects and pods.
func Labels(r *recipe.Recipe, name string) map[string]string {
	l := map[string]string{}
	for k, v := range r.Metadata.Labels {
		l[k] = v
	}
	l[LabelManagedBy] = ManagedByAin
	l[LabelRecipe] = r.Metadata.Name
	l[LabelRun] = name
	l[LabelKind] = r.Kind
	return l
}

func objectMeta(r *recipe.Recipe, p *profile.Profile, name, ns string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Namespace:   ns,
		Labels:      Labels(r, name),
		Annotations: map[string]string{AnnotationFabric: p.Spec.Fabric},
	}
}

// podTemplate builds the pod template of a GPU rank (master, worker).
func podTemplate(r *recipe.Recipe, p *profile.Profile, name, container string, cmd []string, gpus int) (corev1.PodTemplateSpec, error) {
	w := r.Workload()
	res, err := rankResources(w, p, gpus)
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	shm, err := resource.ParseQuantity(w.ShmSize)
	if err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("spec.shmSize: %w", err)
	}
	c := corev1.Container{
		Name:            container,
		Image:           w.Image,
		ImagePullPolicy: corev1.PullPolicy(w.ImagePullPolicy),
		Command:         cmd,
		WorkingDir:      w.WorkingDir,
		Env:             Env(r, p),
		Resources:       res,
		VolumeMounts:    []corev1.VolumeMount{{Name: ShmVolume, MountPath: "/dev/shm"}},
	}
	if usesFabric(w, p) {
		c.SecurityContext = &corev1.SecurityContext{
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}},
		}
	}
	vols := []corev1.Volume{{
		Name: ShmVolume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: &shm,
		}},
	}}
	for _, v := range w.Volumes {
		vols = append(vols, corev1.Volume{
			Name: v.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: v.ClaimName, ReadOnly: v.ReadOnly,
			}},
		})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{
			Name: v.Name, MountPath: v.MountPath, SubPath: v.SubPath, ReadOnly: v.ReadOnly,
		})
	}
	labels := Labels(r, name)
	labels[LabelRole] = RoleRank
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			Containers:  []corev1.Container{c},
			Volumes:     vols,
			Tolerations: tolerations(p),
			Affinity:    onePerNode(name),
		},
	}
	// The profile's nodeSelector picks the GPU nodes (its GPU model, their architecture): a pod
	// that holds no GPU (qlora-merge, on the CPU) is not held to it, as the MPI launcher is not.
	// The tolerations stay, as the launcher's do: they allow the tainted GPU nodes and never
	// require them, so a cluster whose nodes are all tainted GPU nodes still runs the pod.
	if gpus > 0 {
		t.Spec.NodeSelector = copyMap(p.Spec.NodeSelector)
	}
	// Every pod that runs the image, GPU or not, is held to its architectures: on another
	// node the container ends at once with "exec format error".
	if err := image.RequireArches(&t.Spec, w.Architectures); err != nil {
		return t, err
	}
	if usesFabric(w, p) && len(p.Spec.Networks) > 0 {
		t.Annotations = map[string]string{MultusAnnotation: strings.Join(p.Spec.Networks, ",")}
	}
	return t, nil
}

// onePerNode is the rule behind "nodes: N, one pod per node": a required pod anti-affinity on
// the hostname against the run's other ranks. Without it the scheduler may put three 1-GPU ranks
// on one 8-GPU node, and an "inter-node" benchmark measures NVLink/SHM instead of the fabric. It
// is required, not preferred: a rank that cannot get a node of its own stays Pending with the
// scheduler saying so ("didn't match pod anti-affinity rules"), which is the honest outcome.
func onePerNode(name string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: name, LabelRole: RoleRank}},
			TopologyKey:   HostnameTopologyKey,
		}},
	}}
}

// usesFabric reports whether a workload's pods need the RDMA fabric: an RDMA profile and more
// than one node. A single pod's NCCL never touches the NIC (NVLink, PCIe or shared memory
// inside the node), and a one-pod CPU job (qlora-merge) has no NCCL at all, so neither holds an
// RDMA device, IPC_LOCK (which Pod Security baseline refuses) or a Multus interface.
func usesFabric(w *recipe.Workload, p *profile.Profile) bool { return p.RDMA() && w.Nodes > 1 }

// rankResources: GPUs and RDMA as request = limit (extended resources cannot be overcommitted),
// CPU and memory as requests, memory also as the limit so a Memory /dev/shm is bounded.
func rankResources(w *recipe.Workload, p *profile.Profile, gpus int) (corev1.ResourceRequirements, error) {
	req := corev1.ResourceList{}
	lim := corev1.ResourceList{}
	if gpus > 0 {
		q := *resource.NewQuantity(int64(gpus), resource.DecimalSI)
		req[corev1.ResourceName(p.Spec.GPUResource)] = q
		lim[corev1.ResourceName(p.Spec.GPUResource)] = q
	}
	if usesFabric(w, p) {
		q := p.RDMAQuantity()
		req[corev1.ResourceName(p.Spec.RDMA.Resource)] = q
		lim[corev1.ResourceName(p.Spec.RDMA.Resource)] = q
	}
	cpuMem, err := w.Resources.Requests("spec.resources")
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	maps.Copy(req, cpuMem)
	if q, ok := cpuMem[corev1.ResourceMemory]; ok {
		lim[corev1.ResourceMemory] = q
	}
	return corev1.ResourceRequirements{Requests: req, Limits: lim}, nil
}

// Env is the environment of every rank: the fabric's NCCL settings (where the ranks have GPUs:
// without any there is no NCCL), then the recipe's env, then the recipe's nccl.env (which wins),
// sorted by name.
func Env(r *recipe.Recipe, p *profile.Profile) []corev1.EnvVar {
	w := r.Workload()
	merged := map[string]string{}
	if w.GPUsPerNode > 0 {
		f := p.NCCLFabric()
		// TUNING (one line per collective call) only where the run is a benchmark.
		f.Bench = r.MPI != nil && r.MPI.NCCLTests != nil
		merged = nccl.FabricEnv(f)
	}
	for k, v := range w.Env {
		merged[k] = v
	}
	for k, v := range w.NCCL.Env {
		merged[k] = v
	}
	env := make([]corev1.EnvVar, 0, len(merged))
	for _, k := range nccl.SortedNames(merged) {
		env = append(env, corev1.EnvVar{Name: k, Value: merged[k]})
	}
	return env
}

func tolerations(p *profile.Profile) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range p.Spec.Tolerations {
		out = append(out, corev1.Toleration{
			Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect),
		})
	}
	return out
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func runPolicy(w *recipe.Workload) kubeflowv1.RunPolicy {
	clean := kubeflowv1.CleanPodPolicy(w.RunPolicy.CleanPodPolicy)
	// backoffLimit 0 is left out on the training-operator: once a job exceeds its backoff
	// limit, v1.8.1 deletes every pod of it, the failed ones and their logs included, before it
	// marks the job Failed (pkg/controller.v1/common/job.go ReconcileJobs: DeletePodsAndServices
	// runs while the job is not finished yet, so cleanPodPolicy does not apply). Unset, a failed
	// pod of restartPolicy Never fails the job all the same, and the pods stay for ain to read.
	backoff := w.RunPolicy.BackoffLimit
	if backoff != nil && *backoff == 0 {
		backoff = nil
	}
	return kubeflowv1.RunPolicy{
		CleanPodPolicy:          &clean,
		BackoffLimit:            backoff,
		ActiveDeadlineSeconds:   w.RunPolicy.ActiveDeadlineSeconds,
		TTLSecondsAfterFinished: w.RunPolicy.TTLSecondsAfterFinished,
	}
}

func buildPyTorchJob(r *recipe.Recipe, p *profile.Profile, name, ns string) (*kubeflowv1.PyTorchJob, error) {
	t := r.Training
	tmpl, err := podTemplate(r, p, name, PyTorchContainer, t.Command, t.GPUsPerNode)
	if err != nil {
		return nil, err
	}
	master := tmpl.DeepCopy()
	master.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: PyTorchPortName, ContainerPort: t.MasterPort, Protocol: corev1.ProtocolTCP}}
	one := int32(1)
	restart := kubeflowv1.RestartPolicyNever
	specs := map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
		kubeflowv1.PyTorchJobReplicaTypeMaster: {Replicas: &one, RestartPolicy: restart, Template: *master},
	}
	if t.Nodes > 1 {
		workers := int32(t.Nodes - 1)
		worker := tmpl.DeepCopy()
		worker.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: PyTorchPortName, ContainerPort: t.MasterPort, Protocol: corev1.ProtocolTCP}}
		specs[kubeflowv1.PyTorchJobReplicaTypeWorker] = &kubeflowv1.ReplicaSpec{Replicas: &workers, RestartPolicy: restart, Template: *worker}
	}
	nproc := strconv.Itoa(max(t.GPUsPerNode, 1))
	return &kubeflowv1.PyTorchJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeflowv1.SchemeGroupVersion.String(), Kind: kubeflowv1.PyTorchJobKind},
		ObjectMeta: objectMeta(r, p, name, ns),
		Spec: kubeflowv1.PyTorchJobSpec{
			RunPolicy:           runPolicy(&t.Workload),
			PyTorchReplicaSpecs: specs,
			NprocPerNode:        &nproc,
		},
	}, nil
}

// MPIRunCommand is the launcher's command line for an MPI recipe: mpirun with one rank per
// GPU slot, the NCCL variables exported to every rank (-x), then the program.
func MPIRunCommand(r *recipe.Recipe, p *profile.Profile) []string {
	m := r.MPI
	slots := int(mpiSlots(m))
	np := m.Nodes * slots
	cmd := []string{"mpirun", "--allow-run-as-root",
		"-np", strconv.Itoa(np), "-npernode", strconv.Itoa(slots),
		"--bind-to", "none", "--map-by", "slot",
	}
	// An MCA parameter the recipe's mpirunArgs sets is not set again: Open MPI 4.1 aborts on a
	// parameter listed twice ("MCA parameter has been listed multiple times"), and an include
	// list beside ain's exclude list of the same framework is refused as mutually exclusive.
	user := UserMCA(m.MPIRunArgs)
	mca := func(name, value string, family ...string) {
		for _, f := range append(family, name) {
			if user[f] {
				return
			}
		}
		cmd = append(cmd, "-mca", name, value)
	}
	mca("pml", "ob1")
	mca("btl", "self,tcp")
	// MPI's own TCP traffic (out-of-band wire-up, NCCL's unique id) must not try loopback or a
	// bridge: Open MPI's default exclusion list is replaced, so lo is named again. HCOLL (HPC-X
	// images) is turned off: it probes the HCAs itself and fails or warns in pods; NCCL, not
	// MPI, carries the data. Both as in public nccl-tests manifests (Azure/OCI HPC-X, AWS).
	// Never an include list taken from the profile's socketIfname: that is NCCL's
	// NCCL_SOCKET_IFNAME, a prefix list for the ranks, which have the Multus interfaces, while
	// mpirun runs on the launcher, which has none of them (it holds no RDMA device), and Open MPI
	// matches names exactly and aborts when an include list matches no local interface
	// (4.1 orte/mca/oob/tcp/oob_tcp_component.c: "None of the TCP networks specified to be
	// included for out-of-band communications could be found"). An exclusion list cannot miss.
	mca("btl_tcp_if_exclude", "lo,docker0", "btl_tcp_if_include")
	mca("oob_tcp_if_exclude", "lo,docker0", "oob_tcp_if_include")
	mca("coll_hcoll_enable", "0")
	for _, e := range Env(r, p) {
		cmd = append(cmd, "-x", e.Name)
	}
	cmd = append(cmd, "-x", "LD_LIBRARY_PATH", "-x", "PATH")
	cmd = append(cmd, m.MPIRunArgs...)
	return append(cmd, MPIProgram(m)...)
}

// UserMCA is the set of MCA parameters mpirun arguments set (-mca/--mca NAME VALUE).
func UserMCA(args []string) map[string]bool {
	out := map[string]bool{}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-mca" || args[i] == "--mca" {
			out[args[i+1]] = true
			i++
		}
	}
	return out
}

// MPIProgram is the program mpirun starts on every slot.
func MPIProgram(m *recipe.MPISpec) []string {
	t := m.NCCLTests
	if t == nil {
		return append([]string(nil), m.Command...)
	}
	prog := []string{t.Binary, "-b", t.MinBytes, "-e", t.MaxBytes, "-f", strconv.Itoa(t.StepFactor), "-g", strconv.Itoa(t.GPUsPerThread)}
	if t.Iters > 0 {
		prog = append(prog, "-n", strconv.Itoa(t.Iters))
	}
	if t.WarmupIters > 0 {
		prog = append(prog, "-w", strconv.Itoa(t.WarmupIters))
	}
	if t.Check != nil {
		prog = append(prog, "-c", strconv.Itoa(*t.Check))
	}
	return prog
}

// mpiTemplates builds an MPI recipe's launcher and worker pod templates, shared by every MPI
// backend (kubeflow.org/v1 and v2beta1 MPIJob, TrainJob on an MPI runtime). container names the
// containers (MPIContainer, or the Trainer's "node").
func mpiTemplates(r *recipe.Recipe, p *profile.Profile, name, container string) (launcher, worker corev1.PodTemplateSpec, err error) {
	m := r.MPI
	// Workers: the operator runs their first container with "sleep 365d" when it has no
	// command, and mpirun starts the ranks in them through kubectl exec.
	worker, err = podTemplate(r, p, name, container, nil, m.GPUsPerNode)
	if err != nil {
		return launcher, worker, err
	}
	// The launcher runs mpirun only: no GPU, so none of the GPU nodes' placement. The profile's
	// nodeSelector is not copied: on arm64 GPU nodes (GH200, GB200) it would put the launcher
	// and the training-operator's kubectl-delivery init container (its kubectl is amd64 only,
	// buildMPIJob) there. The tolerations are kept (they allow, never require, a node), so a cluster of
	// tainted GPU nodes only still runs it; amd64 is preferred, not required.
	ll := Labels(r, name)
	ll[LabelRole] = RoleLauncher
	launcher = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: ll},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:            container,
				Image:           m.Image,
				ImagePullPolicy: corev1.PullPolicy(m.ImagePullPolicy),
				Command:         MPIRunCommand(r, p),
				WorkingDir:      m.WorkingDir,
				Env:             Env(r, p),
			}},
			Tolerations: tolerations(p),
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
					Weight: 100,
					Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"},
					}}},
				}},
			}},
		},
	}
	if len(m.Architectures) > 0 {
		// The launcher runs the rank image too: its architectures are a requirement, which
		// replaces the amd64 preference.
		launcher.Spec.Affinity = nil
		if err := image.RequireArches(&launcher.Spec, m.Architectures); err != nil {
			return launcher, worker, err
		}
	}
	lr, err := m.Launcher.Resources.Requests("spec.launcher.resources")
	if err != nil {
		return launcher, worker, err
	}
	launcher.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: lr}
	return launcher, worker, nil
}

func buildMPIJob(r *recipe.Recipe, p *profile.Profile, name, ns string) (*kubeflowv1.MPIJob, error) {
	m := r.MPI
	// The training-operator adds a kubectl-delivery init container to the launcher: its image is
	// published for arm64 too (v1.8.1 publish-core-images.yaml), but its Dockerfile downloads
	// bin/linux/amd64/kubectl for every platform (build/images/kubectl-delivery/Dockerfile), so
	// kubexec.sh fails with "exec format error" on any other node.
	if len(m.Architectures) > 0 && !slices.Contains(m.Architectures, "amd64") {
		return nil, fmt.Errorf("spec.architectures %v: the training-operator's MPIJob launcher runs the operator's kubectl, built for amd64 only, beside this image, which has no amd64 build; use the mpi-operator or the Trainer (--api mpi-operator|trainer), or an image with an amd64 build", m.Architectures)
	}
	launcher, worker, err := mpiTemplates(r, p, name, MPIContainer)
	if err != nil {
		return nil, err
	}
	if WorkerGateEnabled(m) {
		addWorkerGate(m, &launcher, &worker)
	}
	one := int32(1)
	workers := int32(m.Nodes)
	// The training-operator writes slotsPerWorker into the hostfile as each worker's slots
	// (training-operator v1.8.1 pkg/controller.v1/mpi/mpijob_controller.go newConfigMap): the
	// ranks per node, as mpirun's -npernode says, not the GPUs (they differ under -g N).
	slots := mpiSlots(m)
	restart := kubeflowv1.RestartPolicyNever
	return &kubeflowv1.MPIJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeflowv1.SchemeGroupVersion.String(), Kind: kubeflowv1.MPIJobKind},
		ObjectMeta: objectMeta(r, p, name, ns),
		Spec: kubeflowv1.MPIJobSpec{
			SlotsPerWorker: &slots,
			RunPolicy:      runPolicy(&m.Workload),
			MPIReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
				kubeflowv1.MPIJobReplicaTypeLauncher: {Replicas: &one, RestartPolicy: restart, Template: launcher},
				kubeflowv1.MPIJobReplicaTypeWorker:   {Replicas: &workers, RestartPolicy: restart, Template: worker},
			},
		},
	}, nil
}

// Job is the bundle's job object: the last one (what it needs is applied before it).
func (b *Bundle) Job() runtime.Object { return b.Objects[len(b.Objects)-1] }

// noRetries is the backoffLimit of the batch Jobs an MPI or TrainJob run becomes (the
// mpi-operator's launcher Job, the JobSet's Jobs): the recipe's, else 0. Unset, batch/v1's
// default of 6 reran a failed mpirun up to 7 times, minutes each, before the job was Failed; a
// distributed run that failed is read, not retried blindly.
func noRetries(w *recipe.Workload) *int32 {
	if w.RunPolicy.BackoffLimit != nil {
		return w.RunPolicy.BackoffLimit
	}
	return ptrTo(int32(0))
}
