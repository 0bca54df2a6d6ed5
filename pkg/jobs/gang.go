package jobs

import (
	"fmt"
	"sort"
	"strings"

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

// GangAssumption says what gang scheduling a job of api is submitted with and what ain assumed
// of the operator, given the gang schedulers the cluster serves (GangAPIs); "" when there is
// nothing to say (no gang scheduler served, or the Trainer, which ain gives no podGroupPolicy).
// pods is the job's rank count (the MPI workers, or the PyTorchJob's pods).
func GangAssumption(api API, r *recipe.Recipe, gangs []string) string {
	if !OperatorGang(gangs) || api == APITrainer {
		return ""
	}
	served := strings.Join(gangs, ", ")
	switch {
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
