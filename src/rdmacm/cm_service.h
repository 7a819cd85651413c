// CmService: the connection manager of one uroce device in this process.
// It holds the device's General Services QP (QP 1, through uroce's
// libibverbs), receives and sends the CM's MADs on it, runs the protocol
// (cm::ConnectionManager) on a thread that sleeps until a MAD arrives, a
// call needs it or a retry is due, and turns the protocol's events into
// rdma_cm events on the IDs' channels. A service opens when an ID first
// binds to or resolves through its device and lives until the process
// ends; at exit its thread stops.
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "cm/connection_manager.h"
#include "uroce/expected.h"
#include "rdmacm/cm_objects.h"

namespace uroce::rdmacm {

class CmService {
 public:
  // The service of the device that holds address (an IPv4 or IPv6 socket
  // address; a wildcard: the first device). Under cm_lock(). nullptr with
  // errno: no such device (ENODEV) or the device cannot be opened.
  static CmService* for_address(const sockaddr* address);
  // Every device's context, for rdma_get_devices (opens them all).
  static std::vector<ibv_context*> all_contexts();
  // Stops the thread (at exit); the service answers no MAD after it.
  void stop();

  ibv_context* context() const { return context_; }
  // The PD an ID's QP gets when the program names none (as rdma-core's per-device PD).
  ibv_pd* default_pd() const { return pd_; }
  const Gid& gid() const { return gid_; }
  ibv_mtu active_mtu() const { return active_mtu_; }
  // The device's limits on READs and atomics: in flight toward it, and from it.
  std::uint8_t max_responder_resources() const { return max_responder_resources_; }
  std::uint8_t max_initiator_depth() const { return max_initiator_depth_; }
  cm::ConnectionManager& manager() { return manager_; }

  // After a call changed the manager: send what it has to send, and let the
  // thread recompute its sleep.
  void flush();

  // A peer's DREQ arrived while completions of the ID's QP wait unpolled:
  // its RDMA_CM_EVENT_DISCONNECTED waits until the program has polled them,
  // at most kDisconnectWait. An RNIC writes a completion the moment its ACK
  // or message lands, long before the kernel's CM has read the DREQ behind
  // it; a program (libfabric's rxm) that takes the event before polling
  // would otherwise close the connection over completions it never saw.
  // Under cm_lock(), from the service's thread.
  void defer_disconnect(std::uint32_t comm_id);
  static constexpr TimeNs kDisconnectWait = 200'000'000;

  // The connection's ID, for events; listeners by service ID.
  std::map<std::uint32_t, CmId*> ids;
  std::map<std::uint64_t, CmId*> listeners;

 private:
  CmService() = default;
  Expected<bool, int> open(ibv_device* device, const Gid& gid);
  void release();
  void run();
  void take_completions();
  void post_receive(std::size_t slot);
  void send(const cm::Outgoing& outgoing);
  bool try_send(const cm::Outgoing& outgoing);
  void send_waiting();
  ibv_ah* address_handle(const Gid& destination);
  void dispatch(const cm::CmEvent& event);
  // Queues the deferred disconnects whose completions were polled, whose
  // QP went, or whose wait is over.
  void deliver_deferred_disconnects(TimeNs now);

  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* completions_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_mr* mr_ = nullptr;
  std::vector<std::uint8_t> buffers_;  // receive slots, then send slots
  std::vector<bool> send_slot_busy_;
  std::deque<cm::Outgoing> waiting_to_send_;  // for a free send slot
  std::vector<std::pair<std::uint32_t, TimeNs>> deferred_disconnects_;  // comm_id, when the wait ends
  std::map<Gid, ibv_ah*> address_handles_;
  Gid gid_{};
  ibv_mtu active_mtu_ = IBV_MTU_1024;
  std::uint8_t max_responder_resources_ = 1;
  std::uint8_t max_initiator_depth_ = 1;
  cm::ConnectionManager manager_{cm::CmConfig{}};
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Handles a protocol event of id's connection (connect.cc).
void on_connection_event(CmId& id, const cm::CmEvent& event);
// A REQ for a listener: makes the child ID and queues CONNECT_REQUEST (connect.cc).
void on_connection_request(CmService& service, CmId& listener, const cm::CmEvent& event);

}  // namespace uroce::rdmacm
