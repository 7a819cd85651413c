// Reading Chakra trace files: gunzip when compressed, then the metadata
// message and the length-prefixed nodes with protobuf's lite runtime, then
// the checks a replay relies on.
#include "chakra/trace.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "chakra/chakra_trace.pb.h"

namespace uroce::chakra {

namespace {

constexpr std::size_t kLargestMessage = 64u << 20;
constexpr std::size_t kLargestTrace = 1u << 30;  // after gunzip
constexpr std::size_t kGunzipChunk = 1u << 20;
constexpr std::uint64_t kLongestNodeUs = 1'000'000'000;  // 1000 s: longer than any step

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<std::uint8_t>(bytes[0]) == 0x1f &&
         static_cast<std::uint8_t>(bytes[1]) == 0x8b;
}

Expected<std::string, std::string> gunzip(std::string_view bytes, const std::string& source) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return unexpected(source + ": cannot start gunzip");
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (out.size() + kGunzipChunk > kLargestTrace) {
      inflateEnd(&stream);
      return unexpected(fmt::format("{}: more than {} MiB once uncompressed", source, kLargestTrace >> 20));
    }
    std::size_t used = out.size();
    out.resize(used + kGunzipChunk);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    stream.avail_out = static_cast<uInt>(kGunzipChunk);
    status = inflate(&stream, Z_NO_FLUSH);
    out.resize(used + kGunzipChunk - stream.avail_out);
    if (status != Z_OK && status != Z_STREAM_END) {
      inflateEnd(&stream);
      return unexpected(source + ": the gzip stream is corrupt or truncated");
    }
  }
  inflateEnd(&stream);
  return out;
}

// An attribute's value as a non-negative integer; nullopt for a negative
// number or a type that is not an integer.
std::optional<std::uint64_t> unsigned_value(const wire::Attribute& attribute) {
  auto from_signed = [](std::int64_t v) { return v < 0 ? std::nullopt : std::optional<std::uint64_t>(v); };
  switch (attribute.value_case()) {
    case wire::Attribute::kInt32Val: return from_signed(attribute.int32_val());
    case wire::Attribute::kInt64Val: return from_signed(attribute.int64_val());
    case wire::Attribute::kUint32Val: return attribute.uint32_val();
    case wire::Attribute::kUint64Val: return attribute.uint64_val();
    case wire::Attribute::kSint32Val: return from_signed(attribute.sint32_val());
    case wire::Attribute::kSint64Val: return from_signed(attribute.sint64_val());
    case wire::Attribute::kFixed32Val: return attribute.fixed32_val();
    case wire::Attribute::kFixed64Val: return attribute.fixed64_val();
    case wire::Attribute::kSfixed32Val: return from_signed(attribute.sfixed32_val());
    case wire::Attribute::kSfixed64Val: return from_signed(attribute.sfixed64_val());
    default: return std::nullopt;
  }
}

// Reads the attributes uroce uses into node; an error says which and why.
std::optional<std::string> read_attributes(const wire::Node& message, TraceNode& node) {
  for (const wire::Attribute& attribute : message.attr()) {
    const std::string& name = attribute.name();
    if (name == "is_cpu_op") {
      if (attribute.value_case() == wire::Attribute::kBoolVal) {
        node.is_cpu_op = attribute.bool_val();
      } else if (auto value = unsigned_value(attribute)) {
        node.is_cpu_op = *value != 0;
      } else {
        return "is_cpu_op is not a boolean";
      }
      continue;
    }
    if (name == "pg_name") {
      if (attribute.value_case() == wire::Attribute::kStringVal) {
        node.pg_name = attribute.string_val();
      } else if (auto value = unsigned_value(attribute)) {
        node.pg_name = std::to_string(*value);
      } else {
        return "pg_name is neither a string nor a non-negative integer";
      }
      continue;
    }
    bool known = name == "comm_type" || name == "comm_size" || name == "comm_src" || name == "comm_dst" ||
                 name == "comm_tag";
    if (!known) continue;
    auto value = unsigned_value(attribute);
    if (!value) return name + " is not a non-negative integer";
    if (name == "comm_type") {
      if (*value >= kCommTypes) return fmt::format("comm_type {} is not a collective type of the format", *value);
      node.comm_type = static_cast<CommType>(*value);
    } else if (name == "comm_size") {
      node.comm_size = *value;
    } else if (*value > std::numeric_limits<std::uint32_t>::max()) {
      return fmt::format("{} {} is out of range", name, *value);
    } else if (name == "comm_src") {
      node.comm_src = static_cast<std::uint32_t>(*value);
    } else if (name == "comm_dst") {
      node.comm_dst = static_cast<std::uint32_t>(*value);
    } else {
      node.comm_tag = static_cast<std::uint32_t>(*value);
    }
  }
  return std::nullopt;
}

// The groups a process-group node declares, added to the trace's; an
// error says what is wrong with them.
std::optional<std::string> add_process_groups(std::string_view values, Trace& trace) {
  auto groups = parse_process_groups(values);
  if (!groups) return groups.error();
  for (ProcessGroup& group : *groups) {
    for (const ProcessGroup& known : trace.process_groups) {
      if (known.name == group.name) return "process group \"" + group.name + "\" is declared a second time";
    }
    trace.process_groups.push_back(std::move(group));
  }
  return std::nullopt;
}

// Checks node IDs are unique and drops dependencies on IDs not in the
// trace (counting them).
std::optional<std::string> check_dependencies(Trace& trace, const std::string& source) {
  std::unordered_map<std::uint64_t, std::size_t> index_of;
  for (std::size_t i = 0; i < trace.nodes.size(); ++i) {
    if (!index_of.emplace(trace.nodes[i].id, i).second) {
      return fmt::format("{}: node {} (id {}): a second node with this id", source, i, trace.nodes[i].id);
    }
  }
  for (TraceNode& node : trace.nodes) {
    for (std::vector<std::uint64_t>* deps : {&node.deps, &node.ctrl_deps}) {
      std::size_t before = deps->size();
      deps->erase(std::remove_if(deps->begin(), deps->end(), [&](std::uint64_t dep) { return !index_of.count(dep); }),
                  deps->end());
      trace.missing_dependencies += before - deps->size();
    }
  }
  if (auto node = node_on_a_cycle(trace, false)) {
    return fmt::format("{}: node {} (id {}): its data dependencies form a cycle", source, *node,
                       trace.nodes[*node].id);
  }
  return std::nullopt;
}

}  // namespace

// Kahn's order: a node whose dependencies are all placed is placed; what
// is never placed waits on a cycle.
std::optional<std::size_t> node_on_a_cycle(const Trace& trace, bool control_too) {
  std::unordered_map<std::uint64_t, std::size_t> index_of;
  for (std::size_t i = 0; i < trace.nodes.size(); ++i) index_of.emplace(trace.nodes[i].id, i);
  std::vector<std::uint32_t> waiting(trace.nodes.size(), 0);
  std::vector<std::vector<std::size_t>> dependents(trace.nodes.size());
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < trace.nodes.size(); ++i) {
    const TraceNode& node = trace.nodes[i];
    for (const std::vector<std::uint64_t>* deps : {&node.deps, &node.ctrl_deps}) {
      if (deps == &node.ctrl_deps && !control_too) continue;
      for (std::uint64_t dep : *deps) {
        auto found = index_of.find(dep);
        if (found == index_of.end()) continue;
        dependents[found->second].push_back(i);
        ++waiting[i];
      }
    }
    if (waiting[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    std::size_t next = ready.back();
    ready.pop_back();
    for (std::size_t dependent : dependents[next]) {
      if (--waiting[dependent] == 0) ready.push_back(dependent);
    }
  }
  for (std::size_t i = 0; i < trace.nodes.size(); ++i) {
    if (waiting[i] != 0) return i;
  }
  return std::nullopt;
}

const char* node_type_name(std::int32_t type) {
  switch (type) {
    case kMetadataNode: return "metadata";
    case kMemLoadNode: return "mem_load";
    case kMemStoreNode: return "mem_store";
    case kCompNode: return "comp";
    case kCommSendNode: return "comm_send";
    case kCommRecvNode: return "comm_recv";
    case kCommCollNode: return "comm_coll";
    default: return "unknown";
  }
}

const char* comm_type_name(CommType type) {
  static constexpr const char* kNames[kCommTypes] = {
      "all_reduce", "reduce", "all_gather", "gather", "scatter", "broadcast", "all_to_all", "reduce_scatter",
      "reduce_scatter_block", "barrier"};
  return kNames[static_cast<std::uint8_t>(type)];
}

Expected<Trace, std::string> parse_trace(std::string_view bytes, const std::string& source) {
  std::string inflated;
  if (is_gzip(bytes)) {
    auto plain = gunzip(bytes, source);
    if (!plain) return unexpected(plain.error());
    inflated = std::move(*plain);
    bytes = inflated;
  }
  if (bytes.size() > kLargestTrace) return unexpected(source + ": larger than 1 GiB");
  google::protobuf::io::ArrayInputStream array(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream input(&array);
  input.SetTotalBytesLimit(static_cast<int>(kLargestTrace));
  // Reads the next length-prefixed message; false at a clean end of file.
  auto next = [&](google::protobuf::MessageLite& message, const std::string& what) -> Expected<bool, std::string> {
    if (static_cast<std::size_t>(input.CurrentPosition()) == bytes.size()) return false;
    std::uint32_t length = 0;
    if (!input.ReadVarint32(&length)) return unexpected(fmt::format("{}: {}: a broken length prefix", source, what));
    if (length > kLargestMessage) {
      return unexpected(fmt::format("{}: {}: a message of {} bytes, more than {} MiB", source, what, length,
                                    kLargestMessage >> 20));
    }
    auto limit = input.PushLimit(static_cast<int>(length));
    bool parsed = message.ParseFromCodedStream(&input) && input.BytesUntilLimit() == 0;
    input.PopLimit(limit);
    if (!parsed) return unexpected(fmt::format("{}: {}: truncated or not a Chakra message", source, what));
    return true;
  };
  Trace trace;
  wire::GlobalMetadata metadata;
  auto got = next(metadata, "the global metadata");
  if (!got) return unexpected(got.error());
  if (!*got) return unexpected(source + ": empty, not a Chakra trace");
  trace.version = metadata.version();
  wire::Node message;
  for (std::size_t index = 0;; ++index) {
    message.Clear();
    got = next(message, fmt::format("node {}", index));
    if (!got) return unexpected(got.error());
    if (!*got) break;
    TraceNode node;
    node.id = message.id();
    node.name = message.name();
    node.type = message.type();
    node.deps.assign(message.data_deps().begin(), message.data_deps().end());
    node.ctrl_deps.assign(message.ctrl_deps().begin(), message.ctrl_deps().end());
    node.duration_us = message.duration_micros();
    if (node.duration_us > kLongestNodeUs) {
      return unexpected(fmt::format("{}: node {} (id {}): a duration of {} us, more than 1000 s", source, index,
                                    node.id, node.duration_us));
    }
    if (auto problem = read_attributes(message, node)) {
      return unexpected(fmt::format("{}: node {} (id {}): {}", source, index, node.id, *problem));
    }
    if (node.type == kMetadataNode && node.name == kProcessGroupNodeName) {
      node.inputs = message.inputs().values();
      if (auto problem = add_process_groups(node.inputs, trace)) {
        return unexpected(fmt::format("{}: node {} (id {}): {}", source, index, node.id, *problem));
      }
    }
    trace.nodes.push_back(std::move(node));
  }
  if (auto problem = check_dependencies(trace, source)) return unexpected(*problem);
  return trace;
}

Expected<Trace, std::string> read_trace(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return unexpected(path + ": cannot read the file");
  std::stringstream bytes;
  bytes << file.rdbuf();
  return parse_trace(bytes.str(), path);
}

std::string encode_trace(const Trace& trace) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream output(&stream);
    auto write = [&](const google::protobuf::MessageLite& message) {
      output.WriteVarint32(static_cast<std::uint32_t>(message.ByteSizeLong()));
      message.SerializeToCodedStream(&output);
    };
    wire::GlobalMetadata metadata;
    metadata.set_version(trace.version);
    write(metadata);
    for (const TraceNode& node : trace.nodes) {
      wire::Node message;
      message.set_id(node.id);
      message.set_name(node.name);
      message.set_type(node.type);
      for (std::uint64_t dep : node.deps) message.add_data_deps(dep);
      for (std::uint64_t dep : node.ctrl_deps) message.add_ctrl_deps(dep);
      message.set_duration_micros(node.duration_us);
      auto attribute = [&](const char* name) {
        wire::Attribute* added = message.add_attr();
        added->set_name(name);
        return added;
      };
      attribute("is_cpu_op")->set_bool_val(node.is_cpu_op);
      if (node.comm_type) attribute("comm_type")->set_int64_val(static_cast<std::int64_t>(*node.comm_type));
      if (node.comm_type || node.type == kCommSendNode || node.type == kCommRecvNode) {
        attribute("comm_size")->set_int64_val(static_cast<std::int64_t>(node.comm_size));
      }
      if (node.comm_src) attribute("comm_src")->set_int64_val(*node.comm_src);
      if (node.comm_dst) attribute("comm_dst")->set_int64_val(*node.comm_dst);
      if (node.type == kCommSendNode || node.type == kCommRecvNode) {
        attribute("comm_tag")->set_int64_val(node.comm_tag);
      }
      if (!node.pg_name.empty()) attribute("pg_name")->set_string_val(node.pg_name);
      if (!node.inputs.empty()) message.mutable_inputs()->set_values(node.inputs);
      write(message);
    }
  }
  return out;
}

}  // namespace uroce::chakra
