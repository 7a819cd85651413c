// The client's side of `uroce perf`: for each message size, one phase
// announced to the server, the timed loop (tx_depth messages in flight on
// every QP for bandwidth, one ping-pong at a time for latency), the optional
// verification, and the table row, which the server prints too.
#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "tools/uroce/perf_report.h"
#include "tools/uroce/perf_session.h"

namespace uroce::tools {
namespace {

std::vector<std::uint32_t> sizes_of(const PerfOptions& options) {
  if (!options.all_sizes) return {options.message_size()};
  if (options.verb() == PerfVerb::atomic) return {8};
  std::vector<std::uint32_t> sizes;
  for (std::uint32_t size = 2; size <= (8u << 20); size *= 2) sizes.push_back(size);
  return sizes;
}

// The work request one message of the test is.
SendWr message(PerfSession& session, PerfQp& qp, const Sge& source, const Sge& target) {
  SendWr wr;
  wr.send_flags = kSendSignaled;
  switch (session.options().verb()) {
    case PerfVerb::write:
      wr.opcode = WrOpcode::rdma_write;
      wr.sg_list = {&source, 1};
      wr.rdma = {session.options().latency() ? session.remote_receive_half(qp) : qp.remote.address, qp.remote.rkey};
      break;
    case PerfVerb::read:
      wr.opcode = WrOpcode::rdma_read;
      wr.sg_list = {&target, 1};
      wr.rdma = {qp.remote.address, qp.remote.rkey};
      break;
    case PerfVerb::send:
      wr.opcode = WrOpcode::send;
      wr.sg_list = {&source, 1};
      break;
    case PerfVerb::atomic:
      wr.opcode = WrOpcode::atomic_fetch_and_add;
      wr.sg_list = {&target, 1};
      wr.atomic.remote_addr = qp.remote.address;
      wr.atomic.compare_add = 1;
      wr.atomic.rkey = qp.remote.rkey;
      break;
  }
  return wr;
}

class Client {
 public:
  explicit Client(PerfSession& session) : session_(session), options_(session.options()) {}

  void run() {
    for (std::uint32_t size : sizes_of(options_)) {
      prepare(size);
      session_.send_line(fmt::format("phase {}", size));
      session_.expect_line("ready", "waiting for the server");
      std::string row = options_.latency() ? latency(size) : bandwidth(size);
      session_.drain_sends();
      session_.send_line("stop");
      session_.expect_line("stopped", "waiting for the server to finish");
      if (options_.verify) verify(size);
      fmt::print("{}\n", row);
      std::fflush(stdout);
      session_.send_line("row " + row);
    }
    fmt::print("{}\n", table_rule());
    EngineCounters counters = session_.counters();
    fmt::print(" packets sent {}, retransmitted {}, timeouts {}, ICRC errors {}\n", counters.packets_sent,
               counters.retransmitted_packets, counters.timeouts, counters.icrc_errors);
    if (options_.multipath_evs != 0) {
      fmt::print(" multipath: {} EVs, lost {}, EVs retired {}, probes {}, restored {}\n", options_.multipath_evs,
                 counters.paths_lost, counters.paths_retired, counters.paths_probes, counters.paths_restored);
    }
    if (options_.local_path) {
      fmt::print(" through shared memory: {} of the packets sent\n", session_.port_counters().local_sends);
    }
    if (options_.shared_region) {
      fmt::print(" naming their bytes (--shared-mr): {} sent, {} received\n", counters.extent_packets_sent,
                 counters.extent_packets_received);
    }
    if (options_.verify) fmt::print(" verified: every byte of every size arrived as sent\n");
    session_.send_line("done");
  }

 private:
  // Sources hold the pattern, targets are zero.
  void prepare(std::uint32_t size) {
    for (PerfQp& qp : session_.qps()) {
      std::fill_n(qp.region, 2 * std::size_t{session_.largest()}, 0);
      fill_pattern(session_.send_half(qp), size);
      qp.posted = 0;
    }
    completed_ = 0;
  }

  bool time_is_up(PerfClock::time_point start) const {
    return options_.duration_s > 0 && PerfClock::now() - start >= std::chrono::seconds(options_.duration_s);
  }
  // Whether the QP has messages left to post in this phase (-n or -D).
  bool wants_more(const PerfQp& qp, PerfClock::time_point start) const {
    return options_.duration_s > 0 ? !time_is_up(start) : qp.posted < options_.message_count();
  }

  std::string bandwidth(std::uint32_t size) {
    std::vector<PerfClock::time_point> done;
    done.reserve(options_.duration_s > 0 ? 1 << 20 : options_.message_count() * options_.qps);
    WorkCompletion completions[64];
    auto start = PerfClock::now();
    auto give_up = start + session_.timeout();
    while (true) {
      bool posting = false;
      for (PerfQp& qp : session_.qps()) {
        Sge source = session_.sge(session_.send_half(qp), size);
        Sge target = session_.sge(session_.receive_half(qp), size);
        SendWr wr = message(session_, qp, source, target);
        while (qp.outstanding < options_.tx_depth && wants_more(qp, start)) {
          wr.wr_id = qp.posted;
          session_.post_send(qp, wr);
        }
        posting |= wants_more(qp, start);
      }
      session_.progress();
      std::size_t n = session_.poll(completions);
      auto now = PerfClock::now();
      for (std::size_t i = 0; i < n; ++i) {
        --session_.qp_of(completions[i]).outstanding;
        done.push_back(now);
      }
      bool in_flight = std::any_of(session_.qps().begin(), session_.qps().end(),
                                   [](const PerfQp& qp) { return qp.outstanding > 0; });
      if (!posting && !in_flight) break;
      if (n > 0) {
        give_up = now + session_.timeout();
      } else if (now > give_up) {
        throw PerfError("no completions for too long: is the server still there?");
      }
    }
    if (done.empty()) throw PerfError("no message completed");
    completed_ = done.size();
    std::uint64_t iterations = done.size() / options_.qps;
    return bandwidth_row(done, start, size, iterations, options_.report_gbits);
  }

  // One ping-pong (or one READ / atomic round trip) at a time on the first QP.
  std::string latency(std::uint32_t size) {
    PerfQp& qp = session_.qps().front();
    std::uint8_t* source = session_.send_half(qp);
    std::uint8_t* target = session_.receive_half(qp);
    Sge source_sge = session_.sge(source, size);
    Sge target_sge = session_.sge(target, size);
    SendWr wr = message(session_, qp, source_sge, target_sge);
    bool one_way = options_.verb() == PerfVerb::write || options_.verb() == PerfVerb::send;
    std::vector<double> usec;
    usec.reserve(options_.duration_s > 0 ? 1 << 20 : options_.message_count());
    auto start = PerfClock::now();
    for (std::uint64_t i = 1; options_.duration_s > 0 ? !time_is_up(start) : i <= options_.message_count(); ++i) {
      auto byte = static_cast<std::uint8_t>(i % 255 + 1);  // never 0, so a pong is never mistaken for a stale one
      if (options_.verb() == PerfVerb::write) source[size - 1] = byte;
      wr.wr_id = i;
      auto sent = PerfClock::now();
      session_.post_send(qp, wr);
      wait_for_answer(qp, size, byte, i);
      auto took = std::chrono::duration<double, std::micro>(PerfClock::now() - sent).count();
      usec.push_back(one_way ? took / 2 : took);
    }
    if (usec.empty()) throw PerfError("no message completed");
    completed_ = usec.size();
    return latency_row(usec, size);
  }

  // The pong of a WRITE or SEND ping-pong, or the completion of a READ or atomic.
  void wait_for_answer(PerfQp& qp, std::uint32_t size, std::uint8_t byte, std::uint64_t iteration) {
    std::uint8_t* target = session_.receive_half(qp);
    std::span<WorkCompletion> completions = answer_completions_;
    auto give_up = PerfClock::now() + session_.timeout();
    if (options_.verb() == PerfVerb::write) {  // the ping has left: take the earlier pings' completions
      qp.outstanding -= session_.poll(completions);
    }
    for (std::uint64_t spins = 0;; ++spins) {
      session_.progress();
      bool answered = false;
      if (options_.verb() == PerfVerb::write) {
        answered = static_cast<volatile std::uint8_t*>(target)[size - 1] == byte;
      }
      // A WRITE's pong is the landed byte: the next ping goes at once (its
      // ACK, behind the pong, completes it by the time that ping has left).
      if (answered && !options_.verify) return;
      std::size_t n = session_.poll(completions);
      for (std::size_t i = 0; i < n; ++i) {
        const WorkCompletion& completion = completions[i];
        if (completion.opcode == WcOpcode::recv) {
          if (options_.verify && (completion.byte_len != size || !holds_pattern(target, size))) {
            throw PerfError(fmt::format("verify: SEND pong {} of {} bytes arrived wrong", iteration, size));
          }
          session_.post_receive(qp);
          answered = true;
          continue;
        }
        --qp.outstanding;
        if (options_.verb() == PerfVerb::read || options_.verb() == PerfVerb::atomic) answered = true;
      }
      if (answered) {
        if (options_.verify) check_answer(target, size, iteration);
        return;
      }
      if ((spins & 1023) == 0 && PerfClock::now() > give_up) {
        throw PerfError("no answer for too long: is the server still there?");
      }
    }
  }

  void check_answer(const std::uint8_t* target, std::uint32_t size, std::uint64_t iteration) const {
    bool ok = true;
    switch (options_.verb()) {
      case PerfVerb::write: ok = holds_pattern(target, size, 1); break;
      case PerfVerb::read: ok = holds_pattern(target, size); break;
      case PerfVerb::send: break;  // checked with its completion
      case PerfVerb::atomic: {     // fetch-and-add returns the count before this one
        std::uint64_t before;
        std::memcpy(&before, target, sizeof before);
        ok = before == iteration - 1;
        break;
      }
    }
    if (!ok) throw PerfError(fmt::format("verify: answer {} of {} bytes is wrong", iteration, size));
  }

  void verify(std::uint32_t size) {
    if (options_.verb() == PerfVerb::read && !options_.latency()) {
      for (PerfQp& qp : session_.qps()) {
        if (!holds_pattern(session_.receive_half(qp), size)) {
          throw PerfError(fmt::format("verify: READ of {} bytes returned wrong data", size));
        }
      }
    }
    session_.send_line(fmt::format("check {} {}", size, completed_));
    std::string answer = session_.wait_line("waiting for the server's check");
    if (answer != "ok") throw PerfError(fmt::format("verify: {}-byte messages: the server says {}", size, answer));
  }

  PerfSession& session_;
  std::array<WorkCompletion, 8> answer_completions_{};  // a member: not zeroed for every ping
  const PerfOptions& options_;
  std::uint64_t completed_ = 0;  // messages (bandwidth) or iterations (latency) of the last phase
};

}  // namespace

void run_client(PerfSession& session) { Client(session).run(); }

}  // namespace uroce::tools
