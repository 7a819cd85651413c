// The README's engine example, whole: two uroce engines (two soft RNICs)
// joined by a loop that carries their IP datagrams to each other, one RC
// QP on each, and a 64 KiB RDMA WRITE from the first into the second's
// memory, checked byte for byte. No socket, thread or clock: the loop is
// the network and `now` is the time. Built with the project and run by its
// tests (ctest -R EngineExample).
#include <cstdio>
#include <cstring>
#include <vector>

#include "uroce/engine.h"

using namespace uroce;

namespace {

struct Rnic {
  Engine engine;
  std::uint32_t pd = 0, cq = 0, qpn = 0;
  explicit Rnic(std::array<std::uint8_t, 4> address) : engine(config_for(address)) {
    pd = *engine.alloc_pd();
    cq = *engine.create_cq(256);
    QpInitAttr init;
    init.pd = pd;
    init.send_cq = init.recv_cq = cq;
    init.cap = {64, 64, 1, 1, 0};
    qpn = *engine.create_qp(init);
  }
  static EngineConfig config_for(std::array<std::uint8_t, 4> address) {
    EngineConfig config;
    config.gid = gid_from_ipv4(address);
    return config;
  }
};

// RESET -> INIT -> RTR -> RTS, checked as ibv_modify_qp checks it.
bool connect(Rnic& self, const Rnic& peer) {
  QpAttr attr;
  attr.qp_state = QpState::init;
  attr.qp_access_flags = kAccessLocalWrite | kAccessRemoteWrite;
  attr.port_num = 1;
  if (self.engine.modify_qp(self.qpn, attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags) !=
      std::errc{}) {
    return false;
  }
  attr.qp_state = QpState::rtr;
  attr.path_mtu = PathMtu::mtu4096;
  attr.dest_qp_num = peer.qpn;
  attr.rq_psn = 0;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 1;
  attr.ah_attr.dgid = peer.engine.gid();
  if (self.engine.modify_qp(self.qpn, attr,
                            kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn |
                                kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer) != std::errc{}) {
    return false;
  }
  attr.qp_state = QpState::rts;
  attr.sq_psn = 0;
  attr.timeout = 14;  // 4.096 us << 14: 67 ms
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 1;
  return self.engine.modify_qp(self.qpn, attr,
                               kQpAttrState | kQpAttrSqPsn | kQpAttrTimeout | kQpAttrRetryCnt | kQpAttrRnrRetry |
                                   kQpAttrMaxQpRdAtomic) == std::errc{};
}

}  // namespace

int main() {
  Rnic a({10, 0, 0, 1});
  Rnic b({10, 0, 0, 2});
  if (!connect(a, b) || !connect(b, a)) {
    std::fprintf(stderr, "modify_qp refused a transition\n");
    return 1;
  }
  std::vector<std::uint8_t> source(64 << 10), sink(64 << 10, 0);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::uint8_t>(i * 7);
  MrKeys local = *a.engine.reg_mr(a.pd, source.data(), source.size(), kAccessLocalWrite);
  MrKeys remote = *b.engine.reg_mr(b.pd, sink.data(), sink.size(), kAccessLocalWrite | kAccessRemoteWrite);

  // SendWr, RecvWr and WorkCompletion mirror the ibv_* fields and numbering.
  Sge sge{reinterpret_cast<std::uintptr_t>(source.data()), static_cast<std::uint32_t>(source.size()), local.lkey};
  SendWr write;
  write.wr_id = 42;
  write.opcode = WrOpcode::rdma_write;
  write.send_flags = kSendSignaled;
  write.sg_list = {&sge, 1};
  write.rdma = {reinterpret_cast<std::uintptr_t>(sink.data()), remote.rkey};
  if (a.engine.post_send(a.qpn, write) != std::errc{}) return 1;

  // The driver's loop: what one engine transmits, the other receives, 1 us later.
  std::vector<std::uint8_t> datagram(kMaxDatagramLength);
  WorkCompletion completion;
  for (TimeNs now = 0; now < 1'000'000; now += 1'000) {
    for (auto [from, to] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
      // Each datagram comes described (uroce/transmit.h): a real driver
      // routes it by sent.destination and sent.source_port, unread.
      while (Transmit sent = from->engine.poll_transmit(datagram, now)) {
        to->engine.on_datagram({datagram.data(), sent.length}, now);
      }
      if (from->engine.next_deadline() <= now) from->engine.on_timer(now);
    }
    if (*a.engine.poll_cq(a.cq, {&completion, 1}) == 1) break;
  }
  if (completion.wr_id != 42 || completion.status != WcStatus::success) {
    std::fprintf(stderr, "the WRITE did not complete\n");
    return 1;
  }
  bool same = std::memcmp(source.data(), sink.data(), sink.size()) == 0;
  std::printf("64 KiB RDMA WRITE from 10.0.0.1 to 10.0.0.2: %s\n", same ? "every byte arrived" : "WRONG BYTES");
  return same ? 0 : 1;
}
