// Per-link byte counts by interval, from taps on the transmitters.
#include "sim/link_load.h"

#include <set>
#include <tuple>

namespace uroce::sim {

class LinkLoad::Tap final : public PacketTap {
 public:
  // transmitter: nullptr where another rank sends on the link (its series stays empty here).
  Tap(Transmitter* transmitter, NodeRef from, NodeRef to, std::uint64_t rate_bps, SimTime interval)
      : transmitter_(transmitter), next_(transmitter != nullptr ? transmitter->tap() : nullptr), interval_(interval) {
    series_.from = from;
    series_.to = to;
    series_.rate_bps = rate_bps;
    if (transmitter != nullptr) transmitter->set_tap(this);
  }
  ~Tap() override {
    if (transmitter_ != nullptr) transmitter_->set_tap(next_);
  }

  void on_transmit(const Packet& packet, SimTime now) override {
    auto bucket = static_cast<std::size_t>(now / interval_);
    if (bucket >= series_.bytes.size()) series_.bytes.resize(bucket + 1, 0);
    series_.bytes[bucket] += packet.wire_bytes;
    if (next_ != nullptr) next_->on_transmit(packet, now);
  }
  const LinkLoadSeries& series() const { return series_; }

 private:
  Transmitter* transmitter_;
  PacketTap* next_;
  SimTime interval_;
  LinkLoadSeries series_;
};

LinkLoad::LinkLoad(Fabric& fabric, const Topology& topology, SimTime interval) : interval_(interval) {
  std::set<std::tuple<bool, std::uint32_t, bool, std::uint32_t>> tapped;  // parallel links: the first only
  for (const TopologyEdge& edge : topology.edges) {
    for (auto [from, to] : {std::pair{edge.a, edge.b}, std::pair{edge.b, edge.a}}) {
      if (!tapped.emplace(from.is_host, from.index, to.is_host, to.index).second) continue;
      if (!fabric.linked(from, to)) continue;
      taps_.push_back(std::make_unique<Tap>(fabric.transmitter_between(from, to), from, to, edge.link.rate_bps, interval));
    }
  }
}

LinkLoad::~LinkLoad() {
  // Untap in reverse, so each transmitter gets back the tap it had.
  while (!taps_.empty()) taps_.pop_back();
}

std::vector<LinkLoadSeries> LinkLoad::series() const {
  std::vector<LinkLoadSeries> out;
  out.reserve(taps_.size());
  for (const auto& tap : taps_) out.push_back(tap->series());
  return out;
}

void add_up_over_ranks(RankGroup& ranks, std::vector<LinkLoadSeries>& series) {
  if (ranks.size() == 1) return;
  std::vector<std::uint64_t> lengths;
  for (const LinkLoadSeries& link : series) lengths.push_back(link.bytes.size());
  ranks.max(lengths);
  std::vector<std::uint64_t> all;
  for (std::size_t i = 0; i < series.size(); ++i) {
    series[i].bytes.resize(lengths[i], 0);
    all.insert(all.end(), series[i].bytes.begin(), series[i].bytes.end());
  }
  ranks.sum(all);
  std::size_t at = 0;
  for (LinkLoadSeries& link : series) {
    for (std::uint64_t& bytes : link.bytes) bytes = all[at++];
  }
}

}  // namespace uroce::sim
