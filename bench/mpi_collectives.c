/* The MPI collectives benchmark of bench/mpi_collectives.sh, measured as the
 * OSU micro-benchmarks measure them: for each size, a few warm-up calls,
 * then timed calls separated by barriers only at the start; each rank's
 * average time per call, and the average, minimum and maximum of those over
 * the ranks. Sizes and bus bandwidth as nccl-tests defines them: the size is
 * each rank's buffer (floats), and the bus bandwidth is size / time times
 * 2 (ranks - 1) / ranks for all-reduce, (ranks - 1) / ranks for all-to-all
 * (each peer gets size / ranks) and 1 for broadcast (from rank 0). Every
 * result is checked at its first and last element; a wrong one aborts.
 *
 *   mpirun -np 4 mpi_collectives allreduce|alltoall|bcast [max-bytes [min-bytes]]
 *   (default 64 MiB and 8 bytes)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum operation { ALLREDUCE, ALLTOALL, BCAST };

static int iterations_for(long bytes) {
  long budget = (256L << 20) / (bytes < 8192 ? 8192 : bytes);  /* about 256 MiB per size */
  return budget < 5 ? 5 : budget > 2000 ? 2000 : (int)budget;
}

static void run_once(enum operation operation, float* send, float* receive, int count, int ranks) {
  switch (operation) {
    case ALLREDUCE: MPI_Allreduce(send, receive, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(send, count / ranks, MPI_FLOAT, receive, count / ranks, MPI_FLOAT, MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(receive, count, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
  }
}

/* What element i of the result must be on `rank`. send[i] on rank r is r + i % 7. */
static float expected(enum operation operation, long i, int count, int rank, int ranks) {
  switch (operation) {
    case ALLREDUCE: return (float)(ranks * (ranks - 1) / 2 + ranks * (i % 7));
    case ALLTOALL: {
      long block = count / ranks, from = i / block, at = rank * block + i % block; /* from's send[at] */
      return (float)(from + at % 7);
    }
    case BCAST: return (float)(i % 7); /* rank 0's send */
  }
  return 0;
}

static int check(enum operation operation, const float* receive, int count, int rank, int ranks) {
  long last = operation == ALLTOALL ? (long)(count / ranks) * ranks - 1 : count - 1;
  return receive[0] == expected(operation, 0, count, rank, ranks) &&
         receive[last] == expected(operation, last, count, rank, ranks);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const char* name = argc > 1 ? argv[1] : "";
  enum operation operation = strcmp(name, "alltoall") == 0 ? ALLTOALL : strcmp(name, "bcast") == 0 ? BCAST : ALLREDUCE;
  long max_bytes = argc > 2 ? atol(argv[2]) : 64L << 20;
  long min_bytes = argc > 3 ? atol(argv[3]) : 8;
  if (strcmp(name, "allreduce") != 0 && operation == ALLREDUCE) {
    if (rank == 0) fprintf(stderr, "mpi_collectives: the first argument is allreduce, alltoall or bcast\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  float* send = malloc((size_t)max_bytes);
  float* receive = malloc((size_t)max_bytes);
  if (send == NULL || receive == NULL || max_bytes < 8 || min_bytes < 8) {
    fprintf(stderr, "mpi_collectives: cannot allocate %ld bytes\n", max_bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (long i = 0; i < max_bytes / (long)sizeof(float); ++i) send[i] = (float)(rank + i % 7);
  if (rank == 0) {
    printf("# %s, %d ranks\n# %-10s %12s %12s %12s %14s\n", name, ranks, "bytes", "avg us", "min us", "max us",
           "busbw MB/s");
  }
  double factor = operation == ALLREDUCE ? 2.0 * (ranks - 1) / ranks : operation == ALLTOALL ? (double)(ranks - 1) / ranks : 1.0;
  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    int count = (int)(bytes / (long)sizeof(float));
    if (operation == ALLTOALL && count < ranks) continue;
    if (operation == BCAST) memcpy(receive, send, (size_t)bytes); /* rank 0 broadcasts its send buffer */
    int iterations = iterations_for(bytes), warmup = iterations < 10 ? 1 : 10;
    for (int i = 0; i < warmup; ++i) run_once(operation, send, receive, count, ranks);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) run_once(operation, send, receive, count, ranks);
    double mine = (MPI_Wtime() - start) * 1e6 / iterations, sum = 0, least = 0, most = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &least, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double average = sum / ranks;
      printf("  %-10ld %12.2f %12.2f %12.2f %14.1f\n", bytes, average, least, most, (double)bytes * factor / average);
      fflush(stdout);
    }
    if (!check(operation, receive, count, rank, ranks)) {
      fprintf(stderr, "mpi_collectives: rank %d: wrong %s result at %ld bytes\n", rank, name, bytes);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  free(send);
  free(receive);
  MPI_Finalize();
  return 0;
}
