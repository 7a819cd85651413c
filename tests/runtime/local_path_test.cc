// The intra-host path: the shared-memory lanes on their own (order, a full
// lane, several senders, taking over a dead sender's lane, ringing a
// sleeping receiver, a closed or dead receiver, one that exits without
// closing, a broken sender's slot), and
// devices on it (verified mixed traffic, a receiver that stops taking, a
// peer that does not take the path). The verbs operations on both paths are
// in udp_device_test.cc (DevicePaths). Addresses are in 127.0.12.0/24.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "port/local_ring.h"
#include "port/port.h"
#include "tests/support/device_completions.h"
#include "tests/support/mixed_traffic.h"
#include "tests/support/test_network.h"
#include "uroce/device.h"

namespace uroce::testing {
namespace {

using port::LocalInbox;
using port::LocalOutbox;
using port::ReceivedDatagram;

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

std::uint64_t token_of(pid_t pid, std::uint32_t salt) { return (std::uint64_t{static_cast<std::uint32_t>(pid)} << 32) | salt; }

std::vector<std::uint8_t> datagram(std::uint32_t number, std::size_t length = 100) {
  std::vector<std::uint8_t> bytes(length);
  for (std::size_t i = 0; i < length; ++i) bytes[i] = static_cast<std::uint8_t>(number * 7 + i);
  return bytes;
}

bool exists(const std::string& path) {
  struct stat file {};
  return ::stat(path.c_str(), &file) == 0;
}

// A process that has exited (and been reaped): its pid is free.
pid_t dead_pid() {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

struct Lanes {
  explicit Lanes(std::uint8_t host)
      : gid(gid_from_ipv4({127, 0, 12, host})), path(port::local_segment_path(gid, 4791, port::this_thread_network_namespace())) {}
  Gid gid;
  std::string path;
};

TEST(LocalRing, DatagramsArriveInOrderAndALaneHoldsWhatItHolds) {
  Lanes lanes(1);
  auto inbox = LocalInbox::create(lanes.gid, 4791);
  ASSERT_TRUE(inbox) << inbox.error();
  auto outbox = LocalOutbox::attach(lanes.path, token_of(::getpid(), 1));
  ASSERT_TRUE(outbox);
  for (std::uint32_t i = 0; i < port::kLocalSlotsPerLane; ++i) {
    ASSERT_EQ(outbox->put(datagram(i, 60 + i)), LocalOutbox::Put::taken);
  }
  EXPECT_EQ(outbox->put(datagram(99)), LocalOutbox::Put::full);
  std::array<ReceivedDatagram, 40> got{};
  std::size_t first = inbox->take(got);
  ASSERT_EQ(first, got.size());
  for (std::uint32_t i = 0; i < first; ++i) {
    std::vector<std::uint8_t> expected = datagram(i, 60 + i);
    ASSERT_TRUE(std::equal(got[i].bytes.begin(), got[i].bytes.end(), expected.begin(), expected.end())) << i;
    EXPECT_FALSE(got[i].icrc_checkable);  // no link to corrupt it
  }
  std::size_t second = inbox->take(got);  // the rest, before the first ones are released
  ASSERT_EQ(second, port::kLocalSlotsPerLane - first);
  std::vector<std::uint8_t> last = datagram(port::kLocalSlotsPerLane - 1, 60 + port::kLocalSlotsPerLane - 1);
  EXPECT_TRUE(std::equal(got[second - 1].bytes.begin(), got[second - 1].bytes.end(), last.begin(), last.end()));
  EXPECT_EQ(inbox->take(got), 0u);
  EXPECT_EQ(outbox->put(datagram(99)), LocalOutbox::Put::full);  // taken, not yet released
  inbox->release();
  EXPECT_EQ(outbox->released(), port::kLocalSlotsPerLane);
  EXPECT_EQ(outbox->put(datagram(100)), LocalOutbox::Put::taken);
  ASSERT_EQ(inbox->take(got), 1u);
  std::vector<std::uint8_t> hundred = datagram(100);
  EXPECT_TRUE(std::equal(got[0].bytes.begin(), got[0].bytes.end(), hundred.begin(), hundred.end()));
}

// The resident memory, KiB, of this process's mappings of the file at path (/proc/self/smaps).
std::size_t resident_kib_of(const std::string& path) {
  std::FILE* smaps = std::fopen("/proc/self/smaps", "r");
  if (smaps == nullptr) return 0;
  std::size_t total = 0;
  bool in_mapping = false;
  char line[512];
  while (std::fgets(line, sizeof line, smaps) != nullptr) {
    std::string text = line;
    if (!text.empty() && std::isxdigit(static_cast<unsigned char>(text[0])) && text.find('-') < text.find(' ')) {
      in_mapping = text.size() > path.size() && text.compare(text.size() - path.size() - 1, path.size(), path) == 0;
    } else if (std::size_t kib = 0; in_mapping && std::sscanf(line, "Rss: %zu kB", &kib) == 1) {
      total += kib;
    }
  }
  std::fclose(smaps);
  return total;
}

// A lane's slots are mapped into the sender when it claims the lane and into
// the receiver when it first sees the lane claimed, not one page fault at a
// time under the first 64 datagrams (a fault each way per datagram, about
// 2 us each on a VM: a READ ping-pong's first 64 round trips took 9 us
// instead of 1).
TEST(LocalRing, ALanesSlotsAreMappedWhenClaimedAndWhenFirstSeen) {
  constexpr std::size_t kLaneKib = std::size_t{port::kLocalSlotsPerLane} * kMaxDatagramLength / 1024;
  Lanes lanes(40);
  auto inbox = LocalInbox::create(lanes.gid, 4791);
  ASSERT_TRUE(inbox) << inbox.error();
  std::size_t header = resident_kib_of(lanes.path);
  EXPECT_LT(header, kLaneKib) << "the receiver mapped lanes nobody claimed";
  auto outbox = LocalOutbox::attach(lanes.path, token_of(::getpid(), 1));
  ASSERT_TRUE(outbox);
  std::size_t claimed = resident_kib_of(lanes.path);
  EXPECT_GE(claimed, header + kLaneKib) << "the sender's lane was not mapped when claimed";
  std::array<ReceivedDatagram, 4> got{};
  EXPECT_EQ(inbox->take(got), 0u);  // nothing sent yet, but the lane is claimed
  EXPECT_GE(resident_kib_of(lanes.path), claimed + kLaneKib) << "the receiver did not map the claimed lane";
}

TEST(LocalRing, SendersHaveLanesOfTheirOwnAndEachKeepsItsOrder) {
  Lanes lanes(2);
  auto inbox = LocalInbox::create(lanes.gid, 4791);
  ASSERT_TRUE(inbox) << inbox.error();
  auto one = LocalOutbox::attach(lanes.path, token_of(::getpid(), 1));
  auto two = LocalOutbox::attach(lanes.path, token_of(::getpid(), 2));
  ASSERT_TRUE(one && two);
  for (std::uint32_t i = 0; i < 10; ++i) {
    ASSERT_EQ(one->put(datagram(i)), LocalOutbox::Put::taken);
    ASSERT_EQ(two->put(datagram(1000 + i)), LocalOutbox::Put::taken);
  }
  std::array<ReceivedDatagram, 32> got{};
  ASSERT_EQ(inbox->take(got), 20u);
  std::uint32_t next_one = 0, next_two = 1000;
  for (std::size_t i = 0; i < 20; ++i) {
    std::vector<std::uint8_t> from_one = datagram(next_one), from_two = datagram(next_two);
    if (std::equal(got[i].bytes.begin(), got[i].bytes.end(), from_one.begin(), from_one.end())) {
      ++next_one;
    } else {
      ASSERT_TRUE(std::equal(got[i].bytes.begin(), got[i].bytes.end(), from_two.begin(), from_two.end())) << i;
      ++next_two;
    }
  }
  EXPECT_EQ(next_one, 10u);
  EXPECT_EQ(next_two, 1010u);
}

TEST(LocalRing, AllLanesTakenByLiveSendersRefusesOneMoreButADeadSendersLaneIsTakenOver) {
  Lanes lanes(3);
  auto inbox = LocalInbox::create(lanes.gid, 4791);
  ASSERT_TRUE(inbox) << inbox.error();
  std::vector<LocalOutbox> live;
  for (std::uint32_t i = 0; i < port::kLocalLanes; ++i) {
    auto outbox = LocalOutbox::attach(lanes.path, token_of(::getpid(), i + 1));
    ASSERT_TRUE(outbox) << i;
    live.push_back(std::move(*outbox));
  }
  EXPECT_FALSE(LocalOutbox::attach(lanes.path, token_of(::getpid(), 999)));  // it goes by UDP instead
  live.clear();  // lanes given back

  pid_t dead = dead_pid();
  std::vector<LocalOutbox> orphans;
  for (std::uint32_t i = 0; i < port::kLocalLanes; ++i) {
    auto outbox = LocalOutbox::attach(lanes.path, token_of(dead, i + 1));
    ASSERT_TRUE(outbox);
    orphans.push_back(std::move(*outbox));
  }
  auto heir = LocalOutbox::attach(lanes.path, token_of(::getpid(), 999));
  ASSERT_TRUE(heir);
  EXPECT_EQ(heir->put(datagram(5)), LocalOutbox::Put::taken);
  std::array<ReceivedDatagram, 4> got{};
  ASSERT_EQ(inbox->take(got), 1u);
}

TEST(LocalRing, ASleepingReceiverIsRungOnceAndAnAwakeOneNotAtAll) {
  Lanes lanes(4);
  auto inbox = LocalInbox::create(lanes.gid, 4791);
  ASSERT_TRUE(inbox) << inbox.error();
  auto outbox = LocalOutbox::attach(lanes.path, token_of(::getpid(), 1));
  ASSERT_TRUE(outbox);
  pollfd wake{inbox->wake_fd(), POLLIN, 0};

  outbox->put(datagram(1));
  outbox->ring();
  EXPECT_EQ(::poll(&wake, 1, 0), 0);  // awake: no system call for the sender, nothing to read

  inbox->announce_sleep();
  outbox->put(datagram(2));
  outbox->ring();
  EXPECT_EQ(::poll(&wake, 1, 0), 1);
  char bytes[8];
  EXPECT_EQ(::recv(inbox->wake_fd(), bytes, sizeof bytes, MSG_DONTWAIT), 1);  // one ring per sleep
  EXPECT_EQ(::recv(inbox->wake_fd(), bytes, sizeof bytes, MSG_DONTWAIT), -1);
  outbox->put(datagram(3));
  outbox->ring();
  EXPECT_EQ(::poll(&wake, 1, 0), 0);
  inbox->announce_awake();
  std::array<ReceivedDatagram, 8> got{};
  EXPECT_EQ(inbox->take(got), 3u);
}

TEST(LocalRing, AClosedReceiverIsSeenAndNoSegmentMeansNotLocal) {
  Lanes lanes(5);
  EXPECT_FALSE(LocalOutbox::attach(lanes.path, token_of(::getpid(), 1)));
  auto created = LocalInbox::create(lanes.gid, 4791);
  ASSERT_TRUE(created) << created.error();
  auto inbox = std::make_unique<LocalInbox>(std::move(*created));
  auto outbox = LocalOutbox::attach(lanes.path, token_of(::getpid(), 1));
  ASSERT_TRUE(outbox);
  EXPECT_TRUE(exists(lanes.path));
  EXPECT_TRUE(exists(lanes.path + ".wake"));
  inbox.reset();
  EXPECT_EQ(outbox->put(datagram(1)), LocalOutbox::Put::closed);
  EXPECT_FALSE(exists(lanes.path));
  EXPECT_FALSE(exists(lanes.path + ".wake"));
}

TEST(LocalRing, ADeadReceiversSegmentIsRemovedByTheNextSender) {
  Lanes lanes(6);
  pid_t child = ::fork();
  if (child == 0) {
    auto inbox = LocalInbox::create(lanes.gid, 4791);
    ::_exit(inbox ? 0 : 1);  // no destructors: the files stay, as after a kill
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_TRUE(exists(lanes.path));
  EXPECT_FALSE(LocalOutbox::attach(lanes.path, token_of(::getpid(), 1)));
  EXPECT_FALSE(exists(lanes.path));
  EXPECT_FALSE(exists(lanes.path + ".wake"));
}

TEST(LocalRing, ANewReceiverRemovesWhatDeadReceiversLeft) {
  Lanes dead(9), fresh(10);
  pid_t child = ::fork();
  if (child == 0) {
    auto inbox = LocalInbox::create(dead.gid, 4791);
    ::_exit(inbox ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_TRUE(exists(dead.path));
  auto inbox = LocalInbox::create(fresh.gid, 4791);
  ASSERT_TRUE(inbox) << inbox.error();
  EXPECT_FALSE(exists(dead.path));
  EXPECT_FALSE(exists(dead.path + ".wake"));
  EXPECT_TRUE(exists(fresh.path));
}

// A receiver at lanes' address in a child process, which holds it until
// told to exit; how it exits is the test's: _exit (no exit handlers, as
// after a kill) or exit (a program that ends without closing its device).
class ReceiverInChild {
 public:
  enum class Exit { without_handlers, with_handlers };
  ReceiverInChild(const Lanes& lanes, Exit how) {
    if (::pipe(ready_) != 0 || ::pipe(done_) != 0) return;
    child_ = ::fork();
    if (child_ != 0) return;
    auto inbox = LocalInbox::create(lanes.gid, 4791);
    char byte = inbox ? 1 : 0;
    // Never closed; held by a static so that the sanitizer's leak check,
    // which runs among the exit handlers, sees it reachable, not leaked.
    [[maybe_unused]] static LocalInbox* volatile never_closed = nullptr;
    if (inbox) never_closed = new LocalInbox(std::move(*inbox));
    [[maybe_unused]] ssize_t written = ::write(ready_[1], &byte, 1);
    [[maybe_unused]] ssize_t read = ::read(done_[0], &byte, 1);
    if (how == Exit::with_handlers) std::exit(0);
    ::_exit(0);
  }
  ~ReceiverInChild() {
    for (int fd : {ready_[0], ready_[1], done_[0], done_[1]}) ::close(fd);
  }
  // Whether its inbox was made.
  bool ready() {
    char byte = 0;
    return child_ > 0 && ::read(ready_[0], &byte, 1) == 1 && byte == 1;
  }
  // Tells it to exit, and returns its wait status.
  int exit_and_wait() {
    char byte = 0;
    [[maybe_unused]] ssize_t written = ::write(done_[1], &byte, 1);
    int status = -1;
    ::waitpid(child_, &status, 0);
    return status;
  }

 private:
  int ready_[2] = {-1, -1};
  int done_[2] = {-1, -1};
  pid_t child_ = -1;
};

// A receiver that exits without closing (a forked server's child, as
// qperf's) leaves its segment: a sender attached to it would fill it for
// ever. The next receiver at that address retires it, and the sender, at
// its next put, finds it closed and looks the address up again.
TEST(LocalRing, ASenderOfAReceiverThatExitedSeesItClosedWhenTheAddressIsTakenAgain) {
  Lanes lanes(12);
  ReceiverInChild receiver(lanes, ReceiverInChild::Exit::without_handlers);  // the segment stays, not marked closed
  ASSERT_TRUE(receiver.ready());
  auto outbox = LocalOutbox::attach(lanes.path, token_of(::getpid(), 1));
  ASSERT_TRUE(outbox);
  EXPECT_EQ(outbox->put(datagram(1)), LocalOutbox::Put::taken);
  receiver.exit_and_wait();
  EXPECT_EQ(outbox->put(datagram(2)), LocalOutbox::Put::taken);  // nobody has noticed yet
  auto heir = LocalInbox::create(lanes.gid, 4791);
  ASSERT_TRUE(heir) << heir.error();
  EXPECT_EQ(outbox->put(datagram(3)), LocalOutbox::Put::closed);
  auto again = LocalOutbox::attach(lanes.path, token_of(::getpid(), 2));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->put(datagram(4)), LocalOutbox::Put::taken);
}

// A program that exits without closing its device (libfabric's
// fi_pingpong does) runs its exit handlers: its segment is marked closed,
// for the senders attached to it, and removed with its wake socket.
TEST(LocalRing, AReceiverThatExitsWithoutClosingRemovesItsSegment) {
  Lanes lanes(13);
  ReceiverInChild receiver(lanes, ReceiverInChild::Exit::with_handlers);
  ASSERT_TRUE(receiver.ready());
  auto outbox = LocalOutbox::attach(lanes.path, token_of(::getpid(), 1));
  ASSERT_TRUE(outbox);
  EXPECT_EQ(outbox->put(datagram(1)), LocalOutbox::Put::taken);
  int status = receiver.exit_and_wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(exists(lanes.path));
  EXPECT_FALSE(exists(lanes.path + ".wake"));
  EXPECT_EQ(outbox->put(datagram(2)), LocalOutbox::Put::closed);
}

// A forked child inherits the list of open segments, not the segments: its
// exit leaves its parent's in place.
TEST(LocalRing, AForkedChildsExitLeavesItsParentsSegment) {
  Lanes lanes(14);
  auto inbox = LocalInbox::create(lanes.gid, 4791);
  ASSERT_TRUE(inbox) << inbox.error();
  pid_t child = ::fork();
  if (child == 0) std::exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(exists(lanes.path));
  EXPECT_TRUE(exists(lanes.path + ".wake"));
}

// /dev/shm too small for a lane (a container's, full): the sender is refused
// the lane when it attaches, and goes by UDP, instead of dying of SIGBUS at
// its first store into a page tmpfs cannot give. Needs root (a mount
// namespace with a 64 KiB tmpfs on /dev/shm); skipped otherwise.
TEST(LocalRing, AFullDevShmRefusesTheLaneInsteadOfRaisingSigbus) {
  Lanes lanes(11);
  pid_t child = ::fork();
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=64k") != 0) {
      ::_exit(77);
    }
    auto inbox = LocalInbox::create(lanes.gid, 4791);  // its header fits
    if (!inbox) ::_exit(2);
    auto outbox = LocalOutbox::attach(lanes.path, token_of(::getpid(), 1));
    if (outbox) outbox->put(datagram(1));  // SIGBUS, had the lane been given
    ::_exit(outbox ? 3 : 0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) GTEST_SKIP() << "no mount namespace (needs root)";
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A receiver killed while it slept: the sender that rings it gets an error
// from its send, not a signal that would kill it (as a FIFO's SIGPIPE would).
TEST(LocalRing, RingingAReceiverKilledInItsSleepDoesNotHurtTheSender) {
  Lanes lanes(8);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    auto inbox = LocalInbox::create(lanes.gid, 4791);
    if (!inbox) ::_exit(1);
    inbox->announce_sleep();
    char one = 1;
    [[maybe_unused]] ssize_t written = ::write(ready[1], &one, 1);
    while (true) ::pause();
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  auto outbox = LocalOutbox::attach(lanes.path, token_of(::getpid(), 1));
  ASSERT_TRUE(outbox);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(outbox->put(datagram(1)), LocalOutbox::Put::taken);  // nobody will take it
  outbox->ring();  // still alive after this line
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_FALSE(LocalOutbox::attach(lanes.path, token_of(::getpid(), 2)));  // and the files are cleaned up
  EXPECT_FALSE(exists(lanes.path));
}

// A sender that writes a length beyond its slot: the receiver takes at most
// a slot's worth, inside the segment.
TEST(LocalRing, ABrokenSendersLengthIsBoundedBySlot) {
  Lanes lanes(7);
  auto inbox = LocalInbox::create(lanes.gid, 4791);
  ASSERT_TRUE(inbox) << inbox.error();
  auto outbox = LocalOutbox::attach(lanes.path, token_of(::getpid(), 1));
  ASSERT_TRUE(outbox);
  std::vector<std::uint8_t> marked(64, 0xA5);
  std::memcpy(marked.data(), "uroce-local-ring-test-pattern", 29);
  ASSERT_EQ(outbox->put(marked), LocalOutbox::Put::taken);
  // Find the datagram in the segment, as another process would map it, and
  // give it a length of 4 GiB.
  int fd = ::open(lanes.path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  struct stat file {};
  ASSERT_EQ(::fstat(fd, &file), 0);
  auto* base = static_cast<std::uint8_t*>(
      ::mmap(nullptr, static_cast<std::size_t>(file.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ::close(fd);
  ASSERT_NE(base, MAP_FAILED);
  std::uint8_t* end = base + file.st_size;
  std::uint8_t* found = std::search(base, end, marked.begin(), marked.begin() + 29);
  ASSERT_NE(found, end);
  std::uint32_t huge = 0xFFFFFFFF;
  std::memcpy(found - 4, &huge, 4);
  std::array<ReceivedDatagram, 4> got{};
  ASSERT_EQ(inbox->take(got), 1u);
  EXPECT_EQ(got[0].bytes.size(), kMaxDatagramLength);
  EXPECT_GE(got[0].bytes.data(), base);  // (mapped elsewhere in the receiver; same offsets)
  ::munmap(base, static_cast<std::size_t>(file.st_size));
}

// ---- devices on the path -------------------------------------------------------

std::unique_ptr<Device> open_device(const std::string& address, bool local_path, bool progress_thread) {
  DeviceConfig config;
  config.address = address;
  config.local_path = local_path;
  config.progress_thread = progress_thread;
  config.fixed_seed = true;
  auto device = Device::open(config);
  if (!device) ADD_FAILURE() << device.error();
  return device ? std::move(*device) : nullptr;
}

std::uint64_t mixed_wrs() {
  const char* wrs = std::getenv("UROCE_LOCAL_PATH_WRS");
  return wrs != nullptr ? std::strtoull(wrs, nullptr, 10) : 20'000;
}

// Random WRITEs, READs, SENDs and atomics over four QP pairs, every byte and
// every completion checked, with every datagram through shared memory.
TEST(LocalPath, MixedTrafficArrivesAsSent) {
  auto a = open_device("127.0.12.20", true, false);
  auto b = open_device("127.0.12.21", true, false);
  ASSERT_TRUE(a && b);
  Engine& engine_a = *a->call_and_wake([](Engine& e) { return &e; });
  Engine& engine_b = *b->call_and_wake([](Engine& e) { return &e; });
  SizeMix sizes;
  sizes.small = 0.6;
  sizes.medium = 0.3;
  sizes.large = 0.1;  // nothing over 64 KiB
  // A lossless path resends nothing; a 1 s ACK timeout (not 67 ms) keeps a
  // test process starved of CPU beside others (ASan, -j2) from resending.
  RcOptions options;
  options.timeout = 18;
  MixedTraffic traffic(11, engine_a, engine_b, 4, options, sizes);
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!traffic.pump(mixed_wrs())) {
    a->progress();
    b->progress();
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << traffic.completed() << " completed";
  }
  ASSERT_FALSE(HasFailure());
  traffic.check_memory();
  for (Device* device : {a.get(), b.get()}) {
    EngineCounters engine = device->counters();
    port::PortCounters port = device->port_counters();
    EXPECT_GT(engine.packets_received, 0u);
    EXPECT_EQ(port.local_receives, engine.packets_received);  // none by UDP
    EXPECT_EQ(port.local_sends, engine.packets_sent);
    EXPECT_EQ(engine.icrc_unchecked, engine.packets_received);
    EXPECT_EQ(engine.retransmitted_packets, 0u);
  }
}

// A receiver that stops taking (a stopped process; here a device nobody
// drives): its lane fills, the sender drops what does not fit once the lane
// has not moved for kStuckNs, and the work request fails after its retries
// instead of waiting forever.
TEST(LocalPath, AReceiverThatStopsTakingFailsTheWorkRequestNotTheSender) {
  auto a = open_device("127.0.12.22", true, true);
  auto b = open_device("127.0.12.23", true, false);  // no progress thread, and nobody calls progress()
  ASSERT_TRUE(a && b);
  RcOptions options;
  options.timeout = 14;  // about 67 ms per try: the tries outlast kStuckNs
  options.retry_cnt = 3;
  Endpoint x, y;
  std::tie(x, y) = a->call_and_wake([&](Engine& ea) { return b->call_and_wake([&](Engine& eb) { return connect_rc(ea, eb, options); }); });
  std::vector<std::uint8_t> local(1 << 20, 3), remote(1 << 20, 0);
  MrKeys local_keys = a->call_and_wake([&](Engine& e) { return *e.reg_mr(x.pd, local.data(), local.size(), kAll); });
  MrKeys remote_keys = b->call_and_wake([&](Engine& e) { return *e.reg_mr(y.pd, remote.data(), remote.size(), kAll); });
  Sge sge{reinterpret_cast<std::uintptr_t>(local.data()), 1 << 20, local_keys.lkey};
  SendWr wr;
  wr.opcode = WrOpcode::rdma_write;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma = {reinterpret_cast<std::uintptr_t>(remote.data()), remote_keys.rkey};
  ASSERT_EQ(a->call_and_wake([&](Engine& e) { return e.post_send(x.qpn, wr); }), std::errc{});
  auto done = wait_for(*a, x, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::retry_exc_err);
  EXPECT_GT(a->port_counters().local_drops, 0u);
  EXPECT_GE(a->port_counters().local_sends, port::kLocalSlotsPerLane);  // the lane filled
}

// The path is per peer: a device that takes it talks over UDP to one that
// does not, both ways.
TEST(LocalPath, APeerOffThePathIsReachedOverUdp) {
  auto on = open_device("127.0.12.24", true, true);
  auto off = open_device("127.0.12.25", false, true);
  ASSERT_TRUE(on && off);
  Endpoint x, y;
  std::tie(x, y) = on->call_and_wake([&](Engine& ea) { return off->call_and_wake([&](Engine& eb) { return connect_rc(ea, eb); }); });
  std::vector<std::uint8_t> source(100'000), target_on(100'000, 0), target_off(100'000, 0);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::uint8_t>(i * 31 + 1);
  MrKeys source_keys = on->call_and_wake([&](Engine& e) { return *e.reg_mr(x.pd, source.data(), source.size(), kAll); });
  MrKeys target_on_keys = on->call_and_wake([&](Engine& e) { return *e.reg_mr(x.pd, target_on.data(), target_on.size(), kAll); });
  MrKeys target_off_keys = off->call_and_wake([&](Engine& e) { return *e.reg_mr(y.pd, target_off.data(), target_off.size(), kAll); });
  Sge write_sge{reinterpret_cast<std::uintptr_t>(source.data()), 100'000, source_keys.lkey};
  Sge read_sge{reinterpret_cast<std::uintptr_t>(target_on.data()), 100'000, target_on_keys.lkey};
  SendWr write, read;
  write.opcode = WrOpcode::rdma_write;
  write.wr_id = 1;
  write.send_flags = kSendSignaled;
  write.sg_list = {&write_sge, 1};
  write.rdma = {reinterpret_cast<std::uintptr_t>(target_off.data()), target_off_keys.rkey};
  read = write;
  read.opcode = WrOpcode::rdma_read;
  read.wr_id = 2;
  read.sg_list = {&read_sge, 1};
  ASSERT_EQ(on->call_and_wake([&](Engine& e) { return e.post_send(x.qpn, write); }), std::errc{});
  ASSERT_EQ(on->call_and_wake([&](Engine& e) { return e.post_send(x.qpn, read); }), std::errc{});
  auto done = wait_for(*on, x, 2);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].status, WcStatus::success);
  EXPECT_EQ(done[1].status, WcStatus::success);
  EXPECT_EQ(target_off, source);
  EXPECT_EQ(target_on, source);
  EXPECT_EQ(on->port_counters().local_sends, 0u);
  EXPECT_EQ(off->port_counters().local_sends, 0u);
  EXPECT_EQ(on->port_counters().local_receives, 0u);
}

}  // namespace
}  // namespace uroce::testing
