#pragma once
// Helpers for tests that build module trees from the tiny model fixtures (fixtures/models/<name>/,
// written by scripts/gen_fixtures.py with an EXPECTED.json each) and from config.json files alone.
// Everything lives in namespace model_fixtures so that other test files may define their own helpers.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardcheck/model_source.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/registry.hpp"
#include "test_files.hpp"

namespace model_fixtures {

namespace fs = std::filesystem;
using namespace shardcheck;

inline fs::path models_dir() { return fs::path(SHARDCHECK_FIXTURES_DIR) / "models"; }
inline fs::path corpus_dir() { return fs::path(SHARDCHECK_FIXTURES_DIR) / "corpus-configs"; }

// The registry from the source tree's rules/, loaded once. A broken registry fails the test here.
inline const Registry& registry() {
  static const std::optional<Registry> reg = [] {
    DiagnosticSink sink;
    auto r = Registry::load(fs::path(SHARDCHECK_SOURCE_DIR "/rules"), sink);
    for (const auto& d : sink.items()) MESSAGE(d.location.file << ": " << d.message);
    return r;
  }();
  REQUIRE(reg.has_value());
  return *reg;
}

inline Version version(const char* v) {
  auto parsed = Version::parse(v);
  REQUIRE(parsed.has_value());
  return *parsed;
}

// attn "": transformers' default for the model (sdpa where its class supports it, else eager).
inline ResolveOptions options(const char* transformers = nullptr, const char* attn = "") {
  ResolveOptions o;
  if (transformers) o.transformers = version(transformers);
  o.attn_implementation = attn;
  return o;
}

struct Built {
  std::optional<ModuleTree> tree;
  DiagnosticSink sink;
  std::optional<ModelInputs> inputs;

  std::vector<const Diagnostic*> with(Severity s) const {
    std::vector<const Diagnostic*> out;
    for (const auto& d : sink.items())
      if (d.severity == s) out.push_back(&d);
    return out;
  }
  std::string report() const {
    std::string s;
    for (const auto& d : sink.items()) s += "[" + d.code + "] " + d.message + "\n";
    return s;
  }
};

// load_model() + Registry::load() + build_module_tree(), as `shardcheck inspect` does.
inline Built build(const fs::path& ref, bool config_only, const ResolveOptions& opts = {}) {
  Built b;
  b.inputs = load_model(ref.string(), config_only, b.sink);
  REQUIRE_MESSAGE(b.inputs.has_value(), b.report());
  const CheckpointMeta* ckpt = b.inputs->checkpoint ? &*b.inputs->checkpoint : nullptr;
  b.tree = build_module_tree(b.inputs->config, ckpt, registry(), opts, b.sink);
  REQUIRE_MESSAGE(b.tree.has_value(), b.report());
  return b;
}

inline Built build_fixture(const std::string& name, bool config_only, const ResolveOptions& opts = {}) {
  return build(models_dir() / name, config_only, opts);
}

// The tree of a model that must load cleanly (no error diagnostics): what the plan tests start from.
inline ModuleTree clean_tree(const fs::path& ref, bool config_only = false) {
  Built b = build(ref, config_only);
  REQUIRE_MESSAGE(b.with(Severity::error).empty(), b.report());
  return std::move(*b.tree);
}
inline ModuleTree fixture_tree(const std::string& name) { return clean_tree(models_dir() / name); }

// Every fixture directory but toyformer (not in transformers: it tests the inference fallback).
inline std::vector<std::string> fixture_names() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(models_dir()))
    if (e.is_directory() && e.path().filename() != "toyformer") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

using shardcheck::test::read_json;

inline nlohmann::json expected(const std::string& name) { return read_json(models_dir() / name / "EXPECTED.json"); }

// --------------------------------------------------------------------- tree queries

inline const Module* module(const ModuleTree& t, const std::string& path) {
  for (const auto& m : t.modules)
    if (m.path == path) return &m;
  return nullptr;
}

inline const Module& require_module(const ModuleTree& t, const std::string& path) {
  const Module* m = module(t, path);
  REQUIRE_MESSAGE(m != nullptr, "no module '" << path << "'");
  return *m;
}

inline std::string cls(const ModuleTree& t, const std::string& path) { return require_module(t, path).cls; }

// Children names in registration order.
inline std::vector<std::string> children(const ModuleTree& t, const std::string& path) {
  std::vector<std::string> out;
  for (int c : require_module(t, path).children) out.push_back(t.modules[c].name);
  return out;
}

// Own parameter (and buffer) names in registration order.
inline std::vector<std::string> param_names(const ModuleTree& t, const std::string& path) {
  std::vector<std::string> out;
  for (const auto& p : require_module(t, path).params) out.push_back(p.name);
  return out;
}

inline const ParamInfo* param(const ModuleTree& t, const std::string& full) {
  const auto dot = full.rfind('.');
  const Module* m = module(t, full.substr(0, dot));
  if (!m) return nullptr;
  for (const auto& p : m->params)
    if (p.name == full.substr(dot + 1)) return &p;
  return nullptr;
}

inline std::vector<std::int64_t> shape(const ModuleTree& t, const std::string& full) {
  const ParamInfo* p = param(t, full);
  REQUIRE_MESSAGE(p != nullptr, "no parameter '" << full << "'");
  return p->shape;
}

// Fully qualified parameter names in the order FSDP flattens them: modules in pre-order, each
// module's own parameters before its children's (torch.nn.Module.named_parameters()).
inline std::vector<std::string> flat_param_order(const ModuleTree& t, bool include_buffers = false) {
  std::vector<std::string> out;
  for (const auto& m : t.modules)
    for (const auto& p : m.params)
      if (include_buffers || !p.buffer) out.push_back(qualified_name(m.path, p.name));
  return out;
}

// numel of the parameters whose name ends with `suffix` (FP8 "scale_inv" block scales).
inline std::int64_t numel_with_suffix(const ModuleTree& t, const std::string& suffix) {
  std::int64_t n = 0;
  for (const auto& m : t.modules)
    for (const auto& p : m.params)
      if (!p.buffer && p.tied_to.empty() && p.name.size() >= suffix.size() &&
          p.name.compare(p.name.size() - suffix.size(), suffix.size(), suffix) == 0)
        n += p.numel;
  return n;
}

inline std::int64_t buffer_numel(const ModuleTree& t) {
  std::int64_t n = 0;
  for (const auto& m : t.modules)
    for (const auto& p : m.params)
      if (p.buffer) n += p.numel;
  return n;
}

using Strings = std::vector<std::string>;
using Shape = std::vector<std::int64_t>;

}  // namespace model_fixtures

namespace model_fixtures {

// "a,b,c" — comparisons on strings print readably when they fail.
inline std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s;
}
inline std::string str(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace model_fixtures
