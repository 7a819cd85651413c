// PcapWriter and PcapReader: what is written reads back, and bad files give
// errors rather than crashes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "capture/pcap_file.h"

namespace uroce::capture {
namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
}

TEST(PcapFile, WritesAndReadsBackFramesAndNanosecondTimes) {
  fs::path path = temp_path("uroce-pcap-test.pcap");
  {
    auto writer = PcapWriter::create(path.string());
    ASSERT_TRUE(writer) << writer.error();
    std::vector<std::uint8_t> a(60, 0xAB), b(1500, 0xCD);
    writer->write(a, 1'000'000'123);
    writer->write(b, 2'500'000'000);
  }
  auto reader = PcapReader::open(path.string());
  ASSERT_TRUE(reader) << reader.error();
  auto first = reader->next();
  ASSERT_TRUE(first && first->has_value());
  EXPECT_EQ((*first)->bytes.size(), 60u);
  EXPECT_EQ((*first)->timestamp_ns, 1'000'000'123);
  auto second = reader->next();
  ASSERT_TRUE(second && second->has_value());
  EXPECT_EQ((*second)->bytes.size(), 1500u);
  EXPECT_EQ((*second)->bytes[1499], 0xCD);
  EXPECT_EQ((*second)->timestamp_ns, 2'500'000'000);
  auto end = reader->next();
  ASSERT_TRUE(end);
  EXPECT_FALSE(end->has_value());
  fs::remove(path);
}

TEST(PcapFile, MissingAndGarbageFilesAreErrors) {
  EXPECT_FALSE(PcapReader::open("/nonexistent/uroce.pcap"));
  fs::path path = temp_path("uroce-garbage.pcap");
  std::ofstream(path) << "this is not a capture file at all";
  auto reader = PcapReader::open(path.string());
  EXPECT_FALSE(reader);
  fs::remove(path);
}

TEST(PcapFile, CutOffRecordIsAnErrorNotACrash) {
  fs::path path = temp_path("uroce-cut.pcap");
  {
    auto writer = PcapWriter::create(path.string());
    ASSERT_TRUE(writer);
    std::vector<std::uint8_t> frame(200, 1);
    writer->write(frame, 0);
  }
  fs::resize_file(path, fs::file_size(path) - 50);
  auto reader = PcapReader::open(path.string());
  ASSERT_TRUE(reader);
  auto record = reader->next();
  EXPECT_FALSE(record);
  fs::remove(path);
}

}  // namespace
}  // namespace uroce::capture
