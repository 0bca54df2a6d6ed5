package podrun

// AllreduceStandIn is the C source of the program that stands for nccl-tests' all_reduce_perf
// where the machine has no GPU: a real MPI_Allreduce over the ranks (Open MPI's TCP BTL between
// the pods' network namespaces), one line per rank. It exits 1 when the sum is wrong. Built
// with mpicc and mapped at the image's path (Image.Files) by the sandbox's real-pod mode and
// this package's tests.
//
// What NCCL would print cannot come from this machine (no GPU, no NCCL): the sandbox renders it
// from its simulated fabric and puts it in the job's plan folder (PlanDir, mounted in every pod
// of the job), read when it starts. After the real allreduce, rank 0 prints every rank's line and
// then the launcher's rendered output
// (launcher.sample: nccl-tests' table and NCCL INFO lines) as nccl-tests' rank 0 prints its
// table; every rank stays at least launcher.seconds; rank 0 exits with launcher.exit when the
// sandbox's scenario fails the run. Without a plan folder it does the allreduce alone.
const AllreduceStandIn = `#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define LINE 512
static long plan_number(const char *name) {
	char path[512], buf[64] = {0};
	FILE *f;
	snprintf(path, sizeof path, "` + PlanDir + `/launcher.%s", name);
	if (!(f = fopen(path, "r"))) return 0;
	if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
	fclose(f);
	return strtol(buf, NULL, 10);
}
int main(int argc, char **argv) {
	int rank, size, one, sum = 0, rc, i;
	char host[256], mine[LINE], *all = NULL, line[8192];
	struct timespec t0, t1;
	long seconds, exitcode;
	FILE *sample;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* The plan is read whole at the start: a later job of the same name may rewrite it. */
	seconds = plan_number("seconds");
	exitcode = plan_number("exit");
	sample = fopen("` + PlanDir + `/launcher.sample", "r");
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	gethostname(host, sizeof host);
	one = rank + 1;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	rc = sum == size * (size + 1) / 2 ? 0 : 1;
	/* One writer, as in nccl-tests (only its main thread of rank 0 prints): Open MPI forwards
	   each rank's output in pieces as read, not by lines, so two ranks writing at once can
	   split each other's lines. Rank 0 prints every rank's line, then the table. */
	snprintf(mine, sizeof mine, "podrun-allreduce rank %d of %d on %s: sum %d\n", rank, size, host, sum);
	if (rank == 0) all = malloc((size_t)size * LINE);
	MPI_Gather(mine, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		for (i = 0; i < size; i++) fputs(all + (size_t)i * LINE, stdout);
		free(all);
		if (rc == 0 && sample) {
			/* ssh's own warnings are ssh's to print, not the sample's. */
			while (fgets(line, sizeof line, sample))
				if (strncmp(line, "Warning: Permanently added", 26) != 0) fputs(line, stdout);
		}
		fflush(stdout);
	}
	if (sample) fclose(sample);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (seconds > t1.tv_sec - t0.tv_sec) sleep((unsigned)(seconds - (t1.tv_sec - t0.tv_sec)));
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0 && rc == 0) rc = (int)exitcode;
	MPI_Finalize();
	return rc;
}
`

// PlanDir is where a sandbox pod finds its job's plan: what the stand-ins print in place of
// what NCCL would (a sample rendered from the simulated fabric), how long they run at least and
// the exit code of a run the sandbox's scenario fails. One folder per job, shared by its pods.
const PlanDir = "/run/ain-sandbox"
