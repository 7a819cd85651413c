// libpcap-backed capture reader and writer.
#include "capture/pcap_file.h"

#include <pcap/pcap.h>

namespace uroce::capture {
namespace {
constexpr int kSnapLength = 262144;
}

void PcapReader::Closer::operator()(pcap_t* handle) const { pcap_close(handle); }

Expected<PcapReader, std::string> PcapReader::open(const std::string& path) {
  char error[PCAP_ERRBUF_SIZE] = {};
  pcap_t* handle = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, error);
  if (handle == nullptr) return unexpected(std::string(error));
  PcapReader reader(handle);
  int link_type = pcap_datalink(handle);
  if (link_type != DLT_EN10MB) {
    const char* name = pcap_datalink_val_to_name(link_type);
    return unexpected(path + ": link type " + std::string(name ? name : std::to_string(link_type)) +
                      " is not Ethernet (EN10MB)");
  }
  return reader;
}

Expected<std::optional<CaptureRecord>, std::string> PcapReader::next() {
  pcap_pkthdr* header = nullptr;
  const u_char* data = nullptr;
  int status = pcap_next_ex(handle_.get(), &header, &data);
  if (status == PCAP_ERROR_BREAK) return std::optional<CaptureRecord>();
  if (status != 1) return unexpected(std::string(pcap_geterr(handle_.get())));
  CaptureRecord record{ByteSpan(data, header->caplen), header->len,
                       std::int64_t{header->ts.tv_sec} * 1'000'000'000 + header->ts.tv_usec};
  return std::optional<CaptureRecord>(record);
}

void PcapWriter::Closer::operator()(pcap_t* handle) const { pcap_close(handle); }
void PcapWriter::Closer::operator()(pcap_dumper_t* dumper) const { pcap_dump_close(dumper); }

Expected<PcapWriter, std::string> PcapWriter::create(const std::string& path) {
  pcap_t* handle = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, kSnapLength, PCAP_TSTAMP_PRECISION_NANO);
  if (handle == nullptr) return unexpected(std::string("cannot create a pcap handle"));
  pcap_dumper_t* dumper = pcap_dump_open(handle, path.c_str());
  if (dumper == nullptr) {
    std::string error = pcap_geterr(handle);
    pcap_close(handle);
    return unexpected(error);
  }
  return PcapWriter(handle, dumper);
}

void PcapWriter::write(ByteSpan frame, std::int64_t timestamp_ns) {
  pcap_pkthdr header{};
  header.ts.tv_sec = timestamp_ns / 1'000'000'000;
  header.ts.tv_usec = timestamp_ns % 1'000'000'000;  // nanoseconds: the dumper's precision
  header.caplen = static_cast<bpf_u_int32>(frame.size());
  header.len = static_cast<bpf_u_int32>(frame.size());
  pcap_dump(reinterpret_cast<u_char*>(dumper_.get()), &header, frame.data());
}

void PcapWriter::flush() { pcap_dump_flush(dumper_.get()); }

}  // namespace uroce::capture
