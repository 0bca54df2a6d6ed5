package jobs

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/jobset/pkg/util/placement"

	"github.com/ain-hpc/ain/pkg/recipe"
)

// A job's name is also the stem of the names its controller gives to what it creates, and some
// of those must be DNS-1035 labels (a lower-case letter first, at most 63 characters) where the
// job's own name need only be a DNS-1123 label. A controller that finds out late does not always
// say so where the user looks, so ain checks the longest derived name of each API up front:
//
//   - mpi-operator v0.8.0 (kubeflow.org/v2beta1 MPIJob): workers are Pods, hostnames and DNS
//     names <job>-worker-<i> (mpi_job_controller.go newWorker: Hostname, Subdomain); the
//     controller's ValidateMPIJob (pkg/apis/kubeflow/validation/validation.go validateMPIJobName)
//     requires <job>-worker-<workers-1> to be a DNS-1035 label, and on a refusal only records a
//     ValidationError event and does not requeue (mpi_job_controller.go syncHandler): the MPIJob
//     is accepted and never starts;
//   - Trainer v2.3.0 (TrainJob): the TrainJob CRD itself wants a DNS-1035 label of at most 63
//     (trainjob_types.go XValidation), but the Trainer builds a JobSet of the same name
//     (plugins/jobset/jobset.go Build) with completions set to each replicated job's pod count
//     (SyncParallelCount), and JobSet v0.12.0's webhook refuses it when the name of its longest
//     pod, <job>-<replicatedJob>-<jobIndex>-<podIndex> plus the Job controller's 5-character
//     suffix ("-abcde" there), is not a DNS-1035 label (pkg/webhooks/jobset_webhook.go
//     ValidateCreate, placement.GenPodName): the TrainJob is accepted, its JobSet is not;
//   - training-operator v1.8.1, PyTorchJob: its webhook refuses a name that is not a DNS-1035
//     label (pkg/webhooks/pytorch/pytorchjob_webhook.go validatePyTorchJob), and it creates a
//     Service per pod, <job>-master-0 and <job>-worker-<i> (pkg/controller.v1/common/service.go,
//     GenGeneralName), whose names the API server wants as DNS-1035 labels;
//   - training-operator v1.8.1, MPIJob: no webhook, no Services, no hostnames (mpirun reaches
//     the workers through kubectl exec by pod name): a DNS-1123 label (jobName) is enough.
type derivedName struct {
	// suffix is what the controller appends to the job name, in its longest case.
	suffix string
	// kind is the job's kind; names says what the controller names so; otherwise what follows
	// a refusal.
	kind, names, otherwise string
}

// jobSetPodSuffix is the suffix JobSet's webhook adds to a pod name to stand for the Job
// controller's random one (jobset_webhook.go: "-abcde").
const jobSetPodSuffix = "-abcde"

// derivedNames are the names that the controller of api derives from a job name for recipe r,
// each of which must be a DNS-1035 label.
func derivedNames(api API, r *recipe.Recipe) []derivedName {
	w := r.Workload()
	if w == nil {
		return nil
	}
	switch {
	case api == APIMPIOperator && r.MPI != nil:
		return []derivedName{{
			suffix: "-worker-" + strconv.Itoa(r.MPI.Nodes-1), kind: "kubeflow.org/v2beta1 MPIJob",
			names:     "the mpi-operator names the last worker pod and its hostname",
			otherwise: "the operator does not refuse the MPIJob, it records a ValidationError event and never starts it",
		}}
	case api == APITrainer:
		// ain's runtimes: the "node" job has a pod per node; the MPI launcher job one pod
		// (mlPolicy.numNodes unset). One Job per replicated job (replicas 1): index 0.
		pod := func(rj string, pods int) derivedName {
			return derivedName{
				suffix: placement.GenPodName("", rj, "0", strconv.Itoa(pods-1)) + jobSetPodSuffix, kind: "TrainJob",
				names:     "the Trainer's JobSet names the longest pod of its " + rj + " job (with the Job controller's 5-character suffix)",
				otherwise: "JobSet's webhook refuses the JobSet and the TrainJob, accepted, never starts",
			}
		}
		out := []derivedName{pod(TrainerNodeJob, w.Nodes)}
		if r.MPI != nil {
			out = append(out, pod(TrainerLauncherJob, 1))
		}
		return out
	case api == APITrainingOperator && r.Training != nil:
		svc := func(suffix string) derivedName {
			return derivedName{
				suffix: suffix, kind: "PyTorchJob",
				names:     "the training-operator names a Service (one per pod)",
				otherwise: "the operator's webhook refuses the PyTorchJob",
			}
		}
		out := []derivedName{svc("-master-0")}
		if w.Nodes > 1 {
			out = append(out, svc("-worker-"+strconv.Itoa(w.Nodes-2)))
		}
		return out
	}
	return nil
}

// checkDerivedNames refuses a job name from which the controller of api would derive a name
// that is not a DNS-1035 label, saying which and why.
func checkDerivedNames(api API, r *recipe.Recipe, name string) error {
	for _, d := range derivedNames(api, r) {
		full := name + d.suffix
		if len(validation.IsDNS1035Label(full)) == 0 {
			continue
		}
		if len(validation.IsDNS1035Label(name[:1])) > 0 {
			return fmt.Errorf("job name %q: a %s's name must start with a lower-case letter: %s %q, which must be a DNS-1035 label; otherwise %s",
				name, d.kind, d.names, full, d.otherwise)
		}
		return fmt.Errorf("job name %q is %d characters; a %s's can be at most %d for this recipe: %s %q, %d characters, and a DNS-1035 label has at most %d; otherwise %s",
			name, len(name), d.kind, MaxJobNameLen(api, r), d.names, full, len(full), validation.DNS1035LabelMaxLength, d.otherwise)
	}
	return nil
}

// MaxJobNameLen is the longest job name that api accepts for recipe r: the recipe name limit,
// or less where a derived name must stay a DNS-1035 label.
func MaxJobNameLen(api API, r *recipe.Recipe) int {
	n := recipe.MaxNameLen
	for _, d := range derivedNames(api, r) {
		n = min(n, validation.DNS1035LabelMaxLength-len(d.suffix))
	}
	return n
}
