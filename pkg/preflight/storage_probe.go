package preflight

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/claims"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// CheckModel is the check of what the recipe reads and writes on its shared volume (course
// 12.1): the model directory complete and readable, the dataset there, the output writable.
const CheckModel = "model"

const probeStorage = "storage"

// Storage is what the model check probes: the recipe's volume mounts and the paths it names
// (recipe.DataPaths), and the job's pod securityContext.
type Storage struct {
	Mounts []recipe.Volume
	Paths  []recipe.DataPath
	// RunAs is the job's pod securityContext (runAsUser, runAsGroup, fsGroup,
	// supplementalGroups); nil: the image's own user, as ain's jobs run today (root in the
	// built-in recipes' images). The probe reads and writes as that user.
	RunAs *corev1.PodSecurityContext
	// DefaultCapabilities: the probe keeps the container runtime's default capabilities, as ain's
	// training ranks do (jobs.Build adds IPC_LOCK and drops none), so that it reads what they read:
	// root with CAP_DAC_OVERRIDE reads a 0600 file of another user, root without it cannot.
	// False: every capability dropped, as ain's vLLM pods run.
	DefaultCapabilities bool
	// ReadBytes, when 1 MiB or more, has the probe also read about this many bytes of each
	// model's weight files (each file's part rounded up to 16 MiB) and time it (dd, O_DIRECT
	// where the file system allows it): a lower bound of the shared volume's read throughput as
	// a model loader sees it (course 12.4.1). 0: no read test.
	ReadBytes int64
}

// Free space under which an output path WARNs and FAILs: a merged 7B model in bf16 is ~15 GB, an
// adapter with its checkpoints a few hundred MB.
const (
	warnFreeKB = 20 << 20 // 20 GiB
	failFreeKB = 1 << 20  // 1 GiB
)

// StorageMarker is in every storage probe's command, its output's first line (the sandbox
// answers on it).
const StorageMarker = "ain-storage-probe"

// storageScript is the probe's POSIX sh (busybox ash, dash): for each path what storage_report.go
// reads. A file counts as readable when its first block can be read (dd), not by its mode bits:
// on NFS with root_squash the server decides, and only a read asks it. The output path's nearest
// existing directory gets a file created and removed; df -Pk gives its free space. Paths are
// read under ${AIN_SYSFS_ROOT} (unset in a pod; the sandbox's simulated container root) but
// printed as the pod sees them; a set one is said (an S line): what was read is the sandbox's
// simulated volume, not a real one.
//
// With readBytes (whole MiB), once every path is checked, each model directory's weight files are
// read in name order, up to readBytes per directory, 16 MiB a request, each file by one dd with
// O_DIRECT (iflag=direct: this node's page cache neither serves nor keeps them; a server's cache
// still may; where the file system refuses it the read goes through the page cache and says so),
// and dd's own summary line is printed (GNU coreutils and a stock busybox both end it with
// "N bytes (...) copied, S s[econds], R/s"; LC_ALL=C keeps GNU's words English). The reads
// stop readFor after the script started (timeout(1) cuts a dd at that point, and the cut file
// is named), so that a slow volume ends the read test, not the probe.
func storageScript(run string, paths []recipe.DataPath, readBytes int64, readFor time.Duration) string {
	var b strings.Builder
	b.WriteString(`R="${AIN_SYSFS_ROOT:-}"
T0=$(date +%s)
RB=` + strconv.FormatInt(max(0, readBytes>>20), 10) + `
RT=` + strconv.FormatInt(int64(readFor/time.Second), 10) + `
t=
trap 'rm -f "$t"' EXIT
echo '` + storageFormat + `'
echo "U $(id -u 2>/dev/null) $(id -g 2>/dev/null)"
[ -z "$R" ] || echo "S sandbox"
sz() { set -- $(ls -lnLd "$1" 2>/dev/null); echo "${5:--}"; }
ty() { if [ -d "$1" ]; then echo "T d"; elif [ -f "$1" ]; then echo "T f"; elif [ -e "$1" ]; then echo "T o"; else echo "T -"; fi; }
ent() { r=-; dd if="$1" of=/dev/null bs=4096 count=1 2>/dev/null && r=r; echo "E $r $(sz "$1") ${1##*/}"; }
model() {
  echo "P model $1"; p="$R$1"; ty "$p"; [ -d "$p" ] || return 0
  find "$p" -mindepth 1 -maxdepth 1 2>/dev/null | head -n 4000 | sort | while IFS= read -r f; do [ -f "$f" ] && ent "$f"; done
  for i in model.safetensors.index.json pytorch_model.bin.index.json; do
    [ -f "$p/$i" ] || continue
    s=$(sz "$p/$i"); echo "I $s $i"
    case $s in *[!0-9]*) ;; *) [ "$s" -gt ` + strconv.Itoa(maxIndexBytes) + ` ] || dd if="$p/$i" bs=65536 count=` + strconv.Itoa(maxIndexBytes/65536) + ` 2>/dev/null | sed 's/^/| /';; esac
    echo; echo I-END; break
  done
}
TO=; command -v timeout >/dev/null 2>&1 && TO=timeout
rdd() { LC_ALL=C $TO ${TO:+"$1"} dd if="$2" of=/dev/null bs=16777216 count="$3" $4 2>&1; }
rd() {
  echo "XP $1"; p="$R$1"; [ -d "$p" ] || { echo "XN not a directory"; return 0; }
  find "$p" -mindepth 1 -maxdepth 1 2>/dev/null | sort | { left=$RB; k=0; while IFS= read -r f; do
    case "${f##*/}" in *.safetensors|*.bin|*.pt|*.pth|*.gguf) ;; *) continue;; esac
    [ -f "$f" ] && [ "$left" -gt 0 ] || continue
    s=$(( RT - ($(date +%s) - T0) )); [ "$s" -gt 0 ] || { echo "XT ${f##*/}"; k=1; break; }
    c=$(( (left + 15) / 16 )); t1=$(date +%s)
    m=d; o=$(rdd "$s" "$f" "$c" iflag=direct) || { [ $(( $(date +%s) - t1 )) -lt "$s" ] && { m=c; o=$(rdd "$s" "$f" "$c"); }; } || true
    if [ -n "$TO" ] && [ $(( $(date +%s) - t1 )) -ge "$s" ]; then echo "XT ${f##*/}"; k=1; break; fi
    o=$(echo "$o" | tail -n 1); echo "X $m $o"; echo "XF ${f##*/}"; k=1
    n=${o%% *}; case $n in ''|*[!0-9]*) n=0;; esac
    left=$(( left - n / 1048576 ))
  done; [ $k -eq 1 ] || echo "XN no weight file (*.safetensors, *.bin, *.pt, *.pth, *.gguf) directly in it"; }
}
data() {
  echo "P dataset $1"; p="$R$1"; ty "$p"
  if [ -d "$p" ]; then r=-; [ -r "$p" ] && [ -x "$p" ] && r=r; echo "D $r $(find "$p" -mindepth 1 -maxdepth 1 2>/dev/null | head -n 10001 | wc -l)"; elif [ -f "$p" ]; then ent "$p"; fi
}
out() {
  echo "P output $1"; p="$R$1"; ty "$p"; a="$p"
  while [ ! -e "$a" ] && [ -n "$a" ] && [ "$a" != "$R" ]; do a="${a%/*}"; done
  [ -n "$a" ] || a="$R/"
  echo "A ${a#"$R"}"
  t="$a/.ain-probe-write-` + run + `"
  if e=$( { : >"$t"; } 2>&1 ); then rm -f "$t"; t=; echo "W ok"; else e=$(echo "$e" | tail -n 1); echo "W ${e##*: }"; fi
  set -- $(df -Pk "$a" 2>/dev/null | tail -n 1); [ -n "$4" ] && echo "F $2 $4"
}
`)
	for _, p := range paths {
		fn := map[recipe.DataKind]string{recipe.DataModel: "model", recipe.DataDataset: "data", recipe.DataOutput: "out"}[p.Kind]
		if fn != "" {
			b.WriteString(fn + " " + shellQuote(p.Path) + "\n")
		}
	}
	if readBytes >= 1<<20 {
		for _, p := range paths {
			if p.Kind == recipe.DataModel {
				b.WriteString("rd " + shellQuote(p.Path) + "\n")
			}
		}
	}
	b.WriteString("echo END\n")
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// storagePlan is one probe: the paths on claims, and the volumes the probe pod mounts.
type storagePlan struct {
	paths  []recipe.DataPath
	claim  map[string]*recipe.Volume // path -> the volume holding it
	mounts []recipe.Volume
}

// planStorage keeps the paths on a claim the recipe mounts, and mounts those claims where the
// job does: read-only, except a volume holding an output path that the job mounts writable.
func planStorage(s Storage) (storagePlan, []Check) {
	pl := storagePlan{claim: map[string]*recipe.Volume{}}
	var notes []Check
	mounted := map[string]int{}
	for _, p := range s.Paths {
		v := recipe.MountFor(s.Mounts, p.Path)
		if v == nil {
			if p.Kind != recipe.DataOutput {
				notes = append(notes, Check{Name: CheckModel, Status: Warn,
					Message: fmt.Sprintf("%s %s (%s) is on no volume of the recipe: every pod reads it from its own image or downloads it", p.Kind, p.Path, p.Field),
					Fix:     "put it on the shared volume and mount that (spec.volumes), or bake it into the image"})
			}
			continue
		}
		i, ok := mounted[v.Name]
		if !ok {
			i = len(pl.mounts)
			mounted[v.Name] = i
			m := *v
			m.ReadOnly = true
			pl.mounts = append(pl.mounts, m)
		}
		if p.Kind == recipe.DataOutput && !v.ReadOnly {
			pl.mounts[i].ReadOnly = false
		}
		pl.paths = append(pl.paths, p)
		pl.claim[p.Path] = v
	}
	return pl, notes
}

// storagePod is the probe pod: busybox (o.ProbeImage) as the job's user, the claims mounted as
// planned, on node (pinToNode).
func storagePod(o Options, run string, pl storagePlan, node *corev1.Node) *corev1.Pod {
	pod := probe.Pod(o.ProbeOptions(), run, probe.Spec{Kind: probeStorage, Name: "ain-storage-" + run, Script: storageScript(run, pl.paths, o.Storage.ReadBytes, readBudget(o.ProbeTimeout)), ResultMessage: true})
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	if ra := o.Storage.RunAs; ra != nil {
		pod.Spec.SecurityContext.RunAsUser, pod.Spec.SecurityContext.RunAsGroup = ra.RunAsUser, ra.RunAsGroup
		pod.Spec.SecurityContext.FSGroup, pod.Spec.SecurityContext.SupplementalGroups = ra.FSGroup, ra.SupplementalGroups
		pod.Spec.SecurityContext.RunAsNonRoot = ra.RunAsNonRoot
	}
	c := &pod.Spec.Containers[0]
	if o.Storage.DefaultCapabilities {
		c.SecurityContext.Capabilities = nil
	}
	for _, m := range pl.mounts {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: m.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: m.ClaimName, ReadOnly: m.ReadOnly},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: m.Name, MountPath: m.MountPath, SubPath: m.SubPath, ReadOnly: m.ReadOnly})
	}
	if node != nil {
		pinToNode(pod, node)
	}
	return pod
}

// checkModel probes the recipe's model, dataset and output paths from one candidate node (the
// first), unless the volumes check already failed for their claim (the pod would never start).
func checkModel(ctx context.Context, o Options, candidates []corev1.Node, volumes []Check) []Check {
	if len(o.Storage.Paths) == 0 {
		if len(o.Storage.Mounts) > 0 {
			return []Check{{Name: CheckModel, Status: Pass, Message: "the recipe names no model, dataset or output path on its volumes: nothing to probe"}}
		}
		return nil
	}
	pl, out := planStorage(o.Storage)
	if len(pl.paths) == 0 {
		return out
	}
	for _, v := range volumes {
		for _, m := range pl.mounts {
			if v.Status == Fail && v.Target == m.ClaimName {
				return append(out, Check{Name: CheckModel, Target: m.ClaimName, Status: Fail,
					Message: "not probed: PersistentVolumeClaim " + m.ClaimName + " failed the volumes check", Fix: v.Fix})
			}
		}
	}
	var node *corev1.Node
	if len(candidates) > 0 {
		node = &candidates[0]
	}
	for _, m := range pl.mounts {
		var skip *Check
		if node, skip = claimProbeNode(ctx, o, m.ClaimName, node, candidates); skip != nil {
			return append(out, *skip)
		}
	}
	o.Progress("probing the model, dataset and output paths on the shared volume")
	run := probe.NewRun()
	outs := probe.Run(ctx, o.ProbeOptions(), run, []*corev1.Pod{storagePod(o, run, pl, node)})
	res := outs[0]
	if res.Log == nil {
		return append(out, Check{Name: CheckModel, Target: pl.mounts[0].ClaimName, Status: Fail,
			Message:  "the storage probe pod did not run to the end within " + o.ProbeTimeout.String(),
			Evidence: []string{res.NotRun()},
			Fix:      "a pod mounting the claim cannot start: kubectl describe pod shows why (the claim's volume not mountable on the node, an image that cannot be pulled)"})
	}
	rep, err := ParseStorageReport(res.Log)
	if err != nil {
		return append(out, Check{Name: CheckModel, Target: pl.mounts[0].ClaimName, Status: Fail, Message: err.Error(),
			Evidence: limit(strings.Split(strings.TrimSpace(string(res.Log)), "\n")), Fix: "the probe image must have sh, ls, dd, df and sed (busybox)"})
	}
	checks := JudgeStorage(rep, pl.paths, pl.claim)
	for i := range checks {
		if r := checks[i].Read; r != nil && node != nil {
			r.Node = node.Name
		}
	}
	return append(out, checks...)
}

// readBudget is how long the read test may read: the probe's deadline less 20 s for the rest of
// the probe (the reads come last) and for the result to be read, at least 5 s.
func readBudget(probeTimeout time.Duration) time.Duration {
	return max(5*time.Second, probeTimeout-20*time.Second)
}

// pinToNode keeps pod on node by a required node affinity (its hostname label, else its name),
// not nodeName, so that the scheduler runs: it binds a claim that waits for its first consumer.
// Whatever the node's taints, the probe tolerates them.
func pinToNode(pod *corev1.Pod, node *corev1.Node) {
	term := corev1.NodeSelectorTerm{}
	if host := node.Labels[corev1.LabelHostname]; host != "" {
		term.MatchExpressions = []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{host}}}
	} else {
		term.MatchFields = []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node.Name}}}
	}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}},
	}}
	pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	pod.Annotations[probe.AnnotationFor] = node.Name
}

// claimProbeNode decides where the storage probe may mount claim, or why it must not: a claim
// not Bound yet would be bound by the probe (WaitForFirstConsumer: to a volume on the probe's
// node, not the job's); a claim that attaches to one node at a time (no ReadWriteMany or
// ReadOnlyMany) and is in use by a pod on another node cannot be mounted elsewhere (the
// attach-detach controller refuses a Multi-Attach, k8s.io/kubernetes pkg/volume/util
// IsMultiAttachAllowed), so the probe goes to that node when it is a candidate. A claim that
// cannot be read is probed as planned (the volumes check says why).
func claimProbeNode(ctx context.Context, o Options, claim string, node *corev1.Node, candidates []corev1.Node) (*corev1.Node, *Check) {
	pvc, err := o.Kube.CoreV1().PersistentVolumeClaims(o.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return node, nil
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		return node, &Check{Name: CheckModel, Target: claim, Status: Warn,
			Message: fmt.Sprintf("not probed: PersistentVolumeClaim %s is %s: a probe pod would bind it (to a volume where the probe runs, not where the job will)", claim, pvc.Status.Phase),
			Fix:     "the model on it is checked once the claim is bound (by the first job, or a pod of yours that mounts it)"}
	}
	for _, mode := range pvc.Status.AccessModes {
		if mode == corev1.ReadWriteMany || mode == corev1.ReadOnlyMany {
			return node, nil
		}
	}
	pods, err := o.Kube.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return node, nil
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.Labels[probe.LabelProbe] != "" {
			continue
		}
		if node != nil && p.Spec.NodeName == node.Name {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claim {
				continue
			}
			for i := range candidates {
				if candidates[i].Name == p.Spec.NodeName {
					return &candidates[i], nil
				}
			}
			return node, &Check{Name: CheckModel, Target: claim, Status: Warn,
				Message: fmt.Sprintf("not probed: PersistentVolumeClaim %s (%s) is attached on node %s for pod %s, and a pod on another node cannot mount it (Multi-Attach)",
					claim, claims.ModesString(pvc.Status.AccessModes), p.Spec.NodeName, p.Name),
				Fix: "a ReadWriteOnce claim serves one node: run the job there (or after " + p.Name + " ends), or use a ReadWriteMany claim (NFS, CephFS)"}
		}
	}
	return node, nil
}
