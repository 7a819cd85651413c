// `uroce perf`: connection set-up over the out-of-band channel, the client's
// timed loop of RDMA WRITEs or READs with tx_depth outstanding, perftest's
// table, and the optional byte-for-byte verification.
#include "tools/uroce/perf_command.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "runtime/oob_exchange.h"
#include "uroce/device.h"

namespace uroce::tools {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint32_t kLargestSize = 8u << 20;  // -a goes up to 8 MiB

class PerfError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class T, class E>
T must(Expected<T, E> value, const std::string& what) {
  if (!value) {
    if constexpr (std::is_same_v<E, std::string>) {
      throw PerfError(what + ": " + value.error());
    } else {
      throw PerfError(what + ": " + std::make_error_code(value.error()).message());
    }
  }
  return std::move(*value);
}

void must(std::errc error, const std::string& what) {
  if (error != std::errc{}) throw PerfError(what + ": " + std::make_error_code(error).message());
}

PathMtu path_mtu_for(std::uint32_t bytes) {
  switch (bytes) {
    case 256: return PathMtu::mtu256;
    case 512: return PathMtu::mtu512;
    case 1024: return PathMtu::mtu1024;
    case 2048: return PathMtu::mtu2048;
    default: return PathMtu::mtu4096;
  }
}

// What WRITE sources (client) and READ sources (server) hold for a message size.
std::uint8_t pattern_byte(std::size_t index, std::uint32_t size) {
  return static_cast<std::uint8_t>(index * 31 + size * 7 + 3);
}
void fill_pattern(std::vector<std::uint8_t>& buffer, std::uint32_t size) {
  for (std::size_t i = 0; i < size; ++i) buffer[i] = pattern_byte(i, size);
}
bool holds_pattern(const std::vector<std::uint8_t>& buffer, std::uint32_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    if (buffer[i] != pattern_byte(i, size)) return false;
  }
  return true;
}

std::vector<std::uint32_t> sizes_of(const PerfOptions& options) {
  if (!options.all_sizes) return {options.size};
  std::vector<std::uint32_t> sizes;
  for (std::uint32_t size = 2; size <= kLargestSize; size *= 2) sizes.push_back(size);
  return sizes;
}

std::string table_rule() { return std::string(87, '-'); }

std::string table_header(bool gbits) {
  const char* unit = gbits ? "Gb/sec" : "MiB/sec";
  return fmt::format(" {:<10} {:<14} BW peak[{}]    BW average[{}]   MsgRate[Mpps]", "#bytes", "#iterations", unit,
                     unit);
}

struct Measurement {
  double peak;     // in the table's unit
  double average;  // in the table's unit
  double mpps;
};

// Peak: the best rate over any stretch of at least 1/16 of the run (short
// stretches would only measure how completions bunch up behind one ACK).
Measurement measure(const std::vector<Clock::time_point>& done, Clock::time_point start, std::uint32_t size,
                    bool gbits) {
  auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  double total = std::max(seconds(done.back() - start), 1e-9);
  double rate = static_cast<double>(done.size()) / total;  // messages per second
  double best = rate;
  double stretch = total / 16;
  std::size_t j = 0;
  for (std::size_t i = 0; i < done.size(); ++i) {
    while (j < done.size() && seconds(done[j] - done[i]) < stretch) ++j;
    if (j == done.size()) break;
    best = std::max(best, static_cast<double>(j - i) / seconds(done[j] - done[i]));
  }
  double per_message = gbits ? size * 8 / 1e9 : size / 1048576.0;
  return Measurement{best * per_message, rate * per_message, rate / 1e6};
}

class PerfSession {
 public:
  explicit PerfSession(const PerfOptions& options) : options_(options), server_(options.server.empty()) {}

  void run() {
    open_device();
    connect();
    if (server_) {
      serve();
    } else {
      drive();
    }
  }

 private:
  std::chrono::milliseconds timeout() const { return std::chrono::seconds(options_.timeout_s); }
  bool is_read() const { return options_.test == "read_bw"; }

  void open_device() {
    DeviceConfig config;
    config.address = options_.bind;
    config.udp_port = options_.udp_port;
    // The server's application sleeps on the control connection, so its
    // device needs a progress thread; the client busy-polls anyway and
    // drives progress itself unless asked otherwise.
    config.progress_thread = server_ || options_.progress_thread;
    device_ = must(Device::open(config), "cannot open a device on " + options_.bind);
    std::uint32_t largest = options_.all_sizes ? kLargestSize : options_.size;
    buffer_.assign(std::max<std::uint32_t>(largest, 8), 0);
    device_->call([&](Engine& engine) {
      pd_ = must(engine.alloc_pd(), "alloc_pd");
      cq_ = must(engine.create_cq(options_.tx_depth * 2), "create_cq");
      QpInitAttr init;
      init.pd = pd_;
      init.send_cq = init.recv_cq = cq_;
      init.cap = QpCap{options_.tx_depth, 1, 1, 1, 0};
      qpn_ = must(engine.create_qp(init), "create_qp");
      keys_ = must(engine.reg_mr(pd_, buffer_.data(), buffer_.size(),
                                 kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead),
                   "reg_mr");
      QpAttr attr;
      attr.qp_state = QpState::init;
      attr.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead;
      must(engine.modify_qp(qpn_, attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags),
           "modify_qp to INIT");
    });
  }

  void connect() {
    channel_ = server_ ? must(runtime::OobChannel::accept(options_.bind, options_.tcp_port, timeout()),
                              "waiting for the client")
                       : must(runtime::OobChannel::connect(options_.server, options_.tcp_port, timeout()),
                              "connecting to the server");
    runtime::QpConnectionInfo& local = local_;
    local.qpn = qpn_;
    local.psn = (qpn_ * 2654435761u) & 0xFFFFFF;
    local.gid = device_->gid();
    local.rkey = keys_.rkey;
    local.address = reinterpret_cast<std::uintptr_t>(buffer_.data());
    local.mtu = options_.mtu;
    remote_ = must(channel_->exchange(local, timeout()), "exchanging QP information");
    mtu_ = std::min(options_.mtu, remote_.mtu);  // the path MTU both sides accept
    device_->call([&](Engine& engine) {
      QpAttr attr;
      attr.qp_state = QpState::rtr;
      attr.path_mtu = path_mtu_for(mtu_);
      attr.dest_qp_num = remote_.qpn;
      attr.rq_psn = remote_.psn;
      attr.max_dest_rd_atomic = 16;
      attr.min_rnr_timer = 12;
      attr.ah_attr.dgid = remote_.gid;
      must(engine.modify_qp(qpn_, attr,
                            kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn |
                                kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer),
           "modify_qp to RTR");
      attr.qp_state = QpState::rts;
      attr.sq_psn = local.psn;
      attr.timeout = 14;
      attr.retry_cnt = 7;
      attr.rnr_retry = 7;
      attr.max_rd_atomic = 16;
      must(engine.modify_qp(qpn_, attr,
                            kQpAttrState | kQpAttrSqPsn | kQpAttrTimeout | kQpAttrRetryCnt | kQpAttrRnrRetry |
                                kQpAttrMaxQpRdAtomic),
           "modify_qp to RTS");
    });
    // Neither side sends a packet before the other's QP is ready for it.
    must(channel_->send_line("ready"), "control connection");
    std::string line = must(channel_->receive_line(timeout()), "waiting for the peer to get ready");
    if (line != "ready") throw PerfError("the peer is not running the same test: '" + line + "'");
    print_banner();
  }

  void print_banner() const {
    fmt::print("{}\n", table_rule());
    fmt::print("                    {} BW Test ({})\n", is_read() ? "RDMA_Read" : "RDMA_Write",
               server_ ? "server" : "client");
    fmt::print(" Number of qps   : 1\t\tTransport type : IB (RoCEv2 over UDP, uroce)\n");
    fmt::print(" Connection type : RC\t\tUsing SRQ      : OFF\n");
    fmt::print(" TX depth        : {}\n", options_.tx_depth);
    fmt::print(" Mtu             : {}[B]\n", mtu_);
    fmt::print(" local address: QPN {:#08x} PSN {:#08x} RKey {:#010x} VAddr {:#018x}\n", local_.qpn, local_.psn,
               local_.rkey, local_.address);
    fmt::print(" remote address: QPN {:#08x} PSN {:#08x} RKey {:#010x} VAddr {:#018x}\n", remote_.qpn, remote_.psn,
               remote_.rkey, remote_.address);
    fmt::print("{}\n{}\n", table_rule(), table_header(options_.report_gbits));
    std::fflush(stdout);
  }

  // The server's memory is the target (WRITE) or source (READ); it answers
  // the client's verification requests and prints the client's results.
  void serve() {
    while (true) {
      std::string line = must(channel_->receive_line(timeout()), "waiting for the client");
      if (line.rfind("fill ", 0) == 0) {
        fill_pattern(buffer_, static_cast<std::uint32_t>(std::stoul(line.substr(5))));
        must(channel_->send_line("filled"), "control connection");
      } else if (line.rfind("check ", 0) == 0) {
        bool ok = holds_pattern(buffer_, static_cast<std::uint32_t>(std::stoul(line.substr(6))));
        must(channel_->send_line(ok ? "ok" : "mismatch"), "control connection");
      } else if (line.rfind("row ", 0) == 0) {
        fmt::print("{}\n", line.substr(4));
        std::fflush(stdout);
      } else if (line == "done") {
        fmt::print("{}\n", table_rule());
        return;
      } else {
        throw PerfError("unexpected message from the client: '" + line + "'");
      }
    }
  }

  void drive() {
    for (std::uint32_t size : sizes_of(options_)) {
      if (options_.verify) {
        if (is_read()) {
          must(channel_->send_line("fill " + std::to_string(size)), "control connection");
          must(channel_->receive_line(timeout()), "waiting for the server");
          std::fill(buffer_.begin(), buffer_.begin() + size, 0);
        } else {
          fill_pattern(buffer_, size);
        }
      }
      std::vector<Clock::time_point> done = run_size(size);
      if (options_.verify) verify(size);
      Measurement m = measure(done, start_, size, options_.report_gbits);
      std::string row = fmt::format(" {:<10} {:<14} {:<18.2f} {:<20.2f} {:.6f}", size, options_.iterations, m.peak,
                                    m.average, m.mpps);
      fmt::print("{}\n", row);
      std::fflush(stdout);
      must(channel_->send_line("row " + row), "control connection");
    }
    fmt::print("{}\n", table_rule());
    EngineCounters counters = device_->counters();
    fmt::print(" packets sent {}, retransmitted {}, timeouts {}, ICRC errors {}\n", counters.packets_sent,
               counters.retransmitted_packets, counters.timeouts, counters.icrc_errors);
    must(channel_->send_line("done"), "control connection");
  }

  void verify(std::uint32_t size) {
    if (is_read()) {
      if (!holds_pattern(buffer_, size)) throw PerfError(fmt::format("verify: READ of {} bytes returned wrong data", size));
      return;
    }
    must(channel_->send_line("check " + std::to_string(size)), "control connection");
    std::string answer = must(channel_->receive_line(timeout()), "waiting for the server's check");
    if (answer != "ok") throw PerfError(fmt::format("verify: the server's memory after {}-byte WRITEs differs", size));
  }

  std::vector<Clock::time_point> run_size(std::uint32_t size) {
    std::vector<Clock::time_point> done;
    done.reserve(options_.iterations);
    Sge sge{reinterpret_cast<std::uintptr_t>(buffer_.data()), size, keys_.lkey};
    SendWr wr;
    wr.opcode = is_read() ? WrOpcode::rdma_read : WrOpcode::rdma_write;
    wr.send_flags = kSendSignaled;
    wr.sg_list = {&sge, 1};
    wr.rdma = {remote_.address, remote_.rkey};
    std::uint64_t posted = 0;
    WorkCompletion completions[64];
    auto give_up = Clock::now() + timeout();
    start_ = Clock::now();
    while (done.size() < options_.iterations) {
      std::size_t n = device_->call([&](Engine& engine) {
        while (posted < options_.iterations && posted - done.size() < options_.tx_depth) {
          wr.wr_id = posted;
          must(engine.post_send(qpn_, wr), "post_send");
          ++posted;
        }
        return must(engine.poll_cq(cq_, completions), "poll_cq");
      });
      if (n == 0 && !options_.progress_thread) device_->progress();
      auto now = Clock::now();
      for (std::size_t i = 0; i < n; ++i) {
        if (completions[i].status != WcStatus::success) {
          throw PerfError(fmt::format("work request {} failed: {}", completions[i].wr_id,
                                      to_string(completions[i].status)));
        }
        done.push_back(now);
      }
      if (n == 0) {
        if (now > give_up) throw PerfError("no completions for too long: is the server still there?");
        if (options_.progress_thread) std::this_thread::yield();
      } else {
        give_up = now + timeout();
      }
    }
    return done;
  }

  PerfOptions options_;
  bool server_;
  std::unique_ptr<Device> device_;
  std::vector<std::uint8_t> buffer_;
  std::uint32_t pd_ = 0, cq_ = 0, qpn_ = 0;
  MrKeys keys_;
  std::optional<runtime::OobChannel> channel_;
  runtime::QpConnectionInfo local_, remote_;
  std::uint32_t mtu_ = 1024;
  Clock::time_point start_;
};

}  // namespace

void add_perf_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<PerfOptions>();
  CLI::App* perf = app.add_subcommand("perf", "perftest's bandwidth tests between two uroce devices");
  perf->add_option("test", options->test, "write_bw or read_bw")->required()->check(CLI::IsMember({"write_bw", "read_bw"}));
  perf->add_option("server", options->server, "The server's address (omit to be the server)");
  perf->add_option("--bind", options->bind, "This side's local address (its device binds UDP 4791 there)")->required();
  perf->add_option("-s,--size", options->size, "Message size in bytes")->check(CLI::Range(1u, 1u << 30));
  perf->add_flag("-a,--all", options->all_sizes, "Every power of two from 2 B to 8 MiB");
  perf->add_option("-n,--iters", options->iterations, "Messages per size")->check(CLI::Range(1ull, 1ull << 40));
  perf->add_option("-m,--mtu", options->mtu, "Path MTU in bytes")->check(CLI::IsMember({256u, 512u, 1024u, 2048u, 4096u}));
  perf->add_option("-p,--port", options->tcp_port, "TCP port of the connection exchange");
  perf->add_option("--udp-port", options->udp_port, "UDP port of both devices (RoCEv2: 4791)");
  perf->add_option("-t,--tx-depth", options->tx_depth, "Work requests outstanding")->check(CLI::Range(1u, 4096u));
  perf->add_flag("--report_gbits", options->report_gbits, "Report Gb/sec instead of MiB/sec");
  perf->add_flag("--progress-thread", options->progress_thread,
                 "Client: move packets on a progress thread instead of in the polling loop");
  perf->add_flag("--verify", options->verify, "Check every byte that arrived");
  perf->add_option("--timeout", options->timeout_s, "Seconds to wait for the peer at each step")->check(CLI::Range(1, 3600));
  perf->callback([options, &exit_status] { exit_status = run_perf(*options); });
}

int run_perf(const PerfOptions& options) {
  try {
    PerfSession(options).run();
    return 0;
  } catch (const PerfError& error) {
    fmt::print(stderr, "uroce perf {}: {}\n", options.test, error.what());
    return 1;
  }
}

}  // namespace uroce::tools
