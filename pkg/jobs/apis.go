package jobs

// The workload APIs beyond kubeflow.org/v1 come from their projects' own Go types:
//   - kubeflow.org/v2beta1 MPIJob: github.com/kubeflow/mpi-operator v0.8.0 pkg/apis/kubeflow/v2beta1
//   - trainer.kubeflow.org/v1alpha1 TrainJob, TrainingRuntime: github.com/kubeflow/trainer/v2 v2.3.0
//   - jobset.x-k8s.io/v1alpha2 JobSet (what a TrainJob runs as): sigs.k8s.io/jobset v0.12.0
//
// trainer v2.3.0's API package does not compile against k8s.io/api v0.37 (its generated OpenAPI
// code uses corev1.PodStatusResult, removed in 0.37), which is why go.mod pins every k8s.io
// module at v0.36.2.
import (
	mpiv2beta1 "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// GVRs of the newer workload APIs, from the projects' registered group versions.
var (
	MPIJobV2GVR        = mpiv2beta1.SchemeGroupVersion.WithResource("mpijobs")
	TrainJobGVR        = trainer.GroupVersion.WithResource("trainjobs")
	TrainingRuntimeGVR = trainer.GroupVersion.WithResource("trainingruntimes")
	JobSetGVR          = jobsetv1alpha2.GroupVersion.WithResource("jobsets")
)
