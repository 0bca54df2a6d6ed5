package jobs

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/testenv"
)

// launcherNetns is a launcher pod's network as mpirun sees it: loopback and the pod network's
// eth0, none of the ranks' Multus interfaces; then it runs "$0" "$@" there.
const launcherNetns = `set -e; ip link set lo up; ip link add eth0 type veth peer name peer0; ` +
	`ip addr add 10.244.0.5/24 dev eth0; ip link set eth0 up; ip link set peer0 up; exec "$0" "$@"`

// Real Open MPI in a network namespace shaped like the launcher pod: the interface options ain
// renders (with the profile's socketIfname net1, what `ain profile init` suggests) start mpirun,
// while the include list ain used to derive from it makes Open MPI abort with its own message.
func TestMPIRunInterfacesOpenMPI(t *testing.T) {
	progs := testenv.Programs(t, "mpirun", "unshare", "ip")
	if os.Geteuid() != 0 {
		t.Skip("a network namespace with its own interfaces needs root (CI runs as root)")
	}
	var mca []string
	cmd := mpiRunWithIfname(t, APIMPIOperator, "net1")
	for i := 0; i+2 < len(cmd); i++ {
		if cmd[i] == "-mca" {
			mca = append(mca, cmd[i:i+3]...)
		}
	}
	run := func(mca []string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		args := append([]string{"-n", "sh", "-c", launcherNetns, progs["mpirun"], "--allow-run-as-root", "-np", "1"}, mca...)
		out, err := exec.CommandContext(ctx, progs["unshare"], append(args, "true")...).CombinedOutput()
		return string(out), err
	}
	if out, err := run(mca); err != nil {
		t.Fatalf("mpirun with ain's options %q in the launcher's network: %v\n%s", mca, err, out)
	}
	old := []string{"-mca", "btl", "self,tcp", "-mca", "btl_tcp_if_include", "net1", "-mca", "oob_tcp_if_include", "net1"}
	out, err := run(old)
	if err == nil || !strings.Contains(out, "None of the TCP networks specified to be included for out-of-band communications") {
		t.Errorf("mpirun with an include list of net1: %v, output %q; want Open MPI's abort", err, out)
	}
}

// An MCA parameter the recipe's mpirunArgs sets is left to it: Open MPI aborts on one given
// twice, and refuses an include list beside an exclude list; on a TrainJob the ssh parameters
// ain needs for the key copy cannot be overridden.
func TestMPIRunUserMCA(t *testing.T) {
	b := buildOn(t, APIMPIOperator, loadRecipe(t, "allreduce", `mpirunArgs=["-mca","btl_tcp_if_include","eth0","--mca","pml","ob1"]`), nil)
	cmd := launcherOf(t, b)
	count := func(name string) int {
		n := 0
		for i := 0; i+1 < len(cmd); i++ {
			if (cmd[i] == "-mca" || cmd[i] == "--mca") && cmd[i+1] == name {
				n++
			}
		}
		return n
	}
	if count("btl_tcp_if_exclude") != 0 || count("btl_tcp_if_include") != 1 || count("pml") != 1 || count("oob_tcp_if_exclude") != 1 {
		t.Errorf("mpirun %s", strings.Join(cmd, " "))
	}
	r := loadRecipe(t, "allreduce", `mpirunArgs=["-mca","plm_rsh_args","-p 2222"]`)
	be, err := Choose(r, Served{}, APITrainer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := be.Build(r, profileIB(t), Options{}); err == nil || !strings.Contains(err.Error(), "spec.mpirunArgs: -mca plm_rsh_args is set by ain on a TrainJob") {
		t.Errorf("TrainJob with the recipe's plm_rsh_args: %v", err)
	}
}

// The QLoRA command, run by a real sh with stand-ins for python, pip and torchrun: without
// bitsandbytes and without a route to PyPI it ends at once, naming the fix; with pip working it
// installs and execs torchrun with the recipe's arguments.
func TestQLoRACommandAirGapped(t *testing.T) {
	progs := testenv.Programs(t, "sh")
	cmd := loadRecipe(t, "qlora").Training.Command
	if len(cmd) < 4 || cmd[0] != "sh" || cmd[1] != "-c" {
		t.Fatalf("command %q", cmd)
	}
	bin := t.TempDir()
	stub := func(name, body string) {
		if err := os.WriteFile(bin+"/"+name, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stub("python", "exit 1") // import bitsandbytes fails
	stub("torchrun", `echo "torchrun $*"`)
	run := func() (string, error) {
		c := exec.Command(progs["sh"], append([]string{"-c", cmd[2]}, cmd[3:]...)...)
		c.Env = []string{"PATH=" + bin}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	stub("pip", "echo 'ERROR: Could not find a version that satisfies the requirement bitsandbytes==0.49.2' >&2; exit 1")
	out, err := run()
	if err == nil || !strings.Contains(out, "could not install bitsandbytes (no route to PyPI from the pod?)") || strings.Contains(out, "torchrun -m") {
		t.Errorf("air-gapped: %v\n%s", err, out)
	}
	stub("pip", "exit 0")
	out, err = run()
	if err != nil || !strings.Contains(out, "torchrun -m trl.scripts.sft --model_name_or_path=") {
		t.Errorf("with pip: %v\n%s", err, out)
	}
}
