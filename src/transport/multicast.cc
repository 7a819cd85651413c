// UD multicast (IBTA 10.5): which QPs are attached to which group, and the
// delivery of a datagram sent to a group to each of them. The port below
// joins and leaves the groups themselves (runtime/device_multicast.cc).
#include <algorithm>

#include "transport/engine_core.h"
#include "transport/receive_checks.h"
#include "transport/xrc.h"

namespace uroce {

using transport::QueuePair;

Expected<bool, std::errc> Engine::attach_multicast(std::uint32_t qpn, const Gid& group) {
  QueuePair* qp = core_->find_qp(qpn);
  if (qp == nullptr || qp->type != QpType::ud || !gid_is_multicast(group)) {
    return unexpected(std::errc::invalid_argument);
  }
  const DeviceAttributes& limits = core_->config.attributes;
  auto found = core_->multicast_groups.find(group);
  if (found == core_->multicast_groups.end()) {
    if (core_->multicast_groups.size() >= limits.max_mcast_grp) return unexpected(std::errc::not_enough_memory);
    found = core_->multicast_groups.emplace(group, std::vector<std::uint32_t>{}).first;
  }
  std::vector<std::uint32_t>& members = found->second;
  if (std::find(members.begin(), members.end(), qpn) != members.end()) return false;
  if (members.size() >= limits.max_mcast_qp_attach) return unexpected(std::errc::not_enough_memory);
  members.push_back(qpn);
  return members.size() == 1;
}

Expected<bool, std::errc> Engine::detach_multicast(std::uint32_t qpn, const Gid& group) {
  auto found = core_->multicast_groups.find(group);
  if (found == core_->multicast_groups.end()) return unexpected(std::errc::invalid_argument);
  std::vector<std::uint32_t>& members = found->second;
  auto member = std::find(members.begin(), members.end(), qpn);
  if (member == members.end()) return unexpected(std::errc::invalid_argument);
  members.erase(member);
  if (!members.empty()) return false;
  core_->multicast_groups.erase(found);
  return true;
}

std::vector<Gid> Engine::multicast_groups_of(std::uint32_t qpn) const {
  std::vector<Gid> groups;
  for (const auto& [group, members] : core_->multicast_groups) {
    if (std::find(members.begin(), members.end(), qpn) != members.end()) groups.push_back(group);
  }
  return groups;
}

// Only a UD SEND may go to a group; each member checks the Q_Key as for a
// datagram of its own. A member that blocks its own loopback skips what it sent.
void EngineCore::on_multicast(const wire::RoceDatagram& datagram, ByteSpan ip_header) {
  const wire::RocePacket& packet = datagram.packet;
  auto found = multicast_groups.find(transport::destination_gid(datagram));
  if (found == multicast_groups.end() || transport::receiving_qp_type(*packet.op) != QpType::ud ||
      !packet.headers.deth) {
    ++counters.unknown_qp_packets;
    return;
  }
  ++counters.multicast_received;
  bool from_this_engine = transport::source_gid(datagram) == config.gid;
  for (std::uint32_t qpn : found->second) {
    QueuePair* qp = find_qp(qpn);
    if (qp == nullptr) continue;
    if (qp->block_self_multicast && from_this_engine && packet.headers.deth->src_qp == qpn) continue;
    if (transport::drop_if_rejected(counters, transport::check_sender(*qp, datagram))) continue;
    responder.on_datagram(*qp, packet, ip_header);
  }
}

}  // namespace uroce
