package sandbox

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/sandbox/podrun"
)

// standIns are the training image's programs and Python modules on this machine
// (data/standins/README.md): bin/ is its /opt/conda/bin, python/ goes on its PYTHONPATH.
//
//go:embed all:data/standins
var standIns embed.FS

// The training image's paths: its base, pytorch/pytorch, has python and torchrun in
// /opt/conda/bin, on PATH (recipes/qlora.yaml's image notes); the stand-in modules go in a
// folder of their own.
const (
	trainImageBin    = "/opt/conda/bin"
	trainImageModule = "/opt/ain-standins"
)

// writeStandIns copies data/standins into dir/standins (bin/ executable), replacing what an
// older sandbox left there.
func writeStandIns(dir string) error {
	dst := filepath.Join(dir, "standins")
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return fs.WalkDir(standIns, "data/standins", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out := filepath.Join(dst, strings.TrimPrefix(p, "data/standins"))
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := standIns.ReadFile(p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(p, "data/standins/bin/") {
			mode = 0o755
		}
		return os.WriteFile(out, b, mode)
	})
}

// trainImage adds the training image's programs and modules to img: torchrun and python first
// on PATH, the stand-in modules on PYTHONPATH.
func trainImage(img podrun.Image, dir string) podrun.Image {
	img.Files[trainImageBin] = filepath.Join(dir, "standins", "bin")
	img.Files[trainImageModule] = filepath.Join(dir, "standins", "python")
	img.Env = append(img.Env,
		"PATH="+trainImageBin+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"PYTHONPATH="+trainImageModule)
	return img
}

// claimDirs gives each PersistentVolumeClaim pod mounts a folder under dir, one per namespace
// and claim, shared by the pods that mount it as a ReadWriteMany NFS claim is.
func claimDirs(dir string, pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if c := v.PersistentVolumeClaim; c != nil {
			out[c.ClaimName] = filepath.Join(dir, "claims", pod.Namespace, c.ClaimName)
		}
	}
	return out
}
