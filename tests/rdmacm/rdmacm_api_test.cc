// uroce's librdmacm.so.1 called directly, for what the unmodified programs
// never do: wrong arguments and calls in the wrong state fail with the
// errno rdma-core gives (EINVAL), unserved ones with ENOSYS, a non-blocking
// channel with nothing queued with EAGAIN; an ID destroyed while its REQ is
// unanswered gets no event later (under ASan: nothing touches the freed ID
// when the REQ's retries would have run out). What Linux's rdma_cm checks
// of a connection: the REQ names a routable source (the device's address,
// not the wildcard), and an accept without parameters grants READs. As
// libfabric's verbs provider needs it: "localhost" binds to the first
// device, as Linux binds a loopback address, and rdma_getaddrinfo with
// only hints gives their addresses back. A peer's disconnect reaches the
// program after the completions that came before it were polled.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace {

sockaddr_in ipv4(const char* address, std::uint16_t port) {
  sockaddr_in out{};
  out.sin_family = AF_INET;
  out.sin_port = htons(port);
  ::inet_pton(AF_INET, address, &out.sin_addr);
  return out;
}

// A registered buffer as one scatter-gather entry (*mr null on failure).
ibv_sge registered(ibv_pd* pd, void* buffer, std::uint32_t length, int access, ibv_mr** mr) {
  *mr = ibv_reg_mr(pd, buffer, length, access);
  return ibv_sge{reinterpret_cast<std::uintptr_t>(buffer), length, *mr != nullptr ? (*mr)->lkey : 0};
}

// Each test its own device address (ctest runs them side by side, each in
// a process; a process reads UROCE_ADDRESS once, at its first device use).
const char* address_for(const std::string& test) {
  if (test.find("Einval") != std::string::npos) return "127.0.9.101";
  if (test.find("Enosys") != std::string::npos) return "127.0.9.104";
  if (test.find("Accept") != std::string::npos) return "127.0.9.106,127.0.9.107";
  if (test.find("Localhost") != std::string::npos) return "127.0.9.108";
  if (test.find("Destroyed") != std::string::npos) return "127.0.9.109";
  if (test.find("Disconnect") != std::string::npos) return "127.0.9.110,127.0.9.111";
  return "127.0.9.105";
}

class RdmaCmApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("UROCE_ADDRESS", address_for(::testing::UnitTest::GetInstance()->current_test_info()->name()), 1);
    channel_ = rdma_create_event_channel();
    ASSERT_NE(channel_, nullptr);
    ASSERT_EQ(rdma_create_id(channel_, &id_, nullptr, RDMA_PS_TCP), 0);
  }
  void TearDown() override {
    rdma_destroy_id(id_);
    rdma_destroy_event_channel(channel_);
  }
  // The next event's type, or -errno.
  int next_event() {
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel_, &event) != 0) return -errno;
    int type = event->event;
    rdma_ack_cm_event(event);
    return type;
  }
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* id_ = nullptr;
};

TEST_F(RdmaCmApi, WrongArgumentsAndStatesFailWithEinval) {
  rdma_cm_id* other = nullptr;
  EXPECT_EQ(rdma_create_id(channel_, &other, nullptr, static_cast<rdma_port_space>(0x77)), -1);
  EXPECT_EQ(errno, EINVAL);
  rdma_conn_param param{};
  EXPECT_EQ(rdma_connect(id_, &param), -1);  // no route yet
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_accept(id_, &param), -1);  // no request
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_disconnect(id_), -1);
  EXPECT_EQ(errno, EINVAL);

  sockaddr_in peer = ipv4("127.0.9.102", 7300);
  ASSERT_EQ(rdma_resolve_addr(id_, nullptr, reinterpret_cast<sockaddr*>(&peer), 1000), 0);
  EXPECT_EQ(next_event(), RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_EQ(rdma_resolve_route(id_, 1000), 0);
  EXPECT_EQ(next_event(), RDMA_CM_EVENT_ROUTE_RESOLVED);
  char data[57] = {};
  param.private_data = data;
  param.private_data_len = 57;  // a REQ leaves 56 bytes after rdma_cm's header
  EXPECT_EQ(rdma_connect(id_, &param), -1);
  EXPECT_EQ(errno, EINVAL);
  param.private_data = nullptr;
  param.private_data_len = 8;
  EXPECT_EQ(rdma_connect(id_, &param), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(RdmaCmApi, EceReadsAsAPeerWithoutItAndAnEmptyNonBlockingChannelGivesEagain) {
  // No vendor options: a peer's ECE reads as zero, as Linux's librdmacm
  // gives it for a device without ECE; no ECE argument is EINVAL.
  ibv_ece ece{};
  ece.vendor_id = 0x15b3;
  EXPECT_EQ(rdma_get_remote_ece(id_, &ece), 0);
  EXPECT_EQ(ece.vendor_id, 0u);
  EXPECT_EQ(rdma_set_local_ece(id_, &ece), 0);
  EXPECT_EQ(rdma_get_remote_ece(id_, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  // Multicast is served, but only for an ID with its device (bound or resolved).
  sockaddr_in group = ipv4("239.127.9.110", 0);
  EXPECT_EQ(rdma_join_multicast(id_, reinterpret_cast<sockaddr*>(&group), nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_leave_multicast(id_, reinterpret_cast<sockaddr*>(&group)), -1);
  EXPECT_EQ(errno, EADDRNOTAVAIL);
  ASSERT_EQ(::fcntl(channel_->fd, F_SETFL, ::fcntl(channel_->fd, F_GETFL) | O_NONBLOCK), 0);
  EXPECT_EQ(next_event(), -EAGAIN);
}

// A REQ to an address with no device, then the ID goes: no event reaches
// the channel afterwards, even past the time the REQ's 15 retries at 1 ms
// would take (when this test's process opened the device's service).
TEST_F(RdmaCmApi, AnIdDestroyedWhileItsRequestIsUnansweredLeavesNoEvent) {
  ::setenv("UROCE_CM_TIMEOUT", "8", 1);  // 1 ms; read when the device's service opens
  sockaddr_in nobody = ipv4("127.0.9.103", 7302);
  ASSERT_EQ(rdma_resolve_addr(id_, nullptr, reinterpret_cast<sockaddr*>(&nobody), 1000), 0);
  ASSERT_EQ(next_event(), RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_EQ(rdma_resolve_route(id_, 1000), 0);
  ASSERT_EQ(next_event(), RDMA_CM_EVENT_ROUTE_RESOLVED);
  rdma_conn_param param{};
  ASSERT_EQ(rdma_connect(id_, &param), 0);
  ASSERT_EQ(rdma_destroy_id(id_), 0);
  ASSERT_EQ(rdma_create_id(channel_, &id_, nullptr, RDMA_PS_TCP), 0);  // for TearDown
  ::usleep(200'000);
  ASSERT_EQ(::fcntl(channel_->fd, F_SETFL, ::fcntl(channel_->fd, F_GETFL) | O_NONBLOCK), 0);
  EXPECT_EQ(next_event(), -EAGAIN);
}

// Two devices in this process (127.0.9.106 first): a listener on the
// second, an ID resolved without a source on the first, accepted with no
// parameters (as rping's server does).
TEST_F(RdmaCmApi, AResolvedIdHasTheDeviceAddressAndAnAcceptWithoutParametersGrantsReads) {
  rdma_event_channel* listening = rdma_create_event_channel();
  ASSERT_NE(listening, nullptr);
  rdma_cm_id* listener = nullptr;
  ASSERT_EQ(rdma_create_id(listening, &listener, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in served = ipv4("127.0.9.107", 7310);
  ASSERT_EQ(rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&served)), 0);
  ASSERT_EQ(rdma_listen(listener, 1), 0);

  ASSERT_EQ(rdma_resolve_addr(id_, nullptr, reinterpret_cast<sockaddr*>(&served), 1000), 0);
  ASSERT_EQ(next_event(), RDMA_CM_EVENT_ADDR_RESOLVED);
  const auto* local = reinterpret_cast<const sockaddr_in*>(rdma_get_local_addr(id_));
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local->sin_addr, text, sizeof text);
  EXPECT_STREQ(text, "127.0.9.106");
  EXPECT_NE(local->sin_port, 0);
  ASSERT_EQ(rdma_resolve_route(id_, 1000), 0);
  ASSERT_EQ(next_event(), RDMA_CM_EVENT_ROUTE_RESOLVED);
  ibv_qp_init_attr init{};
  init.cap = ibv_qp_cap{4, 4, 1, 1, 0};
  init.qp_type = IBV_QPT_RC;
  ibv_qp_init_attr child_init = init;  // rdma_create_qp writes the CQs it made into init
  ASSERT_EQ(rdma_create_qp(id_, nullptr, &init), 0);
  rdma_conn_param asked{};
  asked.responder_resources = 1;
  asked.initiator_depth = 1;
  asked.retry_count = 7;
  ASSERT_EQ(rdma_connect(id_, &asked), 0);

  rdma_cm_event* request = nullptr;
  ASSERT_EQ(rdma_get_cm_event(listening, &request), 0);
  ASSERT_EQ(request->event, RDMA_CM_EVENT_CONNECT_REQUEST);
  rdma_cm_id* child = request->id;
  EXPECT_EQ(request->param.conn.responder_resources, 1);  // the peer's initiator depth
  rdma_ack_cm_event(request);
  ASSERT_EQ(rdma_create_qp(child, nullptr, &child_init), 0);
  ASSERT_EQ(rdma_accept(child, nullptr), 0);
  rdma_cm_event* established = nullptr;
  ASSERT_EQ(rdma_get_cm_event(channel_, &established), 0);
  EXPECT_EQ(established->event, RDMA_CM_EVENT_ESTABLISHED);
  // The REP's grants (Linux's peer sets its QP from them): one READ each way.
  EXPECT_EQ(established->param.conn.responder_resources, 1);
  EXPECT_EQ(established->param.conn.initiator_depth, 1);
  rdma_ack_cm_event(established);

  ibv_qp_attr attr{};
  ibv_qp_init_attr unused{};
  ASSERT_EQ(ibv_query_qp(child->qp, &attr, IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MAX_QP_RD_ATOMIC, &unused), 0);
  EXPECT_GE(attr.max_dest_rd_atomic, 1);  // the client may READ
  EXPECT_GE(attr.max_rd_atomic, 1);       // and so may the server
  ASSERT_EQ(ibv_query_qp(id_->qp, &attr, IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MAX_QP_RD_ATOMIC, &unused), 0);
  EXPECT_EQ(attr.max_dest_rd_atomic, 1);
  EXPECT_EQ(attr.max_rd_atomic, 1);

  rdma_disconnect(id_);
  rdma_destroy_qp(id_);
  rdma_destroy_qp(child);
  rdma_destroy_id(child);
  rdma_destroy_id(listener);
  rdma_destroy_event_channel(listening);
}

// Two devices in this process (127.0.9.110 and .111): the server sends
// one message to the client, whose receive completion waits unpolled, and
// disconnects. The client's channel gets RDMA_CM_EVENT_DISCONNECTED only
// once the completion from before the DREQ was polled (cm_service.h), or
// when the wait is over if the program never polls it.
TEST_F(RdmaCmApi, APeersDisconnectIsReportedAfterTheCompletionsBeforeItWerePolled) {
  for (bool client_polls : {true, false}) {
    SCOPED_TRACE(client_polls ? "the client polls" : "the client never polls");
    rdma_event_channel* listening = rdma_create_event_channel();
    ASSERT_NE(listening, nullptr);
    rdma_cm_id* listener = nullptr;
    ASSERT_EQ(rdma_create_id(listening, &listener, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in served = ipv4("127.0.9.111", client_polls ? 7320 : 7321);
    ASSERT_EQ(rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&served)), 0);
    ASSERT_EQ(rdma_listen(listener, 1), 0);
    ASSERT_EQ(rdma_resolve_addr(id_, nullptr, reinterpret_cast<sockaddr*>(&served), 1000), 0);
    ASSERT_EQ(next_event(), RDMA_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(rdma_resolve_route(id_, 1000), 0);
    ASSERT_EQ(next_event(), RDMA_CM_EVENT_ROUTE_RESOLVED);
    ibv_qp_init_attr init{};
    init.cap = ibv_qp_cap{4, 4, 1, 1, 0};
    init.qp_type = IBV_QPT_RC;
    ibv_qp_init_attr child_init = init;
    ASSERT_EQ(rdma_create_qp(id_, nullptr, &init), 0);
    char landing[64] = {};
    ibv_mr* landing_mr = nullptr;
    ibv_sge landing_sge = registered(id_->pd, landing, sizeof landing, IBV_ACCESS_LOCAL_WRITE, &landing_mr);
    ASSERT_NE(landing_mr, nullptr);
    ibv_recv_wr receive{};
    receive.wr_id = 7;
    receive.sg_list = &landing_sge;
    receive.num_sge = 1;
    ibv_recv_wr* bad_receive = nullptr;
    ASSERT_EQ(ibv_post_recv(id_->qp, &receive, &bad_receive), 0);
    rdma_conn_param asked{};
    ASSERT_EQ(rdma_connect(id_, &asked), 0);

    rdma_cm_event* request = nullptr;
    ASSERT_EQ(rdma_get_cm_event(listening, &request), 0);
    ASSERT_EQ(request->event, RDMA_CM_EVENT_CONNECT_REQUEST);
    rdma_cm_id* child = request->id;
    rdma_ack_cm_event(request);
    ASSERT_EQ(rdma_create_qp(child, nullptr, &child_init), 0);
    ASSERT_EQ(rdma_accept(child, nullptr), 0);
    ASSERT_EQ(next_event(), RDMA_CM_EVENT_ESTABLISHED);
    rdma_cm_event* established = nullptr;
    ASSERT_EQ(rdma_get_cm_event(listening, &established), 0);
    EXPECT_EQ(established->event, RDMA_CM_EVENT_ESTABLISHED);
    rdma_ack_cm_event(established);

    char message[16] = "the last one";
    ibv_mr* message_mr = nullptr;
    ibv_sge message_sge = registered(child->pd, message, sizeof message, 0, &message_mr);
    ASSERT_NE(message_mr, nullptr);
    ibv_send_wr send{};
    send.wr_id = 9;
    send.sg_list = &message_sge;
    send.num_sge = 1;
    send.opcode = IBV_WR_SEND;
    send.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad_send = nullptr;
    ASSERT_EQ(ibv_post_send(child->qp, &send, &bad_send), 0);
    ibv_wc sent{};
    while (ibv_poll_cq(child->send_cq, 1, &sent) == 0) {
    }
    ASSERT_EQ(sent.status, IBV_WC_SUCCESS);  // acknowledged: the client's device holds the message

    ASSERT_EQ(rdma_disconnect(child), 0);
    rdma_cm_event* disconnected = nullptr;
    ASSERT_EQ(rdma_get_cm_event(listening, &disconnected), 0);  // the client's DREP: its DREQ was read
    EXPECT_EQ(disconnected->event, RDMA_CM_EVENT_DISCONNECTED);
    rdma_ack_cm_event(disconnected);

    int flags = ::fcntl(channel_->fd, F_GETFL);
    ASSERT_EQ(::fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK), 0);
    EXPECT_EQ(next_event(), -EAGAIN);  // the receive completion still waits
    ASSERT_EQ(::fcntl(channel_->fd, F_SETFL, flags), 0);
    if (client_polls) {
      ibv_wc received{};
      ASSERT_EQ(ibv_poll_cq(id_->recv_cq, 1, &received), 1);
      EXPECT_EQ(received.wr_id, 7u);
      EXPECT_EQ(received.status, IBV_WC_SUCCESS);
      EXPECT_STREQ(landing, "the last one");
    }
    // After the poll, or when the 200 ms wait is over; a wait that never ends fails here.
    pollfd channel{channel_->fd, POLLIN, 0};
    ASSERT_EQ(::poll(&channel, 1, 5000), 1);
    EXPECT_EQ(next_event(), RDMA_CM_EVENT_DISCONNECTED);

    rdma_destroy_qp(id_);
    ibv_dereg_mr(landing_mr);
    rdma_destroy_id(id_);
    ASSERT_EQ(rdma_create_id(channel_, &id_, nullptr, RDMA_PS_TCP), 0);
    rdma_destroy_qp(child);
    ibv_dereg_mr(message_mr);
    rdma_destroy_id(child);
    rdma_destroy_id(listener);
    rdma_destroy_event_channel(listening);
  }
}

TEST_F(RdmaCmApi, LocalhostBindsToTheFirstDeviceAtItsAddress) {
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_PASSIVE;
  rdma_addrinfo* local = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("localhost", nullptr, &hints, &local), 0);
  ASSERT_EQ(local->ai_src_addr->sa_family, AF_INET);
  ASSERT_EQ(rdma_bind_addr(id_, local->ai_src_addr), 0);
  EXPECT_NE(id_->verbs, nullptr);
  const auto* bound = reinterpret_cast<const sockaddr_in*>(rdma_get_local_addr(id_));
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &bound->sin_addr, text, sizeof text);
  EXPECT_STREQ(text, "127.0.9.108");
  EXPECT_NE(rdma_get_src_port(id_), 0);  // an ephemeral port, as asked with none
  // Only hints, no node or service: their addresses come back.
  rdma_addrinfo only_hints{};
  only_hints.ai_src_addr = rdma_get_local_addr(id_);
  only_hints.ai_src_len = sizeof(sockaddr_in);
  rdma_addrinfo* echoed = nullptr;
  ASSERT_EQ(rdma_getaddrinfo(nullptr, nullptr, &only_hints, &echoed), 0);
  ASSERT_NE(echoed->ai_src_addr, nullptr);
  EXPECT_EQ(echoed->ai_family, AF_INET);
  EXPECT_EQ(std::memcmp(echoed->ai_src_addr, bound, sizeof(sockaddr_in)), 0);
  EXPECT_EQ(echoed->ai_dst_addr, nullptr);
  rdma_freeaddrinfo(echoed);
  rdma_freeaddrinfo(local);
  // A loopback address is no wildcard: nothing at all is still EINVAL.
  rdma_addrinfo nothing{};
  EXPECT_EQ(rdma_getaddrinfo(nullptr, nullptr, &nothing, &echoed), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(RdmaCmApi, AChannelDestroyedUnderAWaitingThreadIsNoUseAfterFree) {
  rdma_event_channel* doomed = rdma_create_event_channel();
  ASSERT_NE(doomed, nullptr);
  ASSERT_EQ(::fcntl(doomed->fd, F_SETFL, ::fcntl(doomed->fd, F_GETFL) | O_NONBLOCK), 0);
  rdma_destroy_event_channel(doomed);
  // Later calls on it wait as on an fd nobody writes: here, non-blocking, EAGAIN.
  rdma_cm_event* event = nullptr;
  EXPECT_EQ(rdma_get_cm_event(doomed, &event), -1);
  EXPECT_EQ(errno, EAGAIN);
  // Past the newest 64, a destroyed channel's fd is closed and a call fails with EBADF.
  for (int i = 0; i < 64; ++i) rdma_destroy_event_channel(rdma_create_event_channel());
  EXPECT_EQ(rdma_get_cm_event(doomed, &event), -1);
  EXPECT_EQ(errno, EBADF);
}

}  // namespace
