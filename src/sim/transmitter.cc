// Serialization, propagation and PFC pause state of one link direction.
#include "sim/transmitter.h"

#include "sim/mix.h"

namespace uroce::sim {

void Transmitter::kick(SimTime now) {
  if (choosing_) return;
  if (now < busy_until_) {
    wake_at(busy_until_);
    return;
  }
  // Choosing may queue a PFC frame here (the owner releases buffer): that
  // frame waits for this one rather than starting a second transmission.
  choosing_ = true;
  Packet* packet = control_.empty() ? owner_.next_to_send(port_, now) : control_.pop();
  choosing_ = false;
  if (packet == nullptr) return;
  busy_until_ = now + serialization_time(packet->wire_bytes, spec_.rate_bps);
  if (!control_.empty() || owner_.may_have_more(port_)) wake_at(busy_until_);
  if (down_) {
    if (packet->kind == PacketKind::roce) ++world_.counters.failure_losses;
    world_.packets.release(packet);
    return;
  }
  if (tap_ != nullptr) tap_->on_transmit(*packet, now);
  packet->arrives_at = busy_until_ + spec_.propagation;
  if (crossing_) {
    world_.outbox(far_part_).put(this, packet);
    return;
  }
  land(packet);
}

void Transmitter::land(Packet* packet) {
  bool wire_was_empty = on_wire_.empty();
  if (!wire_was_empty) on_wire_.back()->next_arrives_at = packet->arrives_at;  // its line is being written anyway
  on_wire_.push(packet);
  if (wire_was_empty) {
    arrival_.hint(packet);
    far_world_->events.schedule(packet->arrives_at, &arrival_, kArrived);
  }
}

void Transmitter::wake_at(SimTime at) {
  if (wake_at_ == at) return;
  wake_at_ = at;
  world_.events.schedule(at, this, kSerialized);
}

void Transmitter::send_pfc(std::uint8_t priority, bool pause, SimTime now) {
  Packet* frame = world_.packets.acquire();
  frame->kind = PacketKind::pause;
  frame->priority = priority;
  frame->pause_on = pause;
  frame->wire_bytes = kPauseFrameWireBytes;
  frame->datagram_length = 0;
  ++(pause ? world_.counters.pause_frames : world_.counters.resume_frames);
  control_.push(frame);
  kick(now);
}

void Transmitter::on_pfc(const Packet& frame, SimTime now) {
  auto bit = static_cast<std::uint8_t>(1u << frame.priority);
  if (frame.pause_on) {
    if ((paused_ & bit) == 0) paused_since_[frame.priority] = now;
    paused_ |= bit;
    return;
  }
  if ((paused_ & bit) == 0) return;
  world_.counters.pause_time_total += now - paused_since_[frame.priority];
  paused_ &= static_cast<std::uint8_t>(~bit);
  kick(now);
}

void Transmitter::close_pauses(SimTime now) {
  for (int priority = 0; priority < kPriorities; ++priority) {
    if (paused(static_cast<std::uint8_t>(priority))) {
      world_.counters.pause_time_total += now - paused_since_[priority];
      paused_since_[priority] = now;
    }
  }
}

void Transmitter::set_down(bool down, SimTime now) {
  if (down == down_) return;
  down_ = down;
  if (!down) {
    kick(now);
    return;
  }
  while (!on_wire_.empty()) {  // the pending kArrived event finds the wire empty
    Packet* packet = on_wire_.pop();
    if (packet->kind == PacketKind::roce) ++world_.counters.failure_losses;
    world_.packets.release(packet);
  }
  arrival_.hint(nullptr);
  close_pauses(now);
  paused_ = 0;
  kick(now);
}

void Transmitter::on_event(SimTime now, std::uint32_t) {  // kSerialized
  if (now != wake_at_) return;  // superseded: a kick at that moment already sent, and asked for a later wake
  wake_at_ = kSimNever;
  kick(now);
}

void Transmitter::arrive(SimTime now) {
  // A link that failed emptied its wire: the arrival event of a lost packet
  // finds nothing, or a packet sent since, which has its own event.
  if (on_wire_.empty() || on_wire_.front()->arrives_at > now) return;
  Packet* packet = on_wire_.pop();
  arrival_.hint(on_wire_.front());
  // The next frame's arrival is read from this one: that frame is cold.
  if (!on_wire_.empty()) far_world_->events.schedule(packet->next_arrives_at, &arrival_, kArrived);
  if (spec_.loss > 0 && packet->kind == PacketKind::roce && unit_interval(loss_state_) < spec_.loss) {
    ++far_world_->counters.link_losses;
    far_world_->packets.release(packet);
    return;
  }
  peer_->receive(packet, peer_port_, now);
}

}  // namespace uroce::sim
