/* What changing a memory region or a CQ costs through the verbs, against a
 * plain registration: ibv_reg_mr + ibv_dereg_mr, ibv_rereg_mr of the access
 * flags, of the PD and of the range, ibv_resize_cq up and down, and binding
 * a type 1 memory window (ibv_bind_mw on an RC QP connected to itself, each
 * bind waited for on the CQ). A plain
 * libibverbs program: bench/mr_verbs.sh runs it on uroce's library (uroce
 * run); on any other device it measures that device the same way.
 *
 *   mr_verbs [ITERATIONS] [BYTES]      (defaults 20000 and 65536)
 *
 * Prints one line per operation: its name and the median of five rounds in
 * nanoseconds per call. */
#include <infiniband/verbs.h>
#include <stdint.h>
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
  struct ibv_mr* window_mr;  /* MW_BIND */
  struct ibv_qp* qp;         /* RC, connected to itself */
  struct ibv_mw* mw;
  char* window_buffer;  /* apart from buffers[], so the reg/dereg figures are as without windows */
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

static void bind_window(struct fixture* f, long i) {
  struct ibv_mw_bind bind = {.wr_id = (uint64_t)i, .send_flags = IBV_SEND_SIGNALED};
  bind.bind_info.mr = f->window_mr;
  bind.bind_info.addr = (uint64_t)(uintptr_t)f->window_buffer;
  bind.bind_info.length = (i & 1) ? f->bytes : f->bytes / 2;
  bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
  if (ibv_bind_mw(f->qp, f->mw, &bind) != 0) die("ibv_bind_mw");
  struct ibv_wc wc;
  int polled;
  while ((polled = ibv_poll_cq(f->cq, 1, &wc)) == 0) {
  }
  if (polled < 0 || wc.status != IBV_WC_SUCCESS) die("bind completion");
}

/* An RC QP on pds[1] taken to RTS towards itself (GID 1, the IPv4 one). */
static void connect_to_itself(struct fixture* f) {
  struct ibv_qp_init_attr init = {.send_cq = f->cq, .recv_cq = f->cq, .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 64, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
  f->qp = ibv_create_qp(f->pds[1], &init);
  if (f->qp == NULL) die("ibv_create_qp");
  struct ibv_qp_attr attr = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
  if (ibv_modify_qp(f->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) die("INIT");
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.dest_qp_num = f->qp->qp_num;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.port_num = 1;
  attr.ah_attr.grh.sgid_index = 1;
  attr.ah_attr.grh.hop_limit = 64;
  if (ibv_query_gid(f->context, 1, 1, &attr.ah_attr.grh.dgid)) die("ibv_query_gid");
  if (ibv_modify_qp(f->qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    die("RTR");
  }
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 1;
  if (ibv_modify_qp(f->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)) {
    die("RTS");
  }
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
  f.window_buffer = aligned_alloc(4096, (f.bytes + 4095) / 4096 * 4096);
  if (f.window_buffer == NULL) die("setup");
  f.window_mr = ibv_reg_mr(f.pds[1], f.window_buffer, f.bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
  if (f.cq == NULL || f.mr == NULL || f.window_mr == NULL) die("setup");

  printf("device %s, %ld calls a round, %zu-byte regions, median of %d rounds\n",
         ibv_get_device_name(devices[0]), iterations, f.bytes, kRounds);
  printf("%-34s %8.0f ns\n", "ibv_reg_mr + ibv_dereg_mr", measure(&f, reg_dereg, iterations));
  printf("%-34s %8.0f ns\n", "ibv_rereg_mr (access)", measure(&f, rereg_access, iterations));
  printf("%-34s %8.0f ns\n", "ibv_rereg_mr (PD)", measure(&f, rereg_pd, iterations));
  printf("%-34s %8.0f ns\n", "ibv_rereg_mr (range)", measure(&f, rereg_range, iterations));
  printf("%-34s %8.0f ns\n", "ibv_resize_cq (256 <-> 4096)", measure(&f, resize_cq, iterations));
  /* Last: a QP in RTS keeps the device's progress thread busier. */
  connect_to_itself(&f);
  f.mw = ibv_alloc_mw(f.pds[1], IBV_MW_TYPE_1);
  if (f.mw == NULL) die("ibv_alloc_mw");
  printf("%-34s %8.0f ns\n", "ibv_bind_mw + its completion", measure(&f, bind_window, iterations));

  ibv_dealloc_mw(f.mw);
  ibv_destroy_qp(f.qp);
  ibv_dereg_mr(f.window_mr);
  free(f.window_buffer);
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
