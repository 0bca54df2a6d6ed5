package recipe

import "github.com/ain-hpc/ain/pkg/image"

// checkImageRef is nil when s is an image reference distribution/reference's
// ParseNormalizedNamed (the parser containerd and the kubelet use) accepts, else its message.
func checkImageRef(s string) error { return image.Check(s) }

// MPIOperatorImagePrefix is the repository prefix of the mpi-operator's published images
// (mpioperator/base, mpioperator/openmpi, ...), normalized as imageRepository writes it.
const MPIOperatorImagePrefix = "docker.io/mpioperator/"

// imageRepository is an image reference's repository, normalized (docker.io/library/...), without
// its tag or digest.
func imageRepository(ref string) string { return image.Repository(ref) }
