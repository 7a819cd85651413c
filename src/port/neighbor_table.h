// The raw port's IPv4 neighbour table: the MAC address behind each peer
// address, learned from ARP, and the datagrams that wait while a peer's
// address is being resolved (a bounded queue per peer, oldest dropped first).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/bytes.h"
#include "uroce/vocabulary.h"
#include "wire/ethernet.h"

namespace uroce::port {

using Ipv4Address = std::array<std::uint8_t, 4>;

class NeighborTable {
 public:
  struct Options {
    std::size_t held_per_neighbor = 256;
    TimeNs request_interval_ns = 100'000'000;  // ARP requests for one address at most this often
    // Addresses learned without being asked for (the sender of an ARP request
    // for us) are kept only while the table has fewer entries than this, so
    // a flood of requests from made-up senders cannot grow it without bound.
    std::size_t max_entries = 4096;
  };

  NeighborTable() = default;
  explicit NeighborTable(Options options) : options_(options) {}

  const wire::MacAddress* find(Ipv4Address ip) const;

  struct HoldResult {
    bool send_request = false;  // no request went out for this address recently: send one now
    bool dropped_oldest = false;
  };
  // Keeps a copy of a datagram for ip until ip resolves.
  HoldResult hold(Ipv4Address ip, ByteSpan datagram, TimeNs now);

  // Records ip's MAC address; returns the datagrams that waited for it, oldest
  // first. An address not in the table is not added once it is full.
  std::vector<std::vector<std::uint8_t>> learn(Ipv4Address ip, const wire::MacAddress& mac);
  std::size_t size() const { return entries_.size(); }

  // Whether ip is resolved or being resolved (ARP from such a peer is worth learning).
  bool knows(Ipv4Address ip) const { return entries_.count(key(ip)) != 0; }

 private:
  struct Entry {
    std::optional<wire::MacAddress> mac;
    std::deque<std::vector<std::uint8_t>> held;
    std::optional<TimeNs> last_request;
  };
  static std::uint32_t key(Ipv4Address ip) { return load_be32(ip.data()); }

  Options options_;
  std::unordered_map<std::uint32_t, Entry> entries_;
};

}  // namespace uroce::port
