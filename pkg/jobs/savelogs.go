package jobs

import (
	"context"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// SaveLogs writes every pod's full log to dir/<job>/<pod>.log and returns that folder. A log
// is written as it streams (constant memory), and a failure stops at that pod: the error says
// which file is incomplete.
func (c *Cluster) SaveLogs(ctx context.Context, dir, job string, pods []corev1.Pod) (string, error) {
	out := filepath.Join(dir, job)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	for _, p := range pods {
		if err := c.saveLog(ctx, filepath.Join(out, p.Name+".log"), p.Name); err != nil {
			return "", err
		}
	}
	return out, nil
}

func (c *Cluster) saveLog(ctx context.Context, path, pod string) error {
	rc, err := c.PodLogs(ctx, pod, "", -1, false)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
