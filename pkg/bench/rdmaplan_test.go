package bench

import (
	"errors"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/profile"
)

// PlanRDMA turns the flags and the profile into the run's command and nodes, and names the
// flag of every bad value.
func TestPlanRDMA(t *testing.T) {
	ib := profile.Default()
	roce := profile.Default()
	roce.Spec.Fabric, roce.Spec.GIDIndex, roce.Spec.HCAs = profile.FabricRoCE, "3", []string{"=mlx5_2:1"}
	socket := profile.Default()
	socket.Spec.Fabric = profile.FabricSocket
	base := RDMAPlanInput{Test: "ib_write_bw", QPs: 1, GIDIndex: -1}

	o, notes, err := PlanRDMA(roce, RDMAPlanInput{Test: "ib_write_bw", QPs: 4, GIDIndex: -1, Size: "1M", GPU: true, Nodes: " a , b "})
	if err != nil {
		t.Fatal(err)
	}
	c := o.Command
	if o.Profile != roce || o.Server != "a" || o.Client != "b" || !o.GPU || c.CUDA == nil || *c.CUDA != 0 || c.Size != 1<<20 || c.QPs != 4 ||
		c.Device != "mlx5_2" || c.Port != 1 || c.GIDIndex == nil || *c.GIDIndex != 3 || !strings.HasPrefix(o.GIDSource, "the profile's gidIndex 3") || notes != nil {
		t.Fatalf("options %+v command %+v notes %q", o, c, notes)
	}
	// On InfiniBand a given GID index is used, with a note; on RoCE "auto" leaves it to the pods.
	in := base
	in.GIDIndex = 0
	if o, notes, err := PlanRDMA(ib, in); err != nil || o.Command.GIDIndex == nil || len(notes) != 1 || !strings.Contains(notes[0], "GRH") {
		t.Errorf("IB --gid-index 0: %+v %q %v", o.Command, notes, err)
	}
	roce.Spec.GIDIndex = "auto"
	if o, _, err := PlanRDMA(roce, base); err != nil || o.Command.GIDIndex != nil || o.GIDSource != "" {
		t.Errorf("RoCE gidIndex auto: %+v %q %v", o.Command, o.GIDSource, err)
	}

	var nr *NotRDMAError
	if _, _, err := PlanRDMA(socket, base); !errors.As(err, &nr) || nr.Fabric != "socket" {
		t.Errorf("socket: %v", err)
	}
	for _, c := range []struct {
		edit func(*RDMAPlanInput)
		flag string
		msg  string
	}{
		{func(i *RDMAPlanInput) { i.Size = "0" }, "--size", `--size: "0": a size must be at least 1 byte`},
		{func(i *RDMAPlanInput) { i.Device = "mlx5_0:x" }, "--device", `--device "mlx5_0:x": DEVICE or DEVICE:PORT`},
		{func(i *RDMAPlanInput) { i.Test = "ib_write_lat"; i.QPs = 4 }, "--qps", "--qps: "},
		{func(i *RDMAPlanInput) { i.Test = "ib_nope" }, "--test", "--test: "},
		{func(i *RDMAPlanInput) { i.Nodes = "a" }, "--nodes", `--nodes "a": two node names, SERVER,CLIENT`},
		{func(i *RDMAPlanInput) { i.Nodes = "a,a" }, "--nodes", `--nodes "a,a": two different nodes`},
	} {
		in := base
		c.edit(&in)
		_, _, err := PlanRDMA(ib, in)
		var fe *FlagError
		if !errors.As(err, &fe) || fe.Flag != c.flag || !strings.HasPrefix(err.Error(), c.msg) {
			t.Errorf("%+v: %v, want %s %q", in, err, c.flag, c.msg)
		}
	}
}
