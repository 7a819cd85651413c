// A simulated host: a NIC that runs the real uroce engine (with
// carry_payload = false) behind one link, or behind one port per plane of a
// multi-plane fabric. The NIC pulls the engine's packets when a wire is
// free, sends each out of the port its UDP source port picks (source port
// modulo ports: a multipath QP's EVs spread over the planes, any other QP
// stays on one; a GPU's packets for its own server take its NVLink port,
// sim/gpu_servers.h), holds those of a PFC-paused priority or of a busy port,
// feeds arrivals to the engine, wakes it for its timers, and hands
// completions to the workload.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/topology.h"
#include "sim/transmitter.h"
#include "uroce/engine.h"

namespace uroce::sim {

// IPv4 address of host index (10.0.0.1 for host 0, counting up).
std::array<std::uint8_t, 4> host_address(std::uint32_t host);

class HostNode final : public Node, public EventHandler {
 public:
  using CompletionHandler = std::function<void(std::uint32_t host, const WorkCompletion& completion, SimTime now)>;

  // links: one per port (at least one).
  HostNode(SimWorld& world, std::uint32_t id, const EngineConfig& engine_config, const std::vector<LinkSpec>& links);

  std::uint32_t id() const { return id_; }
  // The world of this host's partition: its events run there.
  SimWorld& world() { return world_; }
  Engine& engine() { return *engine_; }
  Transmitter& transmitter(std::uint16_t port = 0) { return *transmitters_[port]; }
  std::uint16_t port_count() const { return static_cast<std::uint16_t>(transmitters_.size()); }
  std::uint32_t pd() const { return pd_; }
  std::uint32_t cq() const { return cq_; }
  // One region over a made-up address range: nothing is ever read or written.
  const MrKeys& region() const { return region_; }
  static constexpr std::uint64_t kRegionBase = 1ull << 44;
  static constexpr std::uint64_t kRegionLength = 1ull << 40;  // the engine's max_mr_size

  // The GPU servers this host may be a GPU of (before any traffic).
  void set_servers(const ServerLayout& servers) { servers_ = servers; }
  bool same_server(std::uint32_t host) const { return servers_.same_server(id_, host); }
  // How the links frame this host's datagrams (before any traffic).
  void set_framing(Framing framing) { framing_ = framing; }

  void on_completion(CompletionHandler handler) { handler_ = std::move(handler); }
  // After the workload posted work: send what can be sent, arm timers.
  void wake(SimTime now);

  void receive(Packet* packet, std::uint16_t port, SimTime now) override;
  Packet* next_to_send(std::uint16_t port, SimTime now) override;
  // The engine decides what it has only when asked: always perhaps.
  bool may_have_more(std::uint16_t) const override { return true; }
  std::uint32_t event_group() const override { return id_; }
  void on_event(SimTime now, std::uint32_t tag) override;

 private:
  Packet* packet_from_engine(const Transmit& sent);
  std::uint16_t port_for(const Packet& packet, std::uint16_t source_port) const;
  void deliver_completions(SimTime now);
  void arm_timer();

  SimWorld& world_;
  std::uint32_t id_;
  std::uint32_t address_word_;  // host_address(id_) as the IP header carries it (big-endian), for the ECMP hash
  std::unique_ptr<Engine> engine_;
  std::vector<std::unique_ptr<Transmitter>> transmitters_;
  std::uint32_t pd_ = 0;
  std::uint32_t cq_ = 0;
  MrKeys region_;
  CompletionHandler handler_;
  ServerLayout servers_;
  Framing framing_ = Framing::ethernet;
  // Taken from the engine while their priority was paused, or for another
  // port than the one asking: per port, per priority.
  std::vector<std::array<PacketQueue, kPriorities>> held_;
  SimTime timer_at_ = kSimNever;
  std::uint32_t timer_generation_ = 0;
  std::vector<std::uint8_t> transmit_buffer_;
  std::vector<std::uint8_t> receive_buffer_;
};

}  // namespace uroce::sim
