package jobs

import (
	"errors"
	"testing"

	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// With no cluster configured, render says why and gets the default; forced asks no cluster.
func TestChooseForRenderWithoutCluster(t *testing.T) {
	r, err := recipe.Load("allreduce", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, why, err := ChooseForRender(r, APIAuto, func() (*kube.Clients, error) { return nil, errors.New("KUBECONFIG x: no such file") }, 0)
	if err != nil || b.API() != APIMPIOperator || why != "no cluster asked: KUBECONFIG x: no such file" {
		t.Fatalf("%v %q %v", b, why, err)
	}
	b, why, err = ChooseForRender(r, APITrainingOperator, func() (*kube.Clients, error) { t.Fatal("asked a cluster"); return nil, nil }, 0)
	if err != nil || b.API() != APITrainingOperator || why != "forced" {
		t.Fatalf("%v %q %v", b, why, err)
	}
}
