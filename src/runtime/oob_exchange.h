// The out-of-band exchange that connects two QPs before any RoCE packet flows,
// the way perftest and ibv_rc_pingpong do it: one TCP connection, one text line
// each way with QPN, PSN, GID, rkey, buffer address and path MTU, then free
// text lines for the benchmark's own synchronisation.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "uroce/expected.h"
#include "uroce/engine.h"

namespace uroce::runtime {

struct QpConnectionInfo {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  Gid gid{};
  std::uint32_t rkey = 0;
  std::uint64_t address = 0;
  std::uint32_t mtu = 1024;  // bytes: the largest path MTU this side accepts

  std::string to_line() const;
  static std::optional<QpConnectionInfo> from_line(const std::string& line);
};

// One TCP connection to the peer, line oriented, with a timeout on every read.
class OobChannel {
 public:
  // Server: listens on address:port and accepts one peer (or times out).
  static Expected<OobChannel, std::string> accept(const std::string& address, std::uint16_t port,
                                                  std::chrono::milliseconds timeout);
  // Client: connects to address:port, retrying until the timeout (the server may start later).
  static Expected<OobChannel, std::string> connect(const std::string& address, std::uint16_t port,
                                                   std::chrono::milliseconds timeout);
  OobChannel(OobChannel&& other) noexcept;
  OobChannel& operator=(OobChannel&& other) noexcept;
  OobChannel(const OobChannel&) = delete;
  ~OobChannel();

  Expected<bool, std::string> send_line(const std::string& line);
  Expected<std::string, std::string> receive_line(std::chrono::milliseconds timeout);
  // A line if one has arrived, nothing if not yet: never blocks.
  Expected<std::optional<std::string>, std::string> try_receive_line();
  // Sends ours, receives theirs.
  Expected<QpConnectionInfo, std::string> exchange(const QpConnectionInfo& local, std::chrono::milliseconds timeout);

 private:
  explicit OobChannel(int fd) : fd_(fd) {}
  int fd_ = -1;
  std::string buffered_;
};

}  // namespace uroce::runtime
