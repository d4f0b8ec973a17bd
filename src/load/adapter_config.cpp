// adapter_config.json as peft reads it back (config.py PeftConfigMixin.from_pretrained, then
// tuners/lora/config.py LoraConfig, peft 0.20): unknown keys are ignored, as peft ignores keys a
// newer release wrote; a known key of the wrong type is an error here because peft would either
// raise on it or silently build something else.
#include "shardcheck/adapter.hpp"
#include "shardcheck/hub.hpp"
#include "shardcheck/finding_codes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <unordered_map>

#include "load/padded_file.hpp"
#include "load/plain_json_value.hpp"
#include "util/bounded_read.hpp"

namespace shardcheck {
namespace {

// ordered_json keeps the file's key order: peft looks rank_pattern and alpha_pattern keys up in
// dict order, and the first matching key wins.
using json = nlohmann::ordered_json;

struct Reader {
  const std::string& label;
  std::string_view text;
  DiagnosticSink& sink;
  bool ok = true;

  // The 1-based line of each top-level key, its last occurrence (whose value json.load keeps, and
  // nlohmann too): from the plain reader's key offsets (load/plain_json_value.hpp), or else from one
  // pass over the text on the first question.
  mutable std::unordered_map<std::string_view, int> key_lines;
  mutable bool scanned = false;

  void lines_from(const std::vector<detail::TopLevelKey>& keys) const {
    scanned = true;
    int line = 1;
    std::size_t counted = 0;  // newlines before here are in `line`; the offsets only grow
    for (const auto& [key, at] : keys) {
      line += static_cast<int>(std::count(text.begin() + static_cast<std::ptrdiff_t>(counted),
                                          text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
      counted = at;
      key_lines.insert_or_assign(key, line);
    }
  }

  // For a text nlohmann read (one with escapes, say): a string followed by a colon at depth 1.
  void scan_lines() const {
    scanned = true;
    int line = 1, depth = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '\n') ++line;
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      if (c != '"') continue;
      std::size_t end = i + 1;  // the closing quote, past escaped characters (JSON strings hold no newline)
      while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
      if (end >= text.size()) break;
      std::size_t after = end + 1;
      int lines_after = 0;
      while (after < text.size() &&
             (text[after] == ' ' || text[after] == '\t' || text[after] == '\n' || text[after] == '\r'))
        lines_after += text[after++] == '\n';
      if (depth == 1 && after < text.size() && text[after] == ':')
        key_lines.insert_or_assign(text.substr(i + 1, end - i - 1), line);
      i = after - 1;
      line += lines_after;
    }
  }

  int line_of(const std::string& key) const {
    if (!scanned) scan_lines();
    const auto it = key_lines.find(key);
    return it == key_lines.end() ? 0 : it->second;
  }

  void fail(const std::string& code, const std::string& key, std::string message, std::string help = {}) {
    Diagnostic d = finding(code, in_file(label), std::move(message), std::move(help));
    if (!key.empty()) d.location.line = line_of(key);
    sink.report(std::move(d));
    ok = false;
  }

  void wrong(const std::string& key, const char* expected, const json& found) {
    fail("PEFT002", key,
         fmt::format("adapter_config.json field `{}`: expected {}, found {} `{}`", key, expected, found.type_name(),
                     found.dump().substr(0, 60)));
  }

  std::string source(const std::string& key) const {
    const int line = line_of(key);
    return line > 0 ? fmt::format("{}:{}", label, line) : label;
  }
};

// A list of strings, or (when `allow_string`) one string: the two shapes of target_modules.
// The names are moved out of `doc` (an all-linear list holds every targeted module's full name).
bool read_selector(Reader& rd, json& doc, const std::string& key, ModuleSelector& out, bool all_linear) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return true;
  if (it->is_string()) {
    const std::string value = it->get<std::string>();
    std::string lower = value;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (all_linear && lower == "all-linear")
      out.kind = ModuleSelector::Kind::all_linear;
    else {
      out.kind = ModuleSelector::Kind::regex;
      out.regex = value;
    }
    return true;
  }
  if (it->is_array()) {
    out.kind = ModuleSelector::Kind::names;
    if (!std::all_of(it->begin(), it->end(), [](const json& v) { return v.is_string(); })) {
      rd.wrong(key, "a list of module names or one regular expression", *it);
      return false;
    }
    out.names.reserve(it->size());
    for (auto& v : *it) out.names.push_back(std::move(v.get_ref<std::string&>()));
    return true;
  }
  rd.wrong(key, "a list of module names or one regular expression", *it);
  return false;
}

bool read_strings(Reader& rd, const json& doc, const std::string& key, std::vector<std::string>& out) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return true;
  if (it->is_string()) {  // peft accepts one name for layers_pattern
    out.push_back(it->get<std::string>());
    return true;
  }
  if (!it->is_array()) {
    rd.wrong(key, "a list of strings", *it);
    return false;
  }
  for (const auto& v : *it) {
    if (!v.is_string()) {
      rd.wrong(key, "a list of strings", *it);
      return false;
    }
    out.push_back(v.get<std::string>());
  }
  return true;
}

template <class T>
bool read_pattern(Reader& rd, const json& doc, const std::string& key, std::vector<std::pair<std::string, T>>& out) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return true;
  if (!it->is_object()) {
    rd.wrong(key, "an object of module-name patterns to numbers", *it);
    return false;
  }
  for (const auto& [k, v] : it->items()) {
    if (!v.is_number()) {
      rd.wrong(key, "an object of module-name patterns to numbers", *it);
      return false;
    }
    out.emplace_back(k, v.template get<T>());
  }
  return true;
}

constexpr std::size_t kMaxAdapterPattern = 512;

}  // namespace

std::string LoraAdapter::source_of(const std::string& field) const {
  for (const auto& [f, s] : field_sources)
    if (f == field) return s;
  return source;
}

namespace {

std::optional<LoraAdapter> parse_padded(std::string_view text, const std::string& label, DiagnosticSink& sink) {
  Reader rd{label, text, sink, true, {}, false};
  json doc;
  std::vector<detail::TopLevelKey> keys;
  if (auto plain = detail::read_plain_json_value(text, &keys)) {
    doc = std::move(*plain);
    rd.lines_from(keys);
  } else {
    try {
      doc = json::parse(text);
    } catch (const json::exception& e) {
      rd.fail("PEFT001", "", fmt::format("adapter_config.json is not valid JSON: {}", e.what()),
              "peft writes this file with save_pretrained; write it again or fix the JSON");
      return std::nullopt;
    }
  }
  if (!doc.is_object()) {
    rd.fail("PEFT001", "",
            fmt::format("expected a JSON object at the top of adapter_config.json, found {}", doc.type_name()));
    return std::nullopt;
  }
  LoraAdapter a;
  a.source = label;
  // One scalar field: absent or null keeps peft's default; the wrong JSON type is PEFT002.
  auto field = [&](const char* key, auto& out, bool (json::*is_type)() const noexcept, const char* expected) {
    const auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) return;
    if (!((*it).*is_type)()) return rd.wrong(key, expected, *it);
    out = it->template get<std::remove_reference_t<decltype(out)>>();
    a.field_sources.emplace_back(key, rd.source(key));
  };
  auto str = [&](const char* key, std::string& out) { field(key, out, &json::is_string, "a string"); };
  auto boolean = [&](const char* key, bool& out) { field(key, out, &json::is_boolean, "true or false"); };
  auto number = [&](const char* key, double& out) { field(key, out, &json::is_number, "a number"); };
  str("peft_type", a.peft_type);
  if (rd.ok && a.peft_type != "LORA") {
    rd.fail("PEFT003", "peft_type",
            fmt::format("adapter_config.json has peft_type `{}`; shardcheck models LoRA (peft_type LORA, with DoRA and "
                        "rsLoRA) only",
                        a.peft_type),
            "plan the run without --adapter to see the base model's units; its trainable parameters will differ");
    return std::nullopt;
  }
  str("task_type", a.task_type);
  str("base_model_name_or_path", a.base_model);
  if (const auto it = doc.find("r"); it != doc.end()) {
    if (!it->is_number_integer())
      rd.wrong("r", "a positive integer", *it);
    else if (it->get<std::int64_t>() <= 0 || it->get<std::int64_t>() > 1'000'000)
      rd.fail("PEFT002", "r",
              fmt::format("adapter_config.json field `r`: expected a positive integer, found {} "
                          "(peft: \"`r` should be a positive integer value\")",
                          it->dump()));
    else
      a.r = static_cast<int>(it->get<std::int64_t>());
    a.field_sources.emplace_back("r", rd.source("r"));
  }
  number("lora_alpha", a.lora_alpha);
  number("lora_dropout", a.lora_dropout);
  str("bias", a.bias);
  if (rd.ok && a.bias != "none" && a.bias != "all" && a.bias != "lora_only")
    rd.fail("PEFT002", "bias",
            fmt::format("adapter_config.json field `bias`: expected none, all or lora_only, found `{}` (peft: "
                        "NotImplementedError: Requested bias: {}, is not implemented.)",
                        a.bias, a.bias));
  boolean("use_dora", a.use_dora);
  boolean("use_rslora", a.use_rslora);
  boolean("lora_bias", a.lora_bias);
  boolean("fan_in_fan_out", a.fan_in_fan_out);
  if (read_selector(rd, doc, "target_modules", a.target_modules, true))
    a.field_sources.emplace_back("target_modules", rd.source("target_modules"));
  read_selector(rd, doc, "exclude_modules", a.exclude_modules, false);
  read_strings(rd, doc, "modules_to_save", a.modules_to_save);
  read_strings(rd, doc, "target_parameters", a.target_parameters);
  read_strings(rd, doc, "layers_pattern", a.layers_pattern);
  if (const auto it = doc.find("layers_to_transform"); it != doc.end() && !it->is_null()) {
    std::vector<int> layers;
    if (it->is_number_integer())
      layers.push_back(it->get<int>());
    else if (it->is_array()) {
      for (const auto& v : *it) {
        if (!v.is_number_integer()) {
          rd.wrong("layers_to_transform", "a layer index or a list of them", *it);
          break;
        }
        layers.push_back(v.get<int>());
      }
    } else {
      rd.wrong("layers_to_transform", "a layer index or a list of them", *it);
    }
    a.layers_to_transform = std::move(layers);
  }
  read_pattern(rd, doc, "rank_pattern", a.rank_pattern);
  read_pattern(rd, doc, "alpha_pattern", a.alpha_pattern);
  // std::regex matches by recursion: a pattern far longer than any peft config holds is refused
  // rather than risked (module names are short; peft's own patterns are tens of characters).
  std::vector<std::pair<std::string, std::string>> patterns;
  if (a.target_modules.kind == ModuleSelector::Kind::regex)
    patterns.emplace_back("target_modules", a.target_modules.regex);
  if (a.exclude_modules.kind == ModuleSelector::Kind::regex)
    patterns.emplace_back("exclude_modules", a.exclude_modules.regex);
  for (const auto& m : a.modules_to_save) patterns.emplace_back("modules_to_save", m);
  for (const auto& p : a.layers_pattern) patterns.emplace_back("layers_pattern", p);
  for (const auto& [k, v] : a.rank_pattern) patterns.emplace_back("rank_pattern", k);
  for (const auto& [k, v] : a.alpha_pattern) patterns.emplace_back("alpha_pattern", k);
  for (const auto& [field, p] : patterns)
    if (p.size() > kMaxAdapterPattern) {
      rd.fail("PEFT002", field,
              fmt::format("adapter_config.json field `{}`: a pattern of {} characters; shardcheck "
                          "matches patterns up to {} characters",
                          field, p.size(), kMaxAdapterPattern));
      break;
    }
  for (const auto& [k, v] : a.rank_pattern)
    if (v <= 0)
      rd.fail("PEFT002", "rank_pattern",
              fmt::format("adapter_config.json rank_pattern `{}`: expected a positive rank, found {}", k, v));
  if (!rd.ok) return std::nullopt;
  return a;
}

}  // namespace

std::optional<LoraAdapter> parse_adapter_config(std::string_view text, const std::string& label, DiagnosticSink& sink) {
  // The plain reader needs kJsonPadding readable bytes after the text.
  std::string padded;
  padded.reserve(text.size() + detail::kJsonPadding);
  padded.append(text).append(detail::kJsonPadding, '\0');
  return parse_padded(std::string_view(padded).substr(0, text.size()), label, sink);
}

std::optional<LoraAdapter> load_adapter_config(const std::string& path, DiagnosticSink& sink) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path file = path;
  // Not a local path but a Hub id ("org/name[@revision]"): the adapter repository's
  // adapter_config.json and the header of its adapter_model.safetensors, through the same caches and
  // fetcher as a model (hub.hpp, kAdapterRepo).
  if (!fs::exists(file, ec))
    if (const auto ref = parse_model_ref(path)) {
      DiagnosticSink hub_sink;
      const auto resolved = resolve_hub_model(*ref, false, hub_environment_from_process(), hub_sink, kAdapterRepo);
      if (!resolved) {
        Diagnostic d =
            finding("IO004", in_file(path), fmt::format("no local adapter '{}'; trying it as a Hub adapter id", path));
        sink.report(std::move(d));
        sink.append(hub_sink);
        return std::nullopt;
      }
      sink.append(hub_sink);
      file = resolved->dir;
    }
  if (fs::is_directory(file, ec)) file /= "adapter_config.json";
  // A regular file is read with its padding in one go; anything else that reads (a pipe, as in
  // `--adapter <(...)`) through a stream, up to a bound (`--adapter /dev/zero` has no end). An
  // all-linear adapter of a big model lists a few thousand names: ~100 KB.
  constexpr std::size_t kMaxStreamed = std::size_t{64} << 20;
  const auto padded_file = detail::PaddedFile::read(file);
  std::string streamed;
  bool readable = padded_file.has_value(), too_long = false;
  if (!padded_file && !fs::is_directory(file, ec)) {
    std::ifstream in(file, std::ios::binary);
    if (in) {
      readable = util::read_bounded(in, kMaxStreamed, streamed);
      too_long = streamed.size() > kMaxStreamed;
    }
  }
  if (!readable) {
    Diagnostic d =
        finding("IO005", in_file(file.string()),
                fmt::format("cannot read the adapter's config `{}`: {}", file.string(),
                            too_long               ? fmt::format("more than {} bytes", kMaxStreamed)
                            : fs::exists(file, ec) ? "not a readable file"
                                                   : "no such file"),
                "--adapter takes a PEFT adapter directory (holding adapter_config.json, as save_pretrained writes it) "
                "or the adapter_config.json itself");
    sink.report(std::move(d));
    return std::nullopt;
  }
  auto adapter = padded_file ? parse_padded(padded_file->view(), file.string(), sink)
                             : parse_adapter_config(streamed, file.string(), sink);
  // PeftModel.from_pretrained reads adapter_model.safetensors from the same directory (peft
  // utils/save_and_load.py load_peft_weights): its header says what the saved matrices are.
  const fs::path weights = file.parent_path() / "adapter_model.safetensors";
  if (adapter && fs::is_regular_file(weights, ec)) {
    adapter->weights = read_safetensors_file(weights, weights.string(), sink);
    if (!adapter->weights) return std::nullopt;
  }
  return adapter;
}

bool split_adapter_model(std::string& model, std::string& adapter_path, DiagnosticSink& sink) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = model;
  if (!adapter_path.empty() || !fs::is_directory(dir, ec) || !fs::is_regular_file(dir / "adapter_config.json", ec) ||
      fs::exists(dir / "config.json", ec))
    return false;
  DiagnosticSink scratch;
  const auto a = load_adapter_config(model, scratch);
  if (!a) {
    sink.append(scratch);
    return false;
  }
  const std::string config = (dir / "adapter_config.json").string();
  if (a->base_model.empty()) {
    sink.report(
        finding("PEFT002", in_file(config),
                fmt::format("{} is a PEFT adapter without base_model_name_or_path: the base model is unknown", model),
                "give the base model as MODEL and the adapter with --adapter"));
    return false;
  }
  sink.report(finding("PEFT010", in_file(config),
                      fmt::format("{} is a PEFT adapter: planning its base model {} (base_model_name_or_path) with it",
                                  model, a->base_model),
                      "to plan another base model, give it as MODEL and this directory with --adapter"));
  adapter_path = model;
  model = a->base_model;
  return true;
}

}  // namespace shardcheck
