#pragma once
// Stage "load": a model's config.json, uninterpreted except for the few fields every later stage
// needs. Every field is kept, at any depth, as a value of the registry's expression language, so
// that later stages read it without a JSON library (the JSON reader stays in model_config.cpp).
// Multimodal configs keep the language model under `text_config`; `effective_object()` names the
// object the architecture registry evaluates its formulas against.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/dtype.hpp"
#include "shardcheck/expr.hpp"

namespace shardcheck {

// One field of config.json: its dotted path from the top ("text_config.hidden_size"). An object is
// listed (its value `true`: registry formulas test a sub-config's presence by name) before its
// members, which follow in key order; a list's items are values, not fields. A key holding a '.'
// reads as a path, as the registry's names do.
struct ConfigField {
  std::string key;
  Value value;
  bool object = false;
};

struct ModelConfig {
  std::string path;                 // for diagnostics
  std::vector<ConfigField> fields;  // the whole file, depth first
  std::string model_type;           // top-level model_type
  std::vector<std::string> architectures;
  std::optional<DType> torch_dtype;  // "torch_dtype" (or transformers 5's "dtype")
  bool use_text_config = false;      // the registry lays out text_config's model (see build_tree)

  // The field at dotted `key`, nullptr when absent.
  const ConfigField* field(std::string_view key) const;
  // Its value when it is a string / an integer / a boolean.
  std::optional<std::string> string_field(std::string_view key) const;
  std::optional<std::int64_t> int_field(std::string_view key) const;
  std::optional<bool> bool_field(std::string_view key) const;
  // Whether `key` is an object.
  bool has_object(std::string_view key) const;
  // The fields inside object `object` ("" = the whole file), with keys relative to it: f(key, field).
  template <class F>
  void for_each_field(std::string_view object, F&& f) const {
    for (const ConfigField& c : fields) {
      if (object.empty()) {
        f(std::string_view(c.key), c);
      } else if (c.key.size() > object.size() + 1 && c.key.starts_with(object) && c.key[object.size()] == '.') {
        f(std::string_view(c.key).substr(object.size() + 1), c);
      }
    }
  }
  // The object holding the shape fields: the whole file, or "text_config" when the registry resolves
  // the text model of a multimodal checkpoint.
  std::string_view effective_object() const { return use_text_config ? "text_config" : ""; }
  // The dotted key of shape field `name` in that object.
  std::string effective_key(std::string_view name) const {
    return use_text_config ? "text_config." + std::string(name) : std::string(name);
  }
};

// Reads and validates config.json. Problems go to `sink` with ExitCode::bad_model_config.
std::optional<ModelConfig> load_model_config(const std::filesystem::path& file, DiagnosticSink& sink);
// Same, from text already in memory (`label` names it in diagnostics).
std::optional<ModelConfig> parse_model_config(std::string_view text, const std::string& label, DiagnosticSink& sink);

}  // namespace shardcheck
