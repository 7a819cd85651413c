// Forged datagrams with valid ICRCs (see forged_datagram.h).
#include "tests/support/forged_datagram.h"

#include <cstring>
#include <stdexcept>

#include "wire/ipv4.h"
#include "wire/opcode.h"
#include "wire/udp.h"

namespace uroce::testing {

namespace {

std::vector<std::uint8_t> emit_datagram(const wire::RoceDatagramSpec& spec, std::span<const std::uint8_t> payload) {
  std::vector<std::uint8_t> out(9000);
  auto layout = wire::begin_roce_datagram(spec, payload.size(), out);
  if (!layout) throw std::runtime_error("forge: the headers do not fit the opcode");
  if (!payload.empty()) std::memcpy(out.data() + layout->payload_offset, payload.data(), payload.size());
  wire::seal_roce_datagram(out, *layout);
  out.resize(layout->length);
  return out;
}

}  // namespace

std::vector<std::uint8_t> forge(std::span<const std::uint8_t> datagram, const Forgery& forgery) {
  auto parsed = wire::parse_roce_datagram(datagram);
  if (!parsed || !std::holds_alternative<wire::Ipv4Repr>(parsed->ip)) {
    throw std::runtime_error("forge: not an IPv4 RoCEv2 datagram");
  }
  wire::RoceDatagramSpec spec{parsed->ip, parsed->udp, parsed->packet.headers};
  if (forgery.source) std::get<wire::Ipv4Repr>(spec.ip).src = *forgery.source;
  if (forgery.edit_headers) forgery.edit_headers(spec.headers);
  std::vector<std::uint8_t> payload(parsed->packet.payload.begin(), parsed->packet.payload.end());
  if (forgery.payload) payload = *forgery.payload;
  return emit_datagram(spec, payload);
}

std::vector<std::uint8_t> forge_cnp(std::array<std::uint8_t, 4> source, std::array<std::uint8_t, 4> destination,
                                    std::uint32_t dest_qp) {
  wire::Ipv4Repr ip;
  ip.src = source;
  ip.dst = destination;
  wire::UdpRepr udp;  // source port in the RoCE range, to 4791
  wire::TransportHeaders headers;
  headers.bth.opcode = wire::opcode::kCnp;
  headers.bth.dest_qp = dest_qp;
  return emit_datagram(wire::RoceDatagramSpec{ip, udp, headers}, {});
}

}  // namespace uroce::testing
