// The pipeline's model stages (pipeline/stages.hpp): the module tree with the adapter's files read
// beside it, then the PeftModel built on it.
#include <exception>
#include <filesystem>
#include <functional>
#include <system_error>
#include <thread>

#include "pipeline/stages.hpp"
#include "shardcheck/adapter.hpp"
#include "shardcheck/module_tree_file.hpp"
#include "shardcheck/quantization.hpp"
#include "util/stage_timer.hpp"

namespace shardcheck::pipeline {
namespace {

// The adapter's files (adapter_config.json with, for all-linear, every module's name, and the
// header of adapter_model.safetensors: ~1 ms for a 405B model's) and rules/peft.yaml (yaml-cpp,
// ~0.7 ms over its 4 KB) are read on the checkpoint's reading thread once the headers are read
// (ModelLoad::begin says why there), while this thread still expands the registry tree. On a thread
// of their own from the start they took the core this thread needed: bench_plan's ratio for the 405B
// all-linear adapter went from 1.25-1.32 to 1.20-1.22 (4 pairs of 41 runs). When no load starts (no
// config.json) they are read here. Their findings keep their places: the adapter's before the
// model's, the rules' after.
class AdapterFiles {
 public:
  AdapterFiles(const std::string& rules_dir, const std::string& adapter_path, std::optional<LoraAdapter>& adapter)
      : rules_dir_(rules_dir), adapter_path_(adapter_path), adapter_(adapter) {}

  void read() noexcept {
    read_ = true;
    try {
      if (!adapter_path_.empty()) {
        util::StageTimer read_adapter("peft: read adapter");
        adapter_ = load_adapter_config(adapter_path_, adapter_sink);
        if (!adapter_) return;
      }
      rules = PeftRules::load(rules_dir_, rules_sink);
    } catch (...) {
      failure_ = std::current_exception();
    }
  }

  // After the load: reads them here if no thread did (the model was not found), and rethrows what the
  // reading threw, as a call on this thread would have thrown.
  void finish() {
    if (!read_) read();
    if (failure_) std::rethrow_exception(failure_);
  }

  DiagnosticSink adapter_sink, rules_sink;
  std::optional<PeftRules> rules;

 private:
  const std::string& rules_dir_;
  const std::string& adapter_path_;
  std::optional<LoraAdapter>& adapter_;
  bool read_ = false;  // set by the reading; joined (or run here) before it is read
  std::exception_ptr failure_;
};

// Who prepares a PEFT model. Most LoRA runs go through transformers' Trainer (TRL's trainers subclass
// it), so that is the default. Under FSDP1 the Trainer replaces accelerate's policy with peft's
// whatever the config says (trainer.py _prepare_for_training -> integrations/fsdp.py
// update_fsdp_plugin_peft, transformers 5.12.1); under FSDP2 it never calls it (delay_optimizer_creation
// is off), so accelerate's own policy stays.
// For a bitsandbytes model with a floating bnb_4bit_quant_storage the same function also makes that
// dtype the mixed precision (set_mixed_precision(quant_storage, override=True)).
void apply_peft_caller(FsdpSettings& s, const std::optional<Bnb4bitConfig>& bnb) {
  if (s.trainer.source == "default") s.trainer = {true, "default (a PEFT adapter: transformers Trainer)"};
  if (!s.trainer.value || s.fsdp_version.value != 1) return;
  s.policy = {WrapPolicyKind::peft, "transformers Trainer with a PEFT model (update_fsdp_plugin_peft)"};
  if (bnb && dtype_is_floating(bnb->quant_storage)) {
    const DType q = bnb->quant_storage;
    s.mixed_precision = {q == DType::BF16  ? MixedPrecision::bf16
                         : q == DType::F16 ? MixedPrecision::fp16
                                           : MixedPrecision::fp32,
                         "transformers Trainer: bnb_4bit_quant_storage (update_fsdp_plugin_peft)"};
  }
}

}  // namespace

// --module-tree: the tree from the dump, and the adapter's files (when there is one) read after it.
static std::optional<LoadedModel> load_dumped_model(const PreflightRequest& req, const ResolveOptions& resolve,
                                                    PreflightResult& r) {
  r.tree = load_module_tree_file(req.module_tree, resolve, r.sink);
  if (!r.tree) return std::nullopt;
  const bool peft = r.adapter.has_value() || !req.adapter_path.empty();
  AdapterFiles adapter_files(req.rules_dir, req.adapter_path, r.adapter);
  if (peft) adapter_files.finish();
  r.sink.append(adapter_files.adapter_sink);
  if (peft && !r.adapter) return std::nullopt;
  if (r.adapter) r.adapter->prepare_kbit = r.adapter->prepare_kbit || req.prepare_kbit;
  LoadedModel out{LoadedTree{}, std::move(adapter_files.rules), std::move(adapter_files.rules_sink)};
  return out;
}

std::optional<LoadedModel> load_model_files(const PreflightRequest& req, const ResolveOptions& resolve,
                                            PreflightResult& r) {
  if (!req.module_tree.empty()) return load_dumped_model(req, resolve, r);
  std::optional<LoraAdapter>& adapter = r.adapter;
  std::string model = req.model, adapter_path = req.adapter_path;
  const std::size_t errors_before_adapter = r.sink.count(Severity::error);
  if (!adapter) split_adapter_model(model, adapter_path, r.sink);
  if (r.sink.count(Severity::error) > errors_before_adapter) return std::nullopt;
  const bool peft = adapter.has_value() || !adapter_path.empty();
  AdapterFiles adapter_files(req.rules_dir, adapter_path, adapter);
  auto read_adapter_files = [&adapter_files] { adapter_files.read(); };
  // A model or an adapter from the Hub is fetched over the network: there the two are read at once,
  // as before, each on its own thread.
  std::error_code ec;
  const bool remote =
      !std::filesystem::exists(model, ec) || (!adapter_path.empty() && !std::filesystem::exists(adapter_path, ec));
  DiagnosticSink model_sink;
  std::jthread adapter_reader;
  if (peft && remote) adapter_reader = std::jthread(read_adapter_files);
  LoadedModel out{
      load_module_tree(model, req.config_only, req.rules_dir, resolve, model_sink,
                       peft && !remote ? std::function<void()>(read_adapter_files) : std::function<void()>()),
      std::nullopt, DiagnosticSink{}};
  if (adapter_reader.joinable()) adapter_reader.join();
  if (peft) adapter_files.finish();
  r.sink.append(adapter_files.adapter_sink);
  if (peft && !adapter) return std::nullopt;  // an unreadable adapter: nothing of the model is reported
  if (adapter) adapter->prepare_kbit = adapter->prepare_kbit || req.prepare_kbit;
  r.sink.append(model_sink);
  r.tree = std::move(out.loaded.tree);
  if (!r.tree) return std::nullopt;
  out.peft_rules = std::move(adapter_files.rules);
  out.peft_rules_sink = std::move(adapter_files.rules_sink);
  return out;
}

bool add_adapter(const PreflightRequest& req, const LoadedModel& model, SavedWeightsCheck& saved_weights,
                 PreflightResult& r) {
  if (!r.adapter) return true;
  r.sink.append(model.peft_rules_sink);
  if (!model.peft_rules) return false;
  // Folded only where every later stage reads a folded tree exactly: FSDP1 (TP and CP are FSDP2's),
  // no activation estimate (it walks the blocks), no --frozen regex (it names instances).
  const bool fold =
      req.fold_repeats && r.settings.fsdp_version.value == 1 && !req.memory.seq_len && r.settings.frozen.value.empty();
  if (!build_peft_model(*r.tree, *r.adapter, *model.peft_rules, r.sink, fold)) return false;
  // The saved adapter weights are checked beside the plan (SavedWeightsCheck); their findings take
  // their place after the adapter's, and a saved matrix that does not fit stops the run there.
  if (!saved_weights.start(r, *r.adapter)) return false;
  apply_peft_caller(r.settings, r.tree->bnb_4bit);
  return true;
}

}  // namespace shardcheck::pipeline
