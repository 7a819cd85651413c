// The intra-host path's shared memory. A receiving device publishes a
// segment in /dev/shm, named by its network namespace, address and UDP port;
// another device of the same user on the same host puts whole RoCEv2
// datagrams into it instead of sending them through the kernel. Each sending
// device owns one lane of the segment, a single-producer ring of datagram
// slots; the receiver reads every lane ever claimed. A Unix datagram socket
// beside the segment wakes a receiver that sleeps; a receiver that polls costs its
// senders no system call.
//
// Everything in the segment may be written by another process: the reader
// bounds every index and length it takes from it, so a broken or hostile
// sender can garble its own datagrams (which the engine then checks like any
// arrival) but never make the reader touch memory outside the segment.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/bytes.h"
#include "uroce/expected.h"
#include "port/network_namespace.h"
#include "port/port.h"
#include "uroce/vocabulary.h"

namespace uroce::port {

inline constexpr std::uint32_t kLocalLanes = 64;         // local senders one receiver takes; more go by UDP
inline constexpr std::uint32_t kLocalSlotsPerLane = 64;  // datagrams in flight from one sender

// Where the segment of the device on gid:udp_port in network namespace
// `netns` lives ("/dev/shm/uroce.<netns>.<gid>.<port>"); its wake socket adds ".wake".
std::string local_segment_path(const Gid& gid, std::uint16_t udp_port, std::uint64_t netns);
// Devices that share an address (the first holds its UDP socket, the others
// are reached through their inboxes only): member 0 is the first, at
// local_segment_path; member m of 1 to 15 adds ".m<m>".
std::string local_member_path(const std::string& first_member_path, std::uint8_t member);
// A segment at path whose device is alive (magic set, owner not gone).
bool local_segment_is_live(const std::string& path);

struct LocalSegment;  // the layout, in local_ring.cc

// A mapping of one segment, unmapped when destroyed.
class SegmentMapping {
 public:
  SegmentMapping() = default;
  SegmentMapping(void* base, std::size_t length) : base_(base), length_(length) {}
  SegmentMapping(SegmentMapping&& other) noexcept;
  SegmentMapping& operator=(SegmentMapping&& other) noexcept;
  ~SegmentMapping();
  LocalSegment& segment() const { return *static_cast<LocalSegment*>(base_); }
  ByteSpan bytes() const { return ByteSpan(static_cast<const std::uint8_t*>(base_), length_); }
  std::uint8_t* slot(std::uint32_t lane, std::uint64_t index) const;
  std::uint8_t* base() const { return static_cast<std::uint8_t*>(base_); }

 private:
  void* base_ = nullptr;
  std::size_t length_ = 0;
};

// The receiving side: creates the segment and its wake socket, removes both when
// destroyed (senders holding it see it closed).
class LocalInbox {
 public:
  // The inbox of the device that holds gid:udp_port's socket (member 0).
  static Expected<LocalInbox, std::string> create(const Gid& gid, std::uint16_t udp_port);
  // The inbox of a device that shares gid with the live one holding its
  // socket: the first free member slot of 1 to 15, claimed exclusively.
  static Expected<LocalInbox, std::string> create_sharing(const Gid& gid, std::uint16_t udp_port);
  LocalInbox(LocalInbox&& other) noexcept;
  LocalInbox& operator=(LocalInbox&&) = delete;
  ~LocalInbox();

  // Readable when a sender rang while the receiver announced a sleep.
  int wake_fd() const { return wake_fd_; }
  // Fills out with what the lanes hold, oldest first per lane; the spans point
  // into the slots and stay valid until release(). Returns how many.
  std::size_t take(std::span<ReceivedDatagram> out);
  // Gives the slots of the last take() back to their senders.
  void release();
  // Before the receiver's last look and sleep on wake_fd(): from then on a
  // sender that puts a datagram rings. After the sleep: senders stop ringing.
  void announce_sleep();
  void announce_awake();
  // The whole segment as this process maps it: what take()'s spans must lie in.
  ByteSpan segment_bytes() const;
  // The namespace of the thread that created the inbox, where the device's
  // socket is too: its local peers are the devices published there.
  std::uint64_t network_namespace() const { return network_namespace_; }
  // 0 for the device that holds the address's socket; 1 to 15 for those sharing it.
  std::uint8_t member() const { return member_; }

 private:
  LocalInbox() = default;
  // Creates the segment at path_: exclusive, or replacing one left there.
  static Expected<LocalInbox, std::string> create_at(LocalInbox inbox, bool replace);

  std::string path_;
  std::uint64_t network_namespace_ = 0;
  std::uint8_t member_ = 0;
  SegmentMapping mapping_;
  int wake_fd_ = -1;
  std::uint32_t next_lane_ = 0;  // where the next take starts: lanes take turns
  std::array<std::uint64_t, kLocalLanes> tails_{};  // ours: the shared copy is only for the senders
  std::array<std::uint32_t, kLocalLanes> taken_{};  // per lane, by the last take()
  std::uint64_t lanes_taken_ = 0;                    // a bit per lane with taken_ above 0
  std::uint64_t populated_lanes_ = 0;                // a bit per lane whose slots this mapping holds
  bool announced_ = false;                           // a sleep was announced and not taken back
};

// The sending side: one claimed lane in one peer's segment, given back when
// destroyed.
class LocalOutbox {
 public:
  // nullopt when no segment exists at path (the peer is not a local uroce
  // device, or belongs to another user), it is closed or malformed, or all
  // its lanes are taken. token identifies this sender: its pid in the high
  // half, so that a lane left by a dead process can be taken over.
  static std::optional<LocalOutbox> attach(const std::string& path, std::uint64_t token);
  LocalOutbox(LocalOutbox&& other) noexcept;
  LocalOutbox& operator=(LocalOutbox&&) = delete;
  ~LocalOutbox();

  enum class Put : std::uint8_t { taken, full, closed };
  // Copies the datagram into the next slot (at most kMaxDatagramLength
  // bytes); from_wire: the holder of a shared address forwards it from the
  // wire, and the receiver takes it as not local.
  Put put(ByteSpan datagram, bool from_wire = false);
  // Whether the next put finds a free slot (not whether the segment is open).
  bool has_room();
  // After a batch of puts: wakes the receiver if it announced a sleep.
  void ring();
  // The receiver's progress through this lane (to tell a slow receiver from a stuck one).
  std::uint64_t released() const;

 private:
  LocalOutbox() = default;

  SegmentMapping mapping_;
  int wake_fd_ = -1;
  std::uint32_t lane_ = 0;
  std::uint64_t token_ = 0;
  std::uint64_t head_ = 0;        // ours: published to the lane after each put
  std::uint64_t known_tail_ = 0;  // the receiver's tail when we last read it
  bool unrung_ = false;     // puts since the last ring()
};

}  // namespace uroce::port
