// PerfSession: opening the device and QPs, the out-of-band exchange, the
// transitions to RTS, and the control-line and verbs helpers.
#include "tools/uroce/perf_session.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "runtime/shared_regions.h"
#include "tools/uroce/perf_report.h"

namespace uroce::tools {
namespace {

constexpr std::uint32_t kLargestSweepSize = 8u << 20;  // -a goes up to 8 MiB

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

}  // namespace

std::uint8_t pattern_byte(std::size_t index, std::uint32_t size) {
  return static_cast<std::uint8_t>(index * 31 + size * 7 + 3);
}

void fill_pattern(std::uint8_t* bytes, std::uint32_t size) {
  for (std::size_t i = 0; i < size; ++i) bytes[i] = pattern_byte(i, size);
}

bool holds_pattern(const std::uint8_t* bytes, std::uint32_t size, std::uint32_t skip_last) {
  for (std::size_t i = 0; i + skip_last < size; ++i) {
    if (bytes[i] != pattern_byte(i, size)) return false;
  }
  return true;
}

PerfSession::PerfSession(const PerfOptions& options) : options_(options), server_(options.server.empty()) {
  largest_ = std::max<std::uint32_t>(options.all_sizes ? kLargestSweepSize : options.message_size(), 8);
  open_device();
  connect();
}

void PerfSession::open_device() {
  DeviceConfig config;
  config.address = options_.bind;
  config.interface = options_.interface;
  config.udp_port = options_.udp_port;
  config.progress_thread = options_.progress_thread;
  config.local_path = options_.local_path;
  device_ = must(Device::open(config), "cannot open a device on " + options_.bind);
  std::size_t region = 2 * std::size_t{largest_};
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  region_length_ = (region * options_.qps + page - 1) / page * page;
  buffer_.assign(region_length_ + page, 0);
  auto start = reinterpret_cast<std::uintptr_t>(buffer_.data());
  region_base_ = buffer_.data() + ((page - start % page) % page);
  bool sends = options_.verb() == PerfVerb::send;
  std::uint32_t receives = sends ? options_.rx_depth : 1;
  device_->call_and_wake([&](Engine& engine) {
    pd_ = must(engine.alloc_pd(), "alloc_pd");
    cq_ = must(engine.create_cq(options_.qps * (options_.tx_depth + receives) + 16), "create_cq");
    register_buffer(engine);
    for (std::uint32_t i = 0; i < options_.qps; ++i) {
      QpInitAttr init;
      init.pd = pd_;
      init.send_cq = init.recv_cq = cq_;
      init.cap = QpCap{options_.tx_depth, receives, 1, 1, 0};
      init.recovery = options_.selective_repeat ? LossRecovery::selective_repeat : LossRecovery::go_back_n;
      init.multipath.entropy_values = options_.multipath_evs;
      PerfQp qp;
      qp.qpn = must(engine.create_qp(init), "create_qp");
      qp.region = region_base_ + i * region;
      QpAttr attr;
      attr.qp_state = QpState::init;
      attr.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
      must(engine.modify_qp(qp.qpn, attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags),
           "modify_qp to INIT");
      qps_.push_back(qp);
    }
  });
  // Receives for SEND tests are posted before the peer can send (in INIT).
  if (sends) {
    for (PerfQp& qp : qps_) {
      for (std::uint32_t i = 0; i < receives; ++i) post_receive(qp);
    }
  }
}

PerfSession::~PerfSession() {
  if (!shared_) return;
  device_->call_and_wake([&](Engine& engine) { return engine.dereg_mr(keys_.lkey); });
  runtime::SharedRegions::process().unshare(region_base_, region_length_);
}

void PerfSession::register_buffer(Engine& engine) {
  std::optional<RegionBacking> backing;
  if (options_.shared_region) {
    backing = runtime::SharedRegions::process().share(region_base_, region_length_);
    if (!backing) throw PerfError("cannot share the buffer (--shared-mr): the process is not dumpable");
    shared_ = true;
  }
  keys_ = must(engine.reg_mr(pd_, region_base_, region_length_,
                             kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic, backing),
               "reg_mr");
}

void PerfSession::connect() {
  channel_ = server_ ? must(runtime::OobChannel::accept(options_.bind, options_.tcp_port, timeout()),
                            "waiting for the client")
                     : must(runtime::OobChannel::connect(options_.server, options_.tcp_port, timeout()),
                            "connecting to the server");
  for (PerfQp& qp : qps_) {
    qp.local.qpn = qp.qpn;
    qp.local.psn = (qp.qpn * 2654435761u) & 0xFFFFFF;
    qp.local.gid = device_->gid();
    qp.local.rkey = keys_.rkey;
    qp.local.address = reinterpret_cast<std::uintptr_t>(qp.region);
    qp.local.mtu = std::min(options_.mtu, mtu_bytes(device_->max_path_mtu()));
    qp.remote = must(channel_->exchange(qp.local, timeout()), "exchanging QP information");
    mtu_ = std::min(qp.local.mtu, qp.remote.mtu);  // the path MTU both sides accept
  }
  device_->call_and_wake([&](Engine& engine) {
    for (PerfQp& qp : qps_) {
      QpAttr attr;
      attr.qp_state = QpState::rtr;
      attr.path_mtu = path_mtu_for(mtu_);
      attr.dest_qp_num = qp.remote.qpn;
      attr.rq_psn = qp.remote.psn;
      attr.max_dest_rd_atomic = 16;
      attr.min_rnr_timer = 12;
      attr.ah_attr.dgid = qp.remote.gid;
      must(engine.modify_qp(qp.qpn, attr,
                            kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn |
                                kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer),
           "modify_qp to RTR");
      attr.qp_state = QpState::rts;
      attr.sq_psn = qp.local.psn;
      attr.timeout = 14;
      attr.retry_cnt = 7;
      attr.rnr_retry = 7;
      attr.max_rd_atomic = 16;
      must(engine.modify_qp(qp.qpn, attr,
                            kQpAttrState | kQpAttrSqPsn | kQpAttrTimeout | kQpAttrRetryCnt | kQpAttrRnrRetry |
                                kQpAttrMaxQpRdAtomic),
           "modify_qp to RTS");
    }
  });
  // Neither side sends a packet before the other's QPs are ready for it.
  // Both sides must run the same test with the same loss recovery.
  std::string ready = "ready " + options_.test + (options_.selective_repeat ? " selective-repeat" : "") +
                      (options_.multipath_evs != 0 ? " multipath" : "");
  send_line(ready);
  std::string line = must(channel_->receive_line(timeout()), "waiting for the peer to get ready");
  if (line != ready) throw PerfError("the peer is not running the same test: '" + line + "' (this side: '" + ready + "')");
  print_banner(options_, server_, mtu_, qps_.front().local, qps_.front().remote);
}

void PerfSession::send_line(const std::string& line) { must(channel_->send_line(line), "control connection"); }

std::optional<std::string> PerfSession::poll_line() {
  return must(channel_->try_receive_line(), "control connection");
}

std::string PerfSession::wait_line(const std::string& waiting_for) {
  if (options_.progress_thread) return must(channel_->receive_line(timeout()), waiting_for);
  auto give_up = std::chrono::steady_clock::now() + timeout();
  for (std::uint64_t spins = 0;; ++spins) {
    progress();
    if (std::optional<std::string> line = poll_line()) return *line;
    if ((spins & 1023) == 0 && std::chrono::steady_clock::now() > give_up) {
      throw PerfError(waiting_for + ": the peer said nothing in time");
    }
  }
}

void PerfSession::expect_line(const std::string& expected, const std::string& waiting_for) {
  std::string line = wait_line(waiting_for);
  if (line != expected) throw PerfError(fmt::format("{}: expected '{}', got '{}'", waiting_for, expected, line));
}

void PerfSession::progress() {
  if (!options_.progress_thread) device_->progress();
}

void PerfSession::post_send(PerfQp& qp, const SendWr& wr) {
  auto post = [&](Engine& engine) { return engine.post_send(qp.qpn, wr); };
  // Latency: as the library's ibv_post_send, the WQE leaves from this thread
  // at once, with any ACK the device holds for a reply behind it. Bandwidth:
  // the next progress round sends what a window of posts queued, together.
  must(options_.latency() ? device_->post(post) : device_->call_and_wake(post), "post_send");
  ++qp.posted;
  ++qp.outstanding;
}

void PerfSession::post_receive(PerfQp& qp) {
  Sge entry = sge(receive_half(qp), largest_);
  RecvWr wr;
  wr.wr_id = qp.qpn;
  wr.sg_list = {&entry, 1};
  must(device_->call_and_wake([&](Engine& engine) { return engine.post_recv(qp.qpn, wr); }), "post_recv");
}

std::size_t PerfSession::poll(std::span<WorkCompletion> out) {
  std::size_t n = must(device_->inspect([&](Engine& engine) { return engine.poll_cq(cq_, out); }), "poll_cq");
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i].status != WcStatus::success) {
      throw PerfError(fmt::format("a work request on QP {:#x} failed: {}", out[i].qp_num, to_string(out[i].status)));
    }
  }
  return n;
}

PerfQp& PerfSession::qp_of(const WorkCompletion& completion) {
  for (PerfQp& qp : qps_) {
    if (qp.qpn == completion.qp_num) return qp;
  }
  throw PerfError(fmt::format("a completion for an unknown QP {:#x}", completion.qp_num));
}

void PerfSession::drain_sends() {
  auto give_up = std::chrono::steady_clock::now() + timeout();
  WorkCompletion completions[64];
  auto left = [&] {
    std::uint64_t sum = 0;
    for (const PerfQp& qp : qps_) sum += qp.outstanding;
    return sum;
  };
  while (left() > 0) {
    progress();
    std::size_t n = poll(completions);
    for (std::size_t i = 0; i < n; ++i) {
      PerfQp& qp = qp_of(completions[i]);
      if (completions[i].opcode < WcOpcode::recv) {
        --qp.outstanding;
      } else {
        post_receive(qp);  // a late receive: keep the queue full
      }
    }
    if (n == 0) {
      if (std::chrono::steady_clock::now() > give_up) throw PerfError("work requests did not complete in time");
      if (options_.progress_thread) std::this_thread::yield();
    }
  }
}

}  // namespace uroce::tools
