/* What changing a memory region or a CQ costs through the verbs, against a
 * plain registration: ibv_reg_mr + ibv_dereg_mr, ibv_rereg_mr of the access
 * flags, of the PD and of the range, and ibv_resize_cq up and down. A plain
 * libibverbs program: bench/mr_verbs.sh runs it on uroce's library (uroce
 * run); on any other device it measures that device the same way.
 *
 *   mr_verbs [ITERATIONS] [BYTES]      (defaults 20000 and 65536)
 *
 * Prints one line per operation: its name and the median of five rounds in
 * nanoseconds per call. */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kRounds = 5 };

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void die(const char* what) {
  perror(what);
  exit(1);
}

struct fixture {
  struct ibv_context* context;
  struct ibv_pd* pds[2];
  struct ibv_cq* cq;
  struct ibv_mr* mr;
  char* buffers[2];
  size_t bytes;
};

/* One operation, repeated: returns ns per call. */
typedef void (*operation)(struct fixture* f, long i);

static void reg_dereg(struct fixture* f, long i) {
  struct ibv_mr* mr = ibv_reg_mr(f->pds[0], f->buffers[i & 1], f->bytes, IBV_ACCESS_LOCAL_WRITE);
  if (mr == NULL || ibv_dereg_mr(mr) != 0) die("reg/dereg");
}

static void rereg_access(struct fixture* f, long i) {
  int access = IBV_ACCESS_LOCAL_WRITE | ((i & 1) ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ);
  if (ibv_rereg_mr(f->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, access) != 0) die("rereg access");
}

static void rereg_pd(struct fixture* f, long i) {
  if (ibv_rereg_mr(f->mr, IBV_REREG_MR_CHANGE_PD, f->pds[i & 1], NULL, 0, 0) != 0) die("rereg pd");
}

static void rereg_range(struct fixture* f, long i) {
  if (ibv_rereg_mr(f->mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, f->buffers[i & 1], f->bytes, 0) != 0) {
    die("rereg range");
  }
}

static void resize_cq(struct fixture* f, long i) {
  if (ibv_resize_cq(f->cq, (i & 1) ? 4096 : 256) != 0) die("resize cq");
}

static double measure(struct fixture* f, operation op, long iterations) {
  double rounds[kRounds];
  for (int r = 0; r < kRounds; ++r) {
    double start = now_ns();
    for (long i = 0; i < iterations; ++i) op(f, i);
    rounds[r] = (now_ns() - start) / (double)iterations;
  }
  qsort(rounds, kRounds, sizeof rounds[0], by_value);
  return rounds[kRounds / 2];
}

int main(int argc, char** argv) {
  long iterations = argc > 1 ? atol(argv[1]) : 20000;
  struct fixture f = {.bytes = argc > 2 ? (size_t)atol(argv[2]) : 65536};
  if (iterations <= 0 || f.bytes == 0) {
    fprintf(stderr, "usage: %s [ITERATIONS] [BYTES]\n", argv[0]);
    return 2;
  }
  int count = 0;
  struct ibv_device** devices = ibv_get_device_list(&count);
  if (devices == NULL || count == 0) die("no RDMA device");
  f.context = ibv_open_device(devices[0]);
  if (f.context == NULL) die("ibv_open_device");
  for (int i = 0; i < 2; ++i) {
    f.pds[i] = ibv_alloc_pd(f.context);
    f.buffers[i] = aligned_alloc(4096, (f.bytes + 4095) / 4096 * 4096);
    if (f.pds[i] == NULL || f.buffers[i] == NULL) die("setup");
    memset(f.buffers[i], 0, f.bytes);
  }
  f.cq = ibv_create_cq(f.context, 256, NULL, NULL, 0);
  f.mr = ibv_reg_mr(f.pds[0], f.buffers[0], f.bytes, IBV_ACCESS_LOCAL_WRITE);
  if (f.cq == NULL || f.mr == NULL) die("setup");

  printf("device %s, %ld calls a round, %zu-byte regions, median of %d rounds\n",
         ibv_get_device_name(devices[0]), iterations, f.bytes, kRounds);
  printf("%-34s %8.0f ns\n", "ibv_reg_mr + ibv_dereg_mr", measure(&f, reg_dereg, iterations));
  printf("%-34s %8.0f ns\n", "ibv_rereg_mr (access)", measure(&f, rereg_access, iterations));
  printf("%-34s %8.0f ns\n", "ibv_rereg_mr (PD)", measure(&f, rereg_pd, iterations));
  printf("%-34s %8.0f ns\n", "ibv_rereg_mr (range)", measure(&f, rereg_range, iterations));
  printf("%-34s %8.0f ns\n", "ibv_resize_cq (256 <-> 4096)", measure(&f, resize_cq, iterations));

  ibv_rereg_mr(f.mr, IBV_REREG_MR_CHANGE_PD, f.pds[0], NULL, 0, 0);
  ibv_dereg_mr(f.mr);
  ibv_destroy_cq(f.cq);
  for (int i = 0; i < 2; ++i) {
    ibv_dealloc_pd(f.pds[i]);
    free(f.buffers[i]);
  }
  ibv_close_device(f.context);
  ibv_free_device_list(devices);
  return 0;
}
