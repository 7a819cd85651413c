// A stream rsocket: connection set-up over rdma_cm, and the data path of
// stream_protocol.h (sends, receives, credits, shutdown).
#include "rsockets/stream_socket.h"

#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace uroce::rsockets {
namespace {

constexpr std::uint64_t kReceiveFlag = std::uint64_t{1} << 63;
constexpr int kConnectTimeoutMs = 2000;


RemoteBuffer to_big_endian(RemoteBuffer buffer) {
  return RemoteBuffer{htobe64(buffer.address), htobe32(buffer.key), htobe32(buffer.length)};
}
RemoteBuffer from_big_endian(RemoteBuffer buffer) {
  return RemoteBuffer{be64toh(buffer.address), be32toh(buffer.key), be32toh(buffer.length)};
}
RemoteBuffer swapped(RemoteBuffer buffer) {
  return RemoteBuffer{__builtin_bswap64(buffer.address), __builtin_bswap32(buffer.key),
                      __builtin_bswap32(buffer.length)};
}

std::unique_ptr<std::uint8_t[]> zeroed(std::size_t length) {
  return std::unique_ptr<std::uint8_t[]>(new (std::nothrow) std::uint8_t[length]());
}

}  // namespace

StreamSocket::~StreamSocket() {
  for (Mapping& mapping : mappings_) ibv_dereg_mr(mapping.region);
  if (id_ != nullptr && id_->qp != nullptr) rdma_destroy_qp(id_);
  for (ibv_mr* region : {send_region_, receive_region_, target_region_}) {
    if (region != nullptr) ibv_dereg_mr(region);
  }
  if (cq_ != nullptr) {
    ibv_ack_cq_events(cq_, static_cast<unsigned>(unacked_cq_events_));
    ibv_destroy_cq(cq_);
  }
  if (completions_ != nullptr) ibv_destroy_comp_channel(completions_);
  if (id_ != nullptr) rdma_destroy_id(id_);
  if (channel_ != nullptr) rdma_destroy_event_channel(channel_);
}

int StreamSocket::open(int /*domain*/) {
  channel_ = rdma_create_event_channel();
  if (channel_ == nullptr) return -1;
  return rdma_create_id(channel_, &id_, this, RDMA_PS_TCP);
}

int StreamSocket::bind(const sockaddr* address) {
  if (state_ != State::idle) return fail(EINVAL);
  if (rdma_bind_addr(id_, const_cast<sockaddr*>(address)) != 0) return -1;
  state_ = State::bound;
  return 0;
}

int StreamSocket::listen() {
  if (state_ == State::listening) return 0;
  if (state_ != State::bound) return fail(EINVAL);
  if (rdma_listen(id_, 0) != 0) return -1;
  state_ = State::listening;
  return 0;
}

// Waits for the ID's next event (also on a non-blocking socket); 0 if it
// is `wanted` (its private data copied out), else -1 with an errno that
// says why.
int StreamSocket::wait_for(rdma_cm_event_type wanted, std::vector<std::uint8_t>* private_data) {
  rdma_cm_event* event = nullptr;
  while (rdma_get_cm_event(channel_, &event) != 0) {
    if (errno != EAGAIN && errno != EINTR) return -1;
    pollfd channel{channel_->fd, POLLIN, 0};
    ::poll(&channel, 1, -1);
  }
  rdma_cm_event_type type = event->event;
  int status = event->status;
  if (private_data != nullptr && event->param.conn.private_data != nullptr) {
    auto* bytes = static_cast<const std::uint8_t*>(event->param.conn.private_data);
    private_data->assign(bytes, bytes + event->param.conn.private_data_len);
  }
  rdma_ack_cm_event(event);
  if (type == wanted) return 0;
  if (type == RDMA_CM_EVENT_REJECTED) return fail(ECONNREFUSED);
  if (type == RDMA_CM_EVENT_UNREACHABLE || type == RDMA_CM_EVENT_ADDR_ERROR || type == RDMA_CM_EVENT_ROUTE_ERROR) {
    return fail(status == -ETIMEDOUT ? ETIMEDOUT : EHOSTUNREACH);
  }
  return fail(ECONNABORTED);
}

int StreamSocket::connect(const sockaddr* address) {
  if (state_ == State::connected) return fail(EISCONN);
  if (state_ != State::idle && state_ != State::bound) return fail(EINVAL);
  sockaddr* source = state_ == State::bound ? rdma_get_local_addr(id_) : nullptr;
  if (rdma_resolve_addr(id_, source, const_cast<sockaddr*>(address), kConnectTimeoutMs) != 0 ||
      wait_for(RDMA_CM_EVENT_ADDR_RESOLVED, nullptr) != 0 || rdma_resolve_route(id_, kConnectTimeoutMs) != 0 ||
      wait_for(RDMA_CM_EVENT_ROUTE_RESOLVED, nullptr) != 0 || create_endpoint() != 0) {
    return -1;
  }
  ConnectionData ours = our_data();
  rdma_conn_param parameters{};
  parameters.private_data = &ours;
  parameters.private_data_len = sizeof ours;
  parameters.flow_control = 1;
  parameters.retry_count = 7;
  parameters.rnr_retry_count = 7;
  std::vector<std::uint8_t> reply;
  if (rdma_connect(id_, &parameters) != 0 || wait_for(RDMA_CM_EVENT_ESTABLISHED, &reply) != 0) return -1;
  ConnectionData peer{};
  if (reply.size() < sizeof peer) return fail(EPROTO);
  std::memcpy(&peer, reply.data(), sizeof peer);
  if (peer.version != kVersion) return fail(ENOTSUP);
  save_peer(peer);
  state_ = State::connected;
  readable_ = writable_ = true;
  return 0;
}

std::unique_ptr<StreamSocket> StreamSocket::accept() {
  if (state_ != State::listening) {
    errno = EINVAL;
    return nullptr;
  }
  while (true) {
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel_, &event) != 0) return nullptr;  // EAGAIN when non-blocking
    if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
      rdma_ack_cm_event(event);
      continue;
    }
    rdma_cm_id* child_id = event->id;
    ConnectionData peer{};
    bool valid = event->param.conn.private_data_len >= sizeof peer;
    if (valid) std::memcpy(&peer, event->param.conn.private_data, sizeof peer);
    rdma_ack_cm_event(event);
    auto child = std::make_unique<StreamSocket>(options_);
    child->options_.nonblocking = false;
    child->id_ = child_id;
    child_id->context = child.get();
    child->channel_ = rdma_create_event_channel();
    if (!valid || peer.version != kVersion || child->channel_ == nullptr ||
        rdma_migrate_id(child_id, child->channel_) != 0 || child->create_endpoint() != 0) {
      rdma_reject(child_id, nullptr, 0);
      continue;  // the child's destructor frees what it made
    }
    child->save_peer(peer);
    ConnectionData ours = child->our_data();
    rdma_conn_param parameters{};
    parameters.private_data = &ours;
    parameters.private_data_len = sizeof ours;
    parameters.flow_control = 1;
    parameters.rnr_retry_count = 7;
    if (rdma_accept(child_id, &parameters) != 0 || child->wait_for(RDMA_CM_EVENT_ESTABLISHED, nullptr) != 0) {
      continue;
    }
    child->state_ = State::connected;
    child->readable_ = child->writable_ = true;
    return child;
  }
}

int StreamSocket::create_endpoint() {
  SocketOptions& o = options_;
  o.send_queue = std::clamp(o.send_queue, kMinQueue, kMaxQueue);
  o.receive_queue = std::clamp(o.receive_queue, kMinQueue, kMaxQueue);
  o.send_buffer = std::max(o.send_buffer, 2 * kSendLowWater);
  o.receive_buffer = std::max<std::uint32_t>(o.receive_buffer & ~1u, 2 * kSendLowWater);
  completions_ = ibv_create_comp_channel(id_->verbs);
  if (completions_ == nullptr) return -1;
  cq_ = ibv_create_cq(id_->verbs, o.send_queue + o.receive_queue, this, completions_, 0);
  if (cq_ == nullptr) return -1;
  ibv_qp_init_attr attributes{};
  attributes.send_cq = attributes.recv_cq = cq_;
  attributes.qp_type = IBV_QPT_RC;
  attributes.sq_sig_all = 1;
  attributes.cap.max_send_wr = o.send_queue;
  attributes.cap.max_recv_wr = o.receive_queue;
  attributes.cap.max_send_sge = 2;
  attributes.cap.max_recv_sge = 1;
  attributes.cap.max_inline_data = o.inline_size;
  if (rdma_create_qp(id_, nullptr, &attributes) != 0) return -1;
  o.inline_size = static_cast<std::uint16_t>(attributes.cap.max_inline_data);

  std::size_t send_bytes = o.send_buffer + kControlSlots * sizeof(RemoteBuffer);
  std::size_t target_bytes = kSglEntries * sizeof(RemoteBuffer) + o.iomap_size * sizeof(Iomap);
  send_area_ = zeroed(send_bytes);
  receive_area_ = zeroed(o.receive_buffer);
  target_area_ = zeroed(target_bytes);
  if (send_area_ == nullptr || receive_area_ == nullptr || target_area_ == nullptr) return fail(ENOMEM);
  int local = IBV_ACCESS_LOCAL_WRITE;  // ints: verbs.h's ibv_reg_mr macro mixes two enums otherwise
  int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  send_region_ = ibv_reg_mr(id_->qp->pd, send_area_.get(), send_bytes, local);
  receive_region_ = ibv_reg_mr(id_->qp->pd, receive_area_.get(), o.receive_buffer, remote);
  target_region_ = ibv_reg_mr(id_->qp->pd, target_area_.get(), target_bytes, remote);
  if (send_region_ == nullptr || receive_region_ == nullptr || target_region_ == nullptr) return -1;

  staging_free_ = o.send_buffer;
  send_slots_ = o.send_queue - static_cast<int>(kControlSlots);
  receive_free_offset_ = receive_free_ = o.receive_buffer / 2;
  receive_seq_grant_at_ = o.receive_queue / 2;
  for (int i = 0; i < o.receive_queue; ++i) {
    if (post_receive() != 0) return -1;
  }
  return 0;
}

ConnectionData StreamSocket::our_data() const {
  ConnectionData data{};
  data.version = kVersion;
  data.flags = kFlagIomap | (__BYTE_ORDER == __BIG_ENDIAN ? kFlagNetworkOrder : 0);
  data.credits = htobe16(options_.receive_queue);
  data.target_iomap_size = iomap_size_scale(options_.iomap_size);
  data.target_sgl = to_big_endian(RemoteBuffer{reinterpret_cast<std::uintptr_t>(target_area_.get()),
                                               target_region_->rkey, kSglEntries});
  data.data_buffer = to_big_endian(RemoteBuffer{reinterpret_cast<std::uintptr_t>(receive_area_.get()),
                                                receive_region_->rkey, options_.receive_buffer / 2});
  return data;
}

void StreamSocket::save_peer(const ConnectionData& peer) {
  remote_sgl_ = from_big_endian(peer.target_sgl);
  bool peer_big_endian = (peer.flags & kFlagNetworkOrder) != 0;
  swap_ = peer_big_endian != (__BYTE_ORDER == __BIG_ENDIAN);
  if (peer.flags & kFlagIomap) {
    remote_iomap_ = RemoteBuffer{remote_sgl_.address + sizeof(RemoteBuffer) * remote_sgl_.length, remote_sgl_.key,
                                 iomap_size_value(peer.target_iomap_size)};
    remote_iomap_used_.assign(remote_iomap_.length, false);
  }
  target_sgl()[0] = from_big_endian(peer.data_buffer);
  send_seq_limit_ = be16toh(peer.credits);
}

int StreamSocket::post_receive() {
  ibv_recv_wr request{};
  request.wr_id = kReceiveFlag;
  ibv_recv_wr* bad = nullptr;
  int result = ibv_post_recv(id_->qp, &request, &bad);
  return result == 0 ? 0 : fail(result);
}

int StreamSocket::post_write(ibv_sge* sges, int count, std::uint32_t immediate, bool with_immediate,
                             std::uint64_t address, std::uint32_t key, int flags, std::uint64_t wr_id) {
  ibv_send_wr request{};
  request.wr_id = wr_id;
  request.sg_list = sges;
  request.num_sge = count;
  request.opcode = with_immediate ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  request.send_flags = static_cast<unsigned>(flags);
  request.imm_data = htobe32(immediate);
  request.wr.rdma.remote_addr = address;
  request.wr.rdma.rkey = key;
  ibv_send_wr* bad = nullptr;
  int result = ibv_post_send(id_->qp, &request, &bad);
  return result == 0 ? 0 : fail(result);
}

// Sends length bytes (at most the staging space free) inline or through
// the staging ring; the completion (wr_id: op and length) gives the slot
// and the staging bytes back.
int StreamSocket::stage_and_write(const std::uint8_t* data, std::uint32_t length, std::uint32_t immediate,
                                  bool with_immediate, std::uint64_t address, std::uint32_t key) {
  --send_slots_;
  staging_free_ -= length;
  std::uint64_t wr_id = message(with_immediate ? Op::data : Op::write, length);
  if (length <= options_.inline_size) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(data), length, 0};
    return post_write(&sge, 1, immediate, with_immediate, address, key, IBV_SEND_INLINE, wr_id);
  }
  std::uint8_t* staging = send_area_.get();
  std::uint32_t to_end = options_.send_buffer - staging_offset_;
  ibv_sge sges[2];
  int count = 1;
  if (length <= to_end) {
    std::memcpy(staging + staging_offset_, data, length);
    sges[0] = ibv_sge{reinterpret_cast<std::uintptr_t>(staging + staging_offset_), length, send_region_->lkey};
    staging_offset_ = length == to_end ? 0 : staging_offset_ + length;
  } else {
    std::memcpy(staging + staging_offset_, data, to_end);
    std::memcpy(staging, data + to_end, length - to_end);
    sges[0] = ibv_sge{reinterpret_cast<std::uintptr_t>(staging + staging_offset_), to_end, send_region_->lkey};
    sges[1] = ibv_sge{reinterpret_cast<std::uintptr_t>(staging), length - to_end, send_region_->lkey};
    count = 2;
    staging_offset_ = length - to_end;
  }
  return post_write(sges, count, immediate, with_immediate, address, key, 0, wr_id);
}

bool StreamSocket::can_send() const {
  auto* self = const_cast<StreamSocket*>(this);
  return send_slots_ > 0 && staging_free_ >= kSendLowWater && send_seq_ != send_seq_limit_ &&
         self->target_sgl()[target_index_].length != 0;
}

std::uint8_t* StreamSocket::control_slot() {
  return send_area_.get() + options_.send_buffer + (control_seq_ % kControlSlots) * sizeof(RemoteBuffer);
}

// Lends the peer the free half of the receive buffer, or (no half free)
// just the credits, when either is due.
void StreamSocket::update_credits() {
  std::uint32_t half = options_.receive_buffer / 2;
  bool seq_due = static_cast<std::int16_t>(receive_seq_ - receive_seq_grant_at_) >= 0;
  if (!(receive_free_ >= half || seq_due) || control_seq_ == control_limit_ || state_ != State::connected) return;
  ++control_seq_;
  receive_seq_grant_at_ = static_cast<std::uint16_t>(receive_seq_ + options_.receive_queue / 2);
  std::uint32_t credits = message(Op::sgl, static_cast<std::uint16_t>(receive_seq_ + options_.receive_queue));
  if (receive_free_ >= half) {
    RemoteBuffer lent{reinterpret_cast<std::uintptr_t>(receive_area_.get() + receive_free_offset_),
                      receive_region_->rkey, half};
    if (swap_) lent = swapped(lent);
    std::uint8_t* slot = control_slot();
    std::memcpy(slot, &lent, sizeof lent);
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(slot), sizeof lent, send_region_->lkey};
    post_write(&sge, 1, credits, true, remote_sgl_.address + remote_sgl_next_ * sizeof(RemoteBuffer), remote_sgl_.key,
               0, credits);
    receive_free_ -= half;
    receive_free_offset_ = receive_free_offset_ + half >= options_.receive_buffer ? 0 : receive_free_offset_ + half;
    remote_sgl_next_ = remote_sgl_next_ + 1 == remote_sgl_.length ? 0 : remote_sgl_next_ + 1;
  } else {
    post_write(nullptr, 0, credits, true, 0, 0, 0, credits);
  }
}

void StreamSocket::poll_completions() {
  ibv_wc completions[32];
  int received = 0;
  while (true) {
    int found = ibv_poll_cq(cq_, 32, completions);
    if (found <= 0) break;
    for (int i = 0; i < found; ++i) {
      const ibv_wc& wc = completions[i];
      if (wc.wr_id & kReceiveFlag) {
        if (wc.status != IBV_WC_SUCCESS) continue;
        ++received;
        std::uint32_t immediate = be32toh(wc.imm_data);
        switch (op_of(immediate)) {
          case Op::sgl:
            send_seq_limit_ = static_cast<std::uint16_t>(value_of(immediate));
            break;
          case Op::iomap_sgl:
            ++receive_seq_;  // consumed at once: it needs no room in the message queue
            break;
          case Op::control:
            if (value_of(immediate) == kDisconnect || !writable_) {
              state_ = State::closed;
              readable_ = writable_ = false;
            } else if (value_of(immediate) == kShutdown) {
              readable_ = false;
            }
            break;
          case Op::data:
            messages_.push_back(MessageReceived{Op::data, value_of(immediate)});
            break;
          default:
            break;
        }
        continue;
      }
      std::uint32_t what = static_cast<std::uint32_t>(wc.wr_id);
      switch (op_of(what)) {
        case Op::sgl:
        case Op::control:
          ++control_limit_;
          break;
        default:  // data, plain writes, iomap entries: a slot and their staging bytes come back
          ++send_slots_;
          staging_free_ += value_of(what);
          break;
      }
      if (wc.status != IBV_WC_SUCCESS && state_ == State::connected) {
        state_ = State::closed;
        readable_ = writable_ = false;
        error_ = EIO;
      }
    }
  }
  if (state_ == State::connected) {
    while (received-- > 0) {
      if (post_receive() != 0) {
        error_ = errno;
        state_ = State::closed;
        readable_ = writable_ = false;
        break;
      }
    }
  }
}

bool StreamSocket::wait_for_completion() {
  if (!cq_armed_) {
    ibv_req_notify_cq(cq_, 0);
    cq_armed_ = true;
    return true;  // poll once more: a completion may have come before the arming
  }
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  if (ibv_get_cq_event(completions_, &cq, &context) != 0) return false;
  ++unacked_cq_events_;
  cq_armed_ = false;
  return true;
}

ssize_t StreamSocket::send(const std::uint8_t* data, std::size_t length, int flags) {
  if (state_ != State::connected || !writable_) {  // never connected, or shut down for writing
    return fail(error_ != 0 ? error_ : (id_->qp != nullptr ? EPIPE : ENOTCONN));
  }
  bool nonblocking = options_.nonblocking || (flags & MSG_DONTWAIT);
  std::size_t left = length;
  std::uint32_t transfer = kFirstTransfer;
  while (left > 0) {
    if (!can_send()) {
      if (progress_until([&] { return can_send() || !writable_; }, nonblocking) != 0) break;
      if (!writable_) {
        errno = ECONNRESET;
        break;
      }
    }
    std::uint32_t size = static_cast<std::uint32_t>(std::min<std::size_t>(left, transfer));
    if (transfer < kMaxTransfer && transfer < left) transfer *= 2;
    RemoteBuffer& target = target_sgl()[target_index_];
    size = std::min({size, staging_free_, target.length});
    std::uint64_t address = target.address;
    std::uint32_t key = target.key;
    target.address += size;
    target.length -= size;
    if (target.length == 0) target_index_ = (target_index_ + 1) % kSglEntries;
    ++send_seq_;
    if (stage_and_write(data, size, message(Op::data, size), true, address, key) != 0) break;
    data += size;
    left -= size;
  }
  return left == length && length != 0 ? -1 : static_cast<ssize_t>(length - left);
}

ssize_t StreamSocket::receive(std::uint8_t* data, std::size_t length, int flags) {
  if (state_ == State::idle || state_ == State::bound || state_ == State::listening) return fail(ENOTCONN);
  bool nonblocking = options_.nonblocking || (flags & MSG_DONTWAIT);
  std::size_t left = length;
  do {
    if (!have_data() && progress_until([&] { return have_data() || !readable_; }, nonblocking) != 0) {
      if (left == length) return -1;
      break;
    }
    while (left > 0 && have_data()) {
      MessageReceived& next = messages_.front();
      std::uint32_t size = static_cast<std::uint32_t>(std::min<std::size_t>(left, next.length));
      if (flags & MSG_PEEK) {
        size = std::min(size, options_.receive_buffer - receive_offset_);
        std::memcpy(data, receive_area_.get() + receive_offset_, size);
        return size;
      }
      if (size == next.length) {
        messages_.pop_front();
        ++receive_seq_;
      } else {
        next.length -= size;
      }
      std::uint32_t to_end = options_.receive_buffer - receive_offset_;
      std::uint32_t first = std::min(size, to_end);
      std::memcpy(data, receive_area_.get() + receive_offset_, first);
      std::memcpy(data + first, receive_area_.get(), size - first);
      receive_offset_ = size - first != 0 ? size - first : (receive_offset_ + first) % options_.receive_buffer;
      receive_free_ += size;
      data += size;
      left -= size;
    }
  } while (left > 0 && (flags & MSG_WAITALL) && readable_);
  update_credits();
  return static_cast<ssize_t>(length - left);
}

int StreamSocket::shutdown(int how) {
  if (state_ != State::connected) return state_ == State::closed ? 0 : fail(ENOTCONN);
  Control control = kDisconnect;
  if (how == SHUT_RDWR) {
    readable_ = writable_ = false;
  } else if (how == SHUT_WR) {
    writable_ = false;
    control = readable_ ? kShutdown : kDisconnect;
  } else {
    readable_ = false;
    if (writable_) return 0;
  }
  if (control_seq_ == control_limit_) {
    progress_until([&] { return control_seq_ != control_limit_ || state_ != State::connected; }, false);
  }
  if (state_ == State::connected && control_seq_ != control_limit_) {
    ++control_seq_;
    std::uint32_t note = message(Op::control, control);
    post_write(nullptr, 0, note, true, 0, 0, 0, note);
  }
  // Every send and control message completes before the socket goes.
  auto all_sent = [&] {
    return state_ != State::connected ||
           static_cast<int>(control_limit_ - control_seq_) + send_slots_ == options_.send_queue;
  };
  progress_until(all_sent, false);
  if (control == kDisconnect) state_ = State::closed;
  return 0;
}

short StreamSocket::ready_events(short wanted) {
  short events = 0;
  if (state_ == State::listening) {
    pollfd channel{channel_->fd, POLLIN, 0};
    return ::poll(&channel, 1, 0) > 0 ? static_cast<short>(POLLIN & wanted) : 0;
  }
  if (cq_ == nullptr) return 0;
  update_credits();
  poll_completions();
  update_credits();
  if (have_data() || !readable_) events |= POLLIN;
  if (can_send() || !writable_) events |= POLLOUT;
  // Hang-up once the peer's data is read, as TCP delivers data before its
  // end (rdma-core reports it at once, and rstream -T a then drops the
  // peer's last message).
  if (state_ == State::closed && !have_data()) events |= POLLHUP;
  if (error_ != 0) events |= POLLERR;
  return static_cast<short>(events & (wanted | POLLHUP | POLLERR));
}

int StreamSocket::wake_fd() const {
  if (state_ == State::listening) return channel_->fd;
  return completions_ != nullptr ? completions_->fd : -1;
}

void StreamSocket::arm() {
  if (cq_ != nullptr && !cq_armed_) {
    ibv_req_notify_cq(cq_, 0);
    cq_armed_ = true;
  }
}

void StreamSocket::take_wakeup() {
  if (completions_ == nullptr || !cq_armed_) return;
  pollfd fd{completions_->fd, POLLIN, 0};
  if (::poll(&fd, 1, 0) <= 0) return;
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  if (ibv_get_cq_event(completions_, &cq, &context) == 0) {
    ++unacked_cq_events_;
    cq_armed_ = false;
  }
}

// A listener's accept, and a connection's waits, return EWOULDBLOCK instead
// of sleeping.
int StreamSocket::set_nonblocking(bool on) {
  options_.nonblocking = on;
  int flags = ::fcntl(channel_->fd, F_GETFL);
  if (flags < 0) return -1;
  return ::fcntl(channel_->fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) < 0 ? -1 : 0;
}

int StreamSocket::pending_error() {
  int error = error_;
  error_ = 0;
  return error;
}

}  // namespace uroce::rsockets
