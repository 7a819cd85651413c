// The objects behind librdmacm's handles: an event channel (an eventfd that
// counts queued events, so a program can poll it), an event, and a CM ID
// with what its connection needs. One lock (cm_lock()) guards them all and
// the per-device services (cm_service.h); rdma_get_cm_event waits on the
// channel's fd outside it.
#pragma once

#include <rdma/rdma_cma.h>

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "cm/cm_messages.h"

namespace uroce::rdmacm {

class CmService;

struct CmEventRecord {
  rdma_cm_event event{};  // first: the program's pointer is to it
  std::array<std::uint8_t, 256> private_data{};
};

// A channel's queued events and its eventfd (one count per event). Shared
// by the channel and each rdma_get_cm_event waiting on it: a program that
// destroys the channel while another of its threads waits frees nothing the
// waiter uses (the waiter stays blocked, as with rdma-core, until the end).
struct EventQueue {
  int fd = -1;
  std::deque<CmEventRecord*> records;
  ~EventQueue();
};

struct CmChannel {
  rdma_event_channel channel{};  // channel.fd is events->fd
  std::shared_ptr<EventQueue> events;
};

// A group an ID joined with rdma_join_multicast(_ex). Its QP is attached
// when the program takes the MULTICAST_JOIN event (as rdma-core attaches
// it), unless the join was send-only.
struct MulticastMembership {
  cm::Gid group{};
  bool send_only = false;
  bool attached = false;
  void* context = nullptr;  // the program's, in the event's param.ud.private_data
};

enum class IdState { idle, bound, addr_resolved, route_resolved, listening, connecting, request_pending, accepting,
                     connected, disconnected };

struct CmId {
  rdma_cm_id id{};  // first: the program's pointer is to it
  IdState state = IdState::idle;
  CmService* service = nullptr;  // the device, once bound or resolved
  CmChannel* channel = nullptr;
  bool synchronous = false;      // made by rdma_create_ep: its calls wait for their event on its own channel
  std::uint32_t comm_id = 0;     // the connection in the service's ConnectionManager
  // The service ID its explicit bind reserved (0: none): a REQ for it before
  // the listen is dropped, not rejected (connection_manager.h).
  std::uint64_t reserved_service = 0;
  // The starting PSN this side announced in its REQ or REP. As in Linux's
  // rdma_cm (its QP's rq_psn is its own announced PSN), an announced PSN is
  // the first one its announcer receives: each side sends from the peer's.
  std::uint32_t own_psn = 0;
  cm::ConnectRequest request;    // the REQ sent (active) or received (passive)
  rdma_conn_param param{};       // what the program asked for at connect or accept
  std::uint32_t local_qpn = 0;   // the QP this ID connected (0: the program moves its own)
  std::uint32_t remote_qpn = 0;  // the peer's QP, its announced PSN and the RNR retries it asks for
  std::uint32_t remote_psn = 0;
  std::uint8_t remote_rnr_retry = 0;
  // rdma_set_option's RDMA_OPTION_ID_ACK_TIMEOUT: the Local ACK Timeout its
  // QP gets at RTS (none: the library's default).
  std::optional<std::uint8_t> ack_timeout;
  std::uint8_t remote_responder_resources = 0;  // active: what the REP grants our READs and atomics
  ibv_sa_path_rec path{};        // route.path_rec points here
  bool owns_cqs = false;         // rdma_create_qp made the CQs (the program gave none)
  std::optional<ibv_qp_init_attr> qp_template;  // a passive endpoint: the QP each request gets
  int events_taken = 0;  // handed to the program and not yet acked: rdma_destroy_id waits for them
  std::vector<MulticastMembership> multicast;  // the groups joined (rdmacm/multicast.cc)
};

// The one lock of the library (see the top of this file), and the
// condition an rdma_destroy_id waits on for its ID's events to be acked.
std::mutex& cm_lock();
std::condition_variable& events_acked();

inline CmId* cm_id_of(rdma_cm_id* id) { return reinterpret_cast<CmId*>(id); }
inline CmChannel* channel_of(rdma_event_channel* channel) { return reinterpret_cast<CmChannel*>(channel); }

// Queues an event for id on its channel (under cm_lock()); data: the
// private data it carries. Returns the event (for its connection
// parameters), or nullptr when the ID has no channel.
rdma_cm_event* queue_event(CmId& id, rdma_cm_event_type type, int status, ByteSpan data = {},
                           CmId* listener = nullptr);

// The GID a socket address names: IPv6 as is, IPv4 as ::ffff:a.b.c.d;
// nullopt for another family.
std::optional<cm::Gid> gid_of(const sockaddr* address);

// What rdma_get_cm_event does with an event as the program takes it, in
// the program's thread (as rdma-core does; the program owns the QP, and may
// destroy it at any time before): a CONNECT_RESPONSE for an ID with a QP
// moves the QP to RTS, sends the RTU and becomes ESTABLISHED (or
// CONNECT_ERROR); REJECTED and UNREACHABLE move the QP to ERR.
void on_event_taken(CmId& id, rdma_cm_event& event);

// For an ID made by rdma_create_ep: waits for its next event, which must be
// expected (else the call fails with the event's status as errno). 0 at
// once for an ID with a channel of the program's.
int complete_if_synchronous(rdma_cm_id* id, rdma_cm_event_type expected);

// MULTICAST_JOIN as the program takes it: attaches the ID's QP to the group
// (MULTICAST_ERROR if that fails). And before an ID goes: detaches it from
// every group it joined.
void on_join_taken(CmId& id, rdma_cm_event& event);
void leave_all_groups(CmId& id);

// The ports of an ID's addresses.
std::uint16_t source_port(const CmId& id);
std::uint16_t destination_port(const CmId& id);

}  // namespace uroce::rdmacm
