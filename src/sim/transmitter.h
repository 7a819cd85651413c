// One direction of a link: serializes the owner's packets at the link rate,
// carries them for the propagation delay, and obeys PFC pauses from the far
// end. It keeps at most two pending events: the end of the frame being
// serialized (only when the owner may have another packet by then), in the
// owner's world, and the arrival of the oldest frame on the wire, in the far
// end's. When the two ends run in different partitions, a frame that leaves
// goes into an outbox that the far end's partition empties onto the wire
// between windows (no frame arrives within the window it left in).
#pragma once

#include <cstdint>
#include <optional>

#include "sim/node.h"
#include "sim/world.h"

namespace uroce::sim {

struct LinkSpec {
  std::uint64_t rate_bps = 100'000'000'000;
  SimTime propagation = 1 * kPicosecondsPerUs;
  double loss = 0;  // chance that a RoCE packet is lost on the way (PFC frames never are)
};

// Sees every frame a transmitter starts to send (a capture of that link).
class PacketTap {
 public:
  virtual ~PacketTap() = default;
  virtual void on_transmit(const Packet& packet, SimTime now) = 0;
};

class Transmitter final : public EventHandler {
 public:
  Transmitter(SimWorld& world, LinkSpec spec, Node& owner, std::uint16_t port)
      : port_(port), owner_(owner), arrival_(*this), far_world_(&world), spec_(spec), world_(world) {
    set_event_group(owner.event_group());
  }
  // far_world: the far end's (its events, pool and counters take the
  // arrivals); far_part: its partition, when that is another one than the
  // owner's (frames then go through the owner's outbox for it).
  void connect(Node& peer, std::uint16_t peer_port, SimWorld* far_world = nullptr,
               std::optional<std::uint32_t> far_part = std::nullopt) {
    peer_ = &peer;
    peer_port_ = peer_port;
    arrival_.set_event_group(peer.event_group());
    if (far_world != nullptr) far_world_ = far_world;
    crossing_ = far_part.has_value();
    far_part_ = far_part.value_or(0);
  }
  // The far end's partition puts a frame from the outbox on its wire.
  void land(Packet* packet);
  // Seeds the draws that decide which packets spec.loss takes.
  void seed_losses(std::uint64_t seed) { loss_state_ = seed; }
  void set_tap(PacketTap* tap) { tap_ = tap; }
  PacketTap* tap() const { return tap_; }
  // The fabric's number for this link direction (frames between ranks name it).
  void set_link_id(std::uint32_t id) { link_id_ = id; }
  std::uint32_t link_id() const { return link_id_; }
  // The far end's partition, when it is another one than the owner's.
  std::uint32_t far_part() const { return far_part_; }

  const LinkSpec& spec() const { return spec_; }
  Node* peer() const { return peer_; }
  std::uint16_t peer_port() const { return peer_port_; }
  bool paused(std::uint8_t priority) const { return (paused_ >> priority) & 1u; }
  std::uint8_t paused_mask() const { return paused_; }
  // When the current pause of priority began (meaningful while paused).
  SimTime paused_since(std::uint8_t priority) const { return paused_since_[priority]; }

  // The owner may have something to send: start if idle.
  void kick(SimTime now);
  // Queues a PFC frame for priority ahead of every data packet.
  void send_pfc(std::uint8_t priority, bool pause, SimTime now);
  // A PFC frame from the far end arrived on this port.
  void on_pfc(const Packet& frame, SimTime now);
  // Adds pauses still in force to the counters (the end of a run).
  void close_pauses(SimTime now);
  // A failed link loses what is on the wire and everything it is given
  // until it comes back up; the owner keeps handing it packets at line
  // rate (as a port whose routes still point at the dead link). Pauses from
  // the far end end with the link.
  void set_down(bool down, SimTime now);
  bool down() const { return down_; }

  void on_event(SimTime now, std::uint32_t tag) override;

 private:
  enum Tag : std::uint32_t { kSerialized, kArrived };
  // The far end's handler of arrivals: at most one frame of a wire arrives
  // at a picosecond, so its events need no count (see EventHandler).
  class Arrival final : public EventHandler {
   public:
    explicit Arrival(Transmitter& link) : EventHandler(false), link_(link) {}
    void on_event(SimTime now, std::uint32_t) override { link_.arrive(now); }
    void hint(const void* memory) { hint_next_read(memory); }

   private:
    Transmitter& link_;
  };

  // Asks for a kick when the wire frees at `at` (once per moment).
  void wake_at(SimTime at);
  void arrive(SimTime now);

  // A link is a cold object at scale, and each line touched is a miss. The
  // queue prefetches four lines from an event's handler: from the start for
  // the owner's events (kick reads the first four lines), from arrival_ for
  // the far end's, so everything an arrival reads lies after arrival_.
  bool choosing_ = false;
  bool down_ = false;
  bool crossing_ = false;
  std::uint8_t paused_ = 0;
  std::uint16_t port_;
  SimTime busy_until_ = 0;     // the current frame's last bit leaves then
  SimTime wake_at_ = kSimNever;  // the kSerialized event that counts, if any
  Node& owner_;
  Arrival arrival_;
  std::uint16_t peer_port_ = 0;
  std::uint32_t far_part_ = 0;
  Node* peer_ = nullptr;
  SimWorld* far_world_;
  PacketQueue on_wire_;    // serialized, not yet arrived; arrival times ascend (the far end's)
  std::uint64_t loss_state_ = 0;
  LinkSpec spec_;
  SimWorld& world_;
  PacketQueue control_;    // PFC frames waiting for the wire
  PacketTap* tap_ = nullptr;
  std::uint32_t link_id_ = 0;
  SimTime paused_since_[kPriorities] = {};
};

}  // namespace uroce::sim
