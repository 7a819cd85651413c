// libFuzzer target: capture files as `uroce decode` reads them, each record
// through the frame parser and the text and JSON decoders. A damaged file is
// an error, never a crash or a read past a record.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "capture/pcap_file.h"
#include "decode/frame_json.h"
#include "decode/frame_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // libpcap reads files: the input goes to one, in memory-backed /dev/shm when there is one,
  // removed once open.
  static const std::string path = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/uroce-pcap-fuzz-" + std::to_string(getpid()) + ".pcap";
  }();
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) std::abort();
  std::fclose(file);
  auto reader = uroce::capture::PcapReader::open(path);
  std::remove(path.c_str());  // the reader keeps the file open; nothing is left behind when the fuzzer ends
  if (!reader) return 0;
  for (int records = 0; records < 10000; ++records) {
    auto record = reader->next();
    if (!record || !*record) break;
    uroce::ByteSpan bytes = (*record)->bytes;
    (void)uroce::decode::frame_to_text(static_cast<std::size_t>(records), 0.0, bytes);
    (void)uroce::decode::frame_to_json(bytes).dump();
  }
  return 0;
}
