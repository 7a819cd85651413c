// Test helpers that build valid RoCEv2 frames.
#include "tests/support/frame_builder.h"

#include <stdexcept>

namespace uroce::testing {

wire::TransportHeaders headers_for(std::uint8_t opcode, std::uint32_t seed) {
  const wire::OpcodeInfo* op = wire::find_opcode(opcode);
  if (op == nullptr) throw std::invalid_argument("not an opcode");
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull;
  wire::TransportHeaders h;
  h.bth.opcode = opcode;
  h.bth.solicited_event = (seed & 1) != 0;
  h.bth.ack_req = (seed & 2) != 0;
  h.bth.dest_qp = static_cast<std::uint32_t>(s >> 40) & 0xFFFFFF;
  h.bth.psn = static_cast<std::uint32_t>(s >> 8) & 0xFFFFFF;
  if (op->transport == wire::Transport::cnp) {
    h.bth.becn = true;
    h.bth.psn = 0;
    h.bth.solicited_event = h.bth.ack_req = false;
  }
  if (op->has(wire::kExtDeth)) h.deth = wire::DethRepr{0x11111111u + seed, 0x00ABCDEFu ^ seed};
  if (op->has(wire::kExtXrceth)) h.xrceth = wire::XrcethRepr{(0x00C0FFEEu + seed) & 0xFFFFFF};
  if (op->has(wire::kExtReth)) h.reth = wire::RethRepr{s, 0xCAFE0000u + seed, 4096 * seed};
  if (op->has(wire::kExtAtomicEth)) h.atomic_eth = wire::AtomicEthRepr{s & ~7ull, 0xBEEFu + seed, ~s, s ^ 0x55};
  if (op->has(wire::kExtAeth)) h.aeth = wire::AethRepr{wire::kCreditNoLimit, (seed * 7) & 0xFFFFFF};
  if (op->has(wire::kExtAtomicAckEth)) h.atomic_ack_eth = wire::AtomicAckEthRepr{s * 3};
  if (op->has(wire::kExtImmDt)) h.imm_dt = wire::ImmDtRepr{0xDEAD0000u + seed};
  if (op->has(wire::kExtIeth)) h.ieth = wire::IethRepr{0xF00D0000u + seed};
  return h;
}

wire::RoceFrameSpec frame_spec(const wire::TransportHeaders& headers, std::span<const std::uint8_t> payload,
                               int ip_version, bool vlan) {
  wire::RoceFrameSpec spec;
  spec.ethernet.dst = {0x02, 0, 0, 0, 0, 2};
  spec.ethernet.src = {0x02, 0, 0, 0, 0, 1};
  if (vlan) spec.ethernet.vlan = wire::VlanTag{3, false, 100};
  if (ip_version == 4) {
    spec.ethernet.ethertype = wire::kEthertypeIpv4;
    wire::Ipv4Repr ip;
    ip.src = {10, 0, 0, 1};
    ip.dst = {10, 0, 0, 2};
    ip.dscp = 26;
    ip.ecn = wire::Ecn::ect0;
    spec.ip = ip;
  } else {
    spec.ethernet.ethertype = wire::kEthertypeIpv6;
    wire::Ipv6Repr ip;
    ip.src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    ip.dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    ip.dscp = 26;
    ip.ecn = wire::Ecn::ect0;
    ip.flow_label = 0x12345;
    spec.ip = ip;
  }
  spec.udp.src_port = wire::roce_source_port(headers.bth.dest_qp);
  spec.headers = headers;
  spec.payload = payload;
  return spec;
}

std::vector<std::uint8_t> emit(const wire::RoceFrameSpec& spec) {
  std::vector<std::uint8_t> frame(9000);
  auto length = wire::emit_roce_frame(spec, frame);
  if (!length) throw std::runtime_error(std::string(wire::to_string(length.error())));
  frame.resize(*length);
  return frame;
}

std::vector<std::uint8_t> all_opcodes() {
  std::vector<std::uint8_t> opcodes;
  for (int value = 0; value < 256; ++value) {
    if (wire::find_opcode(static_cast<std::uint8_t>(value))) opcodes.push_back(static_cast<std::uint8_t>(value));
  }
  return opcodes;
}

}  // namespace uroce::testing
