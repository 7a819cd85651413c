// The engine's internals: its object tables, the ready list and timers
// that schedule QPs, and the three protocol roles (requester.h, completer.h,
// responder.h) that work on one QueuePair at a time through the services of
// role_context.h, which this class provides.
#pragma once

#include <deque>
#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "transport/completer.h"
#include "transport/queue_pair.h"
#include "transport/requester.h"
#include "transport/responder.h"
#include "transport/role_context.h"
#include "uroce/engine.h"
#include "wire/frame.h"

namespace uroce {

class EngineCore : public transport::RoleContext {
 public:
  explicit EngineCore(const EngineConfig& config);

  transport::Requester requester{*this};
  transport::Completer completer{*this, requester};
  transport::Responder responder{*this};

  std::unordered_set<std::uint32_t> pds;
  std::unordered_map<std::uint32_t, transport::QueuePair> qps;
  // qps.find for the packet path, remembering the last two QPs it found (an
  // engine's traffic is mostly one or two QPs, and at thousands of simulated
  // engines the table's buckets and nodes are cache misses). Null if none.
  transport::QueuePair* find_qp(std::uint32_t qpn) {
    for (const RecentQp& recent : recent_qps) {
      if (recent.qp != nullptr && recent.qpn == qpn) return recent.qp;
    }
    auto it = qps.find(qpn);
    if (it == qps.end()) return nullptr;
    recent_qps[1] = recent_qps[0];
    recent_qps[0] = RecentQp{qpn, &it->second};
    return &it->second;
  }
  bool erase_qp(std::uint32_t qpn) {
    for (RecentQp& recent : recent_qps) {
      if (recent.qpn == qpn) recent = RecentQp{};
    }
    return qps.erase(qpn) == 1;
  }
  struct RecentQp {
    std::uint32_t qpn = 0;
    transport::QueuePair* qp = nullptr;
  };
  RecentQp recent_qps[2];
  struct AddressHandle {
    std::uint32_t pd;
    AddressVector av;
  };
  std::unordered_map<std::uint32_t, AddressHandle> address_handles;
  std::uint32_t next_ah = 1;
  std::uint32_t next_srq = 1;
  // UD multicast: each group's attached QPs, in the order they attached.
  std::map<Gid, std::vector<std::uint32_t>> multicast_groups;
  // Hands a datagram to kMulticastQpn to each QP of its group (multicast.cc).
  void on_multicast(const wire::RoceDatagram& datagram, ByteSpan ip_header);
  std::unordered_map<std::uint32_t, std::uint32_t> xrcds;  // XRC domain -> how many SRQs and QPs use it
  std::uint32_t next_xrcd = 1;
  // Timers: one live entry per QP with a deadline (QueuePair::timer_at), so
  // next_deadline and on_timer cost O(log QPs), not a scan of every QP.
  // Entries that no longer match their QP are skipped when they surface.
  struct TimerEntry {
    TimeNs at;
    std::uint32_t qpn;
    bool operator>(const TimerEntry& other) const { return at > other.at; }
  };
  std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<>> timers;
  std::vector<std::uint32_t> due_timers;  // on_timer's scratch list, kept to spare an allocation per call
  std::uint32_t next_pd = 1;
  std::uint32_t next_cq = 1;
  std::uint64_t qpn_state;

  std::uint32_t fresh_qpn();
  // A QP as create_qp makes it, and as it is again after RESET.
  transport::QueuePair fresh_queue_pair(const transport::QpCreation& created) const {
    transport::QueuePair qp(created);
    if (created.congestion_controlled) qp.cc.dcqcn.emplace(config.congestion.dcqcn);
    return qp;
  }
  // Re-arms the QP's timer entry after its deadlines may have moved earlier;
  // a deadline that moved later is found when the early entry fires.
  void schedule_timer(transport::QueuePair& qp);
  // Drops entries of QPs that are gone or re-armed; the earliest live time.
  TimeNs earliest_timer();
  void on_qp_timer(transport::QueuePair& qp, TimeNs now);
  // An extent packet's payload replaced by the bytes it names (extent_packets.cc);
  // false (and the packet dropped or NAKed) when it is not a lone SEND or
  // WRITE of an RC QP or its bytes cannot be read.
  bool take_extent_payload(transport::QueuePair& qp, wire::RocePacket& packet, ExtentSource& extents);
};

}  // namespace uroce
