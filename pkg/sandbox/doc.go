// Package sandbox runs a local Kubernetes control plane with simulated GPU/RDMA nodes: real
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and training-operator (with its
// validating webhook), and kwok standing in for the kubelets. Only the nodes and what runs in
// containers are simulated: pods move through their phases by kwok Stages (data files under
// data/stages) and their logs are recorded samples (samples/), picked per pod by the sandbox
// agent according to the scenario (data/scenarios).
//
// The component binaries are built from Go modules on first use into a cache outside the
// repository (see CacheDir) and every process is started on 127.0.0.1 and stopped by its pid.
package sandbox
