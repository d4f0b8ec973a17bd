#include "shardcheck/model_config.hpp"
#include "shardcheck/finding_codes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

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

// A JSON value as the expression language's value (objects: `true`, their members are fields).
Value to_value(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      return u <= static_cast<std::uint64_t>(INT64_MAX) ? Value(static_cast<std::int64_t>(u))
                                                        : Value(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      ValueList items;
      for (const auto& x : j) items.push_back(to_value(x));
      return Value(std::move(items));
    }
    case nlohmann::json::value_t::object:
      return Value(true);
    default:
      return Value();
  }
}

void add_fields(std::vector<ConfigField>& out, const std::string& prefix, const nlohmann::json& object) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    out.push_back(ConfigField{key, to_value(it.value()), it.value().is_object()});
    if (it.value().is_object()) add_fields(out, key, it.value());
  }
}

}  // namespace

const ConfigField* ModelConfig::field(std::string_view key) const {
  const auto it = std::find_if(fields.begin(), fields.end(), [&](const ConfigField& c) { return c.key == key; });
  return it == fields.end() ? nullptr : &*it;
}

std::optional<std::string> ModelConfig::string_field(std::string_view key) const {
  const ConfigField* c = field(key);
  if (const std::string* s = c ? c->value.as_string() : nullptr) return *s;
  return std::nullopt;
}

std::optional<std::int64_t> ModelConfig::int_field(std::string_view key) const {
  const ConfigField* c = field(key);
  if (const std::int64_t* i = c ? c->value.as_int() : nullptr) return *i;
  return std::nullopt;
}

std::optional<bool> ModelConfig::bool_field(std::string_view key) const {
  const ConfigField* c = field(key);
  if (const bool* b = c && !c->object ? std::get_if<bool>(&c->value.v) : nullptr) return *b;
  return std::nullopt;
}

bool ModelConfig::has_object(std::string_view key) const {
  const ConfigField* c = field(key);
  return c && c->object;
}

std::optional<ModelConfig> parse_model_config(std::string_view text, const std::string& label, DiagnosticSink& sink) {
  ModelConfig cfg;
  cfg.path = label;
  nlohmann::json raw;
  try {
    raw = nlohmann::json::parse(text);
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
  if (!raw.is_object()) {
    sink.report(finding("CFG002", in_file(label),
                        fmt::format("expected a JSON object at the top of config.json, found {}", raw.type_name())));
    return std::nullopt;
  }
  auto mt = raw.find("model_type");
  if (mt == raw.end() || !mt->is_string() || mt->get<std::string>().empty()) {
    sink.report(finding("CFG003", in_file(label),
                        fmt::format("expected a string \"model_type\" in config.json, found {}",
                                    mt == raw.end() ? std::string("none") : mt->dump()),
                        "every transformers config.json names its model_type; is this a model directory?"));
    return std::nullopt;
  }
  cfg.model_type = mt->get<std::string>();
  if (auto a = raw.find("architectures"); a != raw.end() && !a->is_null()) {
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
    auto t = raw.find(key);
    if (t == raw.end() || t->is_null()) continue;
    if (!t->is_string() || !parse_torch_dtype(t->get<std::string>())) {
      sink.report(finding(
          "CFG005", in_file(label),
          fmt::format("expected \"{}\" to be a torch dtype name such as \"bfloat16\", found {}", key, t->dump())));
      return std::nullopt;
    }
    cfg.torch_dtype = parse_torch_dtype(t->get<std::string>());
    break;
  }
  add_fields(cfg.fields, "", raw);
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
