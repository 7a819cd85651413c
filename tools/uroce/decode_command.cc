// `uroce decode`: one line per frame, tshark-like text or JSON.
#include "tools/uroce/decode_command.h"

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "capture/pcap_file.h"
#include "decode/frame_json.h"
#include "decode/frame_text.h"

namespace uroce::tools {

void add_decode_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<DecodeOptions>();
  CLI::App* decode = app.add_subcommand("decode", "Print the RoCEv2 frames of a pcap capture, one per line");
  decode->add_option("file", options->path, "Capture file (pcap, Ethernet link type)")->required();
  decode->add_flag("--json", options->json, "One JSON object per frame");
  decode->callback([options, &exit_status] { exit_status = run_decode(*options); });
}

int run_decode(const DecodeOptions& options) {
  auto reader = capture::PcapReader::open(options.path);
  if (!reader) {
    fmt::print(stderr, "uroce decode: {}\n", reader.error());
    return 1;
  }
  std::size_t number = 0;
  std::int64_t first_timestamp_ns = 0;
  while (true) {
    auto record = reader->next();
    if (!record) {
      fmt::print(stderr, "uroce decode: {}: damaged after frame {}: {}\n", options.path, number, record.error());
      return 1;
    }
    if (!record->has_value()) break;
    const capture::CaptureRecord& frame = **record;
    if (++number == 1) first_timestamp_ns = frame.timestamp_ns;
    if (options.json) {
      fmt::print("{}\n", decode::frame_to_json(frame.bytes).dump());
    } else {
      double seconds = static_cast<double>(frame.timestamp_ns - first_timestamp_ns) / 1e9;
      fmt::print("{}\n", decode::frame_to_text(number, seconds, frame.bytes));
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace uroce::tools
