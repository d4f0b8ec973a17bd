#pragma once
// Stage "resolve": the model's module tree as transformers would build it — every module path, its
// class, its parameters in registration order (FSDP flattens in this order, not the checkpoint's),
// tied aliases — from config.json + the registry, checked against the checkpoint when there is one.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "shardcheck/checkpoint.hpp"
#include "shardcheck/diagnostics.hpp"
#include "shardcheck/dtype.hpp"
#include "shardcheck/version.hpp"
#include "shardcheck/model_config.hpp"
#include "shardcheck/quantization.hpp"
#include "shardcheck/registry.hpp"

namespace shardcheck {

struct ParamInfo {
  std::string name;  // attribute name inside its module ("weight")
  std::vector<std::int64_t> shape;
  DType dtype = DType::F32;
  std::int64_t numel = 0;
  std::string tied_to;         // full path of the tensor this one aliases ("" = its own storage)
  bool buffer = false;         // persistent buffer: in state_dict, not in parameters()
  bool in_checkpoint = false;  // matched a checkpoint tensor
  bool requires_grad = true;   // false for frozen parameters (plan --frozen also freezes by name)
  // The forward of a training step never reaches it, so it gets no gradient although it requires one
  // (LLaVA's vision layers after the feature layer it reads): torch allocates no gradient and AdamW
  // no state for it (registry `unreached:`).
  bool unreached = false;
  // A parameter transformers fuses while loading (5.x MoE experts: gate_up_proj): the checkpoint
  // tensors it is built from, globs relative to its module whose `*` is the expert index. Per
  // index, the tensors of each glob in turn, concatenated along dim 0; then stacked by index.
  std::vector<std::string> fused_from;
  // A bitsandbytes Params4bit (shardcheck/quantization.hpp): `shape` is the packed storage
  // [rows, 1]; this is the nn.Linear weight it stands for ([out, in]). Empty otherwise.
  std::vector<std::int64_t> unpacked_shape;
  bool packed_4bit() const { return !unpacked_shape.empty(); }
};

struct Module {
  std::string path;  // "" for the root, else "model.layers.0.self_attn"
  std::string name;  // last path component
  std::string cls;
  int parent = -1;
  std::vector<int> children;      // registration order
  std::vector<ParamInfo> params;  // registration order
  std::int64_t own_numel = 0;     // own parameters, tied aliases not counted
  std::int64_t total_numel = 0;   // subtree, every storage counted once (one instance of a repeat)
  // In a folded tree (shardcheck/repeated_blocks.hpp): this module stands for itself and the
  // `repeat - 1` siblings that followed it, named on from its numeric name ("0" of 126: "0".."125"),
  // each identical to it in everything; its subtree is the first instance's. 1 everywhere else.
  int repeat = 1;
};

// What get_peft_model built (shardcheck/peft_model.hpp): the one home of peft's counts, which the
// tree, the plan and the JSON all print.
struct PeftSummary {
  std::string adapter;                // where the adapter came from
  std::vector<std::string> targeted;  // base-model module paths that got LoRA layers
  std::vector<std::string> saved;     // modules_to_save wrappers
  std::int64_t trainable = 0;         // peft's get_nb_trainable_parameters
  std::int64_t total = 0;
  // The transformers model's own base_model_path ("model"). (Which name each frozen parameter had
  // there follows from the PeftModel tree: peft_base_names in shardcheck/peft_model.hpp.)
  std::string base_model_path;
};

struct ModuleTree {
  std::string model_type;
  std::string config_path;   // the config.json it was built from (diagnostics)
  std::string architecture;  // root class
  Version transformers;
  std::string since;  // the registry's first transformers release with this model_type
  std::string attn_implementation;
  bool dequantized = false;  // quantised checkpoint loaded dequantised (--dequantize)
  // Loaded in 4 bits by bitsandbytes: the BitsAndBytesConfig in force (flags, or config.json's for a
  // pre-quantized checkpoint; shardcheck/quantization.hpp).
  std::optional<Bnb4bitConfig> bnb_4bit;
  bool quantized_4bit() const { return bnb_4bit.has_value(); }
  std::uint64_t quant_state_bytes = 0;  // its QuantState tensors: not parameters, never sharded
  std::vector<Module> modules;          // modules[0] is the root; parents precede children (pre-order)
  std::unordered_map<std::string, std::vector<std::string>> class_chains;  // class -> itself + bases (isinstance)
  std::vector<std::string> no_split_modules;
  // A module-tree dump's _no_split_modules as the live object held it (docs/module-tree.md); nullopt
  // for a tree from the registry. accelerate iterates the attribute as it is (`list(no_split_modules)`,
  // utils/dataclasses.py set_auto_wrap_policy, 1.14.0), so `no_split_modules` above holds what that
  // iteration gives: a string's characters, a set's items in the order the dumping process saw.
  struct HeldNoSplit {
    std::string type;  // list, tuple, set, frozenset, str, none
    std::string text;  // type str: the string itself
    // A class of the model whose own _no_split_modules is a string (transformers 5.x post_init then
    // holds set(string), its characters): that class and the string; "" when none.
    std::string declared_by, declared_text;
  };
  std::optional<HeldNoSplit> held_no_split;
  std::string source_file;  // the module-tree file it was read from ("" for a registry tree)
  // _keep_in_fp32_modules(_strict), the composite's own and its sub-models' (post_init unions them).
  std::vector<std::string> keep_in_fp32_modules, keep_in_fp32_modules_strict;
  std::vector<TiedWeight> tied;   // alias -> target, as applied
  std::string input_embeddings;   // get_input_embeddings() module path ("" if unknown)
  std::string output_embeddings;  // get_output_embeddings() module path ("" if none)
  std::string base_model_path;    // the base_model_prefix child ("model"), "" when the root is the base
  bool classes_guessed = false;   // fallback for an unknown model_type
  bool from_checkpoint = false;   // shapes/dtypes confirmed by safetensors headers
  std::int64_t num_params = 0;    // distinct parameter storages
  // Runs of identical repeated blocks are held once (Module::repeat; shardcheck/repeated_blocks.hpp).
  // The counts above and below count every instance all the same.
  bool folded = false;
  // With a PEFT adapter: what it added and what trains. nullopt: a full fine-tune, every parameter
  // trains (unless plan --frozen says otherwise).
  std::optional<PeftSummary> peft;
  std::int64_t num_tensors = 0;               // distinct parameter tensors
  std::map<DType, std::int64_t> dtype_numel;  // parameter elements per dtype
  std::int64_t checkpoint_only_numel = 0;     // tensors on disk that transformers drops on load
  std::int64_t checkpoint_only_tensors = 0;
  std::map<std::string, std::int64_t> activations;  // the registry's activation model, evaluated
  // Its `tp_split`, `tp_split_fp32` and `tp_added`: the feature widths of the saved tensors tensor
  // parallelism cuts, and of those only it creates (a rowwise_split_input layer's piece of its input);
  // `cp_kv`: the widths of the keys and values SDPA receives, which context parallelism passes around.
  std::map<std::string, std::vector<std::int64_t>> activation_tp_split;
  // transformers' native FSDP2 plan with full module paths (base keys prefixed by the base model).
  std::vector<std::pair<std::string, std::string>> fsdp_plan;
  // transformers' tensor-parallel plan with full names (base keys under the base model) and each
  // entry's style resolved from the registry; nullopt when the registry does not describe it.
  struct TpEntry {
    std::string pattern;
    TpStyle style;
  };
  std::optional<std::vector<TpEntry>> tp_plan;
  // The expert-parallel plan (base_model_ep_plan under the base model), which replaces tp_plan when
  // the model is loaded with DistributedConfig(enable_expert_parallel=True); empty: none.
  std::vector<TpEntry> ep_plan;

  bool is_instance(const Module& m, const std::string& cls) const;
  // The class names for which is_instance answers true for `base`: itself and every class whose
  // chain lists it. A few names to compare each module's class with, where is_instance looks the
  // class up per module.
  std::vector<std::string> subclasses_of(const std::string& base) const;
};

// A parameter's or module's full name: "<path>.<name>", or `name` alone under the root (path "").
// One allocation: the plan builds one for every parameter of a PeftModel (~3,000 on Llama-3.1-405B).
std::string qualified_name(std::string_view path, std::string_view name);
// The same appended to `out` (a block of names that holds many).
void append_qualified_name(std::string& out, std::string_view path, std::string_view name);

struct ResolveOptions {
  Version transformers = TransformersVersions::newest();
  // "" = transformers' default: sdpa, or eager for a model class without SDPA support.
  std::string attn_implementation;
  bool dequantize = false;   // load a quantised checkpoint dequantised (quantization_config.dequantize)
  std::string architecture;  // override config.json's architectures[0]
  // from_pretrained(dtype=...): "auto", a dtype name (float32, bfloat16, float16), or "" for the
  // release's default ("auto" from transformers 5.0, float32 before).
  std::string load_dtype;
  // from_pretrained(quantization_config=BitsAndBytesConfig(load_in_4bit=True, ...)) (QLoRA).
  std::optional<Bnb4bitConfig> bnb_4bit;
};

// Builds the tree from the registry; with `ckpt`, every tensor is matched and checked. A model_type
// the registry does not know falls back to inference from tensor names (needs a checkpoint).
std::optional<ModuleTree> build_module_tree(const ModelConfig& config, const CheckpointMeta* ckpt,
                                            const Registry& registry, const ResolveOptions& options,
                                            DiagnosticSink& sink);

// build_module_tree in two halves, so that the part that needs only config.json and the registry
// (choosing the architecture, expanding its modules and shape formulas) can run while the
// checkpoint's headers are still being read (ModelLoad in shardcheck/model_source.hpp). Same
// diagnostics, in the same order, as one build_module_tree call.
class TreeExpansion {
 public:
  struct State;  // defined in src/resolve/build_tree.cpp
  explicit TreeExpansion(std::unique_ptr<State> state);
  TreeExpansion(TreeExpansion&&) noexcept;
  TreeExpansion& operator=(TreeExpansion&&) noexcept;
  ~TreeExpansion();

  // What to show a checkpoint load (ModelLoad::observe) so that complete_module_tree finds the
  // checkpoint's tensors already paired with this tree's parameters, file by file, instead of doing
  // all of it after the load. nullptr when the model_type is unknown (the tree is then inferred
  // from the checkpoint). Owned by this expansion, which must outlive the load that uses it.
  FileObserver* checkpoint_observer();

 private:
  friend std::optional<ModuleTree> complete_module_tree(TreeExpansion, const CheckpointMeta*, DiagnosticSink&);
  std::unique_ptr<State> state_;
};

// The first half: architecture chosen and expanded. `registry` must outlive the result.
std::optional<TreeExpansion> expand_module_tree(const ModelConfig& config, const Registry& registry,
                                                const ResolveOptions& options, DiagnosticSink& sink);
// The second half: `ckpt` matched (or, for a model_type the registry lacks, the tree inferred
// from it), counts finalised.
std::optional<ModuleTree> complete_module_tree(TreeExpansion expansion, const CheckpointMeta* ckpt,
                                               DiagnosticSink& sink);

// The fallback on its own: module tree inferred from tensor names, classes guessed.
ModuleTree infer_module_tree(const ModelConfig& config, const CheckpointMeta& ckpt, DiagnosticSink& sink);

// Classes of modules that sit in a numbered container (model.layers.0, ...) and hold parameters,
// in first-seen order: the repeated blocks a user means to wrap.
std::vector<std::string> block_classes(const ModuleTree& tree);

}  // namespace shardcheck
