// The completer's multipath steps (MultipathConfig): what the responder has
// is told to the QP's EntropyPaths, and the PSNs it then finds lost are
// resent at once, ahead of new data, as trimmed ones are.
#include <algorithm>

#include "transport/completer.h"
#include "transport/psn.h"

namespace uroce {

using transport::psn_add;
using transport::psn_at_or_before;
using transport::psn_diff;

void transport::Completer::paths_delivered(transport::QueuePair& qp, std::uint32_t from, std::uint32_t through,
                                           TimeNs now) {
  // Bounded by the window: an ACK never covers more PSNs than can be in flight.
  std::int32_t count = std::min<std::int32_t>(psn_diff(through, from) + 1,
                                              static_cast<std::int32_t>(context_.config.max_inflight_packets));
  for (std::int32_t i = 0; i < count; ++i) qp.req.paths->delivered(psn_add(from, i), now);
}

void transport::Completer::find_lost_paths(transport::QueuePair& qp, TimeNs now) {
  if (!qp.req.any_sent) return;
  std::vector<std::uint32_t>& lost = lost_scratch_;
  lost.clear();
  auto has = [&qp](std::uint32_t psn) {
    return psn_at_or_before(psn, qp.comp.acked_psn) || qp.comp.sacks->marked(psn);
  };
  qp.req.paths->find_lost(psn_add(qp.comp.acked_psn, 1), qp.req.highest_sent_psn, now, has, lost);
  for (std::uint32_t psn : lost) {
    if (std::find(qp.req.trimmed_resends.begin(), qp.req.trimmed_resends.end(), psn) != qp.req.trimmed_resends.end())
      continue;
    if (qp.req.trimmed_resends.size() >= context_.config.max_inflight_packets)
      break;  // bounded; the timer covers the rest
    qp.req.trimmed_resends.push_back(psn);
  }
  if (!lost.empty()) context_.mark_ready(qp);
}

}  // namespace uroce
