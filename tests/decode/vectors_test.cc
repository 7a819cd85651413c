// The public vectors (frames built by scapy, with the fields each must decode
// to) decode field for field. Runs over the copy in tests/vectors and, when the
// checkout sits beside it, over ../shared/vectors too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "capture/pcap_file.h"
#include "decode/frame_json.h"

namespace uroce::decode {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<fs::path> vector_captures() {
  std::vector<fs::path> captures;
  for (const char* dir : {UROCE_VECTORS_DIR, UROCE_SHARED_VECTORS_DIR}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      fs::path json_path = entry.path();
      json_path.replace_extension(".json");
      if (entry.path().extension() == ".pcap" && fs::exists(json_path)) captures.push_back(entry.path());
    }
  }
  return captures;
}

void expect_capture_matches(const fs::path& pcap_path) {
  fs::path json_path = pcap_path;
  json_path.replace_extension(".json");
  std::ifstream json_file(json_path);
  json expected = json::parse(json_file);
  ASSERT_TRUE(expected.is_array());

  auto reader = capture::PcapReader::open(pcap_path.string());
  ASSERT_TRUE(reader) << reader.error();
  std::size_t index = 0;
  while (true) {
    auto record = reader->next();
    ASSERT_TRUE(record) << record.error();
    if (!record->has_value()) break;
    ASSERT_LT(index, expected.size()) << "more frames than expected";
    json actual = json::parse(frame_to_json((*record)->bytes).dump());
    const json& want = expected[index];
    for (const auto& [key, value] : want.items()) {
      ASSERT_TRUE(actual.contains(key)) << pcap_path << " frame " << index << " lacks " << key;
      EXPECT_EQ(actual[key].dump(), value.dump()) << pcap_path << " frame " << index << " key " << key;
    }
    for (const auto& [key, value] : actual.items()) {
      EXPECT_TRUE(want.contains(key)) << pcap_path << " frame " << index << " has extra key " << key;
    }
    ++index;
  }
  EXPECT_EQ(index, expected.size());
}

TEST(PublicVectors, DecodeFieldForField) {
  auto captures = vector_captures();
  ASSERT_FALSE(captures.empty());
  for (const fs::path& capture : captures) expect_capture_matches(capture);
}

}  // namespace
}  // namespace uroce::decode
