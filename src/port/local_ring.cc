// The intra-host path's segment: its layout, creating and attaching it, and
// the single-producer lanes that carry datagrams through it.
#include "port/local_ring.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstddef>
#include <cstring>
#include <new>
#include <optional>
#include <utility>

#include "port/inboxes_at_exit.h"

namespace uroce::port {

// Each index has a cache line of its own: the sender writes head, the
// receiver tail, and neither should stall the other. The receiver does not
// read head: each slot says itself when it is published, so that a small
// datagram costs the receiver one cache line from the sender, not two.
struct LaneControl {
  alignas(64) std::atomic<std::uint64_t> owner;  // 0: free; else the sender's token
  alignas(64) std::atomic<std::uint64_t> head;   // datagrams published, ever: where a new owner goes on
  alignas(64) std::atomic<std::uint64_t> tail;   // datagrams the receiver released, ever
};

struct LocalSegment {
  std::atomic<std::uint64_t> magic;  // written last by the creator
  std::uint32_t version;
  std::uint32_t lane_count;
  std::uint32_t slots_per_lane;
  std::uint32_t slot_bytes;
  std::atomic<std::uint32_t> closed;          // the receiver is gone
  std::uint32_t owner_pid;                    // the receiver's process
  std::atomic<std::uint64_t> claimed_lanes;   // a bit per lane ever claimed: the ones the receiver reads
  alignas(64) std::atomic<std::uint32_t> sleeping;  // the receiver sleeps on its wake socket: ring it
  LaneControl lanes[kLocalLanes];
};

namespace {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "the lanes' atomics are shared between processes");

constexpr std::uint64_t kMagic = 0x31454356494c5255;  // "URLIVCE1"
constexpr std::uint32_t kVersion = 2;  // 2: a slot's length may carry kFromWire
// A slot: the published mark (the low 32 bits of its index + 1, stored
// last), the datagram's length, the datagram. The length's top bit marks a
// datagram the holder of a shared address forwarded from the wire.
constexpr std::size_t kSlotHeader = 8;
constexpr std::uint32_t kFromWire = std::uint32_t{1} << 31;

std::atomic<std::uint32_t>& published_mark(std::uint8_t* slot) {
  static_assert(std::atomic<std::uint32_t>::is_always_lock_free && alignof(std::atomic<std::uint32_t>) == 4);
  return *reinterpret_cast<std::atomic<std::uint32_t>*>(slot);
}

std::uint32_t mark_for(std::uint64_t index) { return static_cast<std::uint32_t>(index + 1); }
constexpr std::size_t kSlotBytes = (kSlotHeader + kMaxDatagramLength + 63) / 64 * 64;
constexpr std::size_t kSlotsOffset = (sizeof(LocalSegment) + 4095) / 4096 * 4096;
constexpr std::size_t kSegmentBytes = kSlotsOffset + std::size_t{kLocalLanes} * kLocalSlotsPerLane * kSlotBytes;

std::string wake_path(const std::string& path) { return path + ".wake"; }

// Maps one lane's slots into this process now, instead of a page fault at
// the first touch of each: 66 pages, each a fault of about 2 us on a VM,
// two per datagram (the sender's and the receiver's) for the first 64
// datagrams of a lane. The kernel allocates nothing here (the sender
// reserved the lane's memory when it claimed it): it fills page tables.
// Kernels before 5.14 lack MADV_POPULATE_*: the pages are touched instead.
void populate_lane(std::uint8_t* base, std::uint32_t lane, bool for_writing) {
  constexpr int kPopulateRead = 22, kPopulateWrite = 23;  // MADV_POPULATE_READ / _WRITE (Linux 5.14)
  constexpr std::size_t kPage = 4096;
  std::size_t first = (kSlotsOffset + std::size_t{lane} * kLocalSlotsPerLane * kSlotBytes) / kPage * kPage;
  std::size_t end = kSlotsOffset + (std::size_t{lane} + 1) * kLocalSlotsPerLane * kSlotBytes;
  if (::madvise(base + first, end - first, for_writing ? kPopulateWrite : kPopulateRead) == 0) return;
  // A shared tmpfs page read-faulted in is mapped writable too: a read each will do.
  for (std::size_t at = first; at < end; at += kPage) {
    [[maybe_unused]] std::uint8_t touched = *static_cast<volatile std::uint8_t*>(base + at);
  }
}

// The wake socket's address: a Unix datagram socket (a FIFO would kill a
// sender with SIGPIPE once the receiver is gone; a socket send says
// ECONNREFUSED, with MSG_NOSIGNAL). False if the path does not fit.
bool wake_address(const std::string& path, sockaddr_un& address, socklen_t& length) {
  std::string wake = wake_path(path);
  address = {};
  address.sun_family = AF_UNIX;
  if (wake.size() >= sizeof address.sun_path) return false;
  std::memcpy(address.sun_path, wake.c_str(), wake.size() + 1);
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + wake.size() + 1);
  return true;
}

// What the header of the segment at path says, when it is a segment of our
// own user's (only those are looked at).
struct SegmentState {
  bool published = false;   // its magic is set: it was made whole
  bool closed = false;      // its device closed it
  bool owner_known = false;
  bool owner_gone = false;  // the process that created it has exited
};

std::optional<SegmentState> segment_state(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  struct stat file {};
  bool ours = ::fstat(fd, &file) == 0 && S_ISREG(file.st_mode) && file.st_uid == ::geteuid() &&
              static_cast<std::size_t>(file.st_size) == kSegmentBytes;
  void* base = ours ? ::mmap(nullptr, sizeof(LocalSegment), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (base == MAP_FAILED) return std::nullopt;
  const auto* segment = static_cast<const LocalSegment*>(base);
  SegmentState state;
  state.published = segment->magic.load(std::memory_order_acquire) == kMagic;
  state.closed = segment->closed.load(std::memory_order_acquire) != 0;
  auto owner = static_cast<pid_t>(segment->owner_pid);
  state.owner_known = owner > 0;
  state.owner_gone = owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH;
  ::munmap(base, sizeof(LocalSegment));
  return state;
}

// The process that created the segment at path has exited (it was killed
// before it could remove it).
bool left_by_the_dead(const std::string& path) {
  std::optional<SegmentState> state = segment_state(path);
  return state && state->published && state->owner_gone;
}

// Marks the segment at path closed, then removes it and its wake socket.
// Senders still attached to it (which cannot see the unlink) find it
// closed at their next put and look the address up again: else a device
// that takes over the address of one killed would never hear from them.
void retire_segment(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) {
    struct stat file {};
    bool ours = ::fstat(fd, &file) == 0 && S_ISREG(file.st_mode) && file.st_uid == ::geteuid() &&
                static_cast<std::size_t>(file.st_size) == kSegmentBytes;
    void* base = ours ? ::mmap(nullptr, sizeof(LocalSegment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    ::close(fd);
    if (base != MAP_FAILED) {
      auto* segment = static_cast<LocalSegment*>(base);
      if (segment->magic.load(std::memory_order_acquire) == kMagic) segment->closed.store(1, std::memory_order_release);
      ::munmap(base, sizeof(LocalSegment));
    }
  }
  ::unlink(path.c_str());
  ::unlink(wake_path(path).c_str());
}

// What killed devices left in /dev/shm, whatever their namespace or
// address: removed when a device opens, so that the files do not pile up.
void remove_dead_segments() {
  DIR* directory = ::opendir("/dev/shm");
  if (directory == nullptr) return;
  const std::string suffix = ".wake";
  while (const dirent* entry = ::readdir(directory)) {
    std::string name = entry->d_name;
    if (name.rfind("uroce.", 0) != 0 ||
        (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)) {
      continue;
    }
    std::string path = "/dev/shm/" + name;
    if (left_by_the_dead(path)) retire_segment(path);
  }
  ::closedir(directory);
}

}  // namespace

std::string local_segment_path(const Gid& gid, std::uint16_t udp_port, std::uint64_t netns) {
  // Devices in different network namespaces may share an address and never
  // reach each other directly: the namespace is part of the name.
  auto namespace_id = static_cast<unsigned long long>(netns);
  char gid_hex[33];
  for (std::size_t i = 0; i < gid.size(); ++i) std::snprintf(gid_hex + 2 * i, 3, "%02x", gid[i]);
  char path[128];
  std::snprintf(path, sizeof path, "/dev/shm/uroce.%llx.%s.%u", namespace_id, gid_hex, unsigned{udp_port});
  return path;
}

SegmentMapping::SegmentMapping(SegmentMapping&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), length_(other.length_) {}

SegmentMapping& SegmentMapping::operator=(SegmentMapping&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, length_);
    base_ = std::exchange(other.base_, nullptr);
    length_ = other.length_;
  }
  return *this;
}

SegmentMapping::~SegmentMapping() {
  if (base_ != nullptr) ::munmap(base_, length_);
}

std::uint8_t* SegmentMapping::slot(std::uint32_t lane, std::uint64_t index) const {
  std::size_t slot = std::size_t{lane} * kLocalSlotsPerLane + index % kLocalSlotsPerLane;
  return static_cast<std::uint8_t*>(base_) + kSlotsOffset + slot * kSlotBytes;
}

// ---- the receiver --------------------------------------------------------------

std::string local_member_path(const std::string& first_member_path, std::uint8_t member) {
  return member == 0 ? first_member_path : first_member_path + ".m" + std::to_string(member);
}

bool local_segment_is_live(const std::string& path) {
  std::optional<SegmentState> state = segment_state(path);
  return state && state->published && !state->closed && state->owner_known && !state->owner_gone;
}

Expected<LocalInbox, std::string> LocalInbox::create(const Gid& gid, std::uint16_t udp_port) {
  LocalInbox inbox;
  inbox.network_namespace_ = this_thread_network_namespace();
  inbox.path_ = local_segment_path(gid, udp_port, inbox.network_namespace_);
  remove_dead_segments();
  // The address is ours (its UDP socket is bound), so a segment already
  // there was left by a device that exited or died without removing it.
  return create_at(std::move(inbox), /*replace=*/true);
}

Expected<LocalInbox, std::string> LocalInbox::create_sharing(const Gid& gid, std::uint16_t udp_port) {
  std::uint64_t netns = this_thread_network_namespace();
  std::string first = local_segment_path(gid, udp_port, netns);
  remove_dead_segments();
  for (std::uint8_t member = 1; member < kQpnMembers; ++member) {
    LocalInbox inbox;
    inbox.network_namespace_ = netns;
    inbox.member_ = member;
    inbox.path_ = local_member_path(first, member);
    auto created = create_at(std::move(inbox), /*replace=*/false);
    if (created || errno != EEXIST) return created;
  }
  errno = EBUSY;
  return unexpected("all " + std::to_string(kQpnMembers - 1) + " places beside " + first + " are taken");
}

Expected<LocalInbox, std::string> LocalInbox::create_at(LocalInbox inbox, bool replace) {
  // A failed inbox is no inbox: its destructor must not close or remove the
  // file at its path, which may be another device's (a member's slot taken).
  auto failed = [&](const char* what) {
    int error = errno;
    std::string text = std::string(what) + " " + inbox.path_ + ": " + std::strerror(error);
    inbox.path_.clear();
    if (inbox.wake_fd_ >= 0) ::close(std::exchange(inbox.wake_fd_, -1));
    errno = error;
    return unexpected(text);
  };
  if (replace) retire_segment(inbox.path_);
  int fd = ::open(inbox.path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return failed("cannot create");
  // Sized sparse; the header and lane indexes reserved now (a full /dev/shm
  // fails here, not with SIGBUS at the first store), each lane's slots by
  // the sender that claims it.
  int reserved = ::ftruncate(fd, kSegmentBytes) != 0 ? errno : ::posix_fallocate(fd, 0, kSlotsOffset);
  if (reserved != 0) {
    errno = reserved;
    ::close(fd);
    ::unlink(inbox.path_.c_str());
    return failed("cannot size");
  }
  void* base = ::mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    ::unlink(inbox.path_.c_str());
    return failed("cannot map");
  }
  inbox.mapping_ = SegmentMapping(base, kSegmentBytes);
  auto* segment = new (base) LocalSegment{};
  segment->version = kVersion;
  segment->lane_count = kLocalLanes;
  segment->slots_per_lane = kLocalSlotsPerLane;
  segment->slot_bytes = kSlotBytes;
  segment->owner_pid = static_cast<std::uint32_t>(::getpid());
  std::string wake = wake_path(inbox.path_);
  ::unlink(wake.c_str());
  sockaddr_un address;
  socklen_t address_length = 0;
  inbox.wake_fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (!wake_address(inbox.path_, address, address_length) || inbox.wake_fd_ < 0 ||
      ::bind(inbox.wake_fd_, reinterpret_cast<const sockaddr*>(&address), address_length) != 0 ||
      ::chmod(wake.c_str(), 0600) != 0) {  // only our user's senders may ring
    ::unlink(inbox.path_.c_str());
    ::unlink(wake.c_str());
    return failed("cannot create the wake socket beside");
  }
  segment->magic.store(kMagic, std::memory_order_release);
  remember_open_inbox(inbox.path_, &segment->closed);
  return inbox;
}

LocalInbox::LocalInbox(LocalInbox&& other) noexcept
    : path_(std::move(other.path_)),
      network_namespace_(other.network_namespace_),
      member_(other.member_),
      mapping_(std::move(other.mapping_)),
      wake_fd_(std::exchange(other.wake_fd_, -1)),
      next_lane_(other.next_lane_),
      tails_(other.tails_),
      taken_(other.taken_),
      lanes_taken_(other.lanes_taken_),
      populated_lanes_(other.populated_lanes_),
      announced_(other.announced_) {
  other.path_.clear();
}

LocalInbox::~LocalInbox() {
  if (path_.empty()) return;
  forget_open_inbox(path_);
  mapping_.segment().closed.store(1, std::memory_order_release);
  ::unlink(path_.c_str());
  ::unlink(wake_path(path_).c_str());
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

std::size_t LocalInbox::take(std::span<ReceivedDatagram> out) {
  LocalSegment& segment = mapping_.segment();
  std::uint64_t claimed = segment.claimed_lanes.load(std::memory_order_acquire);
  for (std::uint64_t fresh = claimed & ~populated_lanes_; fresh != 0; fresh &= fresh - 1) {
    populate_lane(mapping_.base(), static_cast<std::uint32_t>(std::countr_zero(fresh)), /*for_writing=*/false);
  }
  populated_lanes_ |= claimed;
  // Lanes take turns at going first: the claimed ones from next_lane_ up, then the rest.
  std::uint64_t from_next = next_lane_ == 0 ? claimed : claimed & (~std::uint64_t{0} << next_lane_);
  std::size_t count = 0;
  for (std::uint64_t pending : {from_next, claimed & ~from_next}) {
    for (; pending != 0 && count < out.size(); pending &= pending - 1) {
      auto lane = static_cast<std::uint32_t>(std::countr_zero(pending));
      // Each slot is checked before it is read: whatever a broken sender
      // writes, the receiver reads at most one lane's worth inside the lane.
      for (std::uint64_t next = tails_[lane] + taken_[lane];
           taken_[lane] < kLocalSlotsPerLane && count < out.size(); ++next) {
        std::uint8_t* slot = mapping_.slot(lane, next);
        if (published_mark(slot).load(std::memory_order_acquire) != mark_for(next)) break;
        std::uint32_t marked;
        std::memcpy(&marked, slot + 4, sizeof marked);
        std::uint32_t length = marked & ~kFromWire;
        // No ICRC check: the bytes never crossed a link that could flip them
        // (or the holder checked them), and a local process that forges
        // datagrams can forge an ICRC too. What came from the wire is not
        // local: its extent packets name memory on another host.
        out[count++] = ReceivedDatagram{ByteSpan(slot + kSlotHeader, std::min<std::size_t>(length, kMaxDatagramLength)),
                                        /*icrc_checkable=*/false, /*local=*/(marked & kFromWire) == 0};
        ++taken_[lane];
        lanes_taken_ |= std::uint64_t{1} << lane;
      }
    }
  }
  next_lane_ = (next_lane_ + 1) % kLocalLanes;
  return count;
}

void LocalInbox::release() {
  LocalSegment& segment = mapping_.segment();
  for (; lanes_taken_ != 0; lanes_taken_ &= lanes_taken_ - 1) {
    auto lane = static_cast<std::uint32_t>(std::countr_zero(lanes_taken_));
    tails_[lane] += taken_[lane];
    taken_[lane] = 0;
    segment.lanes[lane].tail.store(tails_[lane], std::memory_order_release);
  }
}

void LocalInbox::announce_sleep() {
  announced_ = true;
  char drained[8];
  while (::recv(wake_fd_, drained, sizeof drained, MSG_DONTWAIT) > 0) {
  }
  mapping_.segment().sleeping.store(1, std::memory_order_seq_cst);
  // Pairs with the sender's fence in ring(): either it sees us sleeping, or
  // our last look, which comes after this, sees its datagram.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

ByteSpan LocalInbox::segment_bytes() const { return mapping_.bytes(); }

// Only a change is written: the flag's cache line is one every sender reads.
void LocalInbox::announce_awake() {
  if (!announced_) return;
  announced_ = false;
  mapping_.segment().sleeping.store(0, std::memory_order_relaxed);
}

// ---- a sender ---------------------------------------------------------------------

std::optional<LocalOutbox> LocalOutbox::attach(const std::string& path, std::uint64_t token) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  struct FileCloser {
    int fd;
    ~FileCloser() { ::close(fd); }
  } closer{fd};
  struct stat file {};
  // Only a segment of our own user, of the size this version lays out.
  bool usable = ::fstat(fd, &file) == 0 && S_ISREG(file.st_mode) && file.st_uid == ::geteuid() &&
                static_cast<std::size_t>(file.st_size) == kSegmentBytes;
  void* base = usable ? ::mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (base == MAP_FAILED) return std::nullopt;
  LocalOutbox outbox;
  outbox.mapping_ = SegmentMapping(base, kSegmentBytes);
  LocalSegment& segment = outbox.mapping_.segment();
  if (segment.magic.load(std::memory_order_acquire) != kMagic || segment.version != kVersion ||
      segment.lane_count != kLocalLanes || segment.slots_per_lane != kLocalSlotsPerLane ||
      segment.slot_bytes != kSlotBytes || segment.closed.load(std::memory_order_acquire) != 0) {
    return std::nullopt;
  }
  // A receiver killed before it could remove its segment: remove it for it
  // (its address may be reused, and /dev/shm should not fill with the dead's).
  auto receiver = static_cast<pid_t>(segment.owner_pid);
  if (receiver > 0 && ::kill(receiver, 0) != 0 && errno == ESRCH) {
    retire_segment(path);
    return std::nullopt;
  }
  sockaddr_un address;
  socklen_t address_length = 0;
  if (!wake_address(path, address, address_length)) return std::nullopt;
  outbox.wake_fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (outbox.wake_fd_ < 0 || ::connect(outbox.wake_fd_, reinterpret_cast<const sockaddr*>(&address), address_length) != 0) {
    return std::nullopt;
  }
  bool no_room = false;  // /dev/shm is full
  auto claim = [&](std::uint32_t lane, std::uint64_t expected) {
    if (!segment.lanes[lane].owner.compare_exchange_strong(expected, token, std::memory_order_acq_rel)) return false;
    // The segment is sparse: reserve the lane's memory now, so that a full
    // /dev/shm (64 MiB in a default container) refuses the lane here rather
    // than raising SIGBUS at a later store into it.
    off_t lane_at = static_cast<off_t>(kSlotsOffset + std::size_t{lane} * kLocalSlotsPerLane * kSlotBytes);
    if (::posix_fallocate(fd, lane_at, static_cast<off_t>(kLocalSlotsPerLane * kSlotBytes)) != 0) {
      segment.lanes[lane].owner.store(expected, std::memory_order_release);
      no_room = true;
      return false;
    }
    populate_lane(static_cast<std::uint8_t*>(base), lane, /*for_writing=*/true);
    outbox.lane_ = lane;
    outbox.token_ = token;  // from here on the destructor gives the lane back
    segment.claimed_lanes.fetch_or(std::uint64_t{1} << lane, std::memory_order_acq_rel);
    outbox.head_ = segment.lanes[lane].head.load(std::memory_order_acquire);
    outbox.known_tail_ = segment.lanes[lane].tail.load(std::memory_order_acquire);
    return true;
  };
  for (std::uint32_t lane = 0; lane < kLocalLanes && !no_room; ++lane) {
    if (claim(lane, 0)) return outbox;
  }
  if (no_room) return std::nullopt;
  // All taken: take over a lane whose sender's process is gone.
  for (std::uint32_t lane = 0; lane < kLocalLanes; ++lane) {
    std::uint64_t owner = segment.lanes[lane].owner.load(std::memory_order_acquire);
    auto pid = static_cast<pid_t>(owner >> 32);
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH && claim(lane, owner)) return outbox;
  }
  return std::nullopt;
}

LocalOutbox::LocalOutbox(LocalOutbox&& other) noexcept
    : mapping_(std::move(other.mapping_)),
      wake_fd_(std::exchange(other.wake_fd_, -1)),
      lane_(other.lane_),
      token_(std::exchange(other.token_, 0)),
      head_(other.head_),
      known_tail_(other.known_tail_),
      unrung_(other.unrung_) {}

LocalOutbox::~LocalOutbox() {
  if (token_ != 0) {
    std::uint64_t mine = token_;
    mapping_.segment().lanes[lane_].owner.compare_exchange_strong(mine, 0, std::memory_order_acq_rel);
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

bool LocalOutbox::has_room() {
  // The receiver's tail is read only when the lane looks full: reading it
  // each time would cost a cache line from the receiver per datagram. A tail
  // ahead of our head (a broken receiver) reads as full, for good.
  if (head_ - known_tail_ >= kLocalSlotsPerLane) {
    known_tail_ = mapping_.segment().lanes[lane_].tail.load(std::memory_order_acquire);
    if (head_ - known_tail_ >= kLocalSlotsPerLane) return false;
  }
  return true;
}

LocalOutbox::Put LocalOutbox::put(ByteSpan datagram, bool from_wire) {
  LocalSegment& segment = mapping_.segment();
  if (segment.closed.load(std::memory_order_relaxed) != 0) return Put::closed;
  if (!has_room()) return Put::full;
  std::uint8_t* slot = mapping_.slot(lane_, head_);
  auto length = static_cast<std::uint32_t>(std::min(datagram.size(), kMaxDatagramLength));
  std::uint32_t marked = from_wire ? length | kFromWire : length;
  std::memcpy(slot + 4, &marked, sizeof marked);
  std::memcpy(slot + kSlotHeader, datagram.data(), length);
  published_mark(slot).store(mark_for(head_), std::memory_order_release);
  segment.lanes[lane_].head.store(++head_, std::memory_order_release);
  unrung_ = true;
  return Put::taken;
}

void LocalOutbox::ring() {
  if (!unrung_) return;
  unrung_ = false;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::atomic<std::uint32_t>& sleeping = mapping_.segment().sleeping;
  // One ring per sleep, however many senders: the first to see it takes it.
  if (sleeping.load(std::memory_order_relaxed) != 0 && sleeping.exchange(0, std::memory_order_acq_rel) != 0) {
    char one = 1;
    [[maybe_unused]] ssize_t sent = ::send(wake_fd_, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
}

std::uint64_t LocalOutbox::released() const {
  return mapping_.segment().lanes[lane_].tail.load(std::memory_order_acquire);
}

}  // namespace uroce::port
