package podrun

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// volume is a pod volume made on the host, ready to be bind-mounted in the pod's mount namespace.
type volume struct {
	dir      string // host folder with the volume's content
	tmpfs    string // "size=N" options when it is an emptyDir of medium Memory, mounted in the pod
	readOnly bool   // Secret and ConfigMap volumes are mounted read-only by the kubelet
}

// projection is one file of a Secret or ConfigMap volume.
type projection struct {
	data []byte
	mode os.FileMode
}

// payload picks a Secret's or ConfigMap's keys as the kubelet's secret volume plugin does
// (k8s.io/kubernetes v1.37 pkg/volume/secret/secret.go MakePayload): every key at its own name
// with defaultMode when items is empty, otherwise only the listed keys at their paths with their
// own mode or defaultMode; a listed key that is absent fails unless the source is optional.
// defaultMode nil is the API's default, 0644 (corev1.SecretVolumeSourceDefaultMode).
func payload(kind, name string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional bool) (map[string]projection, error) {
	mode := os.FileMode(corev1.SecretVolumeSourceDefaultMode)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	out := map[string]projection{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = projection{data: v, mode: mode}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s %q has no key %q", kind, name, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		out[filepath.Clean(it.Path)] = projection{data: v, mode: m}
	}
	return out, nil
}

// writeProjected lays files out as the kubelet's AtomicWriter does (pkg/volume/util/
// atomic_writer.go): the files in a "..<UTC timestamp>.<random>" folder of mode 0755, a
// "..data" symlink to it, and one symlink per top-level name through "..data". Programs that
// check a file's path (OpenSSH's StrictModes) see this layout on a real node.
func writeProjected(dir string, files map[string]projection) error {
	ts, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return err
	}
	top := map[string]bool{}
	for p, f := range files {
		if strings.HasPrefix(p, "..") || filepath.IsAbs(p) {
			return fmt.Errorf("item path %q: must be relative and not start with '..'", p)
		}
		full := filepath.Join(ts, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.data, f.mode.Perm()); err != nil {
			return err
		}
		// WriteFile's mode passes through the umask; the kubelet chmods too.
		if err := os.Chmod(full, f.mode.Perm()); err != nil {
			return err
		}
		top[strings.SplitN(p, string(filepath.Separator), 2)[0]] = true
	}
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")); err != nil {
		return err
	}
	for name := range top {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// setOwnership gives a volume to the pod's fsGroup as the kubelet's SetVolumeOwnership does
// (pkg/volume/volume_linux.go changeFilePermission): every entry's group becomes fsGroup
// (Lchown, symlinks included), regular files gain 0440 when read-only (0660 otherwise),
// folders gain the same plus 0110 and setgid; symlinks are not chmodded.
func setOwnership(dir string, fsGroup int64, readOnly bool) error {
	mask := os.FileMode(0o660)
	if readOnly {
		mask = 0o440
	}
	return filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, int(fsGroup)); err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		m := info.Mode() | mask
		if info.IsDir() {
			m |= os.ModeSetgid | 0o110
		}
		return os.Chmod(p, m)
	})
}

// makeVolumes makes every volume of the pod under dir/volumes/<name>. Secret and ConfigMap
// volumes are, on a node, tmpfs mounts whose root keeps tmpfs's mode 1777 (the emptyDir
// plugin's setupDir leaves a mode whose Perm() is already 0777 alone: pkg/volume/emptydir/
// empty_dir.go); here they are folders of that mode holding root-owned files. A disk emptyDir is
// 0777; a Memory one is a tmpfs with size=sizeLimit mounted inside the pod's mount namespace.
func makeVolumes(dir string, pod *corev1.Pod, src sources) (map[string]*volume, error) {
	var fsGroup *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		fsGroup = sc.FSGroup
	}
	out := map[string]*volume{}
	for _, v := range pod.Spec.Volumes {
		vd := filepath.Join(dir, "volumes", v.Name)
		if err := os.MkdirAll(vd, 0o755); err != nil {
			return nil, err
		}
		vol := &volume{dir: vd}
		var files map[string]projection
		switch {
		case v.Secret != nil || v.ConfigMap != nil:
			kind, name, items, mode, optional := "secret", "", []corev1.KeyToPath(nil), (*int32)(nil), (*bool)(nil)
			if s := v.Secret; s != nil {
				name, items, mode, optional = s.SecretName, s.Items, s.DefaultMode, s.Optional
			} else {
				c := v.ConfigMap
				kind, name, items, mode, optional = "configmap", c.Name, c.Items, c.DefaultMode, c.Optional
			}
			data, err := src.get(kind, name, optional)
			if err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			files, err = payload(kind, name, data, items, mode, optional != nil && *optional)
			if err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			vol.readOnly = true
		case v.Projected != nil:
			var err error
			if files, err = projected(pod, v.Projected, src); err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			vol.readOnly = true
		case v.EmptyDir != nil:
			if v.EmptyDir.Medium == corev1.StorageMediumMemory {
				vol.tmpfs = "mode=1777"
				if l := v.EmptyDir.SizeLimit; l != nil && l.Value() > 0 {
					vol.tmpfs += fmt.Sprintf(",size=%d", l.Value())
				}
			} else if err := os.Chmod(vd, 0o777); err != nil {
				return nil, err
			}
		case v.PersistentVolumeClaim != nil:
			claim := v.PersistentVolumeClaim.ClaimName
			hostDir, ok := src.claims[claim]
			if !ok {
				return nil, fmt.Errorf("volume %q: claim %q has no folder here (Spec.Claims)", v.Name, claim)
			}
			if err := os.MkdirAll(hostDir, 0o777); err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			// The claim's folder is shared: it is mounted as it is, with no fsGroup walk.
			out[v.Name] = &volume{dir: hostDir, readOnly: v.PersistentVolumeClaim.ReadOnly}
			continue
		default:
			return nil, fmt.Errorf("volume %q: only secret, configMap, projected, emptyDir and persistentVolumeClaim volumes run for real so far", v.Name)
		}
		if files != nil {
			if err := os.Chmod(vd, os.ModeSticky|0o777); err != nil {
				return nil, err
			}
			if err := writeProjected(vd, files); err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
		}
		// A Memory emptyDir gets its ownership when mounted (the tmpfs is made in the pod).
		if fsGroup != nil && vol.tmpfs == "" {
			if err := setOwnership(vd, *fsGroup, vol.readOnly); err != nil {
				return nil, fmt.Errorf("volume %q: fsGroup: %w", v.Name, err)
			}
		}
		out[v.Name] = vol
	}
	return out, nil
}

// sources are the Secrets and ConfigMaps a pod references, by name, its service account
// token and its IP (for the downward API).
type sources struct {
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
	token      string
	podIP      string
	claims     map[string]string
}

// projected is a projected volume's files, as the kubelet's projected plugin makes them
// (pkg/volume/projected/projected.go collectData): each source's items with the volume's
// defaultMode (0644 unset) or their own mode; the service account token at its path (the
// token the caller got, Spec.ServiceAccountToken); downward-API items by fieldRef.
func projected(pod *corev1.Pod, pv *corev1.ProjectedVolumeSource, src sources) (map[string]projection, error) {
	mode := os.FileMode(corev1.ProjectedVolumeSourceDefaultMode)
	if pv.DefaultMode != nil {
		mode = os.FileMode(*pv.DefaultMode)
	}
	dm := int32(mode)
	out := map[string]projection{}
	add := func(files map[string]projection) {
		for k, v := range files {
			out[k] = v
		}
	}
	for _, ps := range pv.Sources {
		switch {
		case ps.Secret != nil || ps.ConfigMap != nil:
			kind, name, items, optional := "secret", "", []corev1.KeyToPath(nil), (*bool)(nil)
			if s := ps.Secret; s != nil {
				name, items, optional = s.Name, s.Items, s.Optional
			} else {
				kind, name, items, optional = "configmap", ps.ConfigMap.Name, ps.ConfigMap.Items, ps.ConfigMap.Optional
			}
			data, err := src.get(kind, name, optional)
			if err != nil {
				return nil, err
			}
			files, err := payload(kind, name, data, items, &dm, optional != nil && *optional)
			if err != nil {
				return nil, err
			}
			add(files)
		case ps.ServiceAccountToken != nil:
			out[filepath.Clean(ps.ServiceAccountToken.Path)] = projection{data: []byte(src.token), mode: mode}
		case ps.DownwardAPI != nil:
			for _, it := range ps.DownwardAPI.Items {
				if it.FieldRef == nil {
					return nil, fmt.Errorf("downward API item %q: only fieldRef runs for real so far", it.Path)
				}
				v, err := fieldValue(pod, src.podIP, it.FieldRef.FieldPath)
				if err != nil {
					return nil, err
				}
				m := mode
				if it.Mode != nil {
					m = os.FileMode(*it.Mode)
				}
				out[filepath.Clean(it.Path)] = projection{data: []byte(v), mode: m}
			}
		}
	}
	return out, nil
}

// get is the data of the Secret (kind "secret") or ConfigMap named name; an absent one is an
// error unless optional, when its data is empty.
func (s sources) get(kind, name string, optional *bool) (map[string][]byte, error) {
	if kind == "secret" {
		if sec, ok := s.secrets[name]; ok {
			return secretData(sec), nil
		}
	} else if cm, ok := s.configMaps[name]; ok {
		return configMapData(cm), nil
	}
	if optional != nil && *optional {
		return nil, nil
	}
	return nil, fmt.Errorf("%s %q not found", kind, name)
}

// secretData is a Secret's data with stringData merged in as the API server does on write.
func secretData(s *corev1.Secret) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range s.Data {
		out[k] = v
	}
	for k, v := range s.StringData {
		out[k] = []byte(v)
	}
	return out
}

// configMapData is a ConfigMap's data and binaryData as bytes.
func configMapData(c *corev1.ConfigMap) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range c.Data {
		out[k] = []byte(v)
	}
	for k, v := range c.BinaryData {
		out[k] = v
	}
	return out
}

// sortedKeys returns m's keys in order, for output that does not depend on map order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
