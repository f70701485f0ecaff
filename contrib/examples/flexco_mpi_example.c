/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flexco_mpi_example.c - one MPI program over the parts of a co-allocation
 * (doc/one-program.md).
 *
 * Each part of the co-allocation runs this program under its own mpirun,
 * after flexco-rendezvous has printed the layout into the environment
 * (FLEXCO_WORLD_SIZE, FLEXCO_RANK_OFFSET, FLEXCO_RDV_PARTS,
 * FLEXCO_RDV_PART_<i>_CLUSTER and _RANKS, FLEXCO_PART_INDEX) and every
 * mpirun names part 0's ompi-server (--ompi-server, its URI carried by
 * the rendezvous).  Part 0's rank 0 opens a port and publishes it under
 * the co-allocation's name; part k looks it up and connects; the parts
 * join one at a time, in index order (part k connects to the communicator
 * of parts 0..k-1, all of which accept), and each join is an
 * MPI_Intercomm_merge with the newcomer high, so the merged ranks follow
 * the layout's rank offsets.  Then:
 *
 *   - the merged communicator's size must be the world size and each
 *     process's rank its part's offset plus its rank in the part;
 *   - an MPI_Allreduce of rank+1 must give n(n+1)/2, and one of each
 *     part's process count must give the layout's counts (every process
 *     of every part took part);
 *   - a ping-pong between the first process of part 0 and the first of
 *     part 1 measures latency and bandwidth for a few message sizes.
 *
 * Rank 0 prints "allreduce over N processes on P clusters (a:x b:y): ok"
 * (or "... FAILED: why") and one line per ping-pong size.  Exit 0 only
 * if every check held.
 *
 * The end matters with Open MPI 4.1: each intercommunicator is
 * disconnected as soon as it is merged, and the merged communicator is
 * freed (after a barrier: nothing in flight) before MPI_Finalize.  An
 * intercommunicator still connected at MPI_Finalize kills a process of
 * the other job with SIGPIPE as this job's processes close their
 * sockets (mpirun: "exited on signal 13 (Broken pipe)"); and
 * MPI_Comm_disconnect on the merged communicator itself never returns.
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PARTS 64

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	return (v && *v) ? strtol(v, NULL, 10) : dflt;
}

static const char *part_cluster(int i)
{
	char name[64];
	const char *v;

	snprintf(name, sizeof(name), "FLEXCO_RDV_PART_%d_CLUSTER", i);
	v = getenv(name);
	return v ? v : "?";
}

static void pingpong(MPI_Comm comm, int me, int peer)
{
	static const int sizes[] = { 8, 1024, 65536, 1048576 };
	static const int iters[] = { 200, 200, 50, 20 };
	char *buf = malloc(1048576);
	size_t k;

	if (!buf)
		MPI_Abort(comm, 1);
	memset(buf, 7, 1048576);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		double t0, t;
		int i;

		MPI_Barrier(comm);
		t0 = MPI_Wtime();
		for (i = 0; i < iters[k]; i++) {
			if (me == 0) {
				MPI_Send(buf, sizes[k], MPI_CHAR, peer, 9, comm);
				MPI_Recv(buf, sizes[k], MPI_CHAR, peer, 9, comm, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(buf, sizes[k], MPI_CHAR, 0, 9, comm, MPI_STATUS_IGNORE);
				MPI_Send(buf, sizes[k], MPI_CHAR, 0, 9, comm);
			}
		}
		t = (MPI_Wtime() - t0) / (2.0 * iters[k]);	/* one way */
		if (me == 0)
			printf("pingpong %s-%s %7d bytes: %9.2f us %9.2f MB/s\n",
			       part_cluster(0), part_cluster(1), sizes[k],
			       t * 1e6, sizes[k] / t / 1e6);
	}
	free(buf);
}

int main(int argc, char **argv)
{
	char port[MPI_MAX_PORT_NAME] = "", service[128], why[256] = "";
	MPI_Comm comm = MPI_COMM_WORLD, inter, merged;
	int part, nparts, lrank, lsize, rank, size, k, ok = 1;
	long world, offset, counts[MAX_PARTS], want[MAX_PARTS], sum, n;
	const char *co = getenv("FLEXCO_COALLOCATION");

	(void)argc;
	(void)argv;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &lrank);
	MPI_Comm_size(MPI_COMM_WORLD, &lsize);
	part = (int)env_long("FLEXCO_PART_INDEX", -1);
	nparts = (int)env_long("FLEXCO_RDV_PARTS", 0);
	world = env_long("FLEXCO_WORLD_SIZE", 0);
	offset = env_long("FLEXCO_RANK_OFFSET", -1);
	if (part < 0 || nparts < 2 || nparts > MAX_PARTS || part >= nparts || !co) {
		if (lrank == 0)
			fprintf(stderr, "flexco_mpi_example: run it in a part job after "
				"eval \"$(flexco-rendezvous ...)\" (2..%d parts)\n", MAX_PARTS);
		MPI_Finalize();
		return 2;
	}
	snprintf(service, sizeof(service), "flexco-%s", co);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

	if (part == 0) {
		if (lrank == 0) {
			MPI_Open_port(MPI_INFO_NULL, port);
			if (MPI_Publish_name(service, MPI_INFO_NULL, port) != MPI_SUCCESS)
				MPI_Abort(MPI_COMM_WORLD, 3);
		}
	} else {
		/* part 0 may not have published yet: look again, 60 s at most */
		if (lrank == 0) {
			int tries;
			for (tries = 0; tries < 600; tries++) {
				if (MPI_Lookup_name(service, MPI_INFO_NULL, port) == MPI_SUCCESS)
					break;
				usleep(100000);
			}
			if (tries == 600) {
				fprintf(stderr, "flexco_mpi_example: %s was never published\n", service);
				MPI_Abort(MPI_COMM_WORLD, 3);
			}
		}
		MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
		MPI_Intercomm_merge(inter, 1, &merged);
		MPI_Comm_disconnect(&inter);
		comm = merged;
	}
	/* parts part+1 .. nparts-1 join the parts 0..part, one at a time */
	for (k = part + 1; k < nparts; k++) {
		MPI_Comm_accept(port, MPI_INFO_NULL, 0, comm, &inter);
		MPI_Intercomm_merge(inter, 0, &merged);
		MPI_Comm_disconnect(&inter);
		if (comm != MPI_COMM_WORLD)
			MPI_Comm_free(&comm);
		comm = merged;
	}
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);

	/* the layout's order and size */
	if (size != world || rank != offset + lrank) {
		ok = 0;
		snprintf(why, sizeof(why), "rank %d of %d, the layout says %ld of %ld",
			 rank, size, offset + lrank, world);
	}
	n = rank + 1;
	MPI_Allreduce(&n, &sum, 1, MPI_LONG, MPI_SUM, comm);
	if (sum != (long)size * (size + 1) / 2) {
		ok = 0;
		snprintf(why, sizeof(why), "the sum of rank+1 is %ld, not %ld", sum,
			 (long)size * (size + 1) / 2);
	}
	memset(counts, 0, sizeof(counts));
	counts[part] = 1;
	MPI_Allreduce(MPI_IN_PLACE, counts, nparts, MPI_LONG, MPI_SUM, comm);
	for (k = 0; k < nparts; k++) {
		char name[64];
		snprintf(name, sizeof(name), "FLEXCO_RDV_PART_%d_RANKS", k);
		want[k] = env_long(name, -1);
		if (counts[k] != want[k]) {
			ok = 0;
			snprintf(why, sizeof(why), "part %d has %ld processes, the layout says %ld",
				 k, counts[k], want[k]);
		}
	}
	MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm);
	if (rank == 0) {
		char line[1024];
		int len = snprintf(line, sizeof(line), "allreduce over %d processes on %d clusters (",
				   size, nparts);
		for (k = 0; k < nparts && len < (int)sizeof(line); k++)
			len += snprintf(line + len, sizeof(line) - len, "%s%s:%ld", k ? " " : "",
					part_cluster(k), counts[k]);
		printf("%s): %s%s%s\n", line, ok ? "ok" : "FAILED", ok ? "" : ": ", ok ? "" : why);
		fflush(stdout);
	}
	if (!ok && why[0])
		fprintf(stderr, "flexco_mpi_example: rank %d: %s\n", rank, why);

	/* rank 0 of part 0 against the first process of part 1 */
	{
		int me = rank == 0 ? 0 : (part == 1 && lrank == 0 ? 1 : -1);
		MPI_Comm pair;
		MPI_Comm_split(comm, me >= 0 ? 0 : MPI_UNDEFINED, rank, &pair);
		if (pair != MPI_COMM_NULL) {
			pingpong(pair, me, 1);
			MPI_Comm_free(&pair);
		}
		fflush(stdout);
	}

	/* nothing between the jobs is left at MPI_Finalize (see above) */
	MPI_Barrier(comm);
	if (comm != MPI_COMM_WORLD)
		MPI_Comm_free(&comm);
	if (part == 0 && lrank == 0) {
		MPI_Unpublish_name(service, MPI_INFO_NULL, port);
		MPI_Close_port(port);
	}
	MPI_Finalize();
	return ok ? 0 : 1;
}
