/* The MPI_Allreduce benchmark of bench/mpi_allreduce.sh, measured as the
 * OSU micro-benchmarks' osu_allreduce measures it: for each size (bytes of
 * floats, summed), a few warm-up calls, then timed calls separated by
 * barriers only at the start; each rank's average time per call, and the
 * average, minimum and maximum of those over the ranks. Also the bus
 * bandwidth nccl-tests defines: size * 2 (ranks - 1) / ranks / time.
 *
 *   mpirun -np 4 mpi_allreduce [max-bytes [min-bytes]]   (default 64 MiB, 8 B)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int iterations_for(long bytes) {
  long budget = (256L << 20) / (bytes < 8192 ? 8192 : bytes);  /* about 256 MiB summed per size */
  return budget < 5 ? 5 : budget > 2000 ? 2000 : (int)budget;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  long max_bytes = argc > 1 ? atol(argv[1]) : 64L << 20;
  long min_bytes = argc > 2 ? atol(argv[2]) : 8;
  float* send = malloc((size_t)max_bytes);
  float* receive = malloc((size_t)max_bytes);
  if (send == NULL || receive == NULL || max_bytes < 8 || min_bytes < 8) {
    fprintf(stderr, "mpi_allreduce: cannot allocate %ld bytes\n", max_bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (long i = 0; i < max_bytes / (long)sizeof(float); ++i) send[i] = (float)(rank + i % 7);
  if (rank == 0) {
    printf("# %d ranks\n# %-10s %12s %12s %12s %14s\n", ranks, "bytes", "avg us", "min us", "max us", "busbw MB/s");
  }
  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    int count = (int)(bytes / (long)sizeof(float));
    int iterations = iterations_for(bytes), warmup = iterations < 10 ? 1 : 10;
    for (int i = 0; i < warmup; ++i) MPI_Allreduce(send, receive, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) MPI_Allreduce(send, receive, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double mine = (MPI_Wtime() - start) * 1e6 / iterations, sum = 0, least = 0, most = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &least, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double average = sum / ranks;
      double busbw = (double)bytes * 2.0 * (ranks - 1) / ranks / average;  /* bytes per us = MB/s */
      printf("  %-10ld %12.2f %12.2f %12.2f %14.1f\n", bytes, average, least, most, busbw);
      fflush(stdout);
    }
    if (receive[0] != (float)(ranks * (ranks - 1) / 2)) {  /* element 0: sum of the ranks + 0 */
      fprintf(stderr, "mpi_allreduce: rank %d: wrong sum %f at %ld bytes\n", rank, receive[0], bytes);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  free(send);
  free(receive);
  MPI_Finalize();
  return 0;
}
