package jobs

import (
	"context"
	"fmt"

	mpiv2beta1 "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// The kubeflow.org/v2beta1 MPIJob of the standalone mpi-operator (v0.8.0). What its controller
// (pkg/controller/mpi_job_controller.go in github.com/kubeflow/mpi-operator@v0.8.0) does with it:
//
//   - workers are Pods named <job>-worker-<i>, labelled training.kubeflow.org/job-name=<job>,
//     training.kubeflow.org/job-role=worker, training.kubeflow.org/replica-index=<i>
//     (defaultLabels, newWorker), owned by the MPIJob; the launcher is a batch Job <job>-launcher
//     (newLauncherJob) whose Pod has the same job-name label and job-role=launcher (no index);
//   - a worker container without command runs "/usr/sbin/sshd -De" (newWorker): mpirun on the
//     launcher reaches the workers over SSH, with keys from the Secret <job>-ssh mounted at
//     spec.sshAuthMountPath (setupSSHOnPod). The worker image must therefore have sshd (and
//     the launcher an ssh client). The built-in allreduce recipe's image does: coreweave/nccl-tests
//     builds it (Dockerfile.ubuntu22: openssh-server, /var/run/sshd, StrictModes no, "SSH
//     dependencies for MPI") for its own mpi-operator manifests (mpi-operator/*-mpijob.yaml);
//   - the launcher gets OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile,
//     OMPI_MCA_orte_keep_fqdn_hostnames, OMPI_MCA_plm_rsh_args and
//     OMPI_MCA_orte_set_default_slots=<slotsPerWorker> (ompiEnvVars), and, unless
//     runLauncherAsWorker, NVIDIA_VISIBLE_DEVICES="" so it never takes a GPU;
//   - with launcherCreationPolicy WaitForWorkersReady the launcher Job is created only when
//     every worker Pod has condition Ready=True (countReadyWorkerPods): the native fix for a
//     launcher that starts before its workers (failure 1 of the course), so ain's own worker
//     gate is not added here;
//   - status.conditions are the kubeflow JobCondition types (Created, Running, Restarting,
//     Succeeded, Failed, Suspended), read as for v1.
//
// sshReady is the workers' readiness probe: a TCP connect to the port the image's sshd listens
// on (spec.sshPort: 22 for most images, 2222 for the mpi-operator's own), so Ready, which
// WaitForWorkersReady and the Trainer's dependsOn wait for, means "sshd accepts". A probe on a
// port nothing listens on keeps every worker NotReady: no launcher, a job that never starts.
func sshReady(m *recipe.MPISpec) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(m.SSHPort)}},
		PeriodSeconds: 2, TimeoutSeconds: 2, FailureThreshold: 3,
	}
}

// SSHAuthMountPath is where the controller mounts the job's SSH keys (root's, as the images run
// mpirun as root: the mpirun command carries --allow-run-as-root).
const SSHAuthMountPath = "/root/.ssh"

type mpiV2Backend struct{ jobAPI }

var mpiV2 = mpiV2Backend{jobAPI{kind: mpiv2beta1.Kind, gvr: MPIJobV2GVR, container: MPIContainer, selector: mpiv2beta1.JobNameLabel}}

func (mpiV2Backend) API() API                                        { return APIMPIOperator }
func (mpiV2Backend) Handles(r *recipe.Recipe) bool                   { return r.MPI != nil }
func (mpiV2Backend) State(u *unstructured.Unstructured) State        { return kubeflowState(u) }
func (mpiV2Backend) Shape(u *unstructured.Unstructured) (int, int64) { return replicaShape(u) }

// Delete deletes the MPIJob; its launcher Pod belongs to the launcher Job, not to the MPIJob, so
// the pods are deleted by label without the owner check of v1.
func (b mpiV2Backend) Delete(ctx context.Context, c *Cluster, job *unstructured.Unstructured) ([]string, error) {
	return c.deleteJob(ctx, b, job, false)
}

func (mpiV2Backend) Build(r *recipe.Recipe, p *profile.Profile, o Options) (*Bundle, error) {
	if r.MPI == nil {
		return nil, fmt.Errorf("recipe %s is not an MPI recipe: a kubeflow.org/v2beta1 MPIJob runs MPI recipes only", r.Metadata.Name)
	}
	name, err := jobName(r, o)
	if err != nil {
		return nil, err
	}
	if err := checkDerivedNames(APIMPIOperator, r, name); err != nil {
		return nil, err
	}
	job, err := buildMPIJobV2(r, p, name, o.Namespace)
	if err != nil {
		return nil, err
	}
	// With --gang-scheduling the mpi-operator makes a PodGroup of minAvailable =
	// schedulingPolicy.minAvailable, else workers + 1 (v0.8.0 pkg/controller/podgroup.go
	// calculateMinAvailable), while under launcherCreationPolicy WaitForWorkersReady it creates
	// the launcher only once every worker is Ready (mpi_job_controller.go): a gang that counts
	// the launcher waits for a pod that waits for the gang (kubeflow/mpi-operator#608). So the
	// gang is the workers. It is set whether or not ain found a gang scheduler: the operator's
	// flag is not visible through the API, and its default would deadlock; without the flag the
	// operator ignores the field.
	// minResources likewise: left unset, the operator sums the launcher and minAvailable - 1
	// workers (podgroup.go calPGMinResource, when launcher + workers exceed minMember), one
	// worker's GPUs and RDMA device short, so the scheduler admits a gang the cluster cannot hold
	// and its workers wait in Permit until they time out. It is exactly the workers' requests.
	n := int32(r.MPI.Nodes)
	job.Spec.RunPolicy.SchedulingPolicy = &mpiv2beta1.SchedulingPolicy{MinAvailable: &n,
		MinResources: workersRequests(job.Spec.MPIReplicaSpecs[mpiv2beta1.MPIReplicaTypeWorker].Template.Spec, n)}
	return &Bundle{Objects: []runtime.Object{job}}, nil
}

// workersRequests is n times one worker pod's requests (its containers').
func workersRequests(spec corev1.PodSpec, n int32) *corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := out[name]
			for range n {
				sum.Add(q)
			}
			out[name] = sum
		}
	}
	return &out
}

func buildMPIJobV2(r *recipe.Recipe, p *profile.Profile, name, ns string) (*mpiv2beta1.MPIJob, error) {
	m := r.MPI
	launcher, worker, err := mpiTemplates(r, p, name, MPIContainer)
	if err != nil {
		return nil, err
	}
	// Ready means sshd accepts connections: what the launcher's mpirun needs of a worker.
	worker.Spec.Containers[0].ReadinessProbe = sshReady(m)
	// The operator's own default is "/usr/sbin/sshd -De" (newWorker), and it mounts the keys from
	// a Secret at sshAuthMountPath, whose folder sshd's StrictModes refuses: spelled out with
	// StrictModes off, so an image whose sshd_config keeps it on works too.
	worker.Spec.Containers[0].Command = workerSSHD()
	clean := mpiv2beta1.CleanPodPolicy(m.RunPolicy.CleanPodPolicy)
	one := int32(1)
	workers := int32(m.Nodes)
	slots := mpiSlots(m)
	restart := mpiv2beta1.RestartPolicyNever
	return &mpiv2beta1.MPIJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: mpiv2beta1.SchemeGroupVersion.String(), Kind: mpiv2beta1.Kind},
		ObjectMeta: objectMeta(r, p, name, ns),
		Spec: mpiv2beta1.MPIJobSpec{
			SlotsPerWorker:         &slots,
			SSHAuthMountPath:       SSHAuthMountPath,
			LauncherCreationPolicy: mpiv2beta1.LauncherCreationPolicyWaitForWorkersReady,
			MPIImplementation:      mpiv2beta1.MPIImplementationOpenMPI,
			RunPolicy: mpiv2beta1.RunPolicy{
				CleanPodPolicy:          &clean,
				BackoffLimit:            noRetries(&m.Workload),
				ActiveDeadlineSeconds:   m.RunPolicy.ActiveDeadlineSeconds,
				TTLSecondsAfterFinished: m.RunPolicy.TTLSecondsAfterFinished,
			},
			MPIReplicaSpecs: map[mpiv2beta1.MPIReplicaType]*mpiv2beta1.ReplicaSpec{
				mpiv2beta1.MPIReplicaTypeLauncher: {Replicas: &one, RestartPolicy: restart, Template: launcher},
				mpiv2beta1.MPIReplicaTypeWorker:   {Replicas: &workers, RestartPolicy: restart, Template: worker},
			},
		},
	}, nil
}

// workerSSHD is an MPI worker's command: sshd in the foreground, logging to stderr, with
// StrictModes off: the keys come from a Secret volume, whose folder is group- and
// world-writable, and sshd with StrictModes refuses authorized_keys there ("bad ownership or
// modes for directory", kubernetes/kubernetes#61049). Images built for MPI
// (coreweave/nccl-tests, the mpi-operator's) set it in sshd_config; this covers the others.
func workerSSHD() []string {
	return []string{"/usr/sbin/sshd", "-De", "-o", "StrictModes=no"}
}
