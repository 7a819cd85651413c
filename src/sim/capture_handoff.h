// Captures over ranks: a rank other than 0 writes the captures of the links
// it sends on into hidden files beside the final ones (".rank<R>.<name>"),
// and at the end hands their bytes to rank 0, which writes them under their
// names; so rank 0 writes every output of a run, on any file systems.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/rank_group.h"

namespace uroce::sim {

struct HandedCapture {
  std::string path;  // where this rank wrote it
  std::string name;  // the file rank 0 writes, in the same directory
};

// Where a rank writes a capture named `name` into `dir`.
std::string capture_path_on_rank(const std::string& dir, const std::string& name, std::uint32_t rank);

// Collective. Ranks other than 0 read and remove their files and send them;
// rank 0 writes what it received into dir. Throws std::runtime_error when a
// file cannot be read or written.
void hand_captures_to_rank_0(RankGroup& ranks, const std::vector<HandedCapture>& mine, const std::string& dir);

}  // namespace uroce::sim
