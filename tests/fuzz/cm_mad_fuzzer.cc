// libFuzzer target: arbitrary bytes as the payload of a UD SEND to QP 1,
// into the CM parser and rdma_cm's header and service-ID parsers, and as a
// sequence of 256-byte MADs from two peers into a connection manager that
// listens and has a connection of its own under way. Nothing may crash or
// read out of bounds (ASan), a MAD that parses must emit to bytes that
// parse to the same message, and whatever the manager sends must parse.
#include <cstdint>
#include <cstdlib>

#include "cm/cm_messages.h"
#include "cm/cma_header.h"
#include "cm/connection_manager.h"

using namespace uroce;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteSpan bytes(data, size);
  auto mad = cm::parse_cm_mad(bytes);
  if (mad) {
    auto again = cm::parse_cm_mad(cm::emit_cm_mad(*mad));
    if (!again || !(*again == *mad)) std::abort();
  }
  if (size >= cm::kMadHeaderLength) cm::CmaHeader::parse(bytes.subspan(cm::kMadHeaderLength));
  if (size >= 8) cm::parse_service_id(load_be64(data));

  cm::ConnectionManager manager(cm::CmConfig{.ca_guid = 1, .seed = 2, .response_timeout = 8, .max_retries = 2});
  manager.listen(cm::service_id(cm::PortSpace::tcp, 7174));
  cm::ConnectRequest request;
  request.service_id = cm::service_id(cm::PortSpace::tcp, 7174);
  manager.connect(Gid{1}, request, 0);
  TimeNs now = 0;
  for (std::size_t offset = 0; offset + cm::kMadLength <= size; offset += cm::kMadLength) {
    Gid peer{static_cast<std::uint8_t>(offset / cm::kMadLength % 2)};
    manager.on_mad(peer, bytes.subspan(offset, cm::kMadLength), now);
    while (auto event = manager.poll_event()) {
      if (event->kind == cm::CmEventKind::request) manager.accept(event->comm_id, cm::ConnectReply{}, now);
      if (event->kind == cm::CmEventKind::reply) manager.ready(event->comm_id, {}, now);
    }
    now += 1'000'000;
    manager.on_timer(now);
    while (auto out = manager.poll_outgoing()) {
      if (!cm::parse_cm_mad(out->mad)) std::abort();
    }
  }
  return 0;
}
