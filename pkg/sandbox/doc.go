// Package sandbox runs a local Kubernetes control plane with simulated GPU/RDMA nodes: real
// etcd, kube-apiserver (RBAC, token auth, audit log), kube-controller-manager, kube-scheduler, the
// job controllers of one Stack with their admission webhooks (StackCurrent: mpi-operator v0.8.0,
// JobSet v0.12.0, Kubeflow Trainer v2.3.0; StackLegacy: training-operator v1.8.1), and kwok
// standing in for the kubelets.
// Only the nodes and what runs in containers are simulated: pods move through their phases by
// kwok Stages (data/stages) and print recorded samples (samples/), which the sandbox agent
// (RunAgent, `ain sandbox agent`) picks per pod from the scenario's rules (data/scenarios).
//
// Binaries are built from Go modules on first use into a cache outside the repository, one
// folder per component and version (CacheDir, EnsureBinaries). Every process listens on
// 127.0.0.1 and is stopped by its pid (Down).
//
// State folder layout (StateDir, Layout):
//
//	state.json         config, pids, ports, webhook state (LoadState)
//	kubeconfig         admin kubeconfig (token auth, CA pinned)
//	config/            tokens.csv, one kubeconfig per component, kwok stages, audit policy
//	pki/               sandbox CA, API server, kwok and webhook serving certs, service-account key
//	                   (jobset-webhook/: JobSet's webhook cert folder)
//	tmp/trainer/       Trainer's TMPDIR, holding its webhook cert folder (see trainerConfig)
//	etcd/              etcd data (kept across down/up; removed by down --purge)
//	logs/              one log per component, audit.log
//	podlogs/           the rendered CRI log of every simulated pod (and the real log of a real pod)
//	realpods/          with real pods: the all_reduce_perf stand-in, sshd host key, ssh settings
//
// Per-pod behaviour is driven by annotations (AnnoStartAfter, AnnoReadyAfter, AnnoCompleteAfter,
// AnnoOutcome, AnnoExitCode, AnnoSample) that the agent sets from the scenario unless the pod
// template already carries them, so a test can ask for, e.g., a 60 s job.
//
// Unless Config.SimulatePods, pods of the images in realImages run as real processes
// (pkg/sandbox/podrun) instead: the agent marks them AnnoReal and reports their readiness and end
// (AnnoRealReady, AnnoRealExit) for the stages; see docs/sandbox-real-pods.md.
package sandbox
