/* A rank that goes away in the middle of a collective, for
 * mpi_programs_test.cc: every rank runs MPI_Allreduce of 1 MiB in a loop;
 * after 50 calls rank 1 stops (SIGSTOP: frozen, its process still there,
 * as a hung or descheduled host looks to its peers) or dies (SIGKILL). The
 * loop never ends by itself: the job must end with an error, never hang.
 *
 *   mpirun -np 2 rank_stops stop|die [tag]
 *
 * The tag is not used: it names the run on the command line, so a test can
 * find its own ranks (pgrep -f) beside other tests' ones.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int dies = argc > 1 && strcmp(argv[1], "die") == 0;
  int count = 1 << 18;
  float* send = calloc((size_t)count, sizeof(float));
  float* receive = calloc((size_t)count, sizeof(float));
  if (send == NULL || receive == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  for (long call = 0;; ++call) {
    if (rank == 1 && call == 50) {
      fprintf(stderr, "rank_stops: rank 1 %s after %ld calls\n", dies ? "dies" : "stops", call);
      fflush(stderr);
      raise(dies ? SIGKILL : SIGSTOP);
    }
    MPI_Allreduce(send, receive, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
}
