package train

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/trainlog"
)

// NoLossError says a job's rank 0 has logged no training loss (yet?).
type NoLossError struct{ Pod string }

func (e *NoLossError) Error() string { return e.Pod + ": no training loss in its log (yet?)" }

// RankZeroRun reads the training log of job name's rank 0 (the PyTorchJob master, else the first
// of pods, which must not be empty) through the API server.
func RankZeroRun(ctx context.Context, cl *jobs.Cluster, kind, name string, pods []corev1.Pod, o trainlog.ParseOptions) (*trainlog.Run, error) {
	pod := &pods[0]
	for i := range pods {
		if strings.HasSuffix(pods[i].Name, "-master-0") {
			pod = &pods[i]
		}
	}
	container := jobs.MainContainer(kind)
	if !jobs.HasContainer(pod, container) {
		container = ""
	}
	rc, err := cl.PodLogs(ctx, pod.Name, container, -1, false)
	if err != nil {
		return nil, fmt.Errorf("%s: reading its log: %w", pod.Name, err)
	}
	defer rc.Close()
	r, err := trainlog.Parse(rc, kind+" "+name+" ("+pod.Name+")", o)
	if err != nil {
		return nil, err
	}
	if len(r.Entries) == 0 {
		return nil, &NoLossError{Pod: pod.Name}
	}
	return r, nil
}
