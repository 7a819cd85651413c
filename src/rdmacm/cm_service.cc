// CmService: QP 1 of a device, its MADs, the protocol thread.
#include "rdmacm/cm_service.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "cm/mad.h"
#include "uroce/monotonic_clock.h"
#include "rdmacm/ud_services.h"
#include "ibverbs/uroce_private.h"

namespace uroce::rdmacm {
namespace {

// As Linux's MAD layer (mad_recvq_size 512, mad_sendq_size 128): a burst of
// connections (cmtime -c 100) fits. MADs beyond the free send slots wait in
// order, up to kMaxWaitingToSend; beyond, they are dropped like lost ones.
constexpr std::size_t kReceiveSlots = 512, kSendSlots = 128;
constexpr std::size_t kMaxWaitingToSend = 4096;
constexpr std::size_t kGrhArea = 40;
constexpr std::size_t kReceiveSlotBytes = kGrhArea + cm::kMadLength;

std::vector<std::unique_ptr<CmService>>& services() {
  static auto* all = new std::vector<std::unique_ptr<CmService>>;  // outlives the exit handler
  return *all;
}

// At exit (which any thread of the program may call while others still
// make verbs calls): stop every service's thread, so that none touches the
// device while the process ends. Its verbs objects stay; the process's end
// takes them, as the kernel takes rdma-core's.
void stop_services() {
  std::vector<CmService*> running;
  {
    std::lock_guard lock(cm_lock());
    for (auto& service : services()) running.push_back(service.get());
  }
  for (CmService* service : running) service->stop();
}

bool is_wildcard(const Gid& gid) {
  Gid v4_any{};
  v4_any[10] = v4_any[11] = 0xFF;
  return gid == Gid{} || gid == v4_any;
}

// UROCE_CM_TIMEOUT (the response timeout's exponent: 4.096 us * 2^N) and
// UROCE_CM_RETRIES, for tests that want a silent peer to end sooner. A value
// out of range is reported and the default kept.
std::uint8_t environment_value(const char* name, std::uint8_t fallback, int most) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > most) {
    std::fprintf(stderr, "uroce: %s='%s' is not a number from 0 to %d; using %d\n", name, text, most, fallback);
    return fallback;
  }
  return static_cast<std::uint8_t>(value);
}

}  // namespace

std::optional<Gid> gid_of(const sockaddr* address) {
  Gid gid{};
  if (address->sa_family == AF_INET) {
    gid[10] = gid[11] = 0xFF;
    std::memcpy(gid.data() + 12, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, 4);
    return gid;
  }
  if (address->sa_family == AF_INET6) {
    std::memcpy(gid.data(), &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, 16);
    return gid;
  }
  return std::nullopt;
}

std::mutex& cm_lock() {
  static auto* lock = new std::mutex;
  return *lock;
}

CmService* CmService::for_address(const sockaddr* address) {
  auto wanted = gid_of(address);
  if (!wanted) {
    errno = EAFNOSUPPORT;
    return nullptr;
  }
  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (devices == nullptr) return nullptr;
  CmService* found = nullptr;
  int error = ENODEV;
  for (int i = 0; i < count && found == nullptr; ++i) {
    ibv_context* probe = ibv_open_device(devices[i]);
    if (probe == nullptr) continue;
    Gid gid{};
    bool match = false;
    for (int index = 0; index < 2 && !match; ++index) {
      ibv_gid entry{};
      if (ibv_query_gid(probe, 1, index, &entry) != 0) continue;
      std::memcpy(gid.data(), entry.raw, 16);
      match = is_wildcard(*wanted) ? index == 1 : gid == *wanted;
    }
    ibv_close_device(probe);
    if (!match) continue;
    for (auto& service : services()) {
      if (service->gid() == gid) found = service.get();
    }
    if (found != nullptr) break;
    std::unique_ptr<CmService> service(new CmService);
    auto opened = service->open(devices[i], gid);
    if (!opened) {
      service->release();
      error = opened.error();
      break;
    }
    static bool exit_handler = (std::atexit(stop_services), true);
    (void)exit_handler;
    services().push_back(std::move(service));
    found = services().back().get();
  }
  ibv_free_device_list(devices);
  if (found == nullptr) errno = error;
  return found;
}

std::vector<ibv_context*> CmService::all_contexts() {
  std::vector<ibv_context*> contexts;
  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (devices == nullptr) return contexts;
  for (int i = 0; i < count; ++i) {
    ibv_context* probe = ibv_open_device(devices[i]);
    if (probe == nullptr) continue;
    ibv_gid entry{};
    int queried = ibv_query_gid(probe, 1, 1, &entry);
    ibv_close_device(probe);
    if (queried != 0) continue;
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    std::memcpy(&address.sin6_addr, entry.raw, 16);
    if (CmService* service = for_address(reinterpret_cast<sockaddr*>(&address))) contexts.push_back(service->context());
  }
  ibv_free_device_list(devices);
  return contexts;
}

Expected<bool, int> CmService::open(ibv_device* device, const Gid& gid) {
  auto failed = [](int error) { return unexpected(error != 0 ? error : EIO); };
  gid_ = gid;
  context_ = ibv_open_device(device);
  if (context_ == nullptr) return failed(errno);
  pd_ = ibv_alloc_pd(context_);  // opens the device's port: it fails when another process holds the address
  if (pd_ == nullptr) return failed(errno);
  ibv_port_attr port{};
  if (ibv_query_port(context_, 1, &port) == 0) active_mtu_ = port.active_mtu;
  ibv_device_attr limits{};
  if (ibv_query_device(context_, &limits) == 0) {
    max_responder_resources_ = static_cast<std::uint8_t>(std::clamp(limits.max_qp_rd_atom, 1, 0xFE));
    max_initiator_depth_ = static_cast<std::uint8_t>(std::clamp(limits.max_qp_init_rd_atom, 1, 0xFE));
  }
  completions_ = ibv_create_comp_channel(context_);
  if (completions_ == nullptr) return failed(errno);
  cq_ = ibv_create_cq(context_, kReceiveSlots + kSendSlots, nullptr, completions_, 0);
  if (cq_ == nullptr || ibv_req_notify_cq(cq_, 0) != 0) return failed(errno);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = cq_;
  init.cap = ibv_qp_cap{kSendSlots, kReceiveSlots, 1, 1, 0};
  init.qp_type = IBV_QPT_UD;
  qp_ = uroce_create_gsi_qp(pd_, &init);
  if (qp_ == nullptr) return failed(errno);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  attr.qkey = cm::kGsiQkey;
  if (ibv_modify_qp(qp_, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) != 0) return failed(errno);
  attr.qp_state = IBV_QPS_RTR;
  if (ibv_modify_qp(qp_, &attr, IBV_QP_STATE) != 0) return failed(errno);
  attr.qp_state = IBV_QPS_RTS;
  if (ibv_modify_qp(qp_, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0) return failed(errno);
  buffers_.assign(kReceiveSlots * kReceiveSlotBytes + kSendSlots * cm::kMadLength, 0);
  send_slot_busy_.assign(kSendSlots, false);
  int access = IBV_ACCESS_LOCAL_WRITE;  // an int: verbs.h's ibv_reg_mr macro mixes two enums otherwise
  mr_ = ibv_reg_mr(pd_, buffers_.data(), buffers_.size(), access);
  if (mr_ == nullptr) return failed(errno);
  for (std::size_t slot = 0; slot < kReceiveSlots; ++slot) post_receive(slot);

  cm::CmConfig config;
  config.ca_guid = be64toh(ibv_get_device_guid(device));
  config.seed = (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  config.response_timeout = environment_value("UROCE_CM_TIMEOUT", config.response_timeout, 31);
  config.max_retries = environment_value("UROCE_CM_RETRIES", config.max_retries, 15);
  config.address_shared = [context = context_] { return uroce_address_shared(context) != 0; };
  manager_ = cm::ConnectionManager(config);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return failed(errno);
  thread_ = std::thread([this] { run(); });
  return true;
}

// After a failed open: gives back what it made.
void CmService::release() {
  if (qp_ != nullptr) ibv_destroy_qp(qp_);
  if (mr_ != nullptr) ibv_dereg_mr(mr_);
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (completions_ != nullptr) ibv_destroy_comp_channel(completions_);
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (context_ != nullptr) ibv_close_device(context_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void CmService::stop() {
  if (stop_.exchange(true) || !thread_.joinable()) return;
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(wake_fd_, &one, sizeof one);
  thread_.join();
}

void CmService::post_receive(std::size_t slot) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(buffers_.data() + slot * kReceiveSlotBytes),
              static_cast<std::uint32_t>(kReceiveSlotBytes), mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  ibv_post_recv(qp_, &wr, &bad);
}

ibv_ah* CmService::address_handle(const Gid& destination) {
  if (auto it = address_handles_.find(destination); it != address_handles_.end()) return it->second;
  ibv_ah_attr attr{};
  attr.is_global = 1;
  std::memcpy(attr.grh.dgid.raw, destination.data(), 16);
  attr.grh.sgid_index = 1;
  attr.grh.hop_limit = 64;
  attr.port_num = 1;
  ibv_ah* ah = ibv_create_ah(pd_, &attr);
  if (ah != nullptr) address_handles_.emplace(destination, ah);
  return ah;
}

// A MAD that finds no address handle is dropped; one that finds no free
// slot waits for one (the protocol's retries stand in for either, as for a
// lost MAD, when the wait is full).
void CmService::send(const cm::Outgoing& outgoing) {
  if (!waiting_to_send_.empty() || !try_send(outgoing)) {
    if (waiting_to_send_.size() < kMaxWaitingToSend) waiting_to_send_.push_back(outgoing);
  }
}

void CmService::send_waiting() {
  while (!waiting_to_send_.empty() && try_send(waiting_to_send_.front())) waiting_to_send_.pop_front();
}

// false: no send slot is free.
bool CmService::try_send(const cm::Outgoing& outgoing) {
  auto free_slot = std::find(send_slot_busy_.begin(), send_slot_busy_.end(), false);
  if (free_slot == send_slot_busy_.end()) return false;
  ibv_ah* ah = address_handle(outgoing.destination);
  if (ah == nullptr) return true;
  std::size_t slot = static_cast<std::size_t>(free_slot - send_slot_busy_.begin());
  std::uint8_t* bytes = buffers_.data() + kReceiveSlots * kReceiveSlotBytes + slot * cm::kMadLength;
  std::memcpy(bytes, outgoing.mad.data(), cm::kMadLength);
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(bytes), static_cast<std::uint32_t>(cm::kMadLength), mr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = kReceiveSlots + slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = cm::kGsiQpn;
  wr.wr.ud.remote_qkey = cm::kGsiQkey;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(qp_, &wr, &bad) == 0) *free_slot = true;
  return true;
}

void CmService::flush() {
  while (auto outgoing = manager_.poll_outgoing()) send(*outgoing);
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(wake_fd_, &one, sizeof one);
}

void CmService::take_completions() {
  std::array<ibv_wc, 16> completions{};
  TimeNs now = monotonic_now();
  while (true) {
    int found = ibv_poll_cq(cq_, static_cast<int>(completions.size()), completions.data());
    if (found <= 0) return;
    for (int i = 0; i < found; ++i) {
      const ibv_wc& wc = completions[i];
      if (wc.wr_id >= kReceiveSlots) {  // a send slot is free again
        send_slot_busy_[wc.wr_id - kReceiveSlots] = false;
        send_waiting();
        continue;
      }
      const std::uint8_t* slot = buffers_.data() + wc.wr_id * kReceiveSlotBytes;
      if (wc.status == IBV_WC_SUCCESS && wc.byte_len == kReceiveSlotBytes) {
        // The sender, from the IP header in the GRH area (IPv4: its last 20 bytes).
        Gid from{};
        if (slot[20] == 0x45) {
          from[10] = from[11] = 0xFF;
          std::memcpy(from.data() + 12, slot + 20 + 12, 4);
        } else {
          std::memcpy(from.data(), slot + 8, 16);
        }
        manager_.on_mad(from, ByteSpan(slot + kGrhArea, cm::kMadLength), now);
      }
      if (wc.status != IBV_WC_WR_FLUSH_ERR) post_receive(wc.wr_id);
    }
  }
}

void CmService::dispatch(const cm::CmEvent& event) {
  if (event.kind == cm::CmEventKind::request) {
    const auto& request = std::get<cm::ConnectRequest>(*event.message);
    auto listener = listeners.find(request.service_id);
    if (listener == listeners.end()) {
      manager_.reject(event.comm_id, static_cast<std::uint16_t>(cm::RejectReason::invalid_service_id), {},
                      monotonic_now());
      return;
    }
    on_connection_request(*this, *listener->second, event);
    return;
  }
  if (event.kind == cm::CmEventKind::resolution_request) {
    const auto& request = std::get<cm::SidrRequest>(*event.message);
    auto listener = listeners.find(request.service_id);
    if (listener == listeners.end()) {
      manager_.reject(event.comm_id, 0, {}, monotonic_now());
      return;
    }
    on_resolution_request(*this, *listener->second, event);
    return;
  }
  auto id = ids.find(event.comm_id);
  if (id != ids.end()) on_connection_event(*id->second, event);
}

void CmService::run() {
  while (!stop_.load()) {
    TimeNs deadline;
    {
      std::lock_guard lock(cm_lock());
      deadline = manager_.next_deadline();
    }
    TimeNs now = monotonic_now();
    int timeout_ms = deadline == kNever ? 1000 : static_cast<int>(std::clamp<TimeNs>((deadline - now) / 1'000'000 + 1, 0, 1000));
    if (!deferred_disconnects_.empty()) timeout_ms = std::min(timeout_ms, 1);  // looks for the polls each millisecond
    std::array<pollfd, 2> fds{pollfd{completions_->fd, POLLIN, 0}, pollfd{wake_fd_, POLLIN, 0}};
    ::poll(fds.data(), fds.size(), timeout_ms);
    if (stop_.load()) return;
    std::lock_guard lock(cm_lock());
    if (fds[1].revents & POLLIN) {
      std::uint64_t count = 0;
      [[maybe_unused]] ssize_t got = ::read(wake_fd_, &count, sizeof count);
    }
    if (fds[0].revents & POLLIN) {
      ibv_cq* cq = nullptr;
      void* cq_context = nullptr;
      if (ibv_get_cq_event(completions_, &cq, &cq_context) == 0) {
        ibv_ack_cq_events(cq, 1);
        ibv_req_notify_cq(cq_, 0);
      }
    }
    take_completions();  // after re-arming: nothing that arrived in between is missed
    manager_.on_timer(monotonic_now());
    while (auto event = manager_.poll_event()) dispatch(*event);
    while (auto outgoing = manager_.poll_outgoing()) send(*outgoing);
    deliver_deferred_disconnects(monotonic_now());
  }
}

void CmService::defer_disconnect(std::uint32_t comm_id) {
  deferred_disconnects_.emplace_back(comm_id, monotonic_now() + kDisconnectWait);
}

void CmService::deliver_deferred_disconnects(TimeNs now) {
  std::erase_if(deferred_disconnects_, [&](const std::pair<std::uint32_t, TimeNs>& deferred) {
    auto id = ids.find(deferred.first);
    if (id == ids.end()) return true;  // destroyed: no event
    CmId& waiting = *id->second;
    bool polled = !uroce_qp_has_completions_waiting(context_, waiting.local_qpn);
    if (!polled && now < deferred.second) return false;
    queue_event(waiting, RDMA_CM_EVENT_DISCONNECTED, 0);
    return true;
  });
}

}  // namespace uroce::rdmacm
