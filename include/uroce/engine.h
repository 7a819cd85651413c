// The uroce transport engine: one soft RNIC's verbs objects and RC transport,
// as a deterministic sans-I/O state machine. It owns no socket, thread or
// clock; a driver (the real-network runtime, the simulator, a test) feeds it
// datagrams and time and polls it for datagrams to send:
//
//   engine.post_send(qpn, wr) / post_recv(qpn, wr)   <- the application
//   engine.on_datagram(bytes, now)                   <- an IP datagram arrived
//   engine.poll_transmit(buffer, now) -> Transmit    -> an IP datagram to send, described
//   engine.next_deadline() / on_timer(now)           <- retransmit and RNR timers
//   engine.poll_cq(cq, completions)                  -> the application
//
// Datagrams are whole IP packets (IPv4 or IPv6 header, UDP 4791, BTH ... ICRC).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "uroce/expected.h"
#include "uroce/region_sharing.h"
#include "uroce/transmit.h"
#include "uroce/verbs_types.h"
#include "uroce/vocabulary.h"

namespace uroce {

struct DeviceAttributes {
  std::uint32_t max_qp = 16384;
  std::uint32_t max_qp_wr = 16384;
  std::uint32_t max_sge = 32;
  std::uint32_t max_inline_data = 512;
  std::uint32_t max_cq = 16384;
  std::uint32_t max_cqe = 1u << 20;
  std::uint32_t max_mr = 1u << 20;
  std::uint32_t max_pd = 1u << 16;
  std::uint32_t max_srq = 4096;
  std::uint32_t max_srq_wr = 16384;
  std::uint32_t max_qp_rd_atom = 128;       // READ/atomic a requester keeps in flight
  std::uint32_t max_qp_init_rd_atom = 128;  // READ/atomic a responder keeps records of
  std::uint64_t max_mr_size = 1ull << 40;
  std::uint32_t max_msg_size = 1u << 31;
  // UD multicast: groups with a QP attached, and QPs one group may have
  // (Soft-RoCE's figures); beyond, attach_multicast is not_enough_memory.
  std::uint32_t max_mcast_grp = 8192;
  std::uint32_t max_mcast_qp_attach = 56;
};

// DCQCN exactly as the paper's pseudocode gives it (Zhu et al., SIGCOMM
// 2015): a cut on every CNP, increases from a timer and a
// byte counter. Rates in bits per second, times in nanoseconds.
struct PaperDcqcnParams {
  double min_rate_bps = 100e6;           // the floor implementations keep
  double g = 1.0 / 256;                  // alpha gain
  double initial_alpha = 1.0;
  double additive_increase_bps = 40e6;   // R_AI
  double hyper_increase_bps = 400e6;     // R_HAI (10 x R_AI; the paper leaves it to the operator)
  TimeNs alpha_timer_ns = 55'000;        // K: alpha decays after this long without a CNP
  TimeNs rate_timer_ns = 55'000;         // T: rate-increase timer
  std::uint64_t byte_counter = 10'000'000;  // B: rate-increase byte counter
  std::uint32_t fast_recovery_steps = 5;    // F
};

// DCQCN as NVIDIA ConnectX-4 and later NICs run it, under NVIDIA's parameter
// names (mlxconfig, sysfs ecn/roce_rp) with the firmware's defaults as
// `mlxconfig query` prints them. The differences from the paper: alpha moves
// every dce_tcp_rtt (up when a CNP came in that period, down otherwise); CNPs
// only set a flag, and the rate is cut at most once per
// rate_reduce_monitor_period; increases come from the timer; one R_AI or
// R_HAI per period; and the target rate is kept on a cut unless the rate was
// raised by the timer since the last cut (clamp_tgt_rate_after_time_inc).
struct ConnectxDcqcnParams {
  TimeNs rpg_time_reset_ns = 300'000;  // rate-increase period
  // Bytes sent between increase events, 0 = off. The firmware lists 32767,
  // but how it combines the byte counter with the timer is not public, and
  // the published model of the deployed algorithm (HPCC's ns-3, CC_MODE 1)
  // increases on the timer alone, so uroce's default is off. When set, a byte
  // event advances the same stage counter as a timer event.
  std::uint64_t rpg_byte_reset = 0;
  std::uint32_t rpg_threshold = 1;     // F: fast-recovery periods before additive increase
  double rpg_ai_rate_bps = 5e6;        // R_AI, Mb/s 5
  double rpg_hai_rate_bps = 50e6;      // R_HAI, Mb/s 50
  // A cut multiplies the rate by 1 - alpha x 2^(10 - rpg_gd): 11 halves it at alpha 1.
  std::uint32_t rpg_gd = 11;
  std::uint32_t rpg_min_dec_fac = 50;  // percent: one cut keeps at least this share of the rate
  double rpg_min_rate_bps = 1e6;       // the floor, Mb/s 1
  double rate_to_set_on_first_cnp_bps = 0;  // current and target rate on a QP's first CNP; 0 = unchanged
  std::uint32_t dce_tcp_g = 1019;      // alpha gain as 1024ths kept: g = (1024 - dce_tcp_g) / 1024
  TimeNs dce_tcp_rtt_ns = 1'000;       // alpha update period
  std::uint32_t initial_alpha_value = 1023;  // alpha on the first CNP, in 1024ths
  TimeNs rate_reduce_monitor_period_ns = 4'000;  // at most one cut per period
  bool clamp_tgt_rate = false;                 // every cut sets R_T = R_C
  bool clamp_tgt_rate_after_time_inc = true;  // a cut after a timer increase sets R_T = R_C
};

enum class DcqcnVariant : std::uint8_t {
  connectx,  // as deployed on ConnectX NICs (the default)
  paper,     // the SIGCOMM 2015 pseudocode
};

// The reaction point: which algorithm paces a QP, and its constants.
struct DcqcnParams {
  DcqcnVariant variant = DcqcnVariant::connectx;
  double line_rate_bps = 100e9;  // R_C never exceeds it
  ConnectxDcqcnParams connectx;
  PaperDcqcnParams paper;
};

// The notification point (the receiver) and the reaction point (the sender).
// NP defaults are ConnectX's: min_time_between_cnps 4 us, CNPs in DSCP 48
// (priority 6 where DSCP's class selects it, as in the simulator).
struct CongestionConfig {
  bool notification_point = true;             // send CNPs for CE-marked data packets
  TimeNs min_time_between_cnps_ns = 4'000;    // at most one CNP per QP per interval; 0: one per mark
  std::uint8_t cnp_dscp = 48;                 // CNPs' own traffic class
  bool reaction_point = false;                // pace QPs by DCQCN on CNPs
  DcqcnParams dcqcn;
};

struct EngineConfig {
  Gid gid{};                  // this RNIC's address
  std::uint64_t seed = 1;     // keys and QPNs derive from it: same seed, same run
  DeviceAttributes attributes;
  std::uint32_t max_inflight_packets = 256;  // PSN window a requester may have unacknowledged
  std::uint32_t ack_request_interval = 64;   // AckReq at least every this many packets
  PathMtu port_mtu = PathMtu::mtu4096;       // the port's active MTU: the largest UD message
  // false: the simulator's mode when a scenario checks no data. Packets carry
  // their payload lengths but not the bytes: poll_transmit writes the headers
  // and lengths only (no payload, no ICRC) and on_datagram never reads the
  // bytes after the headers. Memory regions are address ranges that every
  // access is checked against but never reads or writes, so they need no
  // memory behind them; atomics return 0 as the original value.
  bool carry_payload = true;
  // false: poll_transmit leaves the ICRC zero, and whoever sends the
  // datagram must seal it (wire::seal_roce_datagram) unless it goes where
  // no ICRC is checked: the port of a device with local peers seals only
  // what it puts on the wire (Port::seals_icrc).
  bool seal_icrc = true;
  CongestionConfig congestion;
  // ACKs and NAKs of RC and XRC responders in this traffic class (DSCP)
  // instead of their QP's, where switches serve it first: what HPCC's ns-3
  // does with ACK_HIGH_PRIO (the simulator offers it to compare with that
  // peer). None: the QP's, as RNICs send them.
  std::optional<std::uint8_t> ack_dscp;
  // A controlled Q_Key (top bit set) may be given to a QP only by a privileged
  // consumer (IBTA 10.2.4; Linux asks for CAP_NET_RAW). modify_qp refuses one
  // with operation_not_permitted unless this is set.
  bool allow_controlled_qkey = false;
  // Devices that share one address (processes on one host, runtime/) each
  // draw their QPNs from a sixteenth of the space of their own: bits 20 to
  // 23 of every QPN are qpn_member, so a datagram's destination QPN says
  // which of them it is for (port/local_port.h). None: QPNs take all 24
  // bits, as the simulator's do.
  std::optional<std::uint8_t> qpn_member;
};

// A UD receive buffer starts with the 40-byte GRH area: the IPv6 header of the
// datagram, or for IPv4 20 zero bytes followed by the IPv4 header.
inline constexpr std::uint32_t kGrhLength = 40;

struct QpCap {
  std::uint32_t max_send_wr = 0;
  std::uint32_t max_recv_wr = 0;
  std::uint32_t max_send_sge = 1;
  std::uint32_t max_recv_sge = 1;
  std::uint32_t max_inline_data = 0;
};

// How an RC QP recovers lost packets. Both ends of a connection must agree.
enum class LossRecovery : std::uint8_t {
  // RoCEv2 as specified: the responder drops packets after a gap and NAKs
  // once; the requester resends everything from the first lost PSN.
  go_back_n,
  // After IRN: the responder keeps packets that arrive after a gap and reports
  // each one (a PSN-sequence NAK whose MSN field carries the PSN it holds); the
  // requester resends only the PSNs not reported. Lost READ responses are
  // re-requested from the first missing one, as in go-back-N.
  selective_repeat,
};

// Multipath RC, after MRC (src/transport/multipath.h): the requester sprays
// SEND and WRITE packets over entropy_values UDP source ports (under ECMP,
// as many paths), finds lost packets by a reorder window instead of by PSN
// gaps, retires the EV of a lost packet and probes it again later, and
// avoids for a while an EV on which congestion was reported; the responder
// echoes each request's source port in the ACK, NAK or CNP it causes. RC
// with selective repeat only; both ends set it. 0 entropy values: off.
struct MultipathConfig {
  std::uint16_t entropy_values = 0;       // 0, or 2 to 4096 EVs
  TimeNs reorder_window_ns = 50'000;      // reordering between paths up to this is not loss
  TimeNs avoid_ns = 20'000;               // an EV with congestion reported is skipped this long
  TimeNs probe_after_ns = 500'000;        // a retired EV is tried again after this, doubling per failure
  TimeNs max_probe_after_ns = 32'000'000;
  // AckReq at least every this many packets: each ACK returns on the path of
  // the EV it echoes, so one ACK per 64 packets (the engine's default) would
  // leave a burst's only ACK to a single path.
  std::uint32_t ack_every_packets = 4;
  // Direct placement, as MRC places: every WRITE packet carries its own
  // target (a RETH after the BTH of MIDDLE and LAST packets too), and a
  // packet that arrives ahead of a gap is written to memory at once instead
  // of being copied into the reorder buffer; completions stay in order. A
  // WRITE's bytes are then defined once its completion (or a later one) is
  // seen, not byte by byte. Both ends must agree, as for multipath itself.
  bool direct_placement = true;
};

struct QpInitAttr {
  QpType qp_type = QpType::rc;
  std::uint32_t pd = 0;
  std::uint32_t send_cq = 0;
  std::uint32_t recv_cq = 0;
  QpCap cap;
  bool sq_sig_all = false;
  std::uint32_t srq = 0;  // a shared receive queue, or 0 for the QP's own
  LossRecovery recovery = LossRecovery::go_back_n;  // RC only
  // A short timeout for tail losses (IRN's RTO_low), RC only: while at most
  // tail_timeout_packets PSNs are in flight (sent, not acknowledged, not
  // reported held), the requester waits tail_timeout_ns for an ACK instead of
  // the local ACK timeout. A lost last packet or lost retransmission is then
  // resent in about an RTT or two instead of milliseconds. 0: off, as verbs.
  TimeNs tail_timeout_ns = 0;
  std::uint32_t tail_timeout_packets = 3;
  // Loss probes, after TCP's tail loss probe (transport/loss_probe.cc), RC
  // and XRC senders (a multipath QP's probe takes the next EV, so an ACK
  // lost on one EV's way back is asked for again on another's): when
  // nothing was acknowledged for
  // loss_probe_ns while PSNs are in flight, the newest packet sent goes
  // again with AckReq set. If packets before it were lost, the responder
  // answers with a sequence NAK and the requester resends from the gap at
  // once; if only ACKs were late, the duplicate is acknowledged. Probes
  // back off (x2) until the Local ACK Timeout, which keeps its meaning (and
  // its retry count) for a peer that is really gone. 0: off, as verbs.
  TimeNs loss_probe_ns = 0;
  MultipathConfig multipath;  // RC with selective repeat only
  // false: DCQCN never paces this QP, even with the reaction point on (a
  // path with flow control of its own: NVLink between a GPU server's GPUs
  // in the simulator, sim/gpu_servers.h).
  bool congestion_controlled = true;
  // The General Services QP: a UD QP numbered 1, one per engine, through
  // which the connection manager's MADs come and go (Q_Key 0x80010000).
  bool gsi = false;
  // xrc_recv: its XRC domain; such a QP has no PD, CQs or queues of its own
  // (each request names the XRC SRQ, of this domain, that serves it).
  std::uint32_t xrcd = 0;
  // UD (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB): the QP does not receive the
  // multicast datagrams it sent itself, though attached to their group.
  bool block_self_multicast = false;
};

struct AddressVector {
  Gid dgid{};
  // The source address, when not the engine's own (all zero): its IPv6
  // link-local GID, on a port that carries IPv6 link-local frames (the raw port).
  Gid sgid{};
  std::uint8_t traffic_class = 0;  // DSCP << 2 | ECN; the engine sets ECT(0) itself
  std::uint8_t hop_limit = 64;
  std::uint32_t flow_label = 0;
};

// A Q_Key with this bit set is a controlled one: in a UD send WR it means "use
// the QP's own Q_Key"; only a privileged consumer may give it to a QP.
inline constexpr std::uint32_t kControlledQkeyBit = 0x80000000u;

struct QpAttr {
  QpState qp_state = QpState::reset;
  QpState cur_qp_state = QpState::reset;
  PathMtu path_mtu = PathMtu::mtu1024;
  std::uint32_t qkey = 0;
  std::uint32_t rq_psn = 0;
  std::uint32_t sq_psn = 0;
  std::uint32_t dest_qp_num = 0;
  std::uint32_t qp_access_flags = 0;
  QpCap cap;
  AddressVector ah_attr;
  std::uint16_t pkey_index = 0;
  std::uint8_t max_rd_atomic = 0;
  std::uint8_t max_dest_rd_atomic = 0;
  std::uint8_t min_rnr_timer = 0;  // RNR timer code (the IBTA table; see rnr_timer_ns)
  std::uint8_t port_num = 1;
  std::uint8_t timeout = 0;    // local ACK timeout exponent: 4.096 us << timeout; 0 = forever
  std::uint8_t retry_cnt = 0;  // 0..7
  std::uint8_t rnr_retry = 0;  // 0..7, 7 = forever
  bool en_sqd_async_notify = false;  // with RTS -> SQD: raise sq_drained once drained
  bool sq_draining = false;          // query_qp: in SQD with requests still in flight
};

// Asynchronous events, numbered as ibv_event_type.
enum class AsyncEventType : std::uint8_t {
  cq_err = 0,         // a CQ overflowed (element: CQ)
  qp_fatal = 1,       // the responder hit a local operational error (element: QPN)
  qp_req_err = 2,     // the responder received an invalid request (element: QPN)
  qp_access_err = 3,  // the responder refused a remote access (element: QPN)
  comm_est = 4,       // the first packet arrived while the QP was in RTR (element: QPN)
  sq_drained = 5,     // an SQD transition asked for it and the send queue has drained (element: QPN)
  port_active = 9,    // (element: port number)
  srq_limit_reached = 15,    // an armed SRQ fell below its limit (element: SRQ)
  qp_last_wqe_reached = 16,  // a QP on an SRQ went to ERR and takes no more receives (element: QPN)
};
std::string_view to_string(AsyncEventType type);

struct AsyncEvent {
  AsyncEventType type = AsyncEventType::port_active;
  std::uint32_t element = 0;
};

struct MrKeys {
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
};

struct EngineCounters {
  std::uint64_t packets_sent = 0;
  std::uint64_t packets_received = 0;
  std::uint64_t retransmitted_packets = 0;
  std::uint64_t icrc_errors = 0;
  std::uint64_t icrc_unchecked = 0;  // accepted without an ICRC check, by the driver's policy
  std::uint64_t malformed_packets = 0;
  std::uint64_t unknown_qp_packets = 0;
  std::uint64_t duplicate_requests = 0;
  std::uint64_t out_of_sequence = 0;
  std::uint64_t trimmed_received = 0;  // trimmed requests that were NAKed at once
  std::uint64_t naks_sent = 0;
  std::uint64_t rnr_naks_sent = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t dropped_messages = 0;  // UC messages dropped for a lost packet or a bad request
  std::uint64_t loss_probes = 0;       // packets resent by a loss probe (QpInitAttr::loss_probe_ns)
  std::uint64_t multicast_received = 0;  // UD datagrams to a group a QP here is attached to
  std::uint64_t ecn_marked_received = 0;  // CE-marked arrivals (notification point)
  std::uint64_t cnps_sent = 0;
  std::uint64_t cnps_received = 0;
  std::uint64_t held_out_of_order = 0;  // selective repeat: packets kept after a gap
  std::uint64_t placed_out_of_order = 0;  // multipath: WRITE packets after a gap written to memory on arrival
  // Multipath (MultipathConfig), the requester's side:
  std::uint64_t paths_lost = 0;       // packets found lost by the reorder window or a timeout
  std::uint64_t paths_retired = 0;    // EVs retired after a loss on them
  std::uint64_t paths_probes = 0;     // packets sent on a retired EV to try it again
  std::uint64_t paths_restored = 0;   // probes that arrived: their EV is in use again
  std::uint64_t paths_congested = 0;  // CNPs and trimmed NAKs that named one of the QP's EVs
  // Dropped by the receive checks, before any transport processing:
  std::uint64_t pkey_mismatches = 0;       // the BTH P_Key is not in the port's table
  std::uint64_t qkey_mismatches = 0;       // UD: the DETH Q_Key is not the QP's
  std::uint64_t wrong_source_packets = 0;  // RC/UC: the source address is not the QP's peer
  std::uint64_t cnps_rejected = 0;         // a CNP from neither the QP's peer nor a known UD destination
  // Payloads by reference (RegionBacking):
  std::uint64_t extent_packets_sent = 0;
  std::uint64_t extent_packets_received = 0;
  std::uint64_t extents_unreadable = 0;  // named bytes the port could not read: NAKed (remote operational error),
                                         // or, a peer's memory gone while its bytes were placed, zeros
  std::uint64_t extents_from_wire = 0;   // extent packets that came from a wire: dropped
};

class EngineCore;

class Engine {
 public:
  explicit Engine(const EngineConfig& config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const DeviceAttributes& attributes() const;
  const Gid& gid() const;
  const EngineCounters& counters() const;

  // Verbs. Errors are the errno ibv_* would return.
  Expected<std::uint32_t, std::errc> alloc_pd();
  std::errc dealloc_pd(std::uint32_t pd);
  // backing: where a local peer can read the region's bytes (RegionBacking).
  Expected<MrKeys, std::errc> reg_mr(std::uint32_t pd, void* addr, std::uint64_t length, std::uint32_t access,
                                     const std::optional<RegionBacking>& backing = std::nullopt);
  // ibv_rereg_mr: another PD, range or access for a region (pass the old
  // values to keep them); its keys stay. backing is the new range's (a
  // region that keeps its range keeps its backing).
  std::errc rereg_mr(std::uint32_t lkey, std::uint32_t pd, void* addr, std::uint64_t length, std::uint32_t access,
                     const std::optional<RegionBacking>& backing = std::nullopt);
  std::errc dereg_mr(std::uint32_t lkey);
  // Whether a WR's element would be accepted now: its key, PD, bounds and,
  // for write, local write access (ibv_advise_mr asks before prefetching);
  // bad_address for a page of an implicit region that is not mapped.
  std::errc check_local(std::uint32_t pd, const Sge& sge, bool write) const;
  // Memory windows of type 1 or 2: the window's first rkey; any later key
  // of it (binds change its low byte) names it to dealloc_mw. A window is
  // bound by a WrOpcode::bind_mw work request and closed by local_inv,
  // send_with_inv (type 2) or a zero-length bind (type 1).
  Expected<std::uint32_t, std::errc> alloc_mw(std::uint32_t pd, std::uint8_t type);
  std::errc dealloc_mw(std::uint32_t rkey);
  Expected<std::uint32_t, std::errc> create_cq(std::uint32_t cqe);
  // A new depth for a CQ, keeping its waiting completions; invalid_argument
  // for fewer entries than are waiting or more than max_cqe.
  std::errc resize_cq(std::uint32_t cq, std::uint32_t cqe);
  std::errc destroy_cq(std::uint32_t cq);
  // Takes up to out.size() completions, oldest first.
  Expected<std::size_t, std::errc> poll_cq(std::uint32_t cq, std::span<WorkCompletion> out);
  // Arms the CQ's notification (ibv_req_notify_cq): the next completion, or
  // with solicited_only the next solicited receive or unsuccessful one, puts
  // the CQ on the event list once. Completions already queued do not count.
  std::errc req_notify_cq(std::uint32_t cq, bool solicited_only);
  // The oldest CQ whose notification fired (what ibv_get_cq_event returns).
  std::optional<std::uint32_t> poll_cq_event();
  bool cq_event_pending() const;
  // Returns the QP number; init.cap is checked against the device limits.
  Expected<std::uint32_t, std::errc> create_qp(const QpInitAttr& init);
  std::errc modify_qp(std::uint32_t qpn, const QpAttr& attr, std::uint32_t mask);
  Expected<QpAttr, std::errc> query_qp(std::uint32_t qpn) const;
  // Also drops the QP's completions still in its CQs, as mlx4 and mlx5 do.
  std::errc destroy_qp(std::uint32_t qpn);
  // Whether any of the QP's completions waits in its CQs, not yet polled.
  bool has_completions_waiting(std::uint32_t qpn) const;
  // Shared receive queues: receives posted once, consumed by any QP created
  // with QpInitAttr::srq (same PD).
  Expected<std::uint32_t, std::errc> create_srq(std::uint32_t pd, std::uint32_t max_wr, std::uint32_t max_sge);
  // XRC (IBTA Annex A14, transport/xrc.cc): domains, and SRQs of a domain
  // with a CQ of their own, whose number a remote xrc_send QP names in each
  // message (SendWr::xrc_remote_srqn). An xrc_recv QP of the domain answers
  // it as an RC responder would, taking receives from that SRQ and checking
  // remote keys against that SRQ's PD.
  Expected<std::uint32_t, std::errc> open_xrcd();
  std::errc close_xrcd(std::uint32_t xrcd);
  Expected<std::uint32_t, std::errc> create_xrc_srq(std::uint32_t pd, std::uint32_t xrcd, std::uint32_t cq,
                                                    std::uint32_t max_wr, std::uint32_t max_sge);
  std::errc destroy_srq(std::uint32_t srq);
  std::errc post_srq_recv(std::uint32_t srq, const RecvWr& wr);
  // ibv_modify_srq with IBV_SRQ_LIMIT: raise srq_limit_reached once when
  // fewer than limit receives are left (0 disarms).
  std::errc arm_srq_limit(std::uint32_t srq, std::uint32_t limit);
  // Address handles name UD destinations (SendWr::ud.ah).
  Expected<std::uint32_t, std::errc> create_ah(std::uint32_t pd, const AddressVector& av);
  std::errc destroy_ah(std::uint32_t ah);
  // UD multicast (transport/multicast.cc): a UD QP attached to a group
  // receives every datagram sent to the group's GID (DETH destination QP
  // kMulticastQpn) that carries its Q_Key; a UD send to an address handle
  // whose GID is the group's, with remote QPN kMulticastQpn, reaches every
  // member. attach returns whether the QP is the group's first member here
  // (the port then joins the group); attaching again changes nothing.
  // invalid_argument for a QP that is not UD, a GID that is not multicast,
  // or (detach) a QP not attached. destroy_qp detaches the QP.
  Expected<bool, std::errc> attach_multicast(std::uint32_t qpn, const Gid& group);
  // Returns whether the group has no member left here.
  Expected<bool, std::errc> detach_multicast(std::uint32_t qpn, const Gid& group);
  // The groups this QP is attached to.
  std::vector<Gid> multicast_groups_of(std::uint32_t qpn) const;
  std::errc post_send(std::uint32_t qpn, const SendWr& wr);
  std::errc post_recv(std::uint32_t qpn, const RecvWr& wr);

  // I/O and time.
  // verify_icrc false: the driver cannot know every byte the ICRC covers (a
  // UDP socket never sees the IPv4 Identification) and its policy is to
  // accept the packet unchecked; counted in icrc_unchecked.
  // extents: set for a datagram that came from a local device's shared
  // memory; its packets may then carry payloads by reference, and its QP's
  // later SENDs and WRITEs may too (RegionBacking).
  void on_datagram(std::span<const std::uint8_t> datagram, TimeNs now, bool verify_icrc = true,
                   ExtentSource* extents = nullptr);
  // A switch trimmed this datagram: its payload was cut off on the way and
  // only its headers arrived (the lengths in them are the original's). For
  // an RC request at or beyond the expected PSN the responder NAKs at once
  // (PSN sequence error at the expected PSN), so the requester resends
  // without waiting for a later packet or its timer. Anything else is
  // ignored, as a loss would be.
  void on_trimmed(std::span<const std::uint8_t> datagram, TimeNs now);
  // Writes the next datagram to send into out (at least kMaxDatagramLength
  // bytes) and describes it (uroce/transmit.h: its length, destination,
  // flow, traffic class and kind), so that whoever carries it need not
  // read its headers; length 0 (false) when there is nothing to send now.
  Transmit poll_transmit(std::span<std::uint8_t> out, TimeNs now);
  TimeNs next_deadline() const;
  void on_timer(TimeNs now);

  // The oldest asynchronous event not yet taken, if any (the device starts
  // with port_active for port 1).
  std::optional<AsyncEvent> poll_async_event();

  // The QP's current DCQCN sending rate (line rate when not limited).
  Expected<double, std::errc> qp_rate_bps(std::uint32_t qpn) const;

  // One line per QP with its transport state, for debugging and diagnostics.
  std::string describe() const;

 private:
  Expected<std::uint32_t, std::errc> create_xrc_recv_qp(const QpInitAttr& init);

  std::unique_ptr<EngineCore> core_;
};

}  // namespace uroce
