package jobs

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/internal/testenv"
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
