package jobs

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/client-go/discovery"

	"github.com/ain-hpc/ain/pkg/recipe"
)

// API names a workload API family by the controller that serves it, which is also what a user
// installs to get it:
//
//   - APITrainer: trainer.kubeflow.org/v1alpha1 TrainJob (Kubeflow Trainer v2, on JobSet), for
//     torch and MPI recipes, with a TrainingRuntime that ain renders for the run;
//   - APIMPIOperator: kubeflow.org/v2beta1 MPIJob (the standalone mpi-operator), MPI recipes only;
//   - APITrainingOperator: kubeflow.org/v1 PyTorchJob and MPIJob (the training-operator v1.8,
//     maintenance only: the legacy stack).
type API string

// The APIs ain runs jobs on, and APIAuto (pick from what the cluster serves).
const (
	APIAuto             API = "auto"
	APITrainer          API = "trainer"
	APIMPIOperator      API = "mpi-operator"
	APITrainingOperator API = "training-operator"
)

// APIs are the values --api and the profile's spec.jobAPI accept (besides auto).
var APIs = []API{APITrainer, APIMPIOperator, APITrainingOperator}

// apiAliases are the other spellings ParseAPI takes: the API versions themselves.
var apiAliases = map[string]API{
	"trainjob": APITrainer, "trainer.kubeflow.org/v1alpha1": APITrainer, "v1alpha1": APITrainer,
	"v2beta1": APIMPIOperator, "kubeflow.org/v2beta1": APIMPIOperator,
	"v1": APITrainingOperator, "kubeflow.org/v1": APITrainingOperator, "legacy": APITrainingOperator,
}

// ParseAPI reads an --api value (or the profile's spec.jobAPI); "" is APIAuto.
func ParseAPI(s string) (API, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "" || v == string(APIAuto) {
		return APIAuto, nil
	}
	for _, a := range APIs {
		if v == string(a) {
			return a, nil
		}
	}
	if a, ok := apiAliases[v]; ok {
		return a, nil
	}
	return "", fmt.Errorf("%q is not a job API: use auto, trainer (TrainJob), mpi-operator (kubeflow.org/v2beta1 MPIJob) or training-operator (kubeflow.org/v1)", s)
}

// Describe says what an API emits, for messages and docs.
func (a API) Describe() string {
	switch a {
	case APITrainer:
		return "trainer.kubeflow.org/v1alpha1 TrainJob + TrainingRuntime (Kubeflow Trainer v2)"
	case APIMPIOperator:
		return "kubeflow.org/v2beta1 MPIJob (mpi-operator)"
	case APITrainingOperator:
		return "kubeflow.org/v1 PyTorchJob/MPIJob (training-operator v1.8)"
	}
	return string(a)
}

// Install says how to get an API onto a cluster (namespace-level users ask their admin).
func (a API) Install() string {
	switch a {
	case APITrainer:
		return "Kubeflow Trainer v2 (v2.3.0, with JobSet): kubectl apply --server-side -k \"github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=v2.3.0\""
	case APIMPIOperator:
		return "the mpi-operator (v0.8.0): kubectl apply --server-side -f https://raw.githubusercontent.com/kubeflow/mpi-operator/v0.8.0/deploy/v2beta1/mpi-operator.yaml"
	case APITrainingOperator:
		return "the training-operator (v1.8.1): kubectl apply --server-side -k \"github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.8.1\""
	}
	return string(a)
}

// Workload is what a recipe needs from a job API: torch (a TrainingJob recipe) or MPI.
type Workload string

// Workloads of job recipes.
const (
	WorkloadTorch Workload = "torch"
	WorkloadMPI   Workload = "mpi"
)

// WorkloadOf returns the workload of a job recipe ("" for a serving recipe).
func WorkloadOf(r *recipe.Recipe) Workload {
	switch {
	case r.Training != nil:
		return WorkloadTorch
	case r.MPI != nil:
		return WorkloadMPI
	}
	return ""
}

// Preference is the order in which ain picks an API for a workload when the cluster serves
// several (and the first is the default with no cluster, `ain render`):
//
//   - MPI: the mpi-operator's v2beta1 MPIJob first. It is what nccl-tests on Kubernetes is run
//     as (AWS, Azure, CoreWeave, the Kubeflow MPI docs), one object with
//     launcherCreationPolicy: WaitForWorkersReady, and needs no JobSet. Then a TrainJob on an
//     MPI runtime (Trainer v2: its launcher waits for the workers through JobSet dependsOn),
//     then the legacy v1 MPIJob.
//   - torch: a TrainJob first (Trainer v2 replaces PyTorchJob; the community distribution
//     dropped the training-operator), then the legacy v1 PyTorchJob.
var Preference = map[Workload][]API{
	WorkloadMPI:   {APIMPIOperator, APITrainer, APITrainingOperator},
	WorkloadTorch: {APITrainer, APITrainingOperator},
}

// Served is what the API server serves of ain's job APIs (from discovery).
type Served struct {
	// PyTorchJobV1 and MPIJobV1: kubeflow.org/v1 pytorchjobs and mpijobs.
	PyTorchJobV1, MPIJobV1 bool
	// MPIJobV2: kubeflow.org/v2beta1 mpijobs.
	MPIJobV2 bool
	// TrainJob: trainer.kubeflow.org/v1alpha1 trainjobs and trainingruntimes.
	TrainJob bool
	// JobSet: jobset.x-k8s.io/v1alpha2 jobsets (what a TrainJob runs as).
	JobSet bool
	// Known is false when discovery was not asked (no cluster): choices use the defaults.
	Known bool
}

// Serves reports whether the cluster serves api for workload w.
func (s Served) Serves(api API, w Workload) bool {
	switch api {
	case APITrainer:
		return s.TrainJob
	case APIMPIOperator:
		return w == WorkloadMPI && s.MPIJobV2
	case APITrainingOperator:
		if w == WorkloadMPI {
			return s.MPIJobV1
		}
		return s.PyTorchJobV1
	}
	return false
}

// Evidence lists what was found, for messages ("kubeflow.org/v2beta1 mpijobs").
func (s Served) Evidence() []string {
	var out []string
	add := func(ok bool, what string) {
		if ok {
			out = append(out, what+" served")
		}
	}
	add(s.PyTorchJobV1, "pytorchjobs.kubeflow.org/v1")
	add(s.MPIJobV1, "mpijobs.kubeflow.org/v1")
	add(s.MPIJobV2, "mpijobs.kubeflow.org/v2beta1")
	add(s.TrainJob, "trainjobs.trainer.kubeflow.org/v1alpha1")
	add(s.JobSet, "jobsets.jobset.x-k8s.io/v1alpha2")
	if len(out) == 0 {
		out = append(out, "none of kubeflow.org/v1, kubeflow.org/v2beta1, trainer.kubeflow.org/v1alpha1 job resources served")
	}
	return out
}

// Discover asks the API server which of ain's job APIs it serves. A group version that fails
// to answer (an aggregated API down) does not hide the others: only when nothing at all could be
// read is the error returned.
func Discover(d discovery.DiscoveryInterface) (Served, error) {
	_, lists, err := d.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return Served{}, err
	}
	s := Served{Known: true}
	for _, l := range lists {
		for _, r := range l.APIResources {
			switch l.GroupVersion + " " + r.Name {
			case PyTorchJobGVR.GroupVersion().String() + " pytorchjobs":
				s.PyTorchJobV1 = true
			case MPIJobGVR.GroupVersion().String() + " mpijobs":
				s.MPIJobV1 = true
			case MPIJobV2GVR.GroupVersion().String() + " mpijobs":
				s.MPIJobV2 = true
			case TrainJobGVR.GroupVersion().String() + " trainjobs":
				s.TrainJob = true
			case JobSetGVR.GroupVersion().String() + " jobsets":
				s.JobSet = true
			}
		}
	}
	return s, nil
}

// NoAPIError says the cluster serves no API that runs the workload.
type NoAPIError struct {
	Workload Workload
	Served   Served
}

func (e *NoAPIError) Error() string {
	want := Preference[e.Workload]
	var names []string
	for _, a := range want {
		names = append(names, a.Describe())
	}
	return fmt.Sprintf("this cluster serves no job API for %s recipes (looked for %s; found: %s)",
		e.Workload, strings.Join(names, ", "), strings.Join(e.Served.Evidence(), ", "))
}

// Fix names what to install: the preferred API, never one that would replace a CRD the
// cluster already uses.
func (e *NoAPIError) Fix() string {
	for _, a := range Preference[e.Workload] {
		if e.Served.conflict(a, e.Workload) == "" {
			return "install " + a.Install()
		}
	}
	return "ask the cluster admin which job API is installed"
}

// NotServedError says a forced API (--api, the profile's spec.jobAPI) is not served; Conflict
// explains when serving it would take a CRD from the controller that owns it now.
type NotServedError struct {
	API      API
	Workload Workload
	Served   Served
	Conflict string
	// Alternatives are the APIs this cluster serves for the workload, best first.
	Alternatives []API
}

func (e *NotServedError) Error() string {
	msg := fmt.Sprintf("--api %s: this cluster does not serve %s for %s recipes (found: %s)",
		e.API, e.API.Describe(), e.Workload, strings.Join(e.Served.Evidence(), ", "))
	if e.Conflict != "" {
		msg += "; " + e.Conflict
	}
	return msg
}

// Fix says what to do instead.
func (e *NotServedError) Fix() string {
	if len(e.Alternatives) > 0 {
		return fmt.Sprintf("use --api %s (or --api auto), which this cluster serves", e.Alternatives[0])
	}
	if e.Conflict != "" {
		for _, a := range Preference[e.Workload] {
			if e.Served.conflict(a, e.Workload) == "" {
				return "leave mpijobs.kubeflow.org as it is; to run this recipe here, install " + a.Install() + ", then use --api auto"
			}
		}
		return "leave mpijobs.kubeflow.org as it is and ask the cluster admin which job API to use"
	}
	return "install " + e.API.Install()
}

// conflict explains why installing api would break the cluster ("" when it would not):
// mpijobs.kubeflow.org is one CRD, owned either by the training-operator (served as v1; its
// v1.8 manifests install it whatever recipe you run) or by the standalone mpi-operator (served as
// v2beta1); installing the other's manifests replaces it and the owner's MPI jobs lose their API.
func (s Served) conflict(api API, w Workload) string {
	switch {
	case api == APITrainingOperator && s.MPIJobV2 && !s.MPIJobV1:
		what := "a kubeflow.org/v1 MPIJob is rejected, and installing"
		if w != WorkloadMPI {
			what = "installing"
		}
		return "the cluster's mpijobs.kubeflow.org CRD is the mpi-operator's (served as v2beta1); " + what +
			" the training-operator (its manifests carry the v1 MPIJob CRD) would replace it and break the cluster's MPI jobs (one CRD owns mpijobs.kubeflow.org)"
	case api == APIMPIOperator && s.MPIJobV1 && !s.MPIJobV2:
		return "the cluster's mpijobs.kubeflow.org CRD is the training-operator's (served as v1); a kubeflow.org/v2beta1 MPIJob is rejected, and installing the mpi-operator's CRD would replace it and break the training-operator's MPIJobs (one CRD owns mpijobs.kubeflow.org)"
	}
	return ""
}

// Choose picks the backend that runs r: the forced API when one is given (it must be served,
// unless the cluster is unknown), else the first of Preference the cluster serves, else (no
// cluster) the first of Preference.
func Choose(r *recipe.Recipe, s Served, forced API) (Backend, error) {
	w := WorkloadOf(r)
	if w == "" {
		return nil, fmt.Errorf("recipe %s (kind %s) is not a job ain runs", r.Metadata.Name, r.Kind)
	}
	api, err := ChooseAPI(w, s, forced)
	if err != nil {
		return nil, err
	}
	return backendFor(api, w), nil
}

// ChooseAPI is Choose for a workload: the API its jobs are submitted as.
func ChooseAPI(w Workload, s Served, forced API) (API, error) {
	if forced != "" && forced != APIAuto {
		if forced == APIMPIOperator && w != WorkloadMPI {
			return "", &UnsupportedAPIError{API: forced, Workload: w}
		}
		if s.Known && !s.Serves(forced, w) {
			e := &NotServedError{API: forced, Workload: w, Served: s, Conflict: s.conflict(forced, w)}
			for _, a := range Preference[w] {
				if s.Serves(a, w) {
					e.Alternatives = append(e.Alternatives, a)
				}
			}
			return "", e
		}
		return forced, nil
	}
	for _, a := range Preference[w] {
		if !s.Known || s.Serves(a, w) {
			return a, nil
		}
	}
	return "", &NoAPIError{Workload: w, Served: s}
}

// UnsupportedAPIError says an API cannot run a workload at all (mpi-operator and torch).
type UnsupportedAPIError struct {
	API      API
	Workload Workload
}

func (e *UnsupportedAPIError) Error() string {
	var ok []string
	for _, a := range Preference[e.Workload] {
		ok = append(ok, string(a))
	}
	return fmt.Sprintf("--api %s runs MPI recipes only; a %s recipe runs on %s", e.API, e.Workload, strings.Join(ok, " or "))
}

// backendFor returns the backend of api for workload w.
func backendFor(api API, w Workload) Backend {
	switch {
	case api == APITrainer:
		return trainJob
	case api == APIMPIOperator:
		return mpiV2
	case w == WorkloadMPI:
		return Backends[1]
	}
	return Backends[0]
}

// IsChoiceError reports whether err is one of Choose's errors about the cluster's APIs (a
// usage problem the user fixes with --api or an install, not an API failure).
func IsChoiceError(err error) bool {
	var a *NoAPIError
	var b *NotServedError
	var c *UnsupportedAPIError
	return errors.As(err, &a) || errors.As(err, &b) || errors.As(err, &c)
}

// APINames lists the --api values, for flag help.
func APINames() string {
	names := []string{string(APIAuto)}
	for _, a := range APIs {
		names = append(names, string(a))
	}
	sort.Strings(names[1:])
	return strings.Join(names, ", ")
}
