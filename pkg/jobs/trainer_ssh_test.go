package jobs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mpiv2beta1 "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/testenv"
)

// trainerLauncher renders the allreduce recipe as a TrainJob and returns its launcher container's
// command.
func trainerLauncher(t *testing.T) []string {
	t.Helper()
	rt := renderWith(t, APITrainer, "allreduce", profile.FabricIB).Objects[0].(*trainer.TrainingRuntime)
	for _, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
		if rj.Name == TrainerLauncherJob {
			return rj.Template.Spec.Template.Spec.Containers[0].Command
		}
	}
	t.Fatal("no launcher in the MPI runtime")
	return nil
}

// mcaValue is the value of mpirun's "-mca NAME VALUE" in cmd.
func mcaValue(cmd []string, name string) (string, bool) {
	for i := 0; i+2 < len(cmd); i++ {
		if cmd[i] == "-mca" && cmd[i+1] == name {
			return cmd[i+2], true
		}
	}
	return "", false
}

// The TrainJob MPI launcher runs mpirun on a 0600 copy of the Trainer's 0640 key, named on
// mpirun's command line (the environment's OMPI_MCA_plm_rsh_args is the Trainer's), with tree
// spawn off; the mpi-operator's MPIJob, whose controller mounts the key 0600 for /root/.ssh,
// keeps plain mpirun.
func TestTrainerLauncherSSHKey(t *testing.T) {
	cmd := trainerLauncher(t)
	if len(cmd) < 4 || cmd[0] != "/bin/sh" || cmd[1] != "-c" || cmd[3] != "mpirun" {
		t.Fatalf("launcher command %q: want /bin/sh -c SCRIPT mpirun ...", cmd)
	}
	if !strings.Contains(cmd[2], "install -m 0600 /root/.ssh/id_rsa /tmp/ain-ssh/id_rsa") || !strings.HasSuffix(cmd[2], `exec "$0" "$@"`) {
		t.Errorf("key script %q", cmd[2])
	}
	if v, _ := mcaValue(cmd, "plm_rsh_args"); v != "-o ConnectionAttempts=10 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -i /tmp/ain-ssh/id_rsa" {
		t.Errorf("plm_rsh_args %q", v)
	}
	if v, _ := mcaValue(cmd, "plm_rsh_no_tree_spawn"); v != "1" {
		t.Errorf("plm_rsh_no_tree_spawn %q", v)
	}
	// The program still comes last, after mpirun's options.
	prog := MPIProgram(loadRecipe(t, "allreduce").MPI)
	if got := cmd[len(cmd)-len(prog):]; strings.Join(got, " ") != strings.Join(prog, " ") {
		t.Errorf("command ends with %q, want the program %q", got, prog)
	}
	v2 := renderWith(t, APIMPIOperator, "allreduce", profile.FabricIB)
	l := v2.Job().(*mpiv2beta1.MPIJob).Spec.MPIReplicaSpecs[mpiv2beta1.MPIReplicaTypeLauncher]
	if c := l.Template.Spec.Containers[0].Command; c[0] != "mpirun" {
		t.Errorf("v2beta1 launcher %q: the mpi-operator mounts /root/.ssh keys 0600, no copy needed", c[:3])
	}
}

// The same with the real programs: OpenSSH's ssh refuses the key as the Trainer mounts it (0640,
// owned by the user running ssh) and logs in to a real sshd with what the rendered launcher
// script makes of it, using the rendered plm_rsh_args.
func TestTrainerLauncherSSHKeyOpenSSH(t *testing.T) {
	progs := testenv.Programs(t, "sshd", "ssh", "ssh-keygen", "sh")
	if os.Geteuid() != 0 {
		t.Skip("sshd must run as root to log a user in (CI runs as root)")
	}
	cmd := trainerLauncher(t)
	dir := t.TempDir()
	mount := filepath.Join(dir, "mount") // the Secret volume at sshAuthMountPath
	if err := os.Mkdir(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(progs[name], args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	key := filepath.Join(mount, "id_rsa")
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ain-test", "-f", key)
	if err := os.Rename(key+".pub", filepath.Join(mount, "authorized_keys")); err != nil {
		t.Fatal(err)
	}
	// Modes as the Trainer sets them (MPISSHPrivateKeyFileMode, MPISSHPublicKeyFileMode).
	if err := os.Chmod(key, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(mount, "authorized_keys"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostKey := filepath.Join(dir, "host_key")
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey)
	// sshd refuses to start without its privilege separation folder (the package's unit makes it).
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	port := testenv.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	sshd := exec.CommandContext(ctx, progs["sshd"], "-D", "-e", "-f", "/dev/null",
		"-o", "ListenAddress=127.0.0.1", "-p", port, "-o", "HostKey="+hostKey,
		"-o", "AuthorizedKeysFile="+filepath.Join(mount, "authorized_keys"), "-o", "StrictModes=no",
		"-o", "PidFile=none", "-o", "UsePAM=no", "-o", "PermitRootLogin=prohibit-password")
	logFile, err := os.Create(filepath.Join(dir, "sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	sshd.Stdout, sshd.Stderr = logFile, logFile
	sshdLog := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel() // kills sshd by its pid
		_ = sshd.Wait()
	})
	testenv.WaitListening(t, "127.0.0.1:"+port, sshdLog)

	rsh, ok := mcaValue(cmd, "plm_rsh_args")
	if !ok {
		t.Fatal("no plm_rsh_args in the rendered launcher command")
	}
	ssh := func(rshArgs []string) (string, error) {
		args := append([]string{"-F", "/dev/null", "-p", port, "-o", "BatchMode=yes",
			"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"}, rshArgs...)
		out, err := exec.Command(progs["ssh"], append(args, "root@127.0.0.1", "echo", "ain-ok")...).CombinedOutput()
		return string(out), err
	}
	// The defect: the key as mounted, used by its owner.
	out, err := ssh([]string{"-i", key})
	if err == nil || !strings.Contains(out, "UNPROTECTED PRIVATE KEY FILE") {
		t.Fatalf("ssh with the 0640 key: err %v, output %q; want OpenSSH's refusal", err, out)
	}
	// The rendered script, with the container's paths moved into the test's folder, runs ssh as
	// it runs mpirun; ssh gets the rendered plm_rsh_args.
	copyDir := filepath.Join(dir, "copy")
	script := strings.NewReplacer(trainerSSHKey, key, launcherSSHKeyDir, copyDir).Replace(cmd[2])
	rshArgs := strings.Fields(strings.ReplaceAll(rsh, launcherSSHKey, filepath.Join(copyDir, "id_rsa")))
	sshArgs := append([]string{"-F", "/dev/null", "-p", port, "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"}, rshArgs...)
	c := exec.Command(progs["sh"], append([]string{"-c", script, progs["ssh"]}, append(sshArgs, "root@127.0.0.1", "echo", "ain-ok")...)...)
	o, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(o), "ain-ok") {
		t.Fatalf("launcher script + rendered plm_rsh_args: %v\n%s\nsshd:\n%s", err, o, sshdLog())
	}
	fi, err := os.Stat(filepath.Join(copyDir, "id_rsa"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the copy: %v, mode %v", err, fi.Mode())
	}
}
