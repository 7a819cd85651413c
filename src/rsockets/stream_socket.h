// One rsockets stream socket (stream_protocol.h): its rdma_cm ID and
// channel, its RC QP and completion channel, its three registered areas
// (staging for sends, the receive buffer, the table the peer writes
// buffers into), and the protocol's counters. Connecting and accepting wait
// for the CM (a non-blocking socket's connect completes before it
// returns); sends and receives wait for completions unless the socket or
// the call is non-blocking (then EWOULDBLOCK). Not thread-safe: the calls
// in rsocket_calls.cc hold the socket's lock.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "rsockets/stream_protocol.h"

namespace uroce::rsockets {

inline int fail(int error) {
  errno = error;
  return -1;
}
inline off_t fail_off(int error) {
  errno = error;
  return -1;
}

struct SocketOptions {
  std::uint32_t send_buffer = kDefaultBuffer;
  std::uint32_t receive_buffer = kDefaultBuffer;
  std::uint16_t send_queue = kDefaultQueue;
  std::uint16_t receive_queue = kDefaultQueue;
  std::uint16_t inline_size = kDefaultInline;
  std::uint16_t iomap_size = 0;  // entries the peer may riomap into us
  bool nonblocking = false;
  bool no_delay = false, keepalive = false, reuse_address = false;
  int keepalive_idle = 0;
};

class StreamSocket {
 public:
  explicit StreamSocket(const SocketOptions& options) : options_(options) {}
  ~StreamSocket();
  StreamSocket(const StreamSocket&) = delete;
  StreamSocket& operator=(const StreamSocket&) = delete;

  std::mutex lock;
  SocketOptions options_;

  // 0, or -1 with errno (the call's).
  int open(int domain);
  int bind(const sockaddr* address);
  int listen();
  int connect(const sockaddr* address);
  // The next connection of a listening socket, connected; nullptr with errno.
  std::unique_ptr<StreamSocket> accept();

  ssize_t send(const std::uint8_t* data, std::size_t length, int flags);
  ssize_t receive(std::uint8_t* data, std::size_t length, int flags);
  int shutdown(int how);

  off_t map(void* buffer, std::size_t length, int protection, off_t offset);
  int unmap(void* buffer, std::size_t length);
  ssize_t write_mapped(const std::uint8_t* data, std::size_t length, off_t offset, int flags);

  // For rpoll: processes completions without waiting, then reports.
  short ready_events(short wanted);
  // The fd that becomes readable when ready_events may have changed (after
  // arm(); -1 if none), and arming it.
  int wake_fd() const;
  void arm();
  void take_wakeup();

  int set_nonblocking(bool on);
  bool listening() const { return state_ == State::listening; }
  bool connected() const { return state_ == State::connected; }
  int pending_error();  // SO_ERROR: read and cleared
  rdma_cm_id* id() const { return id_; }

 private:
  enum class State { idle, bound, listening, connected, closed };
  struct MessageReceived {
    Op op;
    std::uint32_t length;
  };
  struct Mapping {
    void* buffer;
    std::size_t length;
    ibv_mr* region;
    int index;  // in the peer's table
  };

  int create_endpoint();
  void save_peer(const ConnectionData& peer);
  ConnectionData our_data() const;
  int wait_for(rdma_cm_event_type wanted, std::vector<std::uint8_t>* private_data);

  void poll_completions();
  // Until ready() holds (0) or, non-blocking, EWOULDBLOCK / an error (-1).
  // Spins 10 us, then sleeps on the completion channel.
  template <typename Ready>
  int progress_until(Ready ready, bool nonblocking) {
    timespec start{};
    ::clock_gettime(CLOCK_MONOTONIC, &start);
    while (true) {
      update_credits();
      poll_completions();
      update_credits();
      if (ready()) return 0;
      if (nonblocking) return fail(EWOULDBLOCK);
      timespec now{};
      ::clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - start.tv_sec) * 1'000'000'000 + (now.tv_nsec - start.tv_nsec) < 10'000) continue;
      if (!wait_for_completion()) return -1;
    }
  }
  bool wait_for_completion();
  bool can_send() const;
  bool have_data() const { return !messages_.empty(); }
  void update_credits();
  int post_receive();
  int post_write(ibv_sge* sges, int count, std::uint32_t immediate, bool with_immediate, std::uint64_t address,
                 std::uint32_t key, int flags, std::uint64_t wr_id);
  int stage_and_write(const std::uint8_t* data, std::uint32_t length, std::uint32_t immediate, bool with_immediate,
                      std::uint64_t address, std::uint32_t key);
  std::uint8_t* control_slot();
  RemoteBuffer* target_sgl() { return reinterpret_cast<RemoteBuffer*>(target_area_.get()); }
  Iomap* target_iomap() { return reinterpret_cast<Iomap*>(target_area_.get() + kSglEntries * sizeof(RemoteBuffer)); }

  State state_ = State::idle;
  bool readable_ = false, writable_ = false;
  int error_ = 0;
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  ibv_comp_channel* completions_ = nullptr;
  ibv_cq* cq_ = nullptr;
  bool cq_armed_ = false;
  int unacked_cq_events_ = 0;

  std::unique_ptr<std::uint8_t[]> send_area_, receive_area_, target_area_;
  ibv_mr* send_region_ = nullptr;
  ibv_mr* receive_region_ = nullptr;
  ibv_mr* target_region_ = nullptr;
  bool swap_ = false;  // the peer's entries are in the other byte order

  // Sending.
  std::uint16_t send_seq_ = 0, send_seq_limit_ = 0;
  std::uint32_t control_seq_ = 0, control_limit_ = kControlSlots;
  int send_slots_ = 0;
  std::uint32_t staging_free_ = 0, staging_offset_ = 0;
  std::size_t target_index_ = 0;
  RemoteBuffer remote_sgl_{};
  std::size_t remote_sgl_next_ = 1;
  RemoteBuffer remote_iomap_{};
  std::vector<bool> remote_iomap_used_;
  std::vector<Mapping> mappings_;

  // Receiving.
  std::uint16_t receive_seq_ = 0, receive_seq_grant_at_ = 0;
  std::uint32_t receive_offset_ = 0, receive_free_offset_ = 0, receive_free_ = 0;
  std::deque<MessageReceived> messages_;
};

}  // namespace uroce::rsockets
