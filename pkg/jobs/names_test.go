package jobs

import (
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/profile"
)

// A digit-first name is refused where a controller derives a DNS-1035 label
// from it (mpi-operator worker hostnames, PyTorchJob Services, TrainJob), and accepted by the
// v1 MPIJob, which derives none.
func TestDigitFirstJobName(t *testing.T) {
	cases := []struct {
		api    API
		recipe string
		want   string // "" when accepted
	}{
		{APIMPIOperator, "allreduce", `a kubeflow.org/v2beta1 MPIJob's name must start with a lower-case letter: the mpi-operator names the last worker pod and its hostname "3nodes-worker-2"`},
		{APITrainingOperator, "qlora", `"3nodes-master-0", which must be a DNS-1035 label`},
		{APITrainer, "allreduce", "start with a lower-case letter"},
		{APITrainingOperator, "allreduce", ""},
	}
	for _, c := range cases {
		be, err := Choose(loadRecipe(t, c.recipe), Served{}, c.api)
		if err != nil {
			t.Fatal(err)
		}
		_, err = be.Build(loadRecipe(t, c.recipe), profile.Default(), Options{Name: "3nodes"})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s named 3nodes: %v", c.api, c.recipe, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %s named 3nodes: %v, want an error saying %s", c.api, c.recipe, err, c.want)
		}
	}
}

// The longest name each API takes, from the names its controllers derive. On
// a TrainJob the JobSet's longest pod is <name>-launcher-0-0-abcde (MPI: 19 more characters)
// or <name>-node-0-<nodes-1>-abcde (torch), which JobSet's webhook wants within 63.
func TestJobNameLengthPerAPI(t *testing.T) {
	name := func(n int) string { return "a" + strings.Repeat("b", n-1) }
	cases := []struct {
		api       API
		recipe    string
		sets      []string
		max       int
		refuseMsg string
	}{
		{APITrainer, "allreduce", nil, 44, `"` + name(45) + `-launcher-0-0-abcde", 64 characters`},
		{APITrainer, "qlora", nil, 48, ""},
		{APITrainer, "qlora", []string{"nodes=11"}, 47, `-node-0-10-abcde", 64 characters`},
		{APIMPIOperator, "allreduce", nil, 48, ""},
		{APITrainingOperator, "qlora", nil, 48, ""},
	}
	for _, c := range cases {
		r := loadRecipe(t, c.recipe, c.sets...)
		if got := MaxJobNameLen(c.api, r); got != c.max {
			t.Errorf("%s %s %v: MaxJobNameLen %d, want %d", c.api, c.recipe, c.sets, got, c.max)
		}
		be, err := Choose(r, Served{}, c.api)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := be.Build(r, profile.Default(), Options{Name: name(c.max)}); err != nil {
			t.Errorf("%s %s %v: a %d-character name: %v", c.api, c.recipe, c.sets, c.max, err)
		}
		if c.refuseMsg == "" {
			continue
		}
		_, err = be.Build(r, profile.Default(), Options{Name: name(c.max + 1)})
		if err == nil || !strings.Contains(err.Error(), c.refuseMsg) || !strings.Contains(err.Error(), "JobSet") {
			t.Errorf("%s %s %v: a %d-character name: %v, want a refusal saying %s", c.api, c.recipe, c.sets, c.max+1, err, c.refuseMsg)
		}
	}
}
