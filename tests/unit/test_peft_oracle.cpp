// LoRA adapters against REAL peft: fixtures/peft-oracle was written by scripts/peft_oracle.py with
// peft 0.20 beside Debian unstable's torch 2.14.1, transformers 5.12.1 and accelerate 1.14.0.
//   * adapters/<model>-<adapter>/record*.json: the PeftModel get_peft_model built (every module and
//     parameter in registration order, shapes, dtypes, requires_grad, peft's trainable count);
//     shardcheck builds the same tree from the saved model and adapter_config.json.
//   * <case>.json: that PeftModel prepared by FSDP1 or FSDP2 as transformers' Trainer or plain
//     accelerate does, lazily initialised and stepped once; shardcheck must give the same units,
//     groups, shards and per-rank bytes, or torch's error.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "oracle_case.hpp"
#include "simulate/plan_internal.hpp"
#include "shardcheck/load_tree.hpp"
#include "shardcheck/peft_model.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using namespace shardcheck::test;
namespace fs = std::filesystem;

namespace {

const fs::path kPeft = fs::path(SHARDCHECK_FIXTURES_DIR) / "peft-oracle";
const fs::path kModels = fs::path(SHARDCHECK_FIXTURES_DIR) / "oracle2" / "models";

// "float32", as torch prints a dtype without its "torch." (plan_internal.hpp torch_dtype_name).
std::string dtype_label(DType d) { return torch_dtype_name(d).substr(6); }

// BitsAndBytesConfig as the oracle recorded it (scripts/peft_oracle.py QUANTS).
std::optional<Bnb4bitConfig> bnb_of(const json& q) {
  if (q.is_null()) return std::nullopt;
  Bnb4bitConfig c;
  c.quant_storage = *parse_torch_dtype(q.at("storage").get<std::string>());
  c.compute_dtype = *parse_torch_dtype(q.at("compute").get<std::string>());
  c.quant_type = q.at("quant_type").get<std::string>();
  c.double_quant = q.at("double").get<bool>();
  return c;
}

// peft's class names; shardcheck qualifies its LoRA layers ("lora.Linear") so that they are not taken
// for torch's nn.Linear.
std::string peft_class(const std::string& cls) { return cls.starts_with("lora.") ? cls.substr(5) : cls; }

}  // namespace

TEST_CASE("peft oracle: the PeftModel tree of every recorded adapter") {
  int compared = 0;
  for (const auto& dir : fs::directory_iterator(kPeft / "adapters")) {
    for (const auto& file : json_files(dir.path(), "record")) {
      const json rec = read_json(file);
      CAPTURE(file.string());
      ResolveOptions opt;
      opt.transformers = *Version::parse("5.12.1");
      opt.load_dtype = rec.at("load_dtype").get<std::string>();
      opt.bnb_4bit = bnb_of(rec.value("quant", json()));
      DiagnosticSink sink;
      LoadedTree loaded = load_module_tree((kModels / rec.at("model").get<std::string>()).string(), false,
                                           SHARDCHECK_SOURCE_DIR "/rules", opt, sink);
      REQUIRE(loaded.tree.has_value());
      const auto adapter = load_adapter_config(dir.path().string(), sink);
      REQUIRE(adapter.has_value());
      const auto rules = PeftRules::load(SHARDCHECK_SOURCE_DIR "/rules", sink);
      REQUIRE(rules.has_value());
      const bool applied = apply_lora_adapter(*loaded.tree, *adapter, *rules, sink);
      REQUIRE_MESSAGE(applied, errors_of(sink));
      // peft's own adapter_model.safetensors loads into the tree, every tensor in its place.
      REQUIRE(adapter->weights.has_value());
      for (const auto& d : sink.items()) CHECK_MESSAGE(d.code != "PEFT009", d.message);
      ++compared;
      const ModuleTree& t = *loaded.tree;
      std::vector<std::pair<std::string, std::string>> modules;
      for (const auto& m : t.modules) modules.emplace_back(m.path, peft_class(m.cls));
      std::vector<std::pair<std::string, std::string>> want_modules;
      for (const auto& m : rec.at("modules"))
        want_modules.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      REQUIRE(modules.size() == want_modules.size());
      for (std::size_t i = 0; i < modules.size(); ++i)
        CHECK(modules[i].first + " " + modules[i].second == want_modules[i].first + " " + want_modules[i].second);
      std::vector<json> params;
      for (const auto& m : t.modules)
        for (const auto& p : m.params)
          if (!p.buffer)
            params.push_back(
                json::array({qualified_name(m.path, p.name), p.shape, dtype_label(p.dtype), p.requires_grad}));
      const auto& want = rec.at("params");
      REQUIRE(params.size() == want.size());
      for (std::size_t i = 0; i < params.size(); ++i) CHECK(params[i].dump() == want[i].dump());
      REQUIRE(t.peft.has_value());
      CHECK(t.peft->trainable == rec.at("trainable_params").get<std::int64_t>());
      CHECK(t.peft->total == rec.at("all_params").get<std::int64_t>());
      CHECK(t.quant_state_bytes == rec.at("quant_state_bytes").get<std::uint64_t>());
      // Each parameter the base model had is carried over under exactly one PeftModel name (the one in
      // peft's record above), and peft_base_names leads back from it; adapters and trainable copies
      // have no base name.
      DiagnosticSink base_sink;
      const LoadedTree base = load_module_tree((kModels / rec.at("model").get<std::string>()).string(), false,
                                               SHARDCHECK_SOURCE_DIR "/rules", opt, base_sink);
      REQUIRE(base.tree.has_value());
      std::set<std::string> base_params, peft_params;
      for (const auto& m : base.tree->modules)
        for (const auto& p : m.params)
          if (!p.buffer) base_params.insert(qualified_name(m.path, p.name));
      for (const auto& m : t.modules)
        for (const auto& p : m.params)
          if (!p.buffer) peft_params.insert(qualified_name(m.path, p.name));
      const auto names = peft_base_names(t);
      std::set<std::string> named;
      for (const auto& [now, before] : names) {
        CHECK_MESSAGE(peft_params.contains(now), now);
        CHECK_MESSAGE(now.find(".lora_") == std::string::npos, now);
        CHECK_MESSAGE(now.find(".modules_to_save.") == std::string::npos, now);
        CHECK_MESSAGE(named.insert(before).second, before);
      }
      CHECK(named == base_params);
    }
  }
  MESSAGE("compared " << compared << " PeftModel records");
  CHECK(compared >= 19);
}

TEST_CASE("peft oracle: every case matches real FSDP1/FSDP2 on the PeftModel") {
  int compared = 0, errors = 0, with_memory = 0;
  for (const auto& file : json_files(kPeft)) {
    const json c = read_json(file);
    const std::string name = c.at("case").get<std::string>();
    CAPTURE(name);
    PreflightRequest req;
    req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
    req.model = (kModels / c.at("model").get<std::string>()).string();
    req.adapter_path =
        (kPeft / "adapters" / (c.at("model").get<std::string>() + "-" + c.at("adapter").get<std::string>())).string();
    req.defaults = settings_for(c);
    req.resolve.load_dtype = c.value("load_dtype", "float32");
    req.resolve.bnb_4bit = bnb_of(c.value("quant_config", json()));
    req.prepare_kbit = c.value("kbit", false);
    const json& v = c.at("versions");
    req.versions.torch = Setting<Version>{parse_version(v.at("torch").get<std::string>()), "oracle"};
    req.versions.transformers = Setting<Version>{parse_version(v.at("transformers").get<std::string>()), "oracle"};
    req.versions.accelerate = Setting<Version>{parse_version(v.at("accelerate").get<std::string>()), "oracle"};
    const PreflightResult r = run_preflight(req);
    ++compared;
    compare_case(c, r, errors, with_memory);
  }
  MESSAGE("compared " << compared << " peft cases (" << errors << " errors, " << with_memory << " with memory)");
  CHECK(compared >= 120);
}
