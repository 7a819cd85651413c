/* An MPI program that checks every element MPI_Allreduce, MPI_Alltoall and
 * MPI_Bcast return, over sizes from one element to 1 MiB. Each rank's data is
 * a function of (rank, size, index), so every result is known in advance.
 * Prints "collectives_check: N ranks, all results verified" on rank 0 and
 * exits 0, or names the first wrong element and exits 1. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const int kSizes[] = {1, 7, 64, 1000, 4096, 65536, 262144};  /* elements */
enum { kSizeCount = sizeof kSizes / sizeof kSizes[0] };

static int64_t value(int rank, int count, int index) {
  return (int64_t)rank * 1000003 + (int64_t)count * 31 + index;
}

static int fail(int rank, const char* what, int count, int index, int64_t got, int64_t want) {
  fprintf(stderr, "collectives_check: rank %d: %s of %d elements: element %d is %lld, not %lld\n", rank, what, count,
          index, (long long)got, (long long)want);
  return 1;
}

static int check_allreduce(int rank, int ranks, int count, int64_t* send, int64_t* receive) {
  for (int i = 0; i < count; ++i) send[i] = value(rank, count, i);
  MPI_Allreduce(send, receive, count, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < count; ++i) {
    int64_t want = 0;
    for (int r = 0; r < ranks; ++r) want += value(r, count, i);
    if (receive[i] != want) return fail(rank, "MPI_Allreduce", count, i, receive[i], want);
  }
  return 0;
}

/* Block j of rank r's send buffer goes to rank j: value(r, count, j * count + i). */
static int check_alltoall(int rank, int ranks, int count, int64_t* send, int64_t* receive) {
  for (int j = 0; j < ranks; ++j) {
    for (int i = 0; i < count; ++i) send[j * count + i] = value(rank, count, j * count + i);
  }
  MPI_Alltoall(send, count, MPI_INT64_T, receive, count, MPI_INT64_T, MPI_COMM_WORLD);
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < count; ++i) {
      int64_t want = value(r, count, rank * count + i);
      if (receive[r * count + i] != want) return fail(rank, "MPI_Alltoall", count, r * count + i, receive[r * count + i], want);
    }
  }
  return 0;
}

static int check_bcast(int rank, int ranks, int count, int64_t* buffer) {
  int root = count % ranks;
  for (int i = 0; i < count; ++i) buffer[i] = rank == root ? value(root, count, i) : -1;
  MPI_Bcast(buffer, count, MPI_INT64_T, root, MPI_COMM_WORLD);
  for (int i = 0; i < count; ++i) {
    if (buffer[i] != value(root, count, i)) return fail(rank, "MPI_Bcast", count, i, buffer[i], value(root, count, i));
  }
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int largest = kSizes[kSizeCount - 1];
  int64_t* send = malloc(sizeof(int64_t) * (size_t)largest * (size_t)ranks);
  int64_t* receive = malloc(sizeof(int64_t) * (size_t)largest * (size_t)ranks);
  if (send == NULL || receive == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  int failed = 0;
  for (int s = 0; s < kSizeCount && !failed; ++s) {
    failed |= check_allreduce(rank, ranks, kSizes[s], send, receive);
    failed |= check_alltoall(rank, ranks, kSizes[s], send, receive);
    failed |= check_bcast(rank, ranks, kSizes[s], receive);
  }
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && !any_failed) printf("collectives_check: %d ranks, all results verified\n", ranks);
  free(send);
  free(receive);
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
