// A node of the fabric (host NIC or switch): receives packets on its ports
// and, when a port's transmitter is free, hands it the next packet to send.
#pragma once

#include <cstdint>

#include "sim/packet.h"
#include "sim/sim_time.h"

namespace uroce::sim {

class Node {
 public:
  virtual ~Node() = default;
  // The packet's last bit arrived on port; the node owns it now.
  virtual void receive(Packet* packet, std::uint16_t port, SimTime now) = 0;
  // Port's transmitter is idle: the next packet to put on its wire, or null.
  // PFC pauses are the transmitter's to check (Transmitter::paused).
  virtual Packet* next_to_send(std::uint16_t port, SimTime now) = 0;
  // Whether port may have another packet when its wire frees: if not, the
  // transmitter schedules no event for that moment and waits to be kicked.
  virtual bool may_have_more(std::uint16_t port) const = 0;
  // The group of the events that act on this node (EventHandler::set_event_group).
  virtual std::uint32_t event_group() const = 0;
};

}  // namespace uroce::sim
