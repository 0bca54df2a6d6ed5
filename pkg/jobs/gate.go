package jobs

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ain-hpc/ain/pkg/recipe"
)

// The worker gate (failure 1 of the course: the launcher starts before its workers are ready).
//
// The training-operator's kubeflow.org/v1 MPIJob creates the launcher pod as soon as the worker
// pods exist. Its mpirun starts the remote daemons through kubexec.sh, i.e. `kubectl exec
// <job>-worker-N`: pod names taken from the hostfile /etc/mpi/hostfile, reached through the API
// server, not through DNS (v1 creates no Service for an MPIJob). Workers run `sleep 365d`, so no
// port of theirs means anything. What the launcher really needs is that each worker's container
// runs and accepts exec, so:
//
//   - every worker gets a readiness probe that is an exec of `true` in its container: Ready then
//     means exactly "kubectl exec works here";
//   - the launcher gets a first init container, wait-for-workers, that reads the worker names from
//     the operator's hostfile and polls each worker pod through the API server with the launcher's
//     own service account (the operator's launcher Role grants get on pods) until all are Ready.
//     It logs one line when it starts waiting, one when all are Ready, and gives up with a clear
//     line and exit 1 after a bounded timeout, so the job fails visibly instead of mpirun failing
//     with ssh/ORTE errors.
//
// The init container runs in the launcher's image (any image with sh; curl, else busybox wget)
// before the operator's own kubectl-delivery init container, which the operator appends.
const (
	// GateContainer names the launcher's init container (the sandbox's late-workers scenario
	// recognises ain's launchers by it).
	GateContainer = "wait-for-workers"
	// GateLogPrefix starts every line the gate prints.
	GateLogPrefix = "ain-worker-gate:"
	// GateTimeoutEnv holds the gate's timeout in seconds.
	GateTimeoutEnv = "AIN_GATE_TIMEOUT"
	// DefaultGateTimeoutSeconds bounds the wait.
	DefaultGateTimeoutSeconds = 600
	// mpiConfigVolume and mpiConfigPath are where the operator mounts the hostfile (it adds the
	// volume to the launcher pod; the init container mounts it by name).
	mpiConfigVolume = "mpi-job-config"
	mpiConfigPath   = "/etc/mpi"
)

// GateScript is the wait-for-workers init container's program (POSIX sh, sed and awk: busybox is
// enough).
//
// Readiness is read from the pod's parsed status.conditions, never by matching the JSON as text:
// from Kubernetes 1.34 (KEP-5067, PodObservedGenerationTracking, locked on in 1.35) the kubelet
// writes {"type":"Ready","observedGeneration":1,"status":"True",...}, with a key between type and
// status, and a gate that grepped for "type":"Ready","status":"True" never saw a Ready worker.
// gateReadyAwk walks the JSON's structure (strings, objects, arrays) and looks only at the objects
// of the top-level status.conditions array, whatever the order of their keys or the spacing.
// The paths of the service-account directory and the hostfile can be moved with AIN_GATE_SA_DIR
// and AIN_GATE_HOSTFILE, so tests run this exact script as a local process; pods never set them.
const GateScript = `set -u
t="${` + GateTimeoutEnv + `:-600}"
sa="${AIN_GATE_SA_DIR:-/var/run/secrets/kubernetes.io/serviceaccount}"
hf="${AIN_GATE_HOSTFILE:-/etc/mpi/hostfile}"
log() { echo "` + GateLogPrefix + ` $*"; }
if [ ! -r "$hf" ]; then log "no $hf: not an MPIJob launcher, not waiting"; exit 0; fi
workers=$(awk '{print $1}' "$hf" | grep -- '-worker-[0-9][0-9]*$')
api="https://${KUBERNETES_SERVICE_HOST:-kubernetes.default.svc}:${KUBERNETES_SERVICE_PORT:-443}/api/v1/namespaces/$(cat "$sa/namespace")/pods"
get() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 5 --cacert "$sa/ca.crt" -H "Authorization: Bearer $(cat "$sa/token")" "$api/$1"
  else
    wget -q -T 5 -O - --no-check-certificate --header "Authorization: Bearer $(cat "$sa/token")" "$api/$1"
  fi
}
# ready: stdin is one pod's JSON; exit 0 when its Ready condition has status True. Escaped
# backslashes and quotes are blanked first, so every '"' left delimits a string.
ready() {
  sed 's/\\\\/__/g; s/\\"/__/g' | awk -F'"' -v RS='\001' '` + gateReadyAwk + `'
}
n=$(echo $workers | wc -w)
log "waiting up to ${t}s for $n worker(s) to be Ready: $(echo $workers)"
start=$(date +%s)
while :; do
  pending=""
  for w in $workers; do
    get "$w" 2>/dev/null | ready || pending="$pending $w"
  done
  el=$(( $(date +%s) - start ))
  if [ -z "$pending" ]; then log "all $n worker(s) Ready after ${el}s: starting mpirun"; exit 0; fi
  if [ "$el" -ge "$t" ]; then log "timed out after ${t}s: workers not Ready:$pending (kubectl describe pod$pending)"; exit 1; fi
  sleep 2
done
`

// gateReadyAwk is the awk program of the gate's ready(): fields split on '"' alternate between
// JSON outside strings (odd fields: punctuation, numbers, literals) and string contents (even
// fields). A string followed by ':' is a key. d is the nesting depth and k[d] the key that opened
// level d, so the objects of status.conditions are those at depth 4 under k[2]=="status",
// k[3]=="conditions".
const gateReadyAwk = `{
  d = 0; pk = ""; t = ""; st = ""; ok = 0
  for (f = 1; f <= NF; f++) {
    if (f % 2 == 0) {
      nx = $(f + 1); sub(/^[ \t\r\n]*/, "", nx)
      if (substr(nx, 1, 1) == ":") pk = $f
      else if (d == 4 && k[2] == "status" && k[3] == "conditions") { if (pk == "type") t = $f; else if (pk == "status") st = $f }
      continue
    }
    n = length($f)
    for (i = 1; i <= n; i++) {
      c = substr($f, i, 1)
      if (c == "{" || c == "[") { d++; k[d] = pk; pk = ""; if (d == 4) { t = ""; st = "" } }
      else if (c == "}" || c == "]") {
        if (d == 4 && k[2] == "status" && k[3] == "conditions" && t == "Ready" && st == "True") ok = 1
        d--; pk = ""
      }
    }
  }
}
END { exit ok ? 0 : 1 }`

// WorkerGateEnabled reports whether an MPI recipe asks for the worker gate (the default).
func WorkerGateEnabled(m *recipe.MPISpec) bool { return m.WorkerGate == nil || *m.WorkerGate }

// addWorkerGate puts the gate on an MPIJob's launcher and the readiness probe on its workers.
func addWorkerGate(m *recipe.MPISpec, launcher, worker *corev1.PodTemplateSpec) {
	gate := corev1.Container{
		Name:            GateContainer,
		Image:           m.Image,
		ImagePullPolicy: corev1.PullPolicy(m.ImagePullPolicy),
		Command:         []string{"/bin/sh", "-c", GateScript},
		Env:             []corev1.EnvVar{{Name: GateTimeoutEnv, Value: strconv.Itoa(DefaultGateTimeoutSeconds)}},
		VolumeMounts:    []corev1.VolumeMount{{Name: mpiConfigVolume, MountPath: mpiConfigPath, ReadOnly: true}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("16Mi"),
		}},
	}
	launcher.Spec.InitContainers = append([]corev1.Container{gate}, launcher.Spec.InitContainers...)
	for i := range worker.Spec.Containers {
		if worker.Spec.Containers[i].Name != MPIContainer {
			continue
		}
		worker.Spec.Containers[i].ReadinessProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "true"}}},
			PeriodSeconds:    5,
			TimeoutSeconds:   5,
			FailureThreshold: 3,
		}
	}
}

// GateFailed reports whether launcher's worker gate (its GateContainer init container) gave up:
// the workers were not Ready within its timeout, and the launcher never ran mpirun.
func GateFailed(launcher *corev1.Pod) bool {
	for _, s := range launcher.Status.InitContainerStatuses {
		if s.Name == GateContainer && s.State.Terminated != nil && s.State.Terminated.ExitCode != 0 {
			return true
		}
	}
	return false
}

// Launcher is the launcher pod among a job's pods; nil when there is none (yet).
func Launcher(pods []corev1.Pod) *corev1.Pod {
	var launcher *corev1.Pod
	for i := range pods {
		if Replica(&pods[i]) == "launcher" {
			launcher = &pods[i]
		}
	}
	return launcher
}
