// Package podrun runs a pod's first container as a real process on this machine, the way a
// kubelet and a container runtime would, as far as a machine without container images allows
// (a first brick of real pods for the sandbox; docs/sandbox-real-pods.md):
//
//   - network: a network namespace of its own (ip netns) with lo up and eth0, one end of a veth
//     whose other end is on a bridge (Network) shared by the pods of a small cluster, at the pod
//     IP, with a default route through the host's address on the bridge;
//   - /etc/hosts, /etc/resolv.conf and /etc/hostname as the kubelet writes them (hostname and
//     subdomain FQDN, search path, ndots:5; the nameserver is the caller's cluster DNS, the
//     sandbox's CoreDNS). Spec.Hosts can list other pods in /etc/hosts for callers without a
//     cluster DNS (this package's tests); the sandbox passes none, as a kubelet writes none;
//   - mounts: a mount namespace of its own whose root is an overlay with this machine's / as the
//     image's layer and a tmpfs as the writable layer; the image's missing files mapped in
//     (Image); volumes at their mountPaths with the kubelet's semantics (Secret and ConfigMap
//     items, defaultMode and mode, root-owned or the fsGroup's with setgid folders, read-only;
//     emptyDir, medium Memory as a tmpfs of sizeLimit); its own /proc, /dev/shm, sysfs;
//   - the process: command and args with $(VAR) expanded, env (fieldRef, secretKeyRef,
//     configMapKeyRef, envFrom), workingDir, runAsUser/runAsGroup/fsGroup/supplementalGroups
//     as real ids, capabilities (containerd's default set, add/drop; IPC_LOCK also raises
//     RLIMIT_MEMLOCK where the machine allows), and UTS, IPC and PID namespaces of
//     its own, so that everything it starts (sshd's sessions, orted, MPI ranks) ends with it;
//   - output: the exit code in a container status's terms (Result), stdout and stderr as the
//     pod's log, and readiness probes as the kubelet runs them (tcpSocket and httpGet from the
//     host's namespace against the pod IP, exec inside the container; grpc is not run);
//   - Stop: SIGTERM, SIGKILL after the grace period, then the namespace, veth and folders go;
//     nothing is left behind.
//
// Everything here needs root (namespaces, mounts, bridges), util-linux (nsenter, unshare,
// setpriv, mount, pivot_root) and iproute2.
package podrun
