package recipe

import (
	"errors"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/strict"
)

// FuzzSet feeds arbitrary --set arguments to a built-in recipe. Whatever the argument, Parse
// returns (no panic, no runaway), and a problem that does not come from the recipe file is
// blamed on that exact --set flag; an accepted recipe stays within the bounds validation sets.
func FuzzSet(f *testing.F) {
	for _, s := range []string{"nodes=2", "spec.nodes=0", "nccl.env.NCCL_ALGO=Ring", "image=Bad Image", "replicas=1000000",
		"a[0].b=1", "nodes=[1,2]", "nodes={k: v}", "=x", "x", "gpusPerNode=", "metadata.name=" + strings.Repeat("a", 60),
		"spec.command[3]=x", "nccl.env=5", "resources.memory=64Gi", "nodes=0x10", "spec..x=1", "x[-1]=2", "x[99999999999]=1"} {
		f.Add(s)
	}
	source, data, err := Resolve("qlora")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		r, err := Parse(source, data, []string{arg})
		var ps strict.Problems
		if errors.As(err, &ps) {
			for _, p := range ps {
				if p.Source != source && p.Source != "--set "+arg {
					t.Fatalf("--set %q: problem blamed on %q: %v", arg, p.Source, p)
				}
			}
			return
		}
		if err != nil {
			return
		}
		if w := r.Workload(); w != nil && (w.Nodes < 1 || w.Nodes > MaxNodes) {
			t.Fatalf("--set %q accepted nodes=%d", arg, w.Nodes)
		}
	})
}
