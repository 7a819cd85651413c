// Reading a rank's capture files, sending them to rank 0, writing them there.
#include "sim/capture_handoff.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "sim/byte_packing.h"

namespace uroce::sim {

std::string capture_path_on_rank(const std::string& dir, const std::string& name, std::uint32_t rank) {
  return dir + "/" + (rank == 0 ? name : ".rank" + std::to_string(rank) + "." + name);
}

void hand_captures_to_rank_0(RankGroup& ranks, const std::vector<HandedCapture>& mine, const std::string& dir) {
  Packer out;  // per capture: its name, its file
  for (const HandedCapture& capture : mine) {
    std::ifstream file(capture.path, std::ios::binary);
    if (!file) throw std::runtime_error("capture: cannot read " + capture.path);
    std::string content{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    file.close();
    std::remove(capture.path.c_str());
    out.put(capture.name);
    out.put(content);
  }
  std::vector<Bytes> to_each(ranks.size());
  to_each[0] = std::move(out.bytes());
  std::vector<Bytes> received = ranks.exchange(to_each);
  if (ranks.rank() != 0) return;
  for (const Bytes& from : received) {
    Unpacker in(from, "capture");
    while (!in.done()) {
      std::string name = in.get_string();
      if (name.find('/') != std::string::npos) throw std::runtime_error("capture: a capture name with a path: " + name);
      std::string content = in.get_string();
      std::ofstream file(dir + "/" + name, std::ios::binary | std::ios::trunc);
      file << content;
      if (!file) throw std::runtime_error("capture: cannot write " + dir + "/" + name);
    }
  }
}

}  // namespace uroce::sim
