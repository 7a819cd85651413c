// Reading a rank's capture files, sending them to rank 0, writing them there.
#include "sim/capture_handoff.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace uroce::sim {

namespace {

void append(Bytes& out, const void* data, std::size_t length) {
  std::size_t at = out.size();
  out.resize(at + length);
  if (length > 0) std::memcpy(out.data() + at, data, length);
}

}  // namespace

std::string capture_path_on_rank(const std::string& dir, const std::string& name, std::uint32_t rank) {
  return dir + "/" + (rank == 0 ? name : ".rank" + std::to_string(rank) + "." + name);
}

void hand_captures_to_rank_0(RankGroup& ranks, const std::vector<HandedCapture>& mine, const std::string& dir) {
  std::vector<Bytes> to_each(ranks.size());
  for (const HandedCapture& capture : mine) {  // [name length][name][file length][file]
    std::ifstream file(capture.path, std::ios::binary);
    if (!file) throw std::runtime_error("capture: cannot read " + capture.path);
    std::string content{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    file.close();
    std::remove(capture.path.c_str());
    auto name_length = static_cast<std::uint32_t>(capture.name.size());
    auto content_length = static_cast<std::uint64_t>(content.size());
    append(to_each[0], &name_length, sizeof name_length);
    append(to_each[0], capture.name.data(), capture.name.size());
    append(to_each[0], &content_length, sizeof content_length);
    append(to_each[0], content.data(), content.size());
  }
  std::vector<Bytes> received = ranks.exchange(to_each);
  if (ranks.rank() != 0) return;
  for (const Bytes& from : received) {
    std::size_t at = 0;
    auto take = [&](void* into, std::size_t length) {
      if (from.size() - at < length) throw std::runtime_error("capture: a truncated capture from another rank");
      if (length > 0) std::memcpy(into, from.data() + at, length);
      at += length;
    };
    while (at < from.size()) {
      std::uint32_t name_length = 0;
      take(&name_length, sizeof name_length);
      std::string name(name_length, '\0');
      take(name.data(), name_length);
      if (name.find('/') != std::string::npos) throw std::runtime_error("capture: a capture name with a path: " + name);
      std::uint64_t content_length = 0;
      take(&content_length, sizeof content_length);
      std::string content(content_length, '\0');
      take(content.data(), content_length);
      std::ofstream file(dir + "/" + name, std::ios::binary | std::ios::trunc);
      file << content;
      if (!file) throw std::runtime_error("capture: cannot write " + dir + "/" + name);
    }
  }
}

}  // namespace uroce::sim
