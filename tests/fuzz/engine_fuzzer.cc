// libFuzzer target: hostile datagrams into two connected engines (a requester
// with READ, atomic, WRITE and SEND in flight, and a responder with registered
// memory and posted receives; one pair is multipath, with direct placement). Each input is a list of records; each record is
// turned into a datagram with valid IP/UDP headers and ICRC around fuzzer
// chosen transport bytes, so the fuzzer reaches the transport logic instead of
// the ICRC check. Registered regions sit inside guard bytes that must never
// change (and are separate heap blocks, so ASan sees any stray access). A
// record may come as from a local device's shared memory, whose extent
// packets name bytes of a guarded stand-in for the sender's file. An XRC
// opcode goes to an XRC pair, whose receiving half takes receives from the
// XRC SRQ the forged XRCETH names.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "tests/support/test_network.h"
#include "wire/icrc.h"
#include "wire/ipv4.h"
#include "wire/udp.h"

using namespace uroce;

namespace {

const Gid kGroup = gid_from_ipv4({239, 0, 0, 1});  // the multicast group B's UD QP is in

constexpr std::size_t kGuard = 64;
constexpr std::uint8_t kGuardByte = 0xA5;
constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

// A heap block with guard bytes on both sides of the registered middle.
struct GuardedRegion {
  explicit GuardedRegion(std::size_t size) : bytes(size + 2 * kGuard, kGuardByte) {
    std::fill(bytes.begin() + kGuard, bytes.end() - kGuard, 0x5A);
  }
  std::uint8_t* data() { return bytes.data() + kGuard; }
  std::size_t size() const { return bytes.size() - 2 * kGuard; }
  bool guards_intact() const {
    for (std::size_t i = 0; i < kGuard; ++i) {
      if (bytes[i] != kGuardByte || bytes[bytes.size() - 1 - i] != kGuardByte) return false;
    }
    return true;
  }
  std::vector<std::uint8_t> bytes;
};

// A local peer's shared region file: any extent inside it reads it.
struct FileExtents : ExtentSource {
  std::optional<std::span<const std::uint8_t>> resolve(const PayloadExtent& extent, std::uint64_t length) override {
    if (extent.offset > file.size() || length > file.size() - extent.offset) return std::nullopt;
    return std::span<const std::uint8_t>(file.data() + extent.offset, length);
  }
  // A peer's memory: the same bytes, at addresses counted from 0.
  bool may_read_process(std::uint32_t, std::uint64_t address) override { return address < file.size(); }
  std::uint64_t copy_from_process(std::uint32_t, std::uint64_t address, void* to, std::uint64_t length) override {
    if (address >= file.size()) return 0;
    std::uint64_t n = std::min<std::uint64_t>(length, file.size() - address);
    std::memcpy(to, file.data() + address, n);
    return n;
  }
  GuardedRegion file{65536};
};

struct Harness {
  testing::TestNetwork network{1, testing::ChannelFaults{}};
  testing::Endpoint a, b;        // RC, with work in flight
  testing::Endpoint uc_a, uc_b;  // UC
  testing::Endpoint sr_a, sr_b;  // RC with selective repeat and a tail timeout, with work in flight
  testing::Endpoint mp_a, mp_b;  // RC with multipath (8 EVs), with work in flight
  std::uint32_t ud_b = 0;        // a UD QP on B
  std::uint32_t xrc_a = 0, xrc_b = 0, xrc_srq_b = 0;  // XRC: the sending half on A, the receiving half and its SRQ on B
  GuardedRegion a_local{4096}, b_remote{4096}, b_recv{2048};
  GuardedRegion sr_local{4096}, sr_remote{4096};
  GuardedRegion mp_local{4096}, mp_remote{4096};
  GuardedRegion xrc_remote{4096};
  MrKeys a_keys, b_keys, b_recv_keys;

  Harness() {
    Engine& engine_a = network.add_engine();
    Engine& engine_b = network.add_engine();
    testing::RcOptions options;
    options.timeout = 8;
    options.retry_cnt = 2;
    options.rnr_retry = 1;
    std::tie(a, b) = testing::connect_rc(engine_a, engine_b, options);
    options.recovery = LossRecovery::selective_repeat;
    options.tail_timeout_ns = 100'000;  // and IRN's short timeout for tail losses
    std::tie(sr_a, sr_b) = testing::connect_rc(engine_a, engine_b, options);
    options.multipath.entropy_values = 8;
    std::tie(mp_a, mp_b) = testing::connect_rc(engine_a, engine_b, options);
    options.multipath.entropy_values = 0;
    options.recovery = LossRecovery::go_back_n;
    options.tail_timeout_ns = 0;
    options.type = QpType::uc;
    std::tie(uc_a, uc_b) = testing::connect_rc(engine_a, engine_b, options);
    QpInitAttr ud_init;
    ud_init.qp_type = QpType::ud;
    ud_init.pd = b.pd;
    ud_init.send_cq = ud_init.recv_cq = b.cq;
    ud_init.cap = QpCap{4, 4, 1, 1, 0};
    ud_b = *engine_b.create_qp(ud_init);
    QpAttr ud_attr;
    ud_attr.qp_state = QpState::init;
    ud_attr.qkey = 0;
    engine_b.modify_qp(ud_b, ud_attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrQkey);
    ud_attr.qp_state = QpState::rtr;
    engine_b.modify_qp(ud_b, ud_attr, kQpAttrState);
    a_keys = *engine_a.reg_mr(a.pd, a_local.data(), a_local.size(), kAll);
    b_keys = *engine_b.reg_mr(b.pd, b_remote.data(), b_remote.size(), kAll);
    b_recv_keys = *engine_b.reg_mr(b.pd, b_recv.data(), b_recv.size(), kAll);
    Sge recv{reinterpret_cast<std::uintptr_t>(b_recv.data()), 2048, b_recv_keys.lkey};
    engine_b.post_recv(b.qpn, RecvWr{1, {&recv, 1}});
    engine_b.post_recv(uc_b.qpn, RecvWr{2, {&recv, 1}});
    engine_b.post_recv(ud_b, RecvWr{3, {&recv, 1}});
    // B's UD QP is in a multicast group too: a datagram to QPN 0xFFFFFF goes to the group.
    engine_b.attach_multicast(ud_b, kGroup);

    // Work in flight on A, so forged responses find something to match.
    auto remote = reinterpret_cast<std::uintptr_t>(b_remote.data());
    auto local = reinterpret_cast<std::uintptr_t>(a_local.data());
    Sge read_sge{local, 3000, a_keys.lkey}, atomic_sge{local + 3000, 8, a_keys.lkey},
        write_sge{local, 1500, a_keys.lkey};
    SendWr read;
    read.opcode = WrOpcode::rdma_read;
    read.sg_list = {&read_sge, 1};
    read.rdma = {remote + 100, b_keys.rkey};
    SendWr atomic;
    atomic.opcode = WrOpcode::atomic_cmp_and_swp;
    atomic.sg_list = {&atomic_sge, 1};
    atomic.atomic = {remote + 8, 1, 2, b_keys.rkey};
    SendWr write;
    write.opcode = WrOpcode::rdma_write;
    write.sg_list = {&write_sge, 1};
    write.rdma = {remote + 2000, b_keys.rkey};
    SendWr send = write;
    send.opcode = WrOpcode::send;
    for (const SendWr& wr : {read, atomic, write, send}) engine_a.post_send(a.qpn, wr);

    MrKeys sr_local_keys = *engine_a.reg_mr(sr_a.pd, sr_local.data(), sr_local.size(), kAll);
    MrKeys sr_remote_keys = *engine_b.reg_mr(sr_b.pd, sr_remote.data(), sr_remote.size(), kAll);
    Sge sr_recv{reinterpret_cast<std::uintptr_t>(sr_remote.data()) + 2048, 2048, sr_remote_keys.lkey};
    engine_b.post_recv(sr_b.qpn, RecvWr{4, {&sr_recv, 1}});
    Sge sr_sge{reinterpret_cast<std::uintptr_t>(sr_local.data()), 3000, sr_local_keys.lkey};
    write.sg_list = {&sr_sge, 1};
    write.rdma = {reinterpret_cast<std::uintptr_t>(sr_remote.data()), sr_remote_keys.rkey};
    read.sg_list = {&sr_sge, 1};
    read.rdma = write.rdma;
    engine_a.post_send(sr_a.qpn, write);
    engine_a.post_send(sr_a.qpn, read);

    MrKeys mp_local_keys = *engine_a.reg_mr(mp_a.pd, mp_local.data(), mp_local.size(), kAll);
    MrKeys mp_remote_keys = *engine_b.reg_mr(mp_b.pd, mp_remote.data(), mp_remote.size(), kAll);
    Sge mp_sge{reinterpret_cast<std::uintptr_t>(mp_local.data()), 3000, mp_local_keys.lkey};
    write.sg_list = {&mp_sge, 1};
    write.rdma = {reinterpret_cast<std::uintptr_t>(mp_remote.data()), mp_remote_keys.rkey};
    read.sg_list = {&mp_sge, 1};
    read.rdma = write.rdma;
    engine_a.post_send(mp_a.qpn, write);
    engine_a.post_send(mp_a.qpn, read);
    // Receives a forged SEND's placement header may name (direct placement).
    for (std::uint64_t i = 0; i < 2; ++i) {
      Sge mp_recv{reinterpret_cast<std::uintptr_t>(mp_remote.data()) + 2048 + i * 1024, 1024, mp_remote_keys.lkey};
      engine_b.post_recv(mp_b.qpn, RecvWr{5 + i, {&mp_recv, 1}});
    }
    make_xrc_pair(engine_a, engine_b, write);
  }

  // XRC: an xrc_send QP on A with a WRITE in flight, an xrc_recv QP on B
  // whose domain has an XRC SRQ (its number is XRC_SRQ in the seed corpus)
  // with a receive posted into a guarded region.
  void make_xrc_pair(Engine& engine_a, Engine& engine_b, SendWr write) {
    std::uint32_t xrcd = *engine_b.open_xrcd();
    MrKeys keys = *engine_b.reg_mr(b.pd, xrc_remote.data(), xrc_remote.size(), kAll);
    xrc_srq_b = *engine_b.create_xrc_srq(b.pd, xrcd, b.cq, 4, 1);
    Sge recv{reinterpret_cast<std::uintptr_t>(xrc_remote.data()) + 2048, 2048, keys.lkey};
    engine_b.post_srq_recv(xrc_srq_b, RecvWr{7, {&recv, 1}});
    QpInitAttr target;
    target.qp_type = QpType::xrc_recv;
    target.xrcd = xrcd;
    xrc_b = *engine_b.create_qp(target);
    QpInitAttr sender;
    sender.qp_type = QpType::xrc_send;
    sender.pd = a.pd;
    sender.send_cq = a.cq;
    sender.cap = QpCap{4, 0, 1, 0, 0};
    xrc_a = *engine_a.create_qp(sender);
    for (auto [engine, qpn, peer, peer_engine] :
         {std::tuple{&engine_a, xrc_a, xrc_b, &engine_b}, std::tuple{&engine_b, xrc_b, xrc_a, &engine_a}}) {
      QpAttr attr;
      attr.qp_state = QpState::init;
      attr.qp_access_flags = kAll;
      engine->modify_qp(qpn, attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags);
      attr.qp_state = QpState::rtr;
      attr.dest_qp_num = peer;
      attr.ah_attr.dgid = peer_engine->gid();
      attr.max_dest_rd_atomic = 4;
      engine->modify_qp(qpn, attr, kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn |
                                       kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer);
      attr.qp_state = QpState::rts;
      attr.timeout = 8;
      attr.retry_cnt = 2;
      attr.max_rd_atomic = 4;
      engine->modify_qp(qpn, attr, kQpAttrState | kQpAttrSqPsn | kQpAttrTimeout | kQpAttrRetryCnt | kQpAttrRnrRetry |
                                       kQpAttrMaxQpRdAtomic);
    }
    write.rdma = {reinterpret_cast<std::uintptr_t>(xrc_remote.data()), keys.rkey};
    write.xrc_remote_srqn = xrc_srq_b;
    engine_a.post_send(xrc_a, write);
  }

  // Wraps transport bytes (BTH onwards, ICRC appended here) into a datagram
  // from the other engine to `to`.
  std::vector<std::uint8_t> datagram(Engine& to, Engine& from, const std::uint8_t* transport, std::size_t length) {
    std::vector<std::uint8_t> bytes(wire::kIpv4HeaderLength + wire::kUdpHeaderLength + length + wire::kIcrcLength);
    wire::Ipv4Repr ip;
    std::copy_n(from.gid().begin() + 12, 4, ip.src.begin());
    // A datagram to the multicast QPN is sent to the group, as a multicast sender sends it.
    bool multicast = length >= 8 && load_be24(transport + 5) == kMulticastQpn;
    std::copy_n((multicast ? kGroup : to.gid()).begin() + 12, 4, ip.dst.begin());
    ip.payload_length = static_cast<std::uint16_t>(bytes.size() - wire::kIpv4HeaderLength);
    ip.emit(bytes);
    wire::UdpRepr udp;
    udp.payload_length = static_cast<std::uint16_t>(length + wire::kIcrcLength);
    udp.emit(std::span(bytes).subspan(wire::kIpv4HeaderLength));
    if (length > 0) std::memcpy(bytes.data() + wire::kIpv4HeaderLength + wire::kUdpHeaderLength, transport, length);
    std::uint32_t icrc = wire::compute_icrc(std::span(bytes).first(wire::kIpv4HeaderLength),
                                            std::span(bytes).subspan(wire::kIpv4HeaderLength, bytes.size() -
                                                                                                 wire::kIpv4HeaderLength -
                                                                                                 wire::kIcrcLength));
    store_le32(&bytes[bytes.size() - wire::kIcrcLength], icrc);
    return bytes;
  }

  FileExtents extents;

  bool intact() const {
    return extents.file.guards_intact() && a_local.guards_intact() && b_remote.guards_intact() && b_recv.guards_intact() &&
           sr_local.guards_intact() && sr_remote.guards_intact() && mp_local.guards_intact() &&
           mp_remote.guards_intact() && xrc_remote.guards_intact();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Harness h;
  std::size_t offset = 0;
  std::vector<std::uint8_t> transport;
  while (offset + 3 <= size) {
    std::uint8_t flags = data[offset];
    // The length's top bit: the datagram comes through shared memory.
    bool local = (data[offset + 2] & 0x80) != 0;
    std::size_t length = std::min<std::size_t>(data[offset + 1] | ((data[offset + 2] & 0x7F) << 8), 4200);
    offset += 3;
    length = std::min(length, size - offset);
    transport.assign(data + offset, data + offset + length);
    offset += length;

    bool to_a = (flags & 1) != 0;
    Engine& to = to_a ? *h.a.engine : *h.b.engine;
    Engine& from = to_a ? *h.b.engine : *h.a.engine;
    if ((flags & 2) && transport.size() >= 8) {
      // Bits 6-7 pick the QP: RC (0), UC (1), UD on B or multipath RC on A (2),
      // or selective-repeat RC (3). A UD packet to B from an input whose
      // QPN field is all ones goes to B's multicast group instead.
      std::uint32_t qp_choice = flags >> 6;
      std::uint32_t qpn = to_a ? h.a.qpn : h.b.qpn;
      if (qp_choice == 1) qpn = to_a ? h.uc_a.qpn : h.uc_b.qpn;
      if (qp_choice == 3) qpn = to_a ? h.sr_a.qpn : h.sr_b.qpn;
      if (qp_choice == 2) qpn = to_a ? h.mp_a.qpn : load_be24(&transport[5]) == kMulticastQpn ? kMulticastQpn : h.ud_b;
      if (transport[0] >= 0xA0 && transport[0] <= 0xB7) qpn = to_a ? h.xrc_a : h.xrc_b;  // an XRC opcode: the XRC pair
      store_be24(&transport[5], qpn);
    }
    ExtentSource* extents = local ? &h.extents : nullptr;
    if (flags & 4) {
      to.on_datagram(transport, h.network.now(), true, extents);  // raw bytes as a datagram, no wrapping
    } else {
      auto bytes = h.datagram(to, from, transport.data(), transport.size());
      to.on_datagram(bytes, h.network.now(), true, extents);
    }
    // Let the engines talk and time pass a little (or a lot), bounded.
    TimeNs step = TimeNs{1} << ((flags >> 3) & 7) * 4;
    h.network.run_until([] { return false; }, h.network.now() + step);
    if (!h.intact()) std::abort();
  }
  h.network.run_until([] { return false; }, h.network.now() + 1'000'000'000);
  if (!h.intact()) std::abort();
  return 0;
}
