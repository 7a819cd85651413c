// The server's side of `uroce perf`: it prepares its memory for each phase
// the client announces, answers while the phase runs (pongs for the latency
// tests, fresh receives for SEND tests; WRITE, READ and atomic targets need
// only progress), checks what arrived when asked, and prints the client's rows.
#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <string>

#include <fmt/format.h>

#include "tools/uroce/perf_report.h"
#include "tools/uroce/perf_session.h"

namespace uroce::tools {
namespace {

class Server {
 public:
  explicit Server(PerfSession& session) : session_(session), options_(session.options()) {}

  void run() {
    while (true) {
      std::string line = session_.wait_line("waiting for the client");
      if (line.rfind("phase ", 0) == 0) {
        std::uint64_t requested = number(line, 1);
        if (requested == 0 || requested > session_.largest()) throw PerfError("the client asked for a size this side cannot hold: " + line);
        auto size = static_cast<std::uint32_t>(requested);
        prepare(size);
        session_.send_line("ready");
        serve_phase(size);
        session_.drain_sends();
        session_.send_line("stopped");
      } else if (line.rfind("check ", 0) == 0) {
        session_.send_line(check(static_cast<std::uint32_t>(number(line, 1)), number(line, 2)));
      } else if (line.rfind("row ", 0) == 0) {
        fmt::print("{}\n", line.substr(4));
        std::fflush(stdout);
      } else if (line == "done") {
        fmt::print("{}\n", table_rule());
        if (options_.multipath_evs != 0) {
          EngineCounters counters = session_.counters();
          fmt::print(" multipath responder: held out of order {}, placed on arrival {}\n", counters.held_out_of_order,
                     counters.placed_out_of_order);
        }
        return;
      } else {
        throw PerfError("unexpected message from the client: '" + line + "'");
      }
    }
  }

 private:
  static std::uint64_t number(const std::string& line, int field) {
    std::size_t at = 0;
    for (int i = 0; i < field; ++i) at = line.find(' ', at) + 1;
    try {
      return std::stoull(line.substr(at));
    } catch (const std::exception&) {
      throw PerfError("a malformed message from the client: '" + line + "'");
    }
  }

  // Targets are zero; READ sources and the pong sources hold the pattern.
  void prepare(std::uint32_t size) {
    bool source = options_.verb() == PerfVerb::read || (options_.latency() && options_.verb() != PerfVerb::atomic);
    for (PerfQp& qp : session_.qps()) {
      std::fill_n(qp.region, 2 * std::size_t{session_.largest()}, 0);
      if (source) fill_pattern(session_.send_half(qp), size);
      qp.posted = 0;
    }
    received_ = 0;
    problem_.clear();
  }

  // Until the client says stop. WRITE, READ and atomic bandwidth need nothing
  // but progress: with a progress thread this side just waits.
  void serve_phase(std::uint32_t size) {
    bool passive = !options_.latency() && options_.verb() != PerfVerb::send;
    if (passive && options_.progress_thread) {
      std::string line = session_.wait_line("waiting for the client to finish");
      if (line != "stop") throw PerfError("unexpected message from the client: '" + line + "'");
      return;
    }
    std::uint64_t answered = 0;
    for (std::uint64_t spins = 1;; ++spins) {
      session_.progress();
      if (options_.verb() == PerfVerb::send) {
        take_receives(size);
      } else if (options_.verb() == PerfVerb::write && options_.latency()) {
        answer_write_ping(size, answered);
      } else {
        reap_sends();
      }
      if ((spins & 255) == 0) {
        if (std::optional<std::string> line = session_.poll_line()) {
          if (*line != "stop") throw PerfError("unexpected message from the client: '" + *line + "'");
          return;
        }
      }
    }
  }

  // SEND tests: count and check each message, keep the receive queue full,
  // and answer a latency ping with a pong.
  void take_receives(std::uint32_t size) {
    std::span<WorkCompletion> completions = completions_;
    std::size_t n = session_.poll(completions);
    for (std::size_t i = 0; i < n; ++i) {
      PerfQp& qp = session_.qp_of(completions[i]);
      if (completions[i].opcode != WcOpcode::recv) {
        --qp.outstanding;
        continue;
      }
      ++received_;
      if (completions[i].byte_len != size) {
        problem_ = fmt::format("a SEND of {} bytes arrived as {}", size, completions[i].byte_len);
      } else if (options_.verify && !holds_pattern(session_.receive_half(qp), size)) {
        problem_ = fmt::format("a SEND of {} bytes arrived with wrong bytes", size);
      }
      session_.post_receive(qp);
      if (options_.latency()) pong(qp, size);
    }
  }

  // WRITE latency: when the client's ping has landed (its last byte is the
  // iteration's), write the same bytes back.
  void answer_write_ping(std::uint32_t size, std::uint64_t& answered) {
    PerfQp& qp = session_.qps().front();
    auto expected = static_cast<std::uint8_t>((answered + 1) % 255 + 1);
    const volatile std::uint8_t* landed = session_.receive_half(qp);
    if (landed[size - 1] == expected) {
      if (options_.verify && !holds_pattern(session_.receive_half(qp), size, 1)) {
        problem_ = fmt::format("WRITE ping {} of {} bytes arrived with wrong bytes", answered + 1, size);
      }
      session_.send_half(qp)[size - 1] = expected;
      pong(qp, size);
      ++answered;
    }
    reap_sends();
  }

  void pong(PerfQp& qp, std::uint32_t size) {
    Sge source = session_.sge(session_.send_half(qp), size);
    SendWr wr;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&source, 1};
    if (options_.verb() == PerfVerb::write) {
      wr.opcode = WrOpcode::rdma_write;
      wr.rdma = {session_.remote_receive_half(qp), qp.remote.rkey};
    } else {
      wr.opcode = WrOpcode::send;
    }
    session_.post_send(qp, wr);
  }

  void reap_sends() {
    std::span<WorkCompletion> completions = completions_;
    std::size_t n = session_.poll(completions);
    for (std::size_t i = 0; i < n; ++i) --session_.qp_of(completions[i]).outstanding;
  }

  // What the client's messages left in this side's memory.
  std::string check(std::uint32_t size, std::uint64_t completed) {
    if (!problem_.empty()) return problem_;
    switch (options_.verb()) {
      case PerfVerb::write:
        if (options_.latency()) return "ok";  // each ping was checked as it landed
        for (PerfQp& qp : session_.qps()) {
          if (!holds_pattern(session_.send_half(qp), size)) return "mismatch after WRITEs";
        }
        return "ok";
      case PerfVerb::read: return "ok";  // the client checks what it read
      case PerfVerb::send:
        return received_ == completed ? "ok" : fmt::format("{} SENDs arrived, {} were sent", received_, completed);
      case PerfVerb::atomic: {  // every fetch-and-add counted once
        std::uint64_t total = 0;
        for (PerfQp& qp : session_.qps()) {
          std::uint64_t counter;
          std::memcpy(&counter, session_.send_half(qp), sizeof counter);
          total += counter;
        }
        return total == completed ? "ok" : fmt::format("the counters add up to {}, {} atomics completed", total, completed);
      }
    }
    return "ok";
  }

  PerfSession& session_;
  // Polled into on every spin: a member, not a local array that would be
  // zeroed (3 KiB) on every spin.
  std::array<WorkCompletion, 64> completions_{};
  const PerfOptions& options_;
  std::uint64_t received_ = 0;
  std::string problem_;
};

}  // namespace

void run_server(PerfSession& session) { Server(session).run(); }

}  // namespace uroce::tools
