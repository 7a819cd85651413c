// Captures of simulated links: every RoCE frame parses with a valid ICRC and
// the headers the engine sent, and PFC frames appear as MAC control frames.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "capture/pcap_file.h"
#include "sim/simulation.h"
#include "wire/frame.h"

namespace uroce::sim {
namespace {

constexpr SimTime kUs = kPicosecondsPerUs;

TEST(LinkCapture, RecordsWholeFramesWithValidIcrcsAndPfcFrames) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("uroce_capture_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Scenario scenario;
  scenario.topology = star(5, LinkSpec{100'000'000'000, 1 * kUs});
  scenario.switches.xoff_bytes = 256 << 10;  // a shallow static threshold, so the incast pauses
  scenario.switches.dynamic_alpha = 0;
  for (std::uint32_t s = 1; s <= 4; ++s) scenario.flows.push_back({s, 0, 1 << 20, 0});
  NodeRef sender{true, 1};
  NodeRef the_switch{false, 0};
  scenario.captures = {{sender, the_switch}, {the_switch, sender}};
  SimResult result = run_simulation(scenario, {}, dir.string());
  ASSERT_GT(result.fabric.pause_frames, 0u);

  auto count = [&](NodeRef from, NodeRef to, std::uint32_t& roce, std::uint32_t& pfc) {
    auto reader = capture::PcapReader::open((dir / capture_file_name(from, to)).string());
    ASSERT_TRUE(reader.has_value()) << reader.error();
    for (;;) {
      auto record = reader->next();
      ASSERT_TRUE(record.has_value());
      if (!*record) break;
      ByteSpan frame = (*record)->bytes;
      ASSERT_GE(frame.size(), 60u);
      if (frame[12] == 0x88 && frame[13] == 0x08) {
        EXPECT_EQ(frame[14], 0x01);  // PFC opcode 0x0101
        EXPECT_EQ(frame[15], 0x01);
        ++pfc;
        continue;
      }
      auto parsed = wire::parse_roce_frame(frame);
      ASSERT_TRUE(parsed.has_value());
      EXPECT_TRUE(parsed->icrc_ok);
      ++roce;
    }
  };
  std::uint32_t sent = 0, sent_pfc = 0, received = 0, received_pfc = 0;
  count(sender, the_switch, sent, sent_pfc);
  count(the_switch, sender, received, received_pfc);
  EXPECT_EQ(sent, 256u);         // 1 MiB of WRITEs in 4096-byte packets
  EXPECT_GT(received, 0u);       // ACKs (and CNPs) coming back
  EXPECT_GT(received_pfc, 0u);   // the switch paused the sender
  EXPECT_EQ(sent_pfc, 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace uroce::sim
