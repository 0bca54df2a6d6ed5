package podrun

// AllreduceStandIn is the C source of the program that stands for nccl-tests' all_reduce_perf
// where the machine has no GPU: a real MPI_Allreduce over the ranks (Open MPI's TCP BTL between
// the pods' network namespaces), one line per rank. It exits 1 when the sum is wrong. Built
// with mpicc and mapped at the image's path (Image.Files) by the sandbox's real-pod mode and
// this package's tests.
const AllreduceStandIn = `#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
	int rank, size, one, sum = 0;
	char host[256];
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	gethostname(host, sizeof host);
	one = rank + 1;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("podrun-allreduce rank %d of %d on %s: sum %d\n", rank, size, host, sum);
	MPI_Finalize();
	return sum == size * (size + 1) / 2 ? 0 : 1;
}
`
