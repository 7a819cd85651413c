// `uroce decode` as a user runs it: output, JSON lines, errors and exit codes.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "capture/pcap_file.h"
#include "tests/support/run_command.h"
#include "tests/support/frame_builder.h"

namespace uroce {
namespace {

namespace fs = std::filesystem;

using testing::RunResult;

RunResult run(const std::string& arguments) { return testing::run_uroce(arguments); }

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) result.push_back(line);
  return result;
}

const std::string kVectors = std::string(UROCE_VECTORS_DIR) + "/roce-public.pcap";

TEST(DecodeCli, JsonHasOneObjectPerFrame) {
  RunResult result = run("decode --json " + kVectors);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto output = lines(result.output);
  ASSERT_EQ(output.size(), 32u);
  auto first = nlohmann::json::parse(output[0]);
  EXPECT_EQ(first["name"], "SEND_FIRST");
  EXPECT_EQ(first["icrc"], 3909222350u);
  EXPECT_EQ(nlohmann::json::parse(output[30])["icrc_ok"], false);
}

TEST(DecodeCli, TextHasOneLinePerFrame) {
  RunResult result = run("decode " + kVectors);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto output = lines(result.output);
  ASSERT_EQ(output.size(), 32u);
  EXPECT_NE(output[0].find("10.0.0.1 → 10.0.0.2 RC SEND_FIRST QP=0x91b75a PSN=4508515"), std::string::npos)
      << output[0];
  EXPECT_NE(output[29].find("CNP"), std::string::npos);
  EXPECT_NE(output[30].find("BAD"), std::string::npos);
}

// The kernel's rdma_cm frames: the connection manager's messages are named.
TEST(DecodeCli, ConnectionManagerMadsAreDecoded) {
  std::string capture = std::string(UROCE_VECTORS_DIR) + "/kernel-cm.pcap";
  RunResult text = run("decode " + capture);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  auto output = lines(text.output);
  ASSERT_EQ(output.size(), 2u);
  EXPECT_NE(output[0].find("| CM REQ "), std::string::npos) << output[0];
  EXPECT_NE(output[0].find("service=TCP:7174 QPN=0x000011"), std::string::npos) << output[0];
  EXPECT_NE(output[1].find("| CM REJ "), std::string::npos) << output[1];
  EXPECT_NE(output[1].find("reason=timeout(4)"), std::string::npos) << output[1];
  RunResult json = run("decode --json " + capture);
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(nlohmann::json::parse(lines(json.output)[0])["cm"]["message"], "REQ");
}

TEST(DecodeCli, BrokenFramesGiveAnErrorObjectAndDecodingGoesOn) {
  fs::path path = fs::temp_directory_path() / ("uroce-cli-" + std::to_string(::getpid()) + ".pcap");
  std::vector<std::uint8_t> payload(100, 7);
  auto good = testing::emit(
      testing::frame_spec(testing::headers_for(wire::opcode::kRcSendOnly), payload, 6));
  {
    auto writer = capture::PcapWriter::create(path.string());
    ASSERT_TRUE(writer);
    writer->write(ByteSpan(good).first(good.size() - 10), 0);  // cut short
    std::vector<std::uint8_t> arp(60, 0);
    arp[12] = 0x08;
    arp[13] = 0x06;
    writer->write(arp, 1);
    writer->write(good, 2);
  }
  RunResult result = run("decode --json " + path.string());
  fs::remove(path);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto output = lines(result.output);
  ASSERT_EQ(output.size(), 3u);
  EXPECT_EQ(output[0], R"({"error":"truncated"})");
  EXPECT_EQ(output[1], R"({"error":"not_roce"})");
  auto decoded = nlohmann::json::parse(output[2]);
  EXPECT_EQ(decoded["ip"], 6);
  EXPECT_EQ(decoded["payload_len"], 100);
  EXPECT_EQ(decoded["icrc_ok"], true);
}

TEST(DecodeCli, MissingFileIsAClearError) {
  RunResult result = run("decode /nonexistent/capture.pcap");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("uroce decode: /nonexistent/capture.pcap:"), std::string::npos) << result.output;
}

TEST(DecodeCli, WrongFlagsAreRejectedWithUsage) {
  RunResult unknown_flag = run("decode --jsn " + kVectors);
  EXPECT_EQ(unknown_flag.exit_code, 2);
  EXPECT_NE(unknown_flag.output.find("--jsn"), std::string::npos) << unknown_flag.output;

  RunResult no_file = run("decode");
  EXPECT_EQ(no_file.exit_code, 2);
  EXPECT_NE(no_file.output.find("file"), std::string::npos) << no_file.output;

  RunResult no_command = run("");
  EXPECT_EQ(no_command.exit_code, 2);
  EXPECT_EQ(run("--help").exit_code, 0);
}

}  // namespace
}  // namespace uroce
