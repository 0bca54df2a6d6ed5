package ibport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// TestRdmaLink checks each `rdma link` sample (sources in testdata/README.md) against the
// verdict ibstat would give for the same states: LINK_UP + INIT is no subnet manager, DISABLED
// is administratively down, POLLING is the cable or the peer; the link layer comes from the
// IB-only attributes.
func TestRdmaLink(t *testing.T) {
	tests := []struct {
		file  string
		ready bool
		ports []wantPort
	}{
		{"rdma-link-sriov-ib-mixed.txt", false, []wantPort{
			{"mlx5_0:1", "ACTIVE", "LinkUp", "InfiniBand", "", "", true, -1},
			{"mlx5_1:1", "DOWN", "Disabled", "InfiniBand", "", ReasonDisabled, false, -1},
			{"mlx5_2:1", "ACTIVE", "LinkUp", "InfiniBand", "", "", true, -1},
			{"mlx5_3:1", "DOWN", "Disabled", "InfiniBand", "", ReasonDisabled, false, -1},
			{"mlx5_4:1", "ACTIVE", "LinkUp", "Ethernet", "", "", true, -1},
			{"mlx5_5:1", "DOWN", "Disabled", "InfiniBand", "", ReasonDisabled, false, -1},
			{"mlx5_6:1", "ACTIVE", "LinkUp", "InfiniBand", "", "", true, -1},
			{"mlx5_7:1", "DOWN", "Disabled", "InfiniBand", "", ReasonDisabled, false, -1},
			{"mlx5_8:1", "ACTIVE", "LinkUp", "InfiniBand", "", "", true, -1},
		}},
		{"rdma-link-roce-active.txt", true, []wantPort{
			{"mlx5_0:1", "ACTIVE", "LinkUp", "Ethernet", "", "", true, -1},
			{"mlx5_1:1", "ACTIVE", "LinkUp", "Ethernet", "", "", true, -1},
		}},
		{"rdma-link-ib-polling-transient.txt", false, []wantPort{
			{"mlx5_7:1", "DOWN", "Polling", "InfiniBand", "", ReasonCableOrPeer, false, -1},
		}},
		{"rdma-link-init-no-sm.txt", false, []wantPort{
			{"mlx5_0:1", "INIT", "LinkUp", "InfiniBand", "", ReasonNoSM, false, -1},
			{"mlx5_1:1", "INIT", "LinkUp", "InfiniBand", "", ReasonNoSM, false, -1},
		}},
		{"rdma-link-old-iproute2.txt", false, []wantPort{
			{"mlx5_0:1", "INIT", "LinkUp", "InfiniBand", "", ReasonNoSM, false, -1},
			{"mlx5_1:1", "ACTIVE", "LinkUp", "Ethernet", "", "", true, -1},
		}},
		{"rdma-link-json.txt", false, []wantPort{
			{"mlx5_0:1", "INIT", "LinkUp", "InfiniBand", "", ReasonNoSM, false, -1},
			{"mlx5_1:1", "ACTIVE", "LinkUp", "Ethernet", "", "", true, -1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := golden.Parse(t, filepath.Join("testdata", tc.file), Parse)
			if r.Format != FormatRdmaLink {
				t.Errorf("format %q, want %q", r.Format, FormatRdmaLink)
			}
			if r.Ready != tc.ready {
				t.Errorf("ready %v, want %v", r.Ready, tc.ready)
			}
			checkPorts(t, r, tc.ports) // rdma link prints no rate: want none
			golden.JSON(t, strings.TrimSuffix(tc.file, ".txt"), r)
		})
	}
}

// TestRdmaLinkNotConfused: lines that only look like rdma link output are not ports, and an
// ibstat block after rdma link lines does not write into the last rdma port.
func TestRdmaLinkNotConfused(t *testing.T) {
	in := "link mlx5_0 state ACTIVE\nlink is up state ok\nlink mlx5_0/1 state INIT physical_state LINK_UP netdev ib0\n" +
		"CA 'mlx5_2'\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tLink layer: InfiniBand\n"
	r, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ports) != 2 || r.Ports[0].Device != "mlx5_0" || r.Ports[0].Reason != ReasonNoSM || r.Ports[1].Device != "mlx5_2" || !r.Ports[1].Ready {
		t.Fatalf("ports %+v", r.Ports)
	}
	if r.Format != FormatRdmaLink+"+"+FormatIbstat {
		t.Errorf("format %q", r.Format)
	}
	// Old iproute2's JSON names the port "dev/port" in ifname: the device is still mlx5_0.
	r, err = Parse(strings.NewReader(`[{"ifindex":1,"port":1,"ifname":"mlx5_0/1","state":"ACTIVE","physical_state":"LINK_UP","netdev":"ens1f0","netdev_index":4}]`))
	if err != nil || len(r.Ports) != 1 || r.Ports[0].Device != "mlx5_0" || r.Ports[0].Port != 1 || !r.Ports[0].Ready {
		t.Fatalf("old JSON: %v %+v", err, r)
	}
}

// FuzzRdmaLink: rdma link lines of any shape never panic, and every port they yield has a
// verdict consistent with its state.
func FuzzRdmaLink(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "rdma-link-*.txt"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("link a/-1 state\nlink /1 state x y\n[{\"ifname\":\"x\",\"port\":-3,\"state\":1}]\n")
	f.Fuzz(func(t *testing.T, in string) {
		r, err := Parse(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range r.Ports {
			if p.Ready != (p.Reason == "") || (p.Ready && p.State != "ACTIVE") {
				t.Fatalf("port %+v", p)
			}
		}
	})
}
