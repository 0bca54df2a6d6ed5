package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// storageMarker is in the preflight storage probe's script (pkg/preflight StorageMarker; the
// scenarios match on it too).
const storageMarker = "ain-storage-probe"

// probeScript is the script of a preflight probe pod whose /bin/sh -c script prints marker
// (the storage and image probes), ok false for any other pod.
func probeScript(pod *corev1.Pod, marker string) (string, bool) {
	if len(pod.Spec.Containers) == 0 {
		return "", false
	}
	cmd := pod.Spec.Containers[0].Command
	if len(cmd) != 3 || !strings.HasSuffix(cmd[0], "sh") || cmd[1] != "-c" || !strings.Contains(cmd[2], marker) {
		return "", false
	}
	return cmd[2], true
}

// runsStorageProbe reports whether pod's container is the storage probe.
func runsStorageProbe(pod *corev1.Pod) (string, bool) { return probeScript(pod, storageMarker) }

// ClaimTree is a shared claim's content as a storage sample describes it, one entry a line,
// paths relative to the claim's root:
//
//	dir datasets/course-qa
//	file models/M/config.json 663                 a file of that size (sparse: shards cost no disk)
//	index models/M/model.safetensors.index.json model-00001-of-00004.safetensors ...
//	readonly                                      the claim is exported read-only
//	df 10737418240 7516192768                     its size and free space in KiB (default: 10 TiB, 7 TiB free)
//
// An index line writes a weights index (weight_map) naming the shards given; a shard it names
// need not exist (that is the missing-shard case).
type ClaimTree struct {
	Lines           []string
	ReadOnly        bool
	SizeKB, AvailKB int64
}

// ParseClaimTree reads a storage sample; # comments and blank lines are skipped.
func ParseClaimTree(desc string) ClaimTree {
	t := ClaimTree{SizeKB: 10 << 30, AvailKB: 7 << 30}
	sc := bufio.NewScanner(strings.NewReader(desc))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case l == "readonly":
			t.ReadOnly = true
		case strings.HasPrefix(l, "df "):
			if f := strings.Fields(l); len(f) == 3 {
				t.SizeKB, _ = strconv.ParseInt(f[1], 10, 64)
				t.AvailKB, _ = strconv.ParseInt(f[2], 10, 64)
			}
		default:
			t.Lines = append(t.Lines, l)
		}
	}
	return t
}

// Write makes the tree under dir.
func (t ClaimTree) Write(dir string) error {
	for _, l := range t.Lines {
		f := strings.Fields(l)
		if len(f) < 2 || strings.Contains(f[1], "..") || path.IsAbs(f[1]) {
			return fmt.Errorf("storage sample line %q: want dir|file|index and a relative path", l)
		}
		p := filepath.Join(dir, filepath.FromSlash(f[1]))
		mk := p
		if f[0] != "dir" {
			mk = filepath.Dir(p)
		}
		if err := os.MkdirAll(mk, 0o755); err != nil {
			return err
		}
		switch f[0] {
		case "dir":
		case "file":
			size := int64(0)
			if len(f) > 2 {
				size, _ = strconv.ParseInt(f[2], 10, 64)
			}
			fh, err := os.Create(p)
			if err != nil {
				return err
			}
			err = fh.Truncate(size)
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case "index":
			if err := os.WriteFile(p, weightsIndex(f[2:]), 0o644); err != nil {
				return err
			}
		default:
			return fmt.Errorf("storage sample line %q: want dir, file, index or readonly", l)
		}
	}
	return nil
}

// weightsIndex is a model.safetensors.index.json (the format transformers' save_pretrained
// writes: metadata.total_size and weight_map from tensor name to shard) with a few tensors per
// shard, the last shard holding lm_head.
func weightsIndex(shards []string) []byte {
	wm := map[string]string{}
	for i, s := range shards {
		wm[fmt.Sprintf("model.layers.%d.mlp.down_proj.weight", i*7)] = s
		wm[fmt.Sprintf("model.layers.%d.self_attn.q_proj.weight", i*7)] = s
	}
	if n := len(shards); n > 0 {
		wm["model.embed_tokens.weight"] = shards[0]
		wm["lm_head.weight"] = shards[n-1]
		wm["model.norm.weight"] = shards[n-1]
	}
	b, _ := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": 15231233024}, "weight_map": wm}, "", "  ")
	return b
}

// runStorageProbe runs the storage probe's own script as a local process over the claim tree
// described by desc, mounted where the pod mounts its claims: each PersistentVolumeClaim volume
// of the pod is the tree (every claim shows the same content: the sandbox has one shared disk),
// reached at $AIN_SYSFS_ROOT/<mountPath> through a symlink to the tree (or its subPath). A
// mount the pod asks read-only, or a tree marked readonly (a read-only export), is bound
// read-only in a mount namespace of the script's own, so a write fails as on the node ("Read-only
// file system"); that takes root (which the sandbox's real-pod mode needs too): without it the
// directories are made unwritable instead, which only holds for a non-root agent. The script runs
// as the pod's runAsUser/runAsGroup when set and the agent is root, else as the agent.
func runStorageProbe(ctx context.Context, pod *corev1.Pod, script, desc, dir string) (out, termMsg string, err error) {
	tree := ParseClaimTree(desc)
	root := filepath.Join(dir, "root")
	claimDir := filepath.Join(dir, "claim")
	for _, d := range []string{root, claimDir} {
		if err := os.RemoveAll(d); err != nil {
			return "", "", err
		}
	}
	if err := tree.Write(claimDir); err != nil {
		return "", "", err
	}
	claimVols := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claimVols[v.Name] = v.PersistentVolumeClaim.ReadOnly
		}
	}
	var readOnly []string
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		volRO, ok := claimVols[m.Name]
		if !ok || !path.IsAbs(m.MountPath) || strings.Contains(m.MountPath+m.SubPath, "..") {
			continue
		}
		target := filepath.Join(claimDir, filepath.FromSlash(m.SubPath))
		if err := os.MkdirAll(target, 0o755); err != nil {
			return "", "", err
		}
		link := filepath.Join(root, filepath.FromSlash(m.MountPath))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return "", "", err
		}
		if err := os.Symlink(target, link); err != nil {
			return "", "", err
		}
		if m.ReadOnly || volRO || tree.ReadOnly {
			readOnly = append(readOnly, target)
		}
	}
	termPath := pod.Spec.Containers[0].TerminationMessagePath
	if termPath == "" {
		termPath = corev1.TerminationMessagePathDefault
	}
	termFile := filepath.Join(root, filepath.FromSlash(termPath))
	if err := os.MkdirAll(filepath.Dir(termFile), 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(termFile, nil, 0o666); err != nil {
		return "", "", err
	}
	if err := os.Chmod(termFile, 0o666); err != nil { // whatever the umask: the probe's user writes it
		return "", "", err
	}
	// The claim's free space is the simulated disk's (the PersistentVolume's 10Ti), not the
	// sandbox machine's: a df first on the script's PATH answers for it, in df -P's format.
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", "", err
	}
	df := fmt.Sprintf("#!/bin/sh\necho 'Filesystem 1024-blocks Used Available Capacity Mounted on'\necho '127.0.0.1:/shared %d %d %d %d%% /shared'\n",
		tree.SizeKB, tree.SizeKB-tree.AvailKB, tree.AvailKB, 100*(tree.SizeKB-tree.AvailKB)/max(tree.SizeKB, 1))
	if err := os.WriteFile(filepath.Join(bin, "df"), []byte(df), 0o755); err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", SysfsRootEnv + "=" + root}
	attr := &syscall.SysProcAttr{}
	if os.Geteuid() == 0 {
		if len(readOnly) > 0 {
			// The script's own mount namespace (Go makes / private in it first, so nothing
			// leaks out); the bind mounts go with it when it exits.
			attr.Unshareflags = syscall.CLONE_NEWNS
			cmd.Args = append([]string{"/bin/sh", "-c",
				`for d; do mount --bind "$d" "$d" && mount -o remount,bind,ro "$d" || exit 97; done; exec /bin/sh -c "$AIN_STORAGE_SCRIPT"`, "sh"}, readOnly...)
			cmd.Env = append(cmd.Env, "AIN_STORAGE_SCRIPT="+script)
		}
		if sc := pod.Spec.SecurityContext; sc != nil && sc.RunAsUser != nil {
			gid := *sc.RunAsUser
			if sc.RunAsGroup != nil {
				gid = *sc.RunAsGroup
			}
			attr.Credential = &syscall.Credential{Uid: uint32(*sc.RunAsUser), Gid: uint32(gid)}
		}
	} else {
		for _, d := range readOnly {
			if err := makeUnwritable(d); err != nil {
				return "", "", err
			}
		}
	}
	cmd.SysProcAttr = attr
	var b bytes.Buffer
	cmd.Stdout = &b
	var eb bytes.Buffer
	cmd.Stderr = &eb
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() != 97 {
		err = nil // the script's status is the pod's; what it printed is the result
	}
	if err != nil {
		return "", "", fmt.Errorf("%w: %s", err, strings.TrimSpace(eb.String()))
	}
	return b.String(), readTermMessage(termFile), nil
}

// makeUnwritable removes the write bits under dir.
func makeUnwritable(dir string) error {
	return filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chmod(p, info.Mode().Perm()&^0o222)
	})
}
