/* A memory-window exchange between two RDMA devices over RC, for the wire
 * interop harness (scripts/interop-softroce.sh): one side (-w) lends a type 2
 * window over part of a region, bound through its QP (IBV_WR_BIND_MW); the
 * other writes into the window through the window's rkey, reads the bytes
 * back, sends with invalidate of that rkey, and then finds a second write
 * refused (IBV_WC_REM_ACCESS_ERR). The lender checks that the bytes arrived
 * and that its receive reported the invalidation. Either side may be
 * uroce or the kernel's Soft-RoCE: each checks the other's rules.
 *
 *   mw_exchange [-w] [-p PORT] [-g GID_INDEX]            (server)
 *   mw_exchange [-w] [-p PORT] [-g GID_INDEX] SERVER_IP  (client)
 *
 * Exits 0 when every step gave what the IBTA rules say, 1 otherwise. */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kBufferSize = 8192, kWindowOffset = 1024, kWindowLength = 1024, kDataLength = 512 };

struct endpoint_info {
  uint32_t qpn;
  uint32_t psn;
  uint8_t gid[16];
};

struct window_info {
  uint64_t addr;
  uint32_t rkey;
};

static int fail(const char* what) {
  fprintf(stderr, "mw_exchange: %s\n", what);
  return 1;
}

/* Waits for one completion on cq; returns its status, or -1. */
static int wait_completion(struct ibv_cq* cq, struct ibv_wc* wc) {
  for (long spins = 0; spins < 2000000000L; ++spins) {
    int found = ibv_poll_cq(cq, 1, wc);
    if (found < 0) return -1;
    if (found == 1) return (int)wc->status;
    if (spins > 1000) usleep(100);
  }
  return -1;
}

static int exchange_bytes(int fd, const void* out, void* in, size_t length) {
  if (write(fd, out, length) != (ssize_t)length) return -1;
  size_t got = 0;
  while (got < length) {
    ssize_t n = read(fd, (char*)in + got, length - got);
    if (n <= 0) return -1;
    got += (size_t)n;
  }
  return 0;
}

static int tcp_connect(const char* server, int port) {
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (server == NULL) {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(listener, (struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 1) != 0) return -1;
    int fd = accept(listener, NULL, NULL);
    close(listener);
    return fd;
  }
  if (inet_pton(AF_INET, server, &address.sin_addr) != 1) return -1;
  for (int tries = 0; tries < 300; ++tries) {  /* the server may not listen yet */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr*)&address, sizeof address) == 0) return fd;
    close(fd);
    usleep(200000);
  }
  return -1;
}

static int connect_qp(struct ibv_qp* qp, const struct endpoint_info* own, const struct endpoint_info* peer,
                      int gid_index) {
  struct ibv_qp_attr attr = {
      .qp_state = IBV_QPS_INIT,
      .port_num = 1,
      .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
  if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return -1;
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.dest_qp_num = peer->qpn;
  attr.rq_psn = peer->psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.port_num = 1;
  attr.ah_attr.grh.sgid_index = (uint8_t)gid_index;
  attr.ah_attr.grh.hop_limit = 64;
  memcpy(attr.ah_attr.grh.dgid.raw, peer->gid, 16);
  if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    return -1;
  }
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = own->psn;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 1;
  return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post(struct ibv_qp* qp, struct ibv_send_wr* wr) {
  struct ibv_send_wr* bad = NULL;
  return ibv_post_send(qp, wr, &bad);
}

/* The lender: binds the window, hands it over, and checks what came. */
static int lend(int fd, struct ibv_pd* pd, struct ibv_qp* qp, struct ibv_cq* cq, struct ibv_mr* mr, uint8_t* buffer) {
  struct ibv_mw* mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  if (mw == NULL) return fail("ibv_alloc_mw refused a type 2 window");
  uint32_t rkey = ibv_inc_rkey(mw->rkey);
  struct ibv_send_wr bind = {.wr_id = 1, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED};
  bind.bind_mw.mw = mw;
  bind.bind_mw.rkey = rkey;
  bind.bind_mw.bind_info.mr = mr;
  bind.bind_mw.bind_info.addr = (uint64_t)(uintptr_t)(buffer + kWindowOffset);
  bind.bind_mw.bind_info.length = kWindowLength;
  bind.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  struct ibv_sge receive_sge = {(uint64_t)(uintptr_t)(buffer + 4096), 64, mr->lkey};
  struct ibv_recv_wr receive = {.wr_id = 2, .sg_list = &receive_sge, .num_sge = 1}, *bad_receive = NULL;
  if (ibv_post_recv(qp, &receive, &bad_receive)) return fail("ibv_post_recv failed");
  struct ibv_wc wc;
  if (post(qp, &bind) || wait_completion(cq, &wc) != IBV_WC_SUCCESS || wc.opcode != IBV_WC_BIND_MW) {
    return fail("the bind did not complete");
  }
  struct window_info window = {(uint64_t)(uintptr_t)(buffer + kWindowOffset), rkey}, unused;
  uint8_t done;
  if (exchange_bytes(fd, &window, &unused, sizeof window)) return fail("cannot send the window");
  if (wait_completion(cq, &wc) != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) return fail("no SEND arrived");
  /* The invalidated rkey is what counts (the borrower's refused write proves
   * the invalidation). Kernel Soft-RoCE copies the kernel's flag numbering
   * into its user CQ, where IB_WC_WITH_INVALIDATE (1 << 2) reads as
   * IBV_WC_IP_CSUM_OK: so the flag is printed, not required. */
  printf("receive: flags 0x%x (with invalidate: %s) invalidated rkey 0x%x (window 0x%x)\n", wc.wc_flags,
         (wc.wc_flags & IBV_WC_WITH_INV) ? "yes" : "no", wc.invalidated_rkey, rkey);
  if (wc.invalidated_rkey != rkey) return fail("the SEND did not name the window's rkey");
  if (exchange_bytes(fd, &done, &done, 1)) return fail("the peer went away");
  for (int i = 0; i < kDataLength; ++i) {
    if (buffer[kWindowOffset + i] != (uint8_t)(i * 7 + 1)) return fail("the written bytes are not in the window");
  }
  for (int i = kWindowOffset + kDataLength; i < kBufferSize; ++i) {
    if (i < 4096 && buffer[i] != 0) return fail("bytes beyond the write changed");
  }
  printf("window: bound, written through and invalidated by the SEND\n");
  return 0;
}

/* The borrower: writes, reads back, invalidates, and is refused after. */
static int borrow(int fd, struct ibv_qp* qp, struct ibv_cq* cq, struct ibv_mr* mr, uint8_t* buffer) {
  struct window_info window, unused = {0, 0};
  if (exchange_bytes(fd, &unused, &window, sizeof window)) return fail("no window came");
  for (int i = 0; i < kDataLength; ++i) buffer[i] = (uint8_t)(i * 7 + 1);
  struct ibv_sge sge = {(uint64_t)(uintptr_t)buffer, kDataLength, mr->lkey};
  struct ibv_send_wr write = {.wr_id = 3, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
                              .send_flags = IBV_SEND_SIGNALED};
  write.wr.rdma.remote_addr = window.addr;
  write.wr.rdma.rkey = window.rkey;
  struct ibv_wc wc;
  if (post(qp, &write) || wait_completion(cq, &wc) != IBV_WC_SUCCESS) return fail("the write into the window failed");
  struct ibv_sge read_sge = {(uint64_t)(uintptr_t)(buffer + 2048), kDataLength, mr->lkey};
  struct ibv_send_wr read = write;
  read.wr_id = 4;
  read.sg_list = &read_sge;
  read.opcode = IBV_WR_RDMA_READ;
  if (post(qp, &read) || wait_completion(cq, &wc) != IBV_WC_SUCCESS) return fail("the read from the window failed");
  if (memcmp(buffer, buffer + 2048, kDataLength) != 0) return fail("the bytes read back differ");
  struct ibv_sge message = {(uint64_t)(uintptr_t)buffer, 16, mr->lkey};
  struct ibv_send_wr invalidate = {.wr_id = 5, .sg_list = &message, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
                                   .send_flags = IBV_SEND_SIGNALED};
  invalidate.invalidate_rkey = window.rkey;
  if (post(qp, &invalidate) || wait_completion(cq, &wc) != IBV_WC_SUCCESS) {
    return fail("the SEND with invalidate failed");
  }
  write.wr_id = 6;
  int status = post(qp, &write) ? -1 : wait_completion(cq, &wc);
  printf("write after invalidation: %s\n", status >= 0 ? ibv_wc_status_str((enum ibv_wc_status)status) : "not posted");
  uint8_t done = 1;
  if (exchange_bytes(fd, &done, &done, 1)) return fail("the peer went away");
  if (status != IBV_WC_REM_ACCESS_ERR) return fail("a write through an invalidated window was not refused");
  printf("window: written, read back and invalidated; the later write was refused\n");
  return 0;
}

int main(int argc, char** argv) {
  int lender = 0, port = 18530, gid_index = 1, option;
  while ((option = getopt(argc, argv, "wp:g:")) != -1) {
    if (option == 'w') lender = 1;
    else if (option == 'p') port = atoi(optarg);
    else if (option == 'g') gid_index = atoi(optarg);
    else return fail("usage: mw_exchange [-w] [-p PORT] [-g GID_INDEX] [SERVER_IP]") + 1;
  }
  const char* server = optind < argc ? argv[optind] : NULL;
  struct ibv_device** devices = ibv_get_device_list(NULL);
  if (devices == NULL || devices[0] == NULL) return fail("no RDMA device");
  struct ibv_context* context = ibv_open_device(devices[0]);
  if (context == NULL) return fail("cannot open the device");
  struct ibv_pd* pd = ibv_alloc_pd(context);
  struct ibv_cq* cq = ibv_create_cq(context, 16, NULL, NULL, 0);
  uint8_t* buffer = calloc(1, kBufferSize);
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND;
  struct ibv_mr* mr = ibv_reg_mr(pd, buffer, kBufferSize, access);
  struct ibv_qp_init_attr init = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
  struct ibv_qp* qp = pd && cq && mr ? ibv_create_qp(pd, &init) : NULL;
  if (qp == NULL) return fail("cannot make PD, CQ, MR and QP");
  struct endpoint_info own = {.qpn = qp->qp_num, .psn = lender ? 100 : 200}, peer;
  union ibv_gid gid;
  if (ibv_query_gid(context, 1, gid_index, &gid)) return fail("no such GID index");
  memcpy(own.gid, gid.raw, 16);
  int fd = tcp_connect(server, port);
  if (fd < 0) return fail("cannot reach the peer over TCP");
  if (exchange_bytes(fd, &own, &peer, sizeof own) || connect_qp(qp, &own, &peer, gid_index)) {
    return fail("cannot connect the QPs");
  }
  int result = lender ? lend(fd, pd, qp, cq, mr, buffer) : borrow(fd, qp, cq, mr, buffer);
  close(fd);
  return result;
}
