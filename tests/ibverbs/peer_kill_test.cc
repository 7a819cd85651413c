// A peer killed in the middle of a transfer, through uroce's libibverbs: the
// peer is another process (this executable run with --peer) that is sent
// SIGKILL while WRITEs stream to it. The survivor's ibv_poll_cq must report
// IBV_WC_RETRY_EXC_ERR within the QP's retry budget and flush everything
// behind it with IBV_WC_WR_FLUSH_ERR, the QP must be in the error state, and
// nothing may hang. A restarted peer on the same address then reconnects:
// the survivor takes its QP back through RESET and the WRITEs complete.
#include <gtest/gtest.h>

#include <infiniband/verbs.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr const char* kSurvivorAddress = "127.0.4.20";
constexpr const char* kPeerAddress = "127.0.4.21";
constexpr int kGidIndex = 1;  // the IPv4-mapped RoCE v2 entry
constexpr std::size_t kBufferSize = 1 << 20;
constexpr std::uint8_t kTimeout = 14;   // 4.096 us x 2^14 = 67 ms per try: room for a starved peer on a loaded machine
constexpr std::uint8_t kRetryCount = 3;

struct Verbs {
  ibv_device** list = nullptr;
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(kBufferSize);

  Verbs() = default;
  Verbs(const Verbs&) = delete;
  Verbs& operator=(const Verbs&) = delete;
  ~Verbs() {
    if (qp) ibv_destroy_qp(qp);
    if (cq) ibv_destroy_cq(cq);
    if (mr) ibv_dereg_mr(mr);
    if (pd) ibv_dealloc_pd(pd);
    if (context) ibv_close_device(context);
    if (list) ibv_free_device_list(list);
  }

  // Opens the one device UROCE_ADDRESS names; false (with a message) on failure.
  bool open() {
    int count = 0;
    list = ibv_get_device_list(&count);
    if (list == nullptr || count != 1) return false;
    context = ibv_open_device(list[0]);
    if (context == nullptr) return false;
    pd = ibv_alloc_pd(context);
    mr = ibv_reg_mr(pd, buffer.data(), buffer.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    cq = ibv_create_cq(context, 256, nullptr, nullptr, 0);
    return pd && mr && cq && create_qp();
  }

  bool create_qp() {
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap = {128, 16, 1, 1, 0};
    qp = ibv_create_qp(pd, &init);
    return qp != nullptr;
  }

  // RESET (from any state) -> INIT -> RTR -> RTS towards the peer's QP.
  int connect(std::uint32_t remote_qpn, const ibv_gid& remote_gid, std::uint8_t timeout = kTimeout) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RESET;
    if (int e = ibv_modify_qp(qp, &attr, IBV_QP_STATE)) return e;
    attr = {};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = 1;
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    if (int e = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
      return e;
    }
    attr = {};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = IBV_MTU_4096;
    attr.dest_qp_num = remote_qpn;
    attr.rq_psn = 0;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 12;
    attr.ah_attr.is_global = 1;
    attr.ah_attr.port_num = 1;
    attr.ah_attr.grh.sgid_index = kGidIndex;
    attr.ah_attr.grh.hop_limit = 64;
    attr.ah_attr.grh.dgid = remote_gid;
    if (int e = ibv_modify_qp(qp, &attr,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
      return e;
    }
    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = 0;
    attr.timeout = timeout;
    attr.retry_cnt = kRetryCount;
    attr.rnr_retry = 7;
    attr.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &attr,
                         IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_MAX_QP_RD_ATOMIC);
  }

  std::string gid_hex() const {
    ibv_gid gid{};
    ibv_query_gid(context, 1, kGidIndex, &gid);
    std::string hex;
    char byte[3];
    for (std::uint8_t b : gid.raw) {
      std::snprintf(byte, sizeof byte, "%02x", b);
      hex += byte;
    }
    return hex;
  }
};

ibv_gid gid_from_hex(const std::string& hex) {
  ibv_gid gid{};
  for (std::size_t i = 0; i < 16 && 2 * i + 1 < hex.size(); ++i) {
    gid.raw[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return gid;
}

// The peer: prints "qpn gid rkey address", reads the survivor's "qpn gid",
// connects, says "ready" and waits to be killed (its library's progress
// thread serves the WRITEs).
int run_peer() {
  Verbs peer;
  if (!peer.open()) {
    std::printf("error opening the device\n");
    return 1;
  }
  std::printf("%u %s %u %llu\n", peer.qp->qp_num, peer.gid_hex().c_str(), peer.mr->rkey,
              static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(peer.buffer.data())));
  std::fflush(stdout);
  unsigned qpn = 0;
  char gid[33] = {};
  if (std::scanf("%u %32s", &qpn, gid) != 2) return 1;
  if (peer.connect(qpn, gid_from_hex(gid)) != 0) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  while (true) pause();
}

struct PeerProcess {
  pid_t pid = -1;
  FILE* from_peer = nullptr;
  FILE* to_peer = nullptr;
  std::uint32_t qpn = 0;
  ibv_gid gid{};
  std::uint32_t rkey = 0;
  std::uint64_t address = 0;
};

PeerProcess start_peer() {
  int down[2], up[2];
  if (pipe(down) != 0 || pipe(up) != 0) throw std::runtime_error("pipe");
  PeerProcess peer;
  peer.pid = fork();
  if (peer.pid == 0) {
    dup2(down[0], 0);
    dup2(up[1], 1);
    close(down[1]);
    close(up[0]);
    setenv("UROCE_ADDRESS", kPeerAddress, 1);
    execl("/proc/self/exe", "peer_kill_test", "--peer", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(down[0]);
  close(up[1]);
  peer.from_peer = fdopen(up[0], "r");
  peer.to_peer = fdopen(down[1], "w");
  unsigned qpn = 0, rkey = 0;
  unsigned long long address = 0;
  char gid[33] = {};
  if (std::fscanf(peer.from_peer, "%u %32s %u %llu", &qpn, gid, &rkey, &address) != 4) {
    throw std::runtime_error("the peer did not start");
  }
  peer.qpn = qpn;
  peer.gid = gid_from_hex(gid);
  peer.rkey = rkey;
  peer.address = address;
  return peer;
}

void finish_handshake(PeerProcess& peer, const Verbs& survivor) {
  std::fprintf(peer.to_peer, "%u %s\n", survivor.qp->qp_num, survivor.gid_hex().c_str());
  std::fflush(peer.to_peer);
  char word[16] = {};
  ASSERT_EQ(std::fscanf(peer.from_peer, "%15s", word), 1);
  ASSERT_STREQ(word, "ready");
}

void stop_peer(PeerProcess& peer) {
  kill(peer.pid, SIGKILL);
  waitpid(peer.pid, nullptr, 0);
  std::fclose(peer.from_peer);
  std::fclose(peer.to_peer);
}

ibv_send_wr write_wr(Verbs& survivor, ibv_sge& sge, const PeerProcess& peer, std::uint64_t id) {
  sge = {reinterpret_cast<std::uintptr_t>(survivor.buffer.data()), 64 * 1024, survivor.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = id;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = peer.address + (id % 16) * 64 * 1024;
  wr.wr.rdma.rkey = peer.rkey;
  return wr;
}

// Polls until `count` completions arrived or the deadline passed.
std::vector<ibv_wc> poll_for(Verbs& survivor, std::size_t count, std::chrono::milliseconds limit) {
  std::vector<ibv_wc> all;
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (all.size() < count && std::chrono::steady_clock::now() < deadline) {
    ibv_wc batch[16];
    int n = ibv_poll_cq(survivor.cq, 16, batch);
    EXPECT_GE(n, 0);
    all.insert(all.end(), batch, batch + std::max(n, 0));
    if (n == 0) usleep(100);
  }
  return all;
}

TEST(PeerKill, SurvivorGetsRetryExceededThenFlushesAndReconnectsToARestartedPeer) {
  ASSERT_EQ(setenv("UROCE_ADDRESS", kSurvivorAddress, 1), 0);
  Verbs survivor;
  ASSERT_TRUE(survivor.open());
  PeerProcess peer = start_peer();
  ASSERT_EQ(survivor.connect(peer.qpn, peer.gid), 0);
  ASSERT_NO_FATAL_FAILURE(finish_handshake(peer, survivor));

  // A stream of 64 KiB WRITEs; the peer dies once some have completed.
  ibv_sge sge;
  constexpr std::uint64_t kBefore = 32, kInFlight = 64;
  for (std::uint64_t id = 0; id < kBefore; ++id) {
    ibv_send_wr wr = write_wr(survivor, sge, peer, id), *bad = nullptr;
    ASSERT_EQ(ibv_post_send(survivor.qp, &wr, &bad), 0);
  }
  auto done = poll_for(survivor, kBefore, std::chrono::seconds(10));
  ASSERT_EQ(done.size(), kBefore);
  for (const ibv_wc& wc : done) EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);

  stop_peer(peer);
  auto killed_at = std::chrono::steady_clock::now();
  for (std::uint64_t id = 0; id < kInFlight; ++id) {
    ibv_send_wr wr = write_wr(survivor, sge, peer, 100 + id), *bad = nullptr;
    ASSERT_EQ(ibv_post_send(survivor.qp, &wr, &bad), 0);
  }
  auto failed = poll_for(survivor, kInFlight, std::chrono::seconds(10));
  double took_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - killed_at).count();
  ASSERT_EQ(failed.size(), kInFlight) << "the survivor hangs";
  EXPECT_EQ(failed[0].status, IBV_WC_RETRY_EXC_ERR) << ibv_wc_status_str(failed[0].status);
  EXPECT_EQ(failed[0].wr_id, 100u);
  for (std::size_t i = 1; i < failed.size(); ++i) {
    EXPECT_EQ(failed[i].status, IBV_WC_WR_FLUSH_ERR) << i;
    EXPECT_EQ(failed[i].wr_id, 100 + i);
  }
  // (retry_cnt + 1) tries of the 67 ms timeout: 268 ms; allow scheduling slack.
  EXPECT_LT(took_ms, 2000.0);
  std::printf("retry budget %.1f ms; the survivor reported the dead peer after %.1f ms\n",
              (kRetryCount + 1) * 4.096e-3 * (1 << kTimeout), took_ms);
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(survivor.qp, &attr, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(attr.qp_state, IBV_QPS_ERR);
  // Work posted to a QP in error is flushed too.
  ibv_send_wr wr = write_wr(survivor, sge, peer, 999), *bad = nullptr;
  ASSERT_EQ(ibv_post_send(survivor.qp, &wr, &bad), 0);
  auto flushed = poll_for(survivor, 1, std::chrono::seconds(5));
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_EQ(flushed[0].status, IBV_WC_WR_FLUSH_ERR);

  // The peer comes back on the same address with a new QP; the survivor
  // reuses its QP through RESET, and WRITEs complete again.
  PeerProcess again = start_peer();
  // A patient budget here (4 tries of 268 ms): the new process may still be
  // finding its feet on a loaded machine; this part tests reconnection, not timing.
  ASSERT_EQ(survivor.connect(again.qpn, again.gid, 16), 0);
  ASSERT_NO_FATAL_FAILURE(finish_handshake(again, survivor));
  for (std::uint64_t id = 0; id < 16; ++id) {
    ibv_send_wr next = write_wr(survivor, sge, again, 2000 + id), *next_bad = nullptr;
    ASSERT_EQ(ibv_post_send(survivor.qp, &next, &next_bad), 0);
  }
  auto resumed = poll_for(survivor, 16, std::chrono::seconds(10));
  ASSERT_EQ(resumed.size(), 16u);
  for (const ibv_wc& wc : resumed) EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  stop_peer(again);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--peer") == 0) return run_peer();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
