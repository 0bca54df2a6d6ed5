package podrun_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/sandbox/podrun"
)

// The path of the nccl-tests binary in ain's image (recipes/allreduce.yaml ncclTests.binary).
const ncclTestsBinary = "/opt/nccl_tests/build/all_reduce_perf"

// mpiJob is the allreduce recipe rendered as a TrainJob, turned into the pods the Trainer and
// JobSet would create, with the objects they reference and the image they run.
type mpiJob struct {
	name     string
	workers  []*corev1.Pod
	launcher *corev1.Pod
	secret   *corev1.Secret
	hostfile *corev1.ConfigMap
	image    podrun.Image
}

// renderTrainJob renders recipes/allreduce with sets on the Trainer API (socket fabric).
func renderTrainJob(t *testing.T, sets ...string) *trainer.TrainingRuntime {
	t.Helper()
	r, err := recipe.Load("allreduce", sets)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Load(profile.Options{Fabric: profile.FabricSocket, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	b, err := jobs.Choose(r, jobs.Served{}, jobs.APITrainer)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := b.Build(r, p, jobs.Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	rt, ok := bundle.Objects[0].(*trainer.TrainingRuntime)
	if !ok {
		t.Fatalf("first object %T, want the TrainingRuntime", bundle.Objects[0])
	}
	return rt
}

// newMPIJob makes the pods of rt for a TrainJob named after it with nodes workers. What the
// controllers add, with the source that says so (Trainer v2.3.0, JobSet v0.12.0, Kubernetes
// v1.37):
//   - pod hostname "<jobset>-<replicatedJob>-<jobIndex>-<completionIndex>" (the Job controller
//     sets <job>-<index> for an Indexed Job with a subdomain, job_controller.go; JobSet names the
//     Job <jobset>-<rjob>-<index>, placement.GenJobName) and subdomain = the JobSet's name
//     (jobset_controller.go GetSubdomain), the TrainJob's name;
//   - the SSH Secret "<trainjob>-mpi-ssh-auth" mounted at sshAuthMountPath on both kinds of pod
//     with defaultMode 0400 and items ssh-privatekey -> id_rsa 0640, ssh-publickey -> id_rsa.pub
//     and authorized_keys 0644 (plugins/mpi/mpi.go EnforceMLPolicy; constants.go
//     MPISSHAuthDefaultMode, MPISSHPrivateKeyFileMode, MPISSHPublicKeyFileMode); the Trainer's
//     key is an ECDSA P-521 key in PEM (mpi.go buildSSHAuthSecret), here made by ssh-keygen;
//   - on the launcher, the hostfile ConfigMap "<trainjob>-mpi-hostfile" at /etc/mpi (item
//     hostfile, mode 0444) listing "<hostname>.<subdomain> slots=<numProcPerNode>" per node
//     (buildHostFileConfigMap, jobset.go IdentifyPodNetwork), and OMPI_MCA_orte_default_hostfile,
//     OMPI_MCA_orte_keep_fqdn_hostnames=true, OMPI_MCA_orte_set_default_slots,
//     OMPI_MCA_plm_rsh_args="-o ConnectionAttempts=10".
func newMPIJob(t *testing.T, rt *trainer.TrainingRuntime, nodes int) *mpiJob {
	t.Helper()
	progs := mpiPrograms(t)
	dir := t.TempDir()
	j := &mpiJob{name: rt.Name}
	key := filepath.Join(dir, "id")
	run(t, progs["ssh-keygen"], "-q", "-t", "ecdsa", "-b", "521", "-m", "PEM", "-N", "", "-C", "", "-f", key)
	var keys [2][]byte // the private key, the public key in authorized_keys format
	for i, f := range []string{key, key + ".pub"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = b
	}
	j.secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: j.name + "-mpi-ssh-auth", Namespace: "ns"}, Type: corev1.SecretTypeSSHAuth,
		Data: map[string][]byte{corev1.SSHAuthPrivateKey: keys[0], "ssh-publickey": keys[1]}}
	slots := int32(1)
	if mpi := rt.Spec.MLPolicy.MPI; mpi != nil && mpi.NumProcPerNode != nil {
		slots = *mpi.NumProcPerNode
	}
	var hostfile strings.Builder
	for i := range nodes {
		fmt.Fprintf(&hostfile, "%s-node-0-%d.%s slots=%d\n", j.name, i, j.name, slots)
	}
	j.hostfile = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: j.name + "-mpi-hostfile", Namespace: "ns"}, Data: map[string]string{"hostfile": hostfile.String()}}

	sshVolume := corev1.Volume{Name: "mpi-ssh-auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: j.secret.Name, DefaultMode: ptr.To[int32](0o400),
		Items: []corev1.KeyToPath{
			{Key: corev1.SSHAuthPrivateKey, Path: "id_rsa", Mode: ptr.To[int32](0o640)},
			{Key: "ssh-publickey", Path: "id_rsa.pub", Mode: ptr.To[int32](0o644)},
			{Key: "ssh-publickey", Path: "authorized_keys", Mode: ptr.To[int32](0o644)},
		}}}}
	sshMount := corev1.VolumeMount{Name: "mpi-ssh-auth", MountPath: *rt.Spec.MLPolicy.MPI.SSHAuthMountPath}
	for _, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
		spec := rj.Template.Spec.Template.Spec.DeepCopy()
		spec.Volumes = append(spec.Volumes, sshVolume)
		c := &spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, sshMount)
		count := 1
		if rj.Name == jobs.TrainerNodeJob {
			count = nodes
		} else {
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "mpi-hostfile", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: j.hostfile.Name},
				Items:                []corev1.KeyToPath{{Key: "hostfile", Path: "hostfile", Mode: ptr.To[int32](0o444)}}}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "mpi-hostfile", MountPath: "/etc/mpi"})
			c.Env = append(c.Env,
				corev1.EnvVar{Name: "OMPI_MCA_orte_default_hostfile", Value: "/etc/mpi/hostfile"},
				corev1.EnvVar{Name: "OMPI_MCA_orte_keep_fqdn_hostnames", Value: "true"},
				corev1.EnvVar{Name: "OMPI_MCA_orte_set_default_slots", Value: fmt.Sprint(slots)},
				corev1.EnvVar{Name: "OMPI_MCA_plm_rsh_args", Value: "-o ConnectionAttempts=10"})
		}
		for i := range count {
			job := fmt.Sprintf("%s-%s-0", j.name, rj.Name)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-x%d", job, i, i), Namespace: "ns",
				Labels: rj.Template.Spec.Template.Labels}, Spec: *spec.DeepCopy()}
			pod.Spec.Hostname, pod.Spec.Subdomain = fmt.Sprintf("%s-%d", job, i), j.name
			if rj.Name == jobs.TrainerNodeJob {
				j.workers = append(j.workers, pod)
			} else {
				j.launcher = pod
			}
		}
	}
	j.image = nccltestsImage(t, progs, dir)
	return j
}

// nccltestsImage maps ain's nccl-tests image onto this machine: Debian's sshd, ssh and Open
// MPI; all_reduce_perf as podrun.AllreduceStandIn built with mpicc, bind-mounted at the image's path
// (the launcher's command is left as rendered); an sshd host key (the image's, which Debian's
// package makes at install: here one made for the test, so that no host key of this machine is
// used); and the ssh client and server settings of the mpi-operator's base image
// (build/base/Dockerfile: StrictHostKeyChecking no, UserKnownHostsFile /dev/null,
// StrictModes no), which the coreweave image's are assumed to match: without them ssh stops at
// the unknown host key and sshd refuses /root/.ssh, a Secret volume whose root is 1777.
func nccltestsImage(t *testing.T, progs map[string]string, dir string) podrun.Image {
	t.Helper()
	src := filepath.Join(dir, "allreduce.c")
	if err := os.WriteFile(src, []byte(podrun.AllreduceStandIn), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "all_reduce_perf")
	run(t, progs["mpicc"], "-O1", "-o", bin, src)
	hostKey := filepath.Join(dir, "ssh_host_ed25519_key")
	run(t, progs["ssh-keygen"], "-q", "-t", "ed25519", "-N", "", "-f", hostKey)
	sshConf := writeFile(t, dir, "ssh_config", "Host *\n    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n")
	sshdConf := writeFile(t, dir, "sshd_config", "StrictModes no\nHostKey /etc/ssh/ssh_host_ed25519_key\n")
	return podrun.Image{
		Files: map[string]string{
			ncclTestsBinary:                    bin,
			"/etc/ssh/ssh_host_ed25519_key":    hostKey,
			"/etc/ssh/ssh_config.d/image.conf": sshConf,
			// Debian's sshd_config includes sshd_config.d/*.conf first, so these settings win.
			"/etc/ssh/sshd_config.d/image.conf": sshdConf,
		},
		Dirs: []string{"/run/sshd"}, // the privilege separation folder images make (RUN mkdir -p /var/run/sshd)
	}
}

func mpiPrograms(t *testing.T) map[string]string {
	return needRoot(t, "sshd", "ssh", "ssh-keygen", "mpirun", "mpicc", "orted")
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cluster runs the job's pods on c: workers first, each Ready, then the launcher (JobSet's
// dependsOn: node Ready). launcherCmd, when set, replaces the launcher's command.
func (j *mpiJob) run(t *testing.T, c *cluster, launcherCmd []string) (*podrun.Pod, []*podrun.Pod) {
	t.Helper()
	pods := append(append([]*corev1.Pod{}, j.workers...), j.launcher)
	ips := map[string]string{}
	var hosts []podrun.HostEntry
	for _, p := range pods {
		ips[p.Name] = c.ip().String()
		hosts = append(hosts, podrun.PodHostEntry(p, ips[p.Name]))
	}
	spec := func(p *corev1.Pod) podrun.Spec {
		return podrun.Spec{Pod: p, Secrets: map[string]*corev1.Secret{j.secret.Name: j.secret},
			ConfigMaps: map[string]*corev1.ConfigMap{j.hostfile.Name: j.hostfile},
			IP:         parseIP(ips[p.Name]), Network: c.net, Hosts: hosts, Image: j.image}
	}
	var workers []*podrun.Pod
	for _, w := range j.workers {
		workers = append(workers, start(t, spec(w)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, w := range workers {
		if !w.WaitReady(ctx) {
			t.Fatalf("worker %s not Ready; log:\n%s", w.Name, w.Log())
		}
	}
	l := j.launcher.DeepCopy()
	if launcherCmd != nil {
		l.Spec.Containers[0].Command = launcherCmd
	}
	return start(t, spec(l)), workers
}

// The allreduce TrainJob, as ain renders it and the Trainer mounts it, runs for real: sshd in
// two worker pods, mpirun in the launcher pod reaching them over ssh with ain's 0600 copy of the
// key, orted and the ranks doing an MPI_Allreduce across the pods' namespaces. Without ain's
// copy (plain mpirun, as before the fix), OpenSSH refuses the 0640 key and the job fails.
func TestTrainJobAllreduceRunsForReal(t *testing.T) {
	c := newCluster(t)
	j := newMPIJob(t, renderTrainJob(t, "nodes=2"), 2)
	cmd := j.launcher.Spec.Containers[0].Command
	if len(cmd) < 4 || cmd[0] != "/bin/sh" || cmd[3] != "mpirun" || cmd[len(cmd)-11] != ncclTestsBinary {
		t.Fatalf("rendered launcher command %q: want ain's key-copy wrapper around mpirun ... %s", cmd, ncclTestsBinary)
	}

	t.Run("rendered", func(t *testing.T) {
		l, _ := j.run(t, c, nil)
		r := waitDone(t, l, 30*time.Second)
		log := l.Log()
		if r.ExitCode != 0 {
			t.Fatalf("launcher %+v; log:\n%s", r, log)
		}
		t.Logf("launcher log:\n%s", log)
		for i, w := range j.workers {
			want := fmt.Sprintf("podrun-allreduce rank %d of 2 on %s: sum 3", i, w.Spec.Hostname)
			if !strings.Contains(log, want) {
				t.Errorf("log lacks %q:\n%s", want, log)
			}
		}
	})
	t.Run("without ain's key copy", func(t *testing.T) {
		// mpirun as ain rendered it before the fix: no wrapper, no -i on ssh's command line
		// (the Trainer's OMPI_MCA_plm_rsh_args applies), tree spawn on.
		plain := dropMCA(cmd[3:], "plm_rsh_args", "plm_rsh_no_tree_spawn")
		l, _ := j.run(t, c, plain)
		r := waitDone(t, l, 30*time.Second)
		log := l.Log()
		if r.ExitCode == 0 {
			t.Fatalf("plain mpirun with the Trainer's 0640 key succeeded; log:\n%s", log)
		}
		t.Logf("launcher %+v, log:\n%s", r, log)
		for _, want := range []string{"UNPROTECTED PRIVATE KEY FILE", "Permission denied"} {
			if !strings.Contains(log, want) {
				t.Errorf("log lacks OpenSSH's %q:\n%s", want, log)
			}
		}
	})
}

// dropMCA is cmd without its "-mca NAME VALUE" options for names.
func dropMCA(cmd []string, names ...string) []string {
	var out []string
	for i := 0; i < len(cmd); i++ {
		if cmd[i] == "-mca" && i+2 < len(cmd) && slices.Contains(names, cmd[i+1]) {
			i += 2
			continue
		}
		out = append(out, cmd[i])
	}
	return out
}

func parseIP(s string) net.IP { return net.ParseIP(s).To4() }

// A worker whose readiness probe is on port 22 while the image's sshd listens on 2222 (the
// mpi-operator's images: build/base/Dockerfile sets Port 2222) never becomes Ready, so JobSet
// never starts the launcher; with the recipe's sshPort at 2222 the probe passes.
func TestWorkerReadinessFollowsSSHPort(t *testing.T) {
	c := newCluster(t)
	for _, tc := range []struct {
		sets  []string
		ready bool
	}{{nil, false}, {[]string{"sshPort=2222"}, true}} {
		t.Run(fmt.Sprintf("sets %v", tc.sets), func(t *testing.T) {
			j := newMPIJob(t, renderTrainJob(t, append([]string{"nodes=1"}, tc.sets...)...), 1)
			j.image.Files["/etc/ssh/sshd_config.d/port.conf"] = writeFile(t, t.TempDir(), "port.conf", "Port 2222\n")
			w := j.workers[0]
			ip := c.ip()
			p := start(t, podrun.Spec{Pod: w, Secrets: map[string]*corev1.Secret{j.secret.Name: j.secret}, IP: ip, Network: c.net, Image: j.image})
			port := w.Spec.Containers[0].ReadinessProbe.TCPSocket.Port.IntValue()
			if want := map[bool]int{false: 22, true: 2222}[tc.ready]; port != want {
				t.Fatalf("rendered probe port %d, want %d", port, want)
			}
			// Three probe periods (the rendered periodSeconds is 2).
			ctx, cancel := context.WithTimeout(context.Background(), 7*time.Second)
			defer cancel()
			ready := p.WaitReady(ctx)
			if ready != tc.ready {
				t.Fatalf("probe on port %d: Ready %v, want %v; log:\n%s", port, ready, tc.ready, p.Log())
			}
			// sshd itself is up on 2222 either way: the probe's port is what differs.
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), "2222"), time.Second)
			if err != nil {
				t.Fatalf("sshd not listening on 2222: %v; log:\n%s", err, p.Log())
			}
			conn.Close()
		})
	}
}

// With "-mca oob_tcp_if_include net1" (what ain derived from a profile's socketIfname before
// the fix) mpirun on the launcher, which has only eth0 (the Multus network is the ranks'),
// aborts with Open MPI's own message (orte/mca/oob/tcp/oob_tcp_component.c).
func TestLauncherOOBInterfaceMissing(t *testing.T) {
	c := newCluster(t)
	j := newMPIJob(t, renderTrainJob(t, "nodes=1"), 1)
	cmd := j.launcher.Spec.Containers[0].Command
	bad := append(append(append([]string{}, cmd[:4]...), "-mca", "oob_tcp_if_include", "net1"), dropMCA(cmd[4:], "oob_tcp_if_exclude")...)
	l, _ := j.run(t, c, bad)
	r := waitDone(t, l, 30*time.Second)
	if r.ExitCode == 0 {
		t.Fatalf("mpirun with an interface the launcher lacks succeeded; log:\n%s", l.Log())
	}
	want := "None of the TCP networks specified to be included for out-of-band communications"
	if !strings.Contains(l.Log(), want) {
		t.Errorf("launcher log lacks Open MPI's %q:\n%s", want, l.Log())
	}
}
