package cli

import (
	"fmt"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/sandbox"
)

// clients loads the Kubernetes clients from the global flags, falling back to the local
// sandbox's kubeconfig when no cluster is configured.
func (a *App) clients() (*kube.Clients, error) {
	return kube.Load(a.kubeOptions())
}

// clusterConfig is where clients would come from, with no client built: for render, which
// asks a configured cluster one discovery question (kube.Clients.DiscoveryWithin).
func (a *App) clusterConfig() (*kube.Clients, error) {
	return kube.LoadConfig(a.kubeOptions())
}

func (a *App) kubeOptions() kube.Options {
	fallback := ""
	if dir, err := sandbox.StateDir(a.Getenv); err == nil {
		fallback = sandbox.Layout{Dir: dir}.Kubeconfig()
	}
	return kube.Options{
		Kubeconfig: a.Global.Kubeconfig, Context: a.Global.Context, Namespace: a.Global.Namespace, Getenv: a.Getenv,
		SandboxKubeconfig: fallback,
	}
}

func (a *App) cluster(kc *kube.Clients) *jobs.Cluster {
	return &jobs.Cluster{Kube: kc.Kube, Dynamic: kc.Dynamic, Namespace: kc.Namespace, Now: a.Now}
}

// sandboxNote says once, clearly, that the sandbox simulates workloads.
func (a *App) sandboxNote(kc *kube.Clients) {
	if kc.Sandbox && !a.sandboxNoted {
		a.sandboxNoted = true
		fmt.Fprintln(a.Streams.Err, "note: this is the local ain sandbox: "+sandbox.CommandNote(kc.Kubeconfig, a.Getenv))
	}
}
