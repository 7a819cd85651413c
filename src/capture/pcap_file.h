// Reading and writing pcap capture files (Ethernet link type) through libpcap.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/bytes.h"
#include "uroce/expected.h"

typedef struct pcap pcap_t;
typedef struct pcap_dumper pcap_dumper_t;

namespace uroce::capture {

struct CaptureRecord {
  ByteSpan bytes;                   // what was captured; valid until the next read
  std::uint32_t original_length;    // the frame's length on the wire
  std::int64_t timestamp_ns;        // since the Unix epoch, or a simulation's zero
};

class PcapReader {
 public:
  // Opens a capture; the error says why not (missing file, not a capture, not
  // Ethernet).
  static Expected<PcapReader, std::string> open(const std::string& path);

  // The next record, std::nullopt at the end, or an error for a damaged file.
  Expected<std::optional<CaptureRecord>, std::string> next();

 private:
  struct Closer {
    void operator()(pcap_t* handle) const;
  };
  explicit PcapReader(pcap_t* handle) : handle_(handle) {}
  std::unique_ptr<pcap_t, Closer> handle_;
};

class PcapWriter {
 public:
  // Creates (or truncates) an Ethernet capture with nanosecond timestamps.
  static Expected<PcapWriter, std::string> create(const std::string& path);

  void write(ByteSpan frame, std::int64_t timestamp_ns);
  // Flushes buffered records to the file.
  void flush();

 private:
  struct Closer {
    void operator()(pcap_t* handle) const;
    void operator()(pcap_dumper_t* dumper) const;
  };
  PcapWriter(pcap_t* handle, pcap_dumper_t* dumper) : handle_(handle), dumper_(dumper) {}
  std::unique_ptr<pcap_t, Closer> handle_;
  std::unique_ptr<pcap_dumper_t, Closer> dumper_;
};

}  // namespace uroce::capture
