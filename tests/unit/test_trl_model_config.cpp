// TRL's ModelConfig fields in a training-arguments file (fixtures/training-args/trl-*.yaml) turned into
// what TRL builds: values read from trl's source (trl/trainer/model_config.py defaults r 16, alpha 32,
// dropout 0.05, nf4; utils.py get_peft_config bias "none"; sft_trainer.py's bfloat16 cast of a
// quantized PeftModel's trainable parameters from trl 0.26), layouts by hand on fixtures/models/llama
// (hidden 20, 2 key/value heads of 5, 3 layers, bfloat16).
#include <doctest/doctest.h>

#include <filesystem>

#include "shardcheck/load_tree.hpp"
#include "shardcheck/peft_model.hpp"
#include "shardcheck/training_args.hpp"
#include "shardcheck/trl_model_config.hpp"
#include "test_files.hpp"

using namespace shardcheck;
namespace fs = std::filesystem;

namespace {

const fs::path kArgs = fs::path(SHARDCHECK_FIXTURES_DIR) / "training-args";
const std::string kLlama = (fs::path(SHARDCHECK_FIXTURES_DIR) / "models" / "llama").string();

TrainingArgs args_of(const std::string& name) {
  auto loaded = load_training_args((kArgs / name).string());
  REQUIRE_MESSAGE(std::holds_alternative<TrainingArgs>(loaded), std::get<std::string>(loaded));
  return std::get<TrainingArgs>(loaded);
}

std::optional<Setting<Version>> trl(const char* v) { return Setting<Version>{*Version::parse(v), "--trl-version"}; }

bool has(const DiagnosticSink& sink, const std::string& code) {
  for (const auto& d : sink.items())
    if (d.code == code) return true;
  return false;
}

// The PeftModel of `run` on the Llama fixture, loaded as TRL would load it.
ModuleTree peft_tree(const TrlRun& run, DiagnosticSink& sink) {
  ResolveOptions opt;
  opt.transformers = *Version::parse("5.12.1");
  opt.load_dtype = run.load_dtype ? run.load_dtype->value : "bfloat16";
  opt.bnb_4bit = run.bnb_4bit;
  LoadedTree loaded = load_module_tree(kLlama, false, SHARDCHECK_SOURCE_DIR "/rules", opt, sink);
  REQUIRE(loaded.tree.has_value());
  REQUIRE(run.adapter.has_value());
  const auto rules = PeftRules::load(SHARDCHECK_SOURCE_DIR "/rules", sink);
  REQUIRE(rules.has_value());
  REQUIRE(apply_lora_adapter(*loaded.tree, *run.adapter, *rules, sink));
  return std::move(*loaded.tree);
}

const ParamInfo& param(const ModuleTree& t, const std::string& module, const std::string& name) {
  for (const auto& m : t.modules)
    if (m.path == module)
      for (const auto& p : m.params)
        if (p.name == name) return p;
  FAIL("no parameter " << module << "." << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("trl: a QLoRA config file gives LoraConfig, BitsAndBytesConfig and SFTTrainer's bf16 adapters") {
  const TrainingArgs args = args_of("trl-qlora.yaml");
  DiagnosticSink sink;
  const TrlRun run = resolve_trl_run(args, std::nullopt, "bfloat16", sink);
  CHECK_FALSE(run.load_dtype.has_value());  // the file says dtype: bfloat16
  REQUIRE(run.bnb_4bit.has_value());
  CHECK(run.bnb_4bit->quant_type == "nf4");
  CHECK(run.bnb_4bit->double_quant);
  CHECK(run.bnb_4bit->quant_storage == DType::BF16);
  CHECK(run.bnb_4bit->compute_dtype == DType::BF16);  // bnb_4bit_compute_dtype=model_args.dtype
  REQUIRE(run.adapter.has_value());
  CHECK(run.adapter->r == 8);
  CHECK(run.adapter->lora_alpha == 16);
  CHECK(run.adapter->target_modules.names == std::vector<std::string>{"q_proj", "v_proj"});
  const ModuleTree t = peft_tree(run, sink);
  // r 8 on q (A [8, 20], B [20, 8]) and v (A [8, 20], B [10, 8]), cast to bfloat16 after get_peft_model.
  const auto& qa = param(t, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default", "weight");
  CHECK(qa.shape == std::vector<std::int64_t>{8, 20});
  CHECK(qa.dtype == DType::BF16);
  CHECK(param(t, "base_model.model.model.layers.2.self_attn.v_proj.lora_B.default", "weight").dtype == DType::BF16);
  // The frozen base keeps its dtypes: q_proj's 400 4-bit values in bf16 storage, (400 + 1) // (2 * 2) = 100 rows.
  const auto& q = param(t, "base_model.model.model.layers.0.self_attn.q_proj.base_layer", "weight");
  CHECK(q.shape == std::vector<std::int64_t>{100, 1});
  CHECK(q.dtype == DType::BF16);
  CHECK_FALSE(q.requires_grad);
  REQUIRE(t.peft.has_value());
  CHECK(t.peft->trainable == 1680);
}

TEST_CASE("trl: before 0.26 the adapters stay peft's float32, with a warning") {
  DiagnosticSink sink;
  const TrlRun run = resolve_trl_run(args_of("trl-qlora.yaml"), trl("0.25.1"), "bfloat16", sink);
  CHECK(has(sink, "TRL004"));
  const ModuleTree t = peft_tree(run, sink);
  CHECK(param(t, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default", "weight").dtype == DType::F32);
}

TEST_CASE("trl: use_peft alone takes ModelConfig's defaults and, from 0.27, a float32 load") {
  const TrainingArgs args = args_of("trl-lora-defaults.yaml");
  {
    DiagnosticSink sink;
    const TrlRun run = resolve_trl_run(args, trl("0.27.0"), "", sink);
    REQUIRE(run.load_dtype.has_value());
    CHECK(run.load_dtype->value == "float32");
    CHECK(has(sink, "TRL001"));
    REQUIRE(run.adapter.has_value());
    CHECK(run.adapter->r == 16);
    CHECK(run.adapter->lora_alpha == 32);
    CHECK(run.adapter->lora_dropout == doctest::Approx(0.05));
    CHECK(run.adapter->target_modules.kind == ModuleSelector::Kind::unset);  // peft's default for llama
    CHECK_FALSE(run.bnb_4bit.has_value());
  }
  DiagnosticSink sink;
  const TrlRun old = resolve_trl_run(args, trl("0.26.2"), "", sink);
  CHECK_FALSE(old.load_dtype.has_value());
  CHECK_FALSE(has(sink, "TRL001"));
}

TEST_CASE("trl: a one-name target list is a regex for peft; a string modules_to_save is refused") {
  {
    DiagnosticSink sink;
    const TrlRun run = resolve_trl_run(args_of("trl-one-target.yaml"), std::nullopt, "bfloat16", sink);
    CHECK(has(sink, "TRL002"));
    REQUIRE(run.adapter.has_value());
    CHECK(run.adapter->target_modules.kind == ModuleSelector::Kind::regex);
    CHECK(run.adapter->target_modules.regex == "q_proj");
  }
  DiagnosticSink sink;
  const TrlRun run = resolve_trl_run(args_of("trl-save-string.yaml"), std::nullopt, "bfloat16", sink);
  CHECK(has(sink, "TRL003"));
  CHECK(sink.has_errors());
  CHECK_FALSE(run.adapter.has_value());
}

TEST_CASE("trl: a TrainingArguments file without ModelConfig fields gets no TRL defaults") {
  // fixtures/training-args/sft-qlora.yaml names model_name_or_path: a ModelConfig file; a file with
  // only TrainingArguments keys is not, and loads as transformers decides.
  TrainingArgs plain;
  plain.path = "args.yaml";
  DiagnosticSink sink;
  const TrlRun run = resolve_trl_run(plain, std::nullopt, "", sink);
  CHECK_FALSE(run.adapter.has_value());
  CHECK_FALSE(run.load_dtype.has_value());
  CHECK(sink.items().empty());
  CHECK(args_of("sft-qlora.yaml").trl.model_config);
}
