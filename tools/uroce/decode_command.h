// `uroce decode FILE.pcap [--json]`: print the RoCEv2 frames of a capture.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace uroce::tools {

struct DecodeOptions {
  std::string path;
  bool json = false;
};

// Registers the subcommand; when it runs, its exit status lands in exit_status.
void add_decode_command(CLI::App& app, int& exit_status);
// Returns the process exit status: 0 when the file was read to its end.
int run_decode(const DecodeOptions& options);

}  // namespace uroce::tools
