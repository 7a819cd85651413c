// Receive checks made before transport processing (see receive_checks.h).
#include "transport/receive_checks.h"

#include <type_traits>
#include <variant>

namespace uroce::transport {

Gid source_gid(const wire::RoceDatagram& datagram) {
  return std::visit(
      [](const auto& ip) {
        if constexpr (std::is_same_v<std::decay_t<decltype(ip)>, wire::Ipv4Repr>) return gid_from_ipv4(ip.src);
        else return Gid(ip.src);
      },
      datagram.ip);
}

Gid destination_gid(const wire::RoceDatagram& datagram) {
  return std::visit(
      [](const auto& ip) {
        if constexpr (std::is_same_v<std::decay_t<decltype(ip)>, wire::Ipv4Repr>) return gid_from_ipv4(ip.dst);
        else return Gid(ip.dst);
      },
      datagram.ip);
}

bool pkey_matches(std::uint16_t packet_pkey, std::uint16_t table_pkey) {
  constexpr std::uint16_t kMembership = 0x8000, kKeyBits = 0x7FFF;
  if ((packet_pkey & kKeyBits) == 0 || (table_pkey & kKeyBits) == 0) return false;
  if ((packet_pkey & kKeyBits) != (table_pkey & kKeyBits)) return false;
  return (packet_pkey & kMembership) != 0 || (table_pkey & kMembership) != 0;
}

Rejection check_pkey(const wire::RocePacket& packet) {
  return pkey_matches(packet.headers.bth.pkey, wire::kDefaultPkey) ? Rejection::none : Rejection::pkey;
}

Rejection check_sender(const QueuePair& qp, const wire::RoceDatagram& datagram) {
  if (qp.type == QpType::ud) {
    const auto& deth = datagram.packet.headers.deth;
    return deth && deth->qkey == qp.attr.qkey ? Rejection::none : Rejection::qkey;
  }
  return source_gid(datagram) == qp.attr.ah_attr.dgid ? Rejection::none : Rejection::source_address;
}

bool drop_if_rejected(EngineCounters& counters, Rejection rejection) {
  switch (rejection) {
    case Rejection::none: return false;
    case Rejection::pkey: ++counters.pkey_mismatches; break;
    case Rejection::qkey: ++counters.qkey_mismatches; break;
    case Rejection::source_address: ++counters.wrong_source_packets; break;
    case Rejection::cnp_source: ++counters.cnps_rejected; break;
  }
  return true;
}

}  // namespace uroce::transport
