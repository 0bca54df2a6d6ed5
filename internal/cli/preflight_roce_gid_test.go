package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestPreflightRoCEGIDByAddress: on roce-ports the probe pods join two networks, the sandbox's
// Multus stand-in reports their addresses (10.10.N.11, 10.10.N.12) in network-status, and the
// ports' GID tables hold them at index 3. preflight chooses the GID by those addresses and says
// so; a profile fixing gidIndex 2 gets a WARN per node naming both 3 and 2, one fixing 3 a PASS.
func TestPreflightRoCEGIDByAddress(t *testing.T) {
	sb := sandboxtest.Get(t)
	sb.UseScenario(t, "roce-ports")
	relabel(t, sb, "ain.dev/link-layer", "ethernet")
	ns := sb.Namespace(t)
	run := func(t *testing.T, gidIndex string) []preflight.Check {
		p := filepath.Join(t.TempDir(), "profile.yaml")
		y := "apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nmetadata: {name: roce}\nspec:\n  fabric: roce\n  lineRate: 200Gb\n  gidIndex: \"" + gidIndex + "\"\n  networks: [roce-rail0, roce-rail1]\n"
		if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stdout, stderr := runBenchCLI(t, "preflight", "-o", "json", "--profile", p, "--kubeconfig", sb.Kubeconfig, "-n", ns)
		var res preflight.Result
		if err := json.NewDecoder(strings.NewReader(stdout)).Decode(&res); err != nil {
			t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
		}
		var ib []preflight.Check
		for _, c := range res.Checks {
			if c.Name == preflight.CheckIBPorts {
				ib = append(ib, c)
			}
		}
		return ib
	}
	t.Run("fixed index differs", func(t *testing.T) {
		ib := run(t, "2")
		warned := map[string]bool{}
		for _, c := range ib {
			n := strings.TrimPrefix(c.Target, "gpu-node-")
			rule := fmt.Sprintf("GID chosen by the probe pod's address (10.10.%s.11, 10.10.%s.12, Multus network-status): mlx5_0:1 index 3 (10.10.%s.11 on net1); mlx5_1:1 index 3 (10.10.%s.12 on net2)", n, n, n, n)
			if c.Status == preflight.Warn && strings.Contains(c.Message, "the pod's RoCE v2 GID index here is 3 (by the pod's address), the profile's gidIndex (NCCL_IB_GID_INDEX) is 2") &&
				len(c.Evidence) > 0 && c.Evidence[0] == rule {
				warned[c.Target] = true
			}
		}
		if len(warned) != 3 {
			t.Errorf("%d node(s) warned with the address rule, want 3: %+v", len(warned), ib)
		}
	})
	t.Run("fixed index fits", func(t *testing.T) {
		ib := run(t, "3")
		if len(ib) != 1 || ib[0].Status != preflight.Pass || !strings.Contains(ib[0].Message, "RoCE v2 GID index 3 on 3 node(s)") ||
			!strings.Contains(strings.Join(ib[0].Evidence, "|"), "gpu-node-2 (GID chosen by the probe pod's address (10.10.2.11, 10.10.2.12") {
			t.Errorf("ib-ports: %+v", ib)
		}
	})
	noProbePods(t, sb)
}
