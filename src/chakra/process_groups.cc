// Reading the process groups of a PyTorch-recorded trace (process_groups.h).
#include "chakra/process_groups.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <set>

namespace uroce::chakra {

namespace {

constexpr std::size_t kMostRanks = 1u << 16;

// The string literal Python's repr wrote at text[0] (quoted with ' or "),
// unescaped; `end` is set past its closing quote.
Expected<std::string, std::string> python_string(std::string_view text, std::size_t& end) {
  char quote = text[0];
  std::string out;
  for (std::size_t i = 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == quote) {
      end = i + 1;
      return out;
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i == text.size()) break;
    switch (text[i]) {
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'x': {
        if (i + 2 >= text.size()) return unexpected(std::string("a \\x escape is cut short"));
        std::string hex(text.substr(i + 1, 2));
        if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
          return unexpected("\\x" + hex + " is not an escape");
        }
        out += static_cast<char>(std::stoi(hex, nullptr, 16));
        i += 2;
        break;
      }
      default: return unexpected(fmt::format("\\{} is not an escape uroce reads", text[i]));
    }
  }
  return unexpected(std::string("a string that never ends"));
}

// The JSON text inside the recorded values.
Expected<std::string, std::string> json_text(std::string_view values) {
  std::size_t first = values.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return unexpected(std::string("the node's input is empty"));
  values.remove_prefix(first);
  values.remove_suffix(values.size() - (values.find_last_not_of(" \t\r\n") + 1));
  if (values.size() < 2 || values.front() != '[') {
    return unexpected(std::string("the node's input is not a list"));
  }
  std::size_t inner = values.find_first_not_of(" \t\r\n", 1);
  if (inner == std::string_view::npos) return unexpected(std::string("the node's input list is not closed"));
  if (values[inner] != '\'' && values[inner] != '"') return std::string(values);  // the JSON list itself
  std::size_t end = 0;
  auto text = python_string(values.substr(inner), end);
  if (!text) return unexpected(text.error());
  std::size_t rest = values.find_first_not_of(" \t\r\n", inner + end);
  if (rest == std::string_view::npos || values[rest] != ']' || rest + 1 != values.size()) {
    return unexpected(std::string("the node's input holds more than one string"));
  }
  return text;
}

}  // namespace

Expected<std::vector<ProcessGroup>, std::string> parse_process_groups(std::string_view values) {
  auto text = json_text(values);
  if (!text) return unexpected(text.error());
  nlohmann::json parsed = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return unexpected(std::string("the process groups are not JSON"));
  if (!parsed.is_array()) return unexpected(std::string("the process groups are not a JSON list"));
  std::vector<ProcessGroup> groups;
  std::set<std::string> names;
  for (const nlohmann::json& entry : parsed) {
    std::string at = fmt::format("process group #{}", groups.size());
    if (!entry.is_object()) return unexpected(at + ": not a JSON object");
    ProcessGroup group;
    auto name = entry.find("pg_name");
    if (name == entry.end()) return unexpected(at + ": no pg_name");
    if (name->is_string()) {
      group.name = name->get<std::string>();
    } else if (name->is_number_unsigned()) {
      group.name = std::to_string(name->get<std::uint64_t>());
    } else {
      return unexpected(at + ": pg_name is neither a string nor a non-negative integer");
    }
    at = "process group \"" + group.name + "\"";
    if (!names.insert(group.name).second) return unexpected(at + ": declared twice");
    auto ranks = entry.find("ranks");
    if (ranks == entry.end() || !ranks->is_array()) return unexpected(at + ": no list of ranks");
    if (ranks->size() > kMostRanks) return unexpected(fmt::format("{}: more than {} ranks", at, kMostRanks));
    std::set<std::uint32_t> seen;
    for (const nlohmann::json& rank : *ranks) {
      if (!rank.is_number_unsigned() || rank.get<std::uint64_t>() >= kMostRanks) {
        return unexpected(fmt::format("{}: {} is not a rank", at, rank.dump()));
      }
      auto value = static_cast<std::uint32_t>(rank.get<std::uint64_t>());
      if (!seen.insert(value).second) return unexpected(fmt::format("{}: rank {} is listed twice", at, value));
      group.ranks.push_back(value);
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

std::string process_groups_input(const std::vector<ProcessGroup>& groups) {
  nlohmann::json list = nlohmann::json::array();
  for (const ProcessGroup& group : groups) {
    list.push_back({{"pg_name", group.name}, {"pg_desc", ""}, {"backend_config", "cuda:nccl"}, {"ranks", group.ranks}});
  }
  std::string json = list.dump();
  std::string quoted = "['";
  for (char c : json) {
    if (c == '\\' || c == '\'') quoted += '\\';
    quoted += c;
  }
  return quoted + "']";
}

}  // namespace uroce::chakra
