package jobs

import (
	"fmt"
	"sort"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/ain-hpc/ain/pkg/recipe"
)

// Gang scheduling. A distributed job is useful only when every rank runs: the default scheduler
// places pods one by one, so on a busy cluster some ranks start (and hold their GPUs and RDMA
// devices) while the others stay Pending, possibly forever, and two such jobs can block each
// other. A gang scheduler places all of a job's pods or none. ain does not assume one: the
// training-operator's runPolicy.schedulingPolicy is honoured only when the operator runs with
// --gang-scheduler-name (Volcano or scheduler-plugins' coscheduling), and Kueue admits whole
// jobs only for the integrations it has. GangAPIs names what a cluster serves; GangNote explains
// a partly placed job either way.

// Gang scheduler API groups, as served by the API server when installed.
const (
	GroupVolcano      = "scheduling.volcano.sh" // Volcano PodGroup
	GroupCoscheduling = "scheduling.x-k8s.io"   // scheduler-plugins coscheduling PodGroup
	GroupKueue        = "kueue.x-k8s.io"        // Kueue workloads and queues
)

// GangAPIs returns the gang schedulers among the API groups a cluster serves, in a stable order
// ("" entries and unknown groups ignored).
func GangAPIs(groups []string) []string {
	known := map[string]string{GroupVolcano: "Volcano", GroupCoscheduling: "scheduler-plugins coscheduling", GroupKueue: "Kueue"}
	var out []string
	seen := map[string]bool{}
	for _, g := range groups {
		if n, ok := known[g]; ok && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// OperatorGang reports whether gangs (GangAPIs) holds a gang scheduler the training-operator's
// runPolicy.schedulingPolicy works with (Volcano, scheduler-plugins coscheduling; Kueue admits
// jobs through its own queue label instead).
func OperatorGang(gangs []string) bool {
	for _, g := range gangs {
		if g == "Volcano" || g == "scheduler-plugins coscheduling" {
			return true
		}
	}
	return false
}

// GangNote explains a job of which some ranks are placed and others are Pending ("" when all
// or none are placed). gangs are the gang schedulers the cluster serves (GangAPIs).
func GangNote(s Snapshot, gangs []string) string {
	var placed, pending []string
	for _, p := range s.Pods {
		if p.Replica == "launcher" {
			continue // the launcher is not a rank: it holds no GPU
		}
		if p.Node != "" {
			placed = append(placed, p.Name)
		} else if p.Phase == "Pending" || p.Phase == "" {
			pending = append(pending, p.Name)
		}
	}
	if len(placed) == 0 || len(pending) == 0 {
		return ""
	}
	msg := fmt.Sprintf("partly placed: %d of %d rank(s) have a node and hold their GPUs while %d wait (%s); the job cannot start until every rank is placed, one per node",
		len(placed), len(placed)+len(pending), len(pending), strings.Join(pending, ", "))
	if len(gangs) == 0 {
		return msg + ". This cluster serves no gang scheduler (Volcano, coscheduling, Kueue), so nothing holds the placed ranks back: free nodes, or delete the job to release them"
	}
	return msg + ". The cluster serves " + strings.Join(gangs, ", ") + ": with the training-operator started with --gang-scheduler-name (Volcano, coscheduling) or the job queued in Kueue, the ranks are placed all together or not at all"
}

// Gang scheduling of a TrainJob (Trainer v2.3.0): the runtime's podGroupPolicy makes the Trainer
// create a PodGroup named as the TrainJob and label (coscheduling: scheduling.x-k8s.io/pod-group)
// or annotate (Volcano: scheduling.k8s.io/group-name) every pod with it
// (pkg/runtime/framework/plugins/coscheduling/coscheduling.go, plugins/volcano/volcano.go:
// EnforcePodGroupPolicy, Build). minMember is the sum of every replicated job's pods; the
// Trainer sets no schedulerName ("User should add the scheduler name into Pod's
// .spec.schedulerName if the default scheduler is not the same as PodGroup plugin",
// proposals/2170-kubeflow-trainer-v2/README.md). The coscheduling plugin dereferences
// scheduleTimeoutSeconds (Build), which only the CRD's default (60) fills: ain writes it.
//
// An MPI TrainJob gets none: its minMember would count the launcher, which JobSet creates only
// once every worker is Ready (ain's dependsOn; sigs.k8s.io/jobset@v0.12.0
// pkg/controllers/jobset_controller.go: dependencyReachedStatus), while the gang holds the
// workers until the launcher is there: the deadlock of kubeflow/mpi-operator#608.
const (
	// volcanoSchedulerName is the scheduler Volcano installs (and the Trainer's own Volcano
	// example uses: proposals/2437-volcano-scheduler/README.md).
	volcanoSchedulerName = "volcano"
	// coschedulingTimeout is the Trainer's default scheduleTimeoutSeconds (trainingruntime_types.go).
	coschedulingTimeout = 60
)

// trainerGang is the gang scheduler a TrainJob of r asks for among gangs (GangAPIs): Volcano,
// else scheduler-plugins coscheduling; "" for none, and for an MPI recipe (see above).
func trainerGang(r *recipe.Recipe, gangs []string) string {
	if r.MPI != nil {
		return ""
	}
	for _, want := range []string{"Volcano", "scheduler-plugins coscheduling"} {
		for _, g := range gangs {
			if g == want {
				return g
			}
		}
	}
	return ""
}

// addPodGroupPolicy asks the Trainer for a PodGroup of every pod of the run (trainerGang); for
// Volcano the pods also name its scheduler, which must place them for the PodGroup to count.
func addPodGroupPolicy(r *recipe.Recipe, rt *trainer.TrainingRuntime, gangs []string) {
	switch trainerGang(r, gangs) {
	case "Volcano":
		rt.Spec.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{Volcano: &trainer.VolcanoPodGroupPolicySource{}}}
		for i := range rt.Spec.Template.Spec.ReplicatedJobs {
			rt.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.SchedulerName = volcanoSchedulerName
		}
	case "scheduler-plugins coscheduling":
		rt.Spec.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{
			Coscheduling: &trainer.CoschedulingPodGroupPolicySource{ScheduleTimeoutSeconds: ptrTo(int32(coschedulingTimeout))},
		}}
	}
}

// GangAssumption says what gang scheduling a job of api is submitted with and what ain assumed
// of the operator, given the gang schedulers the cluster serves (GangAPIs); "" when there is
// nothing to say (no gang scheduler served).
func GangAssumption(api API, r *recipe.Recipe, gangs []string) string {
	if !OperatorGang(gangs) {
		return ""
	}
	served := strings.Join(gangs, ", ")
	switch {
	case api == APITrainer && r.MPI != nil:
		return fmt.Sprintf("gang scheduling: the cluster serves %s, but an MPI TrainJob gets no podGroupPolicy: the Trainer's PodGroup would count the launcher "+
			"(minMember = %d), which JobSet creates only once every worker is Ready, so the gang would never start; the pods are placed one by one", served, r.MPI.Nodes+1)
	case api == APITrainer && trainerGang(r, gangs) == "Volcano":
		return fmt.Sprintf("gang scheduling: the cluster serves %s; podGroupPolicy volcano: the Trainer makes a PodGroup of minMember = %d (every pod), "+
			"and the pods name the scheduler %q. ain assumes Volcano's scheduler runs under that name, which the API does not show; without it the pods stay Pending",
			served, r.Workload().Nodes, volcanoSchedulerName)
	case api == APITrainer:
		return fmt.Sprintf("gang scheduling: the cluster serves %s; podGroupPolicy coscheduling (scheduleTimeoutSeconds %d): the Trainer makes a PodGroup of minMember = %d (every pod). "+
			"The Trainer names no scheduler: ain assumes the cluster's default scheduler runs the Coscheduling plugin, which the API does not show; without it the pods are placed one by one",
			served, coschedulingTimeout, r.Workload().Nodes)
	case api == APIMPIOperator && r.MPI != nil:
		return fmt.Sprintf("gang scheduling: the cluster serves %s; schedulingPolicy.minAvailable = %d, the workers only: "+
			"the mpi-operator creates the launcher after they are Ready (launcherCreationPolicy WaitForWorkersReady), so a gang that "+
			"counted it would never start. ain assumes the operator runs with --gang-scheduling, which the API does not show; "+
			"without it the pods are placed one by one", served, r.MPI.Nodes)
	case r.MPI != nil:
		return fmt.Sprintf("gang scheduling: the cluster serves %s; runPolicy.schedulingPolicy.minAvailable = %d (the workers and the launcher). "+
			"ain assumes the training-operator runs with --gang-scheduler-name, which the API does not show; without it the pods are placed one by one",
			served, r.MPI.Nodes+1)
	case r.Training != nil:
		return fmt.Sprintf("gang scheduling: the cluster serves %s; runPolicy.schedulingPolicy.minAvailable = %d (every pod of the job). "+
			"ain assumes the training-operator runs with --gang-scheduler-name, which the API does not show; without it the pods are placed one by one",
			served, r.Training.Nodes)
	}
	return ""
}
