#include "shardcheck/model_config.hpp"
#include "shardcheck/finding_codes.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace shardcheck {
namespace {

// nlohmann reports a byte position; turn it into line:column for the message.
std::pair<int, int> line_col(std::string_view text, std::size_t byte) {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

}  // namespace

std::optional<ModelConfig> parse_model_config(std::string_view text, const std::string& label, DiagnosticSink& sink) {
  ModelConfig cfg;
  cfg.path = label;
  try {
    cfg.raw = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    auto [line, col] = line_col(text, e.byte == 0 ? 0 : e.byte - 1);
    Diagnostic d = finding("CFG001", in_file(label), fmt::format("config.json is not valid JSON: {}", e.what()));
    d.location.line = line;
    d.location.column = col;
    d.location.byte_offset = e.byte;
    sink.report(std::move(d));
    return std::nullopt;
  } catch (const nlohmann::json::exception& e) {
    // Valid syntax the parser still refuses: a number beyond double range ("2e330", out_of_range.406).
    sink.report(finding("CFG001", in_file(label), fmt::format("config.json cannot be read: {}", e.what())));
    return std::nullopt;
  }
  if (!cfg.raw.is_object()) {
    sink.report(
        finding("CFG002", in_file(label),
                fmt::format("expected a JSON object at the top of config.json, found {}", cfg.raw.type_name())));
    return std::nullopt;
  }
  auto mt = cfg.raw.find("model_type");
  if (mt == cfg.raw.end() || !mt->is_string() || mt->get<std::string>().empty()) {
    sink.report(finding("CFG003", in_file(label),
                        fmt::format("expected a string \"model_type\" in config.json, found {}",
                                    mt == cfg.raw.end() ? std::string("none") : mt->dump()),
                        "every transformers config.json names its model_type; is this a model directory?"));
    return std::nullopt;
  }
  cfg.model_type = mt->get<std::string>();
  if (auto a = cfg.raw.find("architectures"); a != cfg.raw.end() && !a->is_null()) {
    if (!a->is_array()) {
      sink.report(finding("CFG004", in_file(label),
                          fmt::format("expected \"architectures\" to be a list of class names, found {}", a->dump())));
      return std::nullopt;
    }
    for (const auto& item : *a) {
      if (!item.is_string()) {
        sink.report(finding("CFG004", in_file(label),
                            fmt::format("expected class names in \"architectures\", found {}", item.dump())));
        return std::nullopt;
      }
      cfg.architectures.push_back(item.get<std::string>());
    }
  }
  // transformers 5 writes "dtype"; 4.x wrote "torch_dtype".
  for (const char* key : {"torch_dtype", "dtype"}) {
    auto t = cfg.raw.find(key);
    if (t == cfg.raw.end() || t->is_null()) continue;
    if (!t->is_string() || !parse_torch_dtype(t->get<std::string>())) {
      sink.report(finding(
          "CFG005", in_file(label),
          fmt::format("expected \"{}\" to be a torch dtype name such as \"bfloat16\", found {}", key, t->dump())));
      return std::nullopt;
    }
    cfg.torch_dtype = parse_torch_dtype(t->get<std::string>());
    break;
  }
  return cfg;
}

std::optional<ModelConfig> load_model_config(const std::filesystem::path& file, DiagnosticSink& sink) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    sink.report(finding("IO001", in_file(file.string()), fmt::format("cannot read {}", file.string())));
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_model_config(ss.str(), file.string(), sink);
}

}  // namespace shardcheck
