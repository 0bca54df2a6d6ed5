package jobs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// The trainer.kubeflow.org/v1alpha1 TrainJob of Kubeflow Trainer v2 (v2.3.0). A TrainJob names a
// runtime; the Trainer turns runtime + TrainJob into a JobSet of the same name. ain renders,
// for every run, its own namespaced TrainingRuntime (named as the run, labelled as ain's, applied
// just before the TrainJob: a namespace-level user can create it, no cluster-admin needed), whose
// pod templates carry what the stock torch-distributed runtime leaves out: the GPU and RDMA
// resources, the Multus annotation, IPC_LOCK, a memory-backed /dev/shm and the fabric's NCCL
// environment. Facts from github.com/kubeflow/trainer/v2@v2.3.0:
//
//   - the replicated job labelled trainer.kubeflow.org/trainjob-ancestor-step=trainer must have
//     replicas 1 and a container named "node" (pkg/webhooks/trainingruntime_webhook.go), and the
//     TrainJob webhook refuses a TrainJob whose TrainingRuntime does not exist yet
//     (pkg/runtime/core/trainingruntime.go ValidateObjects): the runtime is applied first;
//   - the torch plugin (pkg/runtime/framework/plugins/torch/torch.go) sets PET_NNODES,
//     PET_NPROC_PER_NODE (trainer.numProcPerNode, else "auto"), PET_NODE_RANK (the Job completion
//     index), PET_MASTER_ADDR=<job>-node-0-0.<job> and PET_MASTER_PORT=29500 on the "node"
//     container: what torchrun reads, as with the training-operator's PyTorchJob;
//   - the MPI plugin (plugins/mpi/mpi.go) needs replicated jobs "launcher" and "node", mounts the
//     SSH keys (Secret <job>-mpi-ssh-auth) at mlPolicy.mpi.sshAuthMountPath in both, the hostfile
//     (ConfigMap <job>-mpi-hostfile) at /etc/mpi on the launcher, and sets
//     OMPI_MCA_orte_default_hostfile, OMPI_MCA_orte_keep_fqdn_hostnames,
//     OMPI_MCA_orte_set_default_slots (numProcPerNode) and OMPI_MCA_plm_rsh_args there. It does
//     not start sshd: the runtime's node container runs "/usr/sbin/sshd -De", as the Trainer's own
//     MPI runtimes do (manifests/base/runtimes/deepspeed_distributed.yaml), so the image needs sshd;
//   - the launcher waits for its workers through JobSet's dependsOn (launcher after node is
//     Ready, as in deepspeed_distributed.yaml): Ready counts Pods with Ready=True, and the node
//     container's readiness probe is a TCP connect to sshd;
//   - when the JobSet finishes (the launcher succeeded: successPolicy targets it), the JobSet
//     controller deletes its still-active Jobs (sigs.k8s.io/jobset@v0.12.0
//     pkg/controllers/jobset_controller.go: jobSetFinished, deleteJobs), so the sshd workers go
//     and the launcher's pod and log stay, as cleanPodPolicy Running does for an MPIJob;
//   - the JobSet labels every Pod jobset.sigs.k8s.io/jobset-name=<job> and
//     jobset.sigs.k8s.io/replicatedjob-name=node|launcher; the Job controller adds
//     batch.kubernetes.io/job-completion-index (the node rank);
//   - status.conditions are metav1.Conditions Complete, Failed, Suspended; status.jobsStatus
//     counts each replicated job's active, ready, succeeded and failed Jobs.
const (
	// TrainJobKind is the TrainJob kind.
	TrainJobKind = trainer.TrainJobKind
	// TrainerContainer is the container name the Trainer requires for the trainer step.
	TrainerContainer = "node"
	// TrainerNodeJob and TrainerLauncherJob are the replicated jobs of ain's runtimes.
	TrainerNodeJob     = "node"
	TrainerLauncherJob = "launcher"
	// trainerAncestorLabel marks the replicated job the TrainJob's trainer applies to.
	trainerAncestorLabel = "trainer.kubeflow.org/trainjob-ancestor-step"
	trainerAncestor      = "trainer"
	// JobSetNameLabel and ReplicatedJobLabel are JobSet's pod labels.
	JobSetNameLabel    = jobsetv1alpha2.JobSetNameKey
	ReplicatedJobLabel = jobsetv1alpha2.ReplicatedJobNameKey
	// CompletionIndexLabel is the Job controller's pod label of an Indexed Job's index.
	CompletionIndexLabel = batchv1.JobCompletionIndexAnnotation
	// AnnotationGPUsPerNode records the GPUs of each node pod on the TrainJob (whose own spec
	// does not hold them: they are in the runtime), for `ain list`.
	AnnotationGPUsPerNode = "ain.dev/gpus-per-node"
	// TrainJob conditions (trainer's TrainJobComplete, TrainJobFailed, TrainJobSuspended).
	trainJobComplete  = trainer.TrainJobComplete
	trainJobFailed    = trainer.TrainJobFailed
	trainJobSuspended = trainer.TrainJobSuspended
)

type trainJobBackend struct{ jobAPI }

var trainJob = trainJobBackend{jobAPI{kind: trainer.TrainJobKind, gvr: TrainJobGVR, container: TrainerContainer, selector: JobSetNameLabel}}

func (trainJobBackend) API() API                      { return APITrainer }
func (trainJobBackend) Handles(r *recipe.Recipe) bool { return r.Training != nil || r.MPI != nil }

// Delete deletes the TrainJob (its JobSet, Jobs and Pods go with it) and then the run's
// TrainingRuntime, which ain applied with it.
func (b trainJobBackend) Delete(ctx context.Context, c *Cluster, job *unstructured.Unstructured) ([]string, error) {
	deleted, err := c.deleteJob(ctx, b, job, false)
	if err != nil {
		return deleted, err
	}
	rt, _, _ := unstructured.NestedString(job.Object, "spec", "runtimeRef", "name")
	kind, _, _ := unstructured.NestedString(job.Object, "spec", "runtimeRef", "kind")
	if rt == "" || (kind != "" && kind != trainer.TrainingRuntimeKind) {
		return deleted, nil
	}
	ri := c.Dynamic.Resource(TrainingRuntimeGVR).Namespace(c.Namespace)
	u, err := ri.Get(ctx, rt, metav1.GetOptions{})
	if err != nil {
		return deleted, nil // gone already, or not readable: the TrainJob is what mattered
	}
	// Only a runtime ain rendered for this run; a shared runtime someone else made stays.
	if l := u.GetLabels(); l[LabelManagedBy] != ManagedByAin || l[LabelRun] != job.GetName() {
		return deleted, nil
	}
	bg := metav1.DeletePropagationBackground
	if err := ri.Delete(ctx, rt, metav1.DeleteOptions{PropagationPolicy: &bg}); err == nil || apierrors.IsNotFound(err) {
		deleted = append(deleted, trainer.TrainingRuntimeKind+"/"+rt)
	}
	return deleted, nil
}

// State maps the TrainJob's conditions and jobsStatus to ain's phases.
func (trainJobBackend) State(u *unstructured.Unstructured) State {
	var st trainer.TrainJobStatus
	if raw, ok := u.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st)
	}
	s := State{Phase: PhasePending}
	var latest time.Time
	for _, c := range st.Conditions {
		s.Conditions = append(s.Conditions, jobCondition(c))
		if c.Status != metav1.ConditionTrue {
			continue
		}
		switch c.Type {
		case trainJobComplete:
			s.Phase, s.Message, s.Finished = PhaseSucceeded, c.Message, c.LastTransitionTime.Time
			return s
		case trainJobFailed:
			s.Phase, s.Message, s.Finished = PhaseFailed, c.Message, c.LastTransitionTime.Time
			return s
		case trainJobSuspended:
			if !c.LastTransitionTime.Time.Before(latest) {
				s.Phase, s.Message, latest = PhaseSuspended, c.Message, c.LastTransitionTime.Time
			}
		}
	}
	if s.Phase == PhaseSuspended {
		return s
	}
	// jobsStatus counts Jobs, not pods (JobSet's replicatedJobsStatus): a Job is active from its
	// creation, its pods still Pending, and ready once all its pods are Ready. So: Running when a
	// replicated job is ready (every rank of the torch node Job up; for MPI, the workers or the
	// launcher), Created while Jobs exist, Pending before.
	for _, js := range st.JobsStatus {
		if deref(js.Ready) > 0 {
			s.Phase = PhaseRunning
			return s
		}
		if deref(js.Active)+deref(js.Succeeded)+deref(js.Failed) > 0 {
			s.Phase = PhaseCreated
		}
	}
	return s
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// jobCondition shows a TrainJob condition in the kubeflow shape the status view prints.
func jobCondition(c metav1.Condition) kubeflowv1.JobCondition {
	return kubeflowv1.JobCondition{
		Type: kubeflowv1.JobConditionType(c.Type), Status: corev1.ConditionStatus(c.Status),
		Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime, LastUpdateTime: c.LastTransitionTime,
	}
}

// Shape: spec.trainer.numNodes pods with the GPUs ain recorded on the TrainJob.
func (trainJobBackend) Shape(u *unstructured.Unstructured) (int, int64) {
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "trainer", "numNodes")
	if n == 0 {
		n = 1
	}
	g, _ := strconv.ParseInt(u.GetAnnotations()[AnnotationGPUsPerNode], 10, 64)
	return int(n), n * g
}

// Build renders the run's TrainingRuntime and the TrainJob that uses it (in that order).
func (trainJobBackend) Build(r *recipe.Recipe, p *profile.Profile, o Options) (*Bundle, error) {
	name, err := jobName(r, o)
	if err != nil {
		return nil, err
	}
	// The TrainJob CRD requires an RFC 1035 label (its metadata.name XValidation in
	// trainjob_types.go): a leading digit, fine for other kinds, is refused.
	if len(validation.IsDNS1035Label(name)) > 0 {
		return nil, fmt.Errorf("job name %q: a TrainJob's name must start with a lower-case letter (RFC 1035 label)", name)
	}
	if err := checkDerivedNames(APITrainer, r, name); err != nil {
		return nil, err
	}
	var rt *trainer.TrainingRuntime
	var procs int32
	switch {
	case r.Training != nil:
		rt, err = torchRuntime(r, p, name, o.Namespace)
		procs = int32(max(r.Training.GPUsPerNode, 1))
	case r.MPI != nil:
		rt, err = mpiRuntime(r, p, name, o.Namespace)
		procs = mpiSlots(r.MPI)
	default:
		return nil, fmt.Errorf("recipe %s is not a job recipe: a TrainJob runs training and MPI recipes", r.Metadata.Name)
	}
	if err != nil {
		return nil, err
	}
	if o.GangScheduling {
		addPodGroupPolicy(r, rt, o.GangSchedulers)
	}
	w := r.Workload()
	nodes := int32(w.Nodes)
	meta := objectMeta(r, p, name, o.Namespace)
	meta.Annotations[AnnotationGPUsPerNode] = strconv.Itoa(w.GPUsPerNode)
	job := &trainer.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: meta,
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: rt.Name, APIGroup: ptrTo(trainer.GroupVersion.Group), Kind: ptrTo(trainer.TrainingRuntimeKind)},
			Trainer:    &trainer.Trainer{NumNodes: &nodes, NumProcPerNode: &procs},
		},
	}
	if d := w.RunPolicy.ActiveDeadlineSeconds; d != nil {
		job.Spec.ActiveDeadlineSeconds = *d
	}
	return &Bundle{Objects: []runtime.Object{rt, job}}, nil
}

func ptrTo[T any](v T) *T { return &v }

// mpiSlots is the ranks per worker (MPIRunCommand's -npernode): one per GPU, or one per -g
// GPUs, since nccl-tests' -g N drives N GPUs from one rank.
func mpiSlots(m *recipe.MPISpec) int32 {
	slots := int32(max(m.GPUsPerNode, 1))
	if t := m.NCCLTests; t != nil && t.GPUsPerThread > 1 {
		slots = max(slots/int32(t.GPUsPerThread), 1)
	}
	return slots
}

// replicatedJob wraps a pod template into a JobSet replicated job: one Indexed Job (the Trainer
// sets parallelism and completions to the node count), pods never restarted in place (a failed
// rank fails the job, as with the kubeflow operators' restartPolicy Never), the recipe's
// backoffLimit.
func replicatedJob(name string, w *recipe.Workload, t corev1.PodTemplateSpec, trainerStep bool) jobsetv1alpha2.ReplicatedJob {
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	rj := jobsetv1alpha2.ReplicatedJob{
		Name:     name,
		Replicas: 1,
		Template: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{
				CompletionMode: ptrTo(batchv1.IndexedCompletion),
				BackoffLimit:   noRetries(w),
				Template:       t,
			},
		},
	}
	if trainerStep {
		rj.Template.Labels = map[string]string{trainerAncestorLabel: trainerAncestor}
	}
	return rj
}

// runtimeObject wraps spec into the run's TrainingRuntime. runPolicy.ttlSecondsAfterFinished goes
// to the JobSet template: a TrainJob has no TTL of its own (v2.3.0 trainjob_types.go), and the
// Trainer builds the JobSet from the runtime's whole template spec (pkg/runtime/core/
// trainingruntime.go newRuntimeInfo: apply.FromTypedObjWithFields of Spec; plugins/jobset/
// jobset.go Build: WithSpec), so the JobSet controller deletes the finished JobSet, its Jobs and
// pods after it. The TrainJob stays with its conditions (jobset.go Status: a missing JobSet of a
// finished TrainJob is no error), as does ain's runtime, until the run is deleted.
func runtimeObject(r *recipe.Recipe, p *profile.Profile, name, ns string, spec trainer.TrainingRuntimeSpec) *trainer.TrainingRuntime {
	spec.Template.Spec.TTLSecondsAfterFinished = r.Workload().RunPolicy.TTLSecondsAfterFinished
	return &trainer.TrainingRuntime{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainingRuntimeKind},
		ObjectMeta: objectMeta(r, p, name, ns),
		Spec:       spec,
	}
}

// torchRuntime: one replicated job "node" (the trainer step), numNodes pods of the rank template.
func torchRuntime(r *recipe.Recipe, p *profile.Profile, name, ns string) (*trainer.TrainingRuntime, error) {
	t := r.Training
	tmpl, err := podTemplate(r, p, name, TrainerContainer, t.Command, t.GPUsPerNode)
	if err != nil {
		return nil, err
	}
	nodes := int32(t.Nodes)
	return runtimeObject(r, p, name, ns, trainer.TrainingRuntimeSpec{
		MLPolicy: &trainer.MLPolicy{NumNodes: &nodes, MLPolicySource: trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{}}},
		Template: trainer.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
			ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{replicatedJob(TrainerNodeJob, &t.Workload, tmpl, true)},
		}},
	}), nil
}

// launcherGPUOptOut keeps the NVIDIA container runtime from exposing a node's GPUs to a launcher
// that requested none (where it is the default runtime it reads the image's
// NVIDIA_VISIBLE_DEVICES, "all" in CUDA images, for a container without GPUs). Both kubeflow MPI operators set it on a launcher that is not a worker, after
// the user's env so that it wins (mpi-operator v0.8.0 pkg/controller/mpi_job_controller.go
// nvidiaDisableEnvVars, newLauncherPodTemplate; training-operator v1.8.1
// pkg/controller.v1/mpi/mpijob_controller.go newLauncher); the Trainer v2.3.0's MPI plugin does
// not (plugins/mpi/mpi.go), so ain's runtime does (runLauncherAsNode is false).
var launcherGPUOptOut = []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: ""}, {Name: "NVIDIA_DRIVER_CAPABILITIES", Value: ""}}

// mpiRuntime: "node" (workers running sshd, with the GPUs) then "launcher" (mpirun, the trainer
// step, no GPU), which starts once every node pod is Ready; the job succeeds when the launcher does.
func mpiRuntime(r *recipe.Recipe, p *profile.Profile, name, ns string) (*trainer.TrainingRuntime, error) {
	m := r.MPI
	launcher, worker, err := mpiTemplates(r, p, name, TrainerContainer)
	if err != nil {
		return nil, err
	}
	// The Trainer mounts the keys in a Secret volume too (workerSSHD).
	worker.Spec.Containers[0].Command = workerSSHD()
	worker.Spec.Containers[0].ReadinessProbe = sshReady(m)
	for _, reserved := range []string{"plm_rsh_args", "plm_rsh_no_tree_spawn"} {
		if UserMCA(m.MPIRunArgs)[reserved] {
			return nil, fmt.Errorf("spec.mpirunArgs: -mca %s is set by ain on a TrainJob (the launcher's ssh uses a 0600 copy of the Trainer's 0640 key, with tree spawn off): Open MPI aborts on a parameter given twice; remove it", reserved)
		}
	}
	launcher.Spec.Containers[0].Command = trainerLauncherCommand(launcher.Spec.Containers[0].Command)
	launcher.Spec.Containers[0].Env = append(launcher.Spec.Containers[0].Env, launcherGPUOptOut...)
	impl := trainer.MPIImplementationOpenMPI
	launcherJob := replicatedJob(TrainerLauncherJob, &m.Workload, launcher, true)
	launcherJob.DependsOn = []jobsetv1alpha2.DependsOn{{Name: TrainerNodeJob, Status: jobsetv1alpha2.DependencyReady}}
	return runtimeObject(r, p, name, ns, trainer.TrainingRuntimeSpec{
		// No numNodes here: the Trainer sizes the trainer-step replicated job (the launcher) from
		// the runtime's mlPolicy.numNodes (pkg/runtime/core/trainingruntime.go newRuntimeInfo:
		// count = mlPolicy.NumNodes for the trainjob-ancestor-step=trainer job) and the "node" job
		// from the TrainJob's trainer.numNodes (plugins/mpi EnforceMLPolicy). Unset is 1: one
		// launcher, as in the Trainer's own MPI runtime (deepspeed_distributed.yaml: numNodes 1).
		MLPolicy: &trainer.MLPolicy{MLPolicySource: trainer.MLPolicySource{MPI: &trainer.MPIMLPolicySource{
			NumProcPerNode: ptrTo(mpiSlots(m)), MPIImplementation: &impl,
			SSHAuthMountPath: ptrTo(SSHAuthMountPath), RunLauncherAsNode: ptrTo(false),
		}}},
		Template: trainer.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
			// Workers resolve by name before they are Ready (the launcher connects once they are).
			Network: &jobsetv1alpha2.Network{PublishNotReadyAddresses: ptrTo(true)},
			SuccessPolicy: &jobsetv1alpha2.SuccessPolicy{
				Operator: jobsetv1alpha2.OperatorAll, TargetReplicatedJobs: []string{TrainerLauncherJob},
			},
			ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{
				replicatedJob(TrainerNodeJob, &m.Workload, worker, false),
				launcherJob,
			},
		}},
	}), nil
}

// The Trainer mounts the MPI private key with mode 0640 (v2.3.0 pkg/constants/constants.go
// MPISSHPrivateKeyFileMode, applied in pkg/runtime/framework/plugins/mpi/mpi.go), owned by root
// as every Secret file is. OpenSSH refuses a private key that its owner's group can read
// (authfile.c sshkey_perm_ok: owner == getuid() and mode & 077 -> "UNPROTECTED PRIVATE KEY
// FILE", the key is ignored), and ain's images run mpirun, hence ssh, as root: with the key as
// mounted every MPI TrainJob fails at its first ssh. The Trainer's own MPI runtimes run as a
// non-root user with fsGroup (deepspeed_distributed.yaml), for which 0640 root:fsGroup is fine,
// but that needs an image with such a user and an sshd configured for it; the images ain runs
// (coreweave/nccl-tests, the mpi-operator's bases) have root only. So the launcher copies the
// key to a 0600 file of its own and points ssh at it on mpirun's command line, which takes
// precedence over the environment (OMPI_MCA_plm_rsh_args is the Trainer's, and a TrainJob may
// not set it). Tree spawn is turned off so that only the launcher runs ssh: with it, orted on a
// worker would ssh onwards with the worker's 0640 key.
const (
	trainerSSHKey     = SSHAuthMountPath + "/id_rsa" // constants.MPISSHPrivateKeyFile
	launcherSSHKeyDir = "/tmp/ain-ssh"
	launcherSSHKey    = launcherSSHKeyDir + "/id_rsa"
	// trainerRSHArgs keeps the Trainer's own value (constants.OpenMPIEnvDefaultValueRSHArgs),
	// and adds what MPI images set in ssh_config: the workers' host keys are new with every pod,
	// so no known_hosts can hold them (and the Secret-mounted ~/.ssh is read-only).
	trainerRSHArgs = "-o ConnectionAttempts=10 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
)

// launcherKeyScript makes the 0600 copy, then runs mpirun with its arguments ("$0" "$@", so no
// argument is re-parsed by the shell).
const launcherKeyScript = "set -e; install -d -m 0700 " + launcherSSHKeyDir + "; install -m 0600 " + trainerSSHKey + " " + launcherSSHKey + `; exec "$0" "$@"`

// trainerLauncherCommand wraps an MPI launcher's mpirun command line for the Trainer's key mount.
func trainerLauncherCommand(mpirun []string) []string {
	cmd := []string{"/bin/sh", "-c", launcherKeyScript, mpirun[0],
		"-mca", "plm_rsh_args", trainerRSHArgs + " -i " + launcherSSHKey,
		"-mca", "plm_rsh_no_tree_spawn", "1"}
	return append(cmd, mpirun[1:]...)
}

// OrphanRuntimes are ain's TrainingRuntimes (labelled as ain's, for the run of the same name)
// whose TrainJob does not exist: a run whose TrainJob was refused (or deleted by hand) after its
// runtime was applied. name "" lists them all. A cluster without the Trainer has none.
func (c *Cluster) OrphanRuntimes(ctx context.Context, name string) ([]string, error) {
	sel := LabelManagedBy + "=" + ManagedByAin
	if name != "" {
		sel += "," + LabelRun + "=" + name
	}
	rts, err := c.Dynamic.Resource(TrainingRuntimeGVR).Namespace(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if apierrors.IsNotFound(err) {
		return nil, nil // the Trainer's CRDs are not served
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rt := range rts.Items {
		if rt.GetName() != rt.GetLabels()[LabelRun] {
			continue
		}
		_, err := c.Dynamic.Resource(TrainJobGVR).Namespace(c.Namespace).Get(ctx, rt.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, rt.GetName())
		case err != nil:
			return out, err
		}
	}
	return out, nil
}

// DeleteRuntime deletes ain's TrainingRuntime name (gone already is no error).
func (c *Cluster) DeleteRuntime(ctx context.Context, name string) error {
	bg := metav1.DeletePropagationBackground
	err := c.Dynamic.Resource(TrainingRuntimeGVR).Namespace(c.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
