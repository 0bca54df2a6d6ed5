package train

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

func TestRequiredBench(t *testing.T) {
	r, err := recipe.Load("allreduce", []string{"nodes=2"})
	if err != nil {
		t.Fatal(err)
	}
	p := profile.Default()
	if v, err := RequiredBench(BenchRequirement{}, r, p, time.Now()); v != nil || err != nil {
		t.Fatalf("nothing asked for a bench, got %v %v", v, err)
	}
	empty := t.TempDir()
	cmd := func(c next.Command) string { return "ain " + string(c) }
	cases := []struct {
		req       BenchRequirement
		profile   *profile.RequireBench
		from, dir string
	}{
		{BenchRequirement{Dir: empty}, nil, "--require-bench", empty},
		{BenchRequirement{}, &profile.RequireBench{Results: empty}, "the profile's spec.requireBench", empty},
		// The flag wins over the profile.
		{BenchRequirement{Dir: empty}, &profile.RequireBench{Results: "elsewhere"}, "--require-bench", empty},
	}
	for _, c := range cases {
		p.Spec.RequireBench = c.profile
		_, err := RequiredBench(c.req, r, p, time.Now())
		var be *BenchRequiredError
		var ge *bench.GateError
		if !errors.As(err, &be) || !errors.As(err, &ge) || be.From != c.from || be.Dir != c.dir || be.Nodes != 2 {
			t.Fatalf("%+v: got %#v", c, err)
		}
		want := "validate the nodes first: ain bench allreduce --nodes 2 --gpus-per-node " + strconv.Itoa(be.GPUsPerNode) + " --fabric " + p.Spec.Fabric +
			" --out " + c.dir + "/NAME (a new NAME each run), or drop " + c.from
		if got := be.Hint(cmd); got != want {
			t.Errorf("hint\n got %s\nwant %s", got, want)
		}
	}
}
