package jobs

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/recipe"
)

// fakeServed is a discovery client serving the given "group/version resource" pairs (a narrow
// unit: which APIs are served is all Discover reads).
func fakeServed(pairs ...string) *fakediscovery.FakeDiscovery {
	byGV := map[string][]metav1.APIResource{}
	var order []string
	for _, p := range pairs {
		gv, res, _ := strings.Cut(p, " ")
		if _, ok := byGV[gv]; !ok {
			order = append(order, gv)
		}
		byGV[gv] = append(byGV[gv], metav1.APIResource{Name: res, Namespaced: true})
	}
	d := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	for _, gv := range order {
		d.Resources = append(d.Resources, &metav1.APIResourceList{GroupVersion: gv, APIResources: byGV[gv]})
	}
	return d
}

var (
	legacy  = []string{"kubeflow.org/v1 pytorchjobs", "kubeflow.org/v1 mpijobs", "kubeflow.org/v1 tfjobs"}
	current = []string{"kubeflow.org/v2beta1 mpijobs", "trainer.kubeflow.org/v1alpha1 trainjobs",
		"trainer.kubeflow.org/v1alpha1 trainingruntimes", "jobset.x-k8s.io/v1alpha2 jobsets"}
	trainerOnly = []string{"trainer.kubeflow.org/v1alpha1 trainjobs", "trainer.kubeflow.org/v1alpha1 trainingruntimes", "jobset.x-k8s.io/v1alpha2 jobsets"}
	// The training-operator for PyTorchJob beside the standalone mpi-operator owning mpijobs.
	mixed = []string{"kubeflow.org/v1 pytorchjobs", "kubeflow.org/v2beta1 mpijobs"}
)

// The choice table: per cluster, per recipe, with and without a forced API, the backend chosen
// or the error (and what it must and must not advise).
func TestChoose(t *testing.T) {
	torch := loadRecipe(t, "qlora")
	mpi := loadRecipe(t, "allreduce")
	type want struct {
		api, kind, version string
		err                string // substring of the error ("" = none)
		fix, notFix        string // substrings of the error's Fix
	}
	cases := []struct {
		name   string
		served []string
		none   bool // no cluster asked
		r      *recipe.Recipe
		forced API
		want   want
	}{
		{"no cluster torch", nil, true, torch, APIAuto, want{api: "trainer", kind: "TrainJob", version: "trainer.kubeflow.org/v1alpha1"}},
		{"no cluster mpi", nil, true, mpi, APIAuto, want{api: "mpi-operator", kind: "MPIJob", version: "kubeflow.org/v2beta1"}},
		{"no cluster forced legacy", nil, true, mpi, APITrainingOperator, want{api: "training-operator", kind: "MPIJob", version: "kubeflow.org/v1"}},
		{"current torch", current, false, torch, APIAuto, want{api: "trainer", kind: "TrainJob", version: "trainer.kubeflow.org/v1alpha1"}},
		{"current mpi", current, false, mpi, APIAuto, want{api: "mpi-operator", kind: "MPIJob", version: "kubeflow.org/v2beta1"}},
		{"current mpi forced trainer", current, false, mpi, APITrainer, want{api: "trainer", kind: "TrainJob", version: "trainer.kubeflow.org/v1alpha1"}},
		{"legacy torch", legacy, false, torch, APIAuto, want{api: "training-operator", kind: "PyTorchJob", version: "kubeflow.org/v1"}},
		{"legacy mpi", legacy, false, mpi, APIAuto, want{api: "training-operator", kind: "MPIJob", version: "kubeflow.org/v1"}},
		{"trainer only mpi", trainerOnly, false, mpi, APIAuto, want{api: "trainer", kind: "TrainJob", version: "trainer.kubeflow.org/v1alpha1"}},
		{"mixed torch", mixed, false, torch, APIAuto, want{api: "training-operator", kind: "PyTorchJob", version: "kubeflow.org/v1"}},
		{"mixed mpi", mixed, false, mpi, APIAuto, want{api: "mpi-operator", kind: "MPIJob", version: "kubeflow.org/v2beta1"}},
		{"torch on mpi-operator", current, false, torch, APIMPIOperator, want{err: "runs MPI recipes only"}},
		// The conflicting CRD: v1 forced where mpijobs is the mpi-operator's. The message says
		// why, and the fix is the served API, never installing the training-operator.
		{"v1 forced on v2beta1 cluster", mixed, false, mpi, APITrainingOperator,
			want{err: "one CRD owns mpijobs.kubeflow.org", fix: "--api mpi-operator", notFix: "install"}},
		{"v2beta1 forced on v1 cluster", legacy, false, mpi, APIMPIOperator,
			want{err: "served as v1", fix: "--api training-operator", notFix: "install"}},
		{"nothing served torch", []string{"batch/v1 jobs"}, false, torch, APIAuto,
			want{err: "serves no job API for torch recipes", fix: "Kubeflow Trainer v2"}},
		// Only the mpi-operator is installed: a torch recipe gets the Trainer as its fix, not the
		// training-operator (whose MPIJob CRD would replace the mpi-operator's).
		{"mpi-operator only torch", []string{"kubeflow.org/v2beta1 mpijobs"}, false, torch, APIAuto,
			want{err: "serves no job API for torch recipes", fix: "Trainer", notFix: "training-operator"}},
		{"nothing served mpi", []string{"batch/v1 jobs"}, false, mpi, APIAuto,
			want{err: "serves no job API for mpi recipes", fix: "mpi-operator"}},
		// Forcing the training-operator for torch where the mpi-operator owns mpijobs: never
		// "install the training-operator".
		{"v1 torch forced on mpi-operator cluster", []string{"kubeflow.org/v2beta1 mpijobs"}, false, torch, APITrainingOperator,
			want{err: "one CRD owns mpijobs.kubeflow.org", fix: "Trainer v2", notFix: "training-operator"}},
		{"trainer forced not served", legacy, false, torch, APITrainer,
			want{err: "does not serve", fix: "--api training-operator"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Served{}
			if !c.none {
				var err error
				if s, err = Discover(fakeServed(c.served...)); err != nil {
					t.Fatal(err)
				}
			}
			b, err := Choose(c.r, s, c.forced)
			if c.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.want.err) {
					t.Fatalf("error %v, want one containing %q", err, c.want.err)
				}
				var fix string
				var na *NoAPIError
				var ns *NotServedError
				switch {
				case errors.As(err, &na):
					fix = na.Fix()
				case errors.As(err, &ns):
					fix = ns.Fix()
				}
				if c.want.fix != "" && !strings.Contains(fix, c.want.fix) {
					t.Errorf("fix %q, want %q in it", fix, c.want.fix)
				}
				if c.want.notFix != "" && strings.Contains(fix, c.want.notFix) {
					t.Errorf("fix %q must not say %q", fix, c.want.notFix)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(b.API()) != c.want.api || b.Kind() != c.want.kind || b.GVR().GroupVersion().String() != c.want.version {
				t.Errorf("chose %s %s %s, want %s %s %s", b.API(), b.Kind(), b.GVR().GroupVersion(), c.want.api, c.want.kind, c.want.version)
			}
		})
	}
}

func TestParseAPI(t *testing.T) {
	for in, want := range map[string]API{"": APIAuto, "auto": APIAuto, "Trainer": APITrainer, "kubeflow.org/v2beta1": APIMPIOperator,
		"v1": APITrainingOperator, "training-operator": APITrainingOperator, "trainjob": APITrainer} {
		if got, err := ParseAPI(in); err != nil || got != want {
			t.Errorf("ParseAPI(%q) = %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := ParseAPI("kueue"); err == nil || !strings.Contains(err.Error(), "mpi-operator") {
		t.Errorf("bad API: %v", err)
	}
}
