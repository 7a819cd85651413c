// NeighborTable: resolved addresses and the datagrams held for unresolved ones.
#include "port/neighbor_table.h"

namespace uroce::port {

const wire::MacAddress* NeighborTable::find(Ipv4Address ip) const {
  auto it = entries_.find(key(ip));
  if (it == entries_.end() || !it->second.mac) return nullptr;
  return &*it->second.mac;
}

NeighborTable::HoldResult NeighborTable::hold(Ipv4Address ip, ByteSpan datagram, TimeNs now) {
  Entry& entry = entries_[key(ip)];
  HoldResult result;
  if (entry.held.size() >= options_.held_per_neighbor) {
    entry.held.pop_front();
    result.dropped_oldest = true;
  }
  entry.held.emplace_back(datagram.begin(), datagram.end());
  if (!entry.last_request || now - *entry.last_request >= options_.request_interval_ns) {
    entry.last_request = now;
    result.send_request = true;
  }
  return result;
}

std::vector<std::vector<std::uint8_t>> NeighborTable::learn(Ipv4Address ip, const wire::MacAddress& mac) {
  if (!knows(ip) && entries_.size() >= options_.max_entries) return {};
  Entry& entry = entries_[key(ip)];
  entry.mac = mac;
  std::vector<std::vector<std::uint8_t>> released(std::make_move_iterator(entry.held.begin()),
                                                  std::make_move_iterator(entry.held.end()));
  entry.held.clear();
  return released;
}

}  // namespace uroce::port
