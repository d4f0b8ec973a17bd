#pragma once
// The architecture registry: rules/models/*.yaml turned into typed specs. Pure data: every
// architecture is a YAML file, and adding one needs no C++ (see rules/models/README.md).

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/expr.hpp"
#include "shardcheck/model_config.hpp"

namespace shardcheck {

struct NamedExpr {
  std::string name;
  Expr expr;
};

struct ParamSpec {
  std::string name;
  std::vector<Expr> shape;
  std::optional<Expr> condition;  // `if:`; absent = always
  std::optional<Expr> dtype;      // safetensors dtype name; absent = the model's dtype
  std::vector<std::string> from;  // checkpoint tensors (globs relative to the module) fused into this one
  bool buffer = false;            // a persistent buffer: in the checkpoint, not a parameter
};

struct ClassVariant {
  Expr condition;
  std::string cls;
};

struct ChildSpec {
  std::string name;
  std::string cls;                     // for a repeated child: the container class (ModuleList)
  std::vector<ClassVariant> variants;  // first whose condition holds replaces `cls`
  std::vector<NamedExpr> args;         // evaluated in the parent's scope
  std::optional<Expr> condition;
  // repeat: the child is a container of `repeat` items named 0..n-1 of class `item`
  std::optional<Expr> repeat;
  std::string index = "i";
  std::string item;
  std::vector<ClassVariant> item_variants;
  std::vector<NamedExpr> item_args;
  // submodel: the child is AutoModel.from_config(config.<submodel>): the base model of the registry
  // entry for that sub-config's model_type, expanded in the sub-config's own scope (composite
  // vision-language models: vision_tower from vision_config, language_model from text_config).
  std::string submodel;
  // unreached: when true (per item for a repeat) the child's parameters get no gradient in a
  // training step: the model's forward does not reach them.
  std::optional<Expr> unreached;
};

struct ClassSpec {
  std::string name;
  std::vector<std::string> bases;  // Python base classes (isinstance); structure is inherited
  std::vector<NamedExpr> arg_defaults;
  std::vector<ChildSpec> children;  // registration order (the order of __init__ assignments)
  std::vector<ParamSpec> params;    // registration order within the module
  bool structure_declared = false;  // children/params given here (else taken from the first base)
  std::string source;               // file it was defined in
};

struct TiedWeight {
  std::string alias;   // e.g. lm_head.weight
  std::string target;  // e.g. model.embed_tokens.weight
};

struct CheckpointRename {
  std::string from, to;  // substring replacement on checkpoint tensor names; "^" anchors at the start
  std::optional<Expr> condition;
};

// A checkpoint name as from_pretrained renames it (disk -> model): every occurrence of `from`, or with
// a leading "^" only a prefix (transformers conversion_mapping.py WeightRenaming("^language_model...")).
void apply_checkpoint_rename(std::string& name, std::string_view from, std::string_view to);
// The other way (model -> disk), first occurrence: the disk name the rename made `name` from, or
// nullopt when the rename cannot have produced it.
std::optional<std::string> undo_checkpoint_rename(const std::string& name, std::string_view from, std::string_view to);

// How a quantised checkpoint loads when its quantization_config says `dequantize: true` (transformers
// FineGrainedFP8Config(dequantize=True), integrations/finegrained_fp8.py): the weights are stored in a
// quantised dtype but become parameters of the model's dtype, and their scale tensors are folded into
// them instead of being loaded as themselves.
struct CheckpointDequantize {
  std::optional<Expr> condition;  // when the rule applies (e.g. fp8 checkpoint loaded dequantised)
  std::vector<DType> dtypes;      // stored dtypes that load as the parameter's (the model's) dtype
  std::string scales_suffix;      // tensors whose name ends so are consumed scales ("_scale_inv")
};

// A failure transformers' own model code raises for some configurations (rules/models/<type>.yaml
// `model_errors`): when `condition` holds for the config.json (and the transformers release), the job
// dies at `stage` with `error`. Each must be seen in a real run (fixtures/oracle2/errors).
struct ModelError {
  Expr condition;
  std::string stage;  // "load", "forward"
  std::string error;  // the exception as Python prints it
  std::string help;   // what to do instead
};

struct ArchSpec {
  std::string model_type;
  std::string source;                      // rules/models/<file>.yaml
  std::string since;                       // first transformers version with the model (informational)
  std::vector<std::string> architectures;  // head classes; the first is the default root
  std::string base_model_prefix;
  std::string base_model_class;  // class of the `base_model_prefix` child (for checkpoints without head)
  // PreTrainedModel._supports_sdpa: without it transformers' default attention is eager.
  bool supports_sdpa = true;
  std::optional<Expr> no_split_modules;  // evaluates to a list of class names
  // PreTrainedModel._keep_in_fp32_modules / _keep_in_fp32_modules_strict: parameter-name patterns
  // transformers loads in float32 when the model loads in float16 (strict: float16 or bfloat16).
  std::vector<std::string> keep_in_fp32_modules, keep_in_fp32_modules_strict;
  // The config class's attribute_map (alias -> stored name, e.g. qwen3_moe num_experts ->
  // num_local_experts): config.json may hold either name depending on the transformers release that
  // wrote it, and transformers reads both as one attribute.
  std::vector<std::pair<std::string, std::string>> attribute_map;
  // sub_configs: the config class's sub-config classes (transformers PretrainedConfig.sub_configs):
  // config key -> the registry model_type describing it, whatever model_type (if any) the nested
  // object carries. `flat`: when the key is absent, the sub-config is built from the top-level fields
  // (Qwen2-VL's Hub configs keep the text fields at the top, __post_init__ builds text_config from them).
  struct SubConfig {
    std::string key, model_type;
    bool flat = false;
  };
  std::vector<SubConfig> sub_configs;
  std::vector<NamedExpr> defaults;       // config class defaults for absent keys
  std::vector<NamedExpr> derived;        // computed fields, in order (may use earlier ones)
  std::vector<TiedWeight> tied_weights;  // applied when tie_word_embeddings is true
  // get_input_embeddings() / get_output_embeddings() module paths when no tied-weight pair names them
  // (a model whose head is never tied: Mllama); accelerate's FSDP2 preparation groups them apart.
  std::string input_embeddings, output_embeddings;
  std::vector<CheckpointRename> renames;
  std::vector<std::string> ignore_unexpected;  // regexes (with ${expr} interpolation): tensors on disk
                                               // that transformers drops on load (old buffers, MTP)
  std::optional<CheckpointDequantize> dequantize;
  std::map<std::string, ClassSpec> classes;  // this file's classes (builtins live in Registry)
  // Activation model (elements per token, see rules/models/README.md "activations"): `layer` saved
  // for backward by one block at the compute dtype and `layer_fp32` in float32 whatever it is,
  // `layers` blocks, `checkpointed` kept per block under activation checkpointing, `logits` per token
  // of the LM head; `tp_split` / `tp_split_fp32`: the widths among them that tensor parallelism cuts
  // (lists). Empty: no estimate for this architecture.
  std::vector<NamedExpr> activations;
  std::vector<ModelError> model_errors;
  // transformers' native FSDP2 plan (main, PR #46707/#47165): module-name pattern -> strategy
  // ("free_full_weight" | "keep_full_weight"). `base`: the config's base_model_fsdp_plan (nullopt:
  // PreTrainedConfig's default); `head`: the head class's `_fsdp_plan`.
  std::optional<std::vector<std::pair<std::string, std::string>>> fsdp_plan_base;
  std::vector<std::pair<std::string, std::string>> fsdp_plan_head;
  // transformers' tensor-parallel plan: parameter or module name pattern ("layers.*.mlp.down_proj") ->
  // style (a TpStyle name). `base`: the config's base_model_tp_plan, `head`: the head class's
  // `_tp_plan`; both empty: the architecture has no plan. nullopt: not described in the registry.
  struct TpPlanSpec {
    std::vector<std::pair<std::string, std::string>> base, head;
  };
  std::optional<TpPlanSpec> tp_plan;
  // The config's base_model_ep_plan (expert parallelism), `base` only; nullopt: the architecture has none.
  std::optional<TpPlanSpec> ep_plan;
};

// How one tensor-parallel style places a parameter on the TP ranks (transformers'
// integrations/tensor_parallel.py, each style's shard_tensor). `matrix_dim`: the dimension a
// parameter of two or more dimensions is split on (negative counts from the end), nullopt: kept
// whole; `vector_dim`: the same for a one-dimensional parameter (a bias). `packed`: the split
// dimension holds that many equal blocks (gate and up), each split on its own and put back together.
struct TpStyle {
  std::string name;
  std::optional<int> matrix_dim;
  std::optional<int> vector_dim;
  int packed = 1;
  bool exact = false;  // the split must be exact (expert parallel refuses a remainder)
  // The collectives the style's module hooks run over the TP group, per forward or backward: an
  // all-reduce of an activation whose feature count is this dimension of the module's first
  // parameter of two or more dimensions (rowwise: the output, weight dim -2; colwise: the input's
  // gradient, weight dim -1); `grad_all_reduce`: the module's parameter gradients after backward.
  std::optional<int> forward_all_reduce;
  std::optional<int> backward_all_reduce;
  // An all-gather over the TP group of an activation cut in tp pieces along its features (this
  // dimension of the same parameter): colwise_gather_output's output in forward, rowwise_split_input's
  // input gradient in backward. Each rank contributes its ceil piece.
  std::optional<int> forward_all_gather;
  std::optional<int> backward_all_gather;
  bool grad_all_reduce = false;
  bool routing_all_reduce = false;  // MoE: the routing weights (tokens x experts per token), in backward
  std::string source;               // where the style is described
};

struct TransformersVersions {
  static Version newest();  // the default of --transformers-version
};

class Registry {
 public:
  // Loads rules_dir/models/*.yaml. Malformed data is reported with ExitCode::bad_rules.
  // `wanted`: the model types the caller needs (empty = all); other files are not read.
  static std::optional<Registry> load(const std::filesystem::path& rules_dir, DiagnosticSink& sink,
                                      const std::vector<std::string>& wanted = {});
  // What a model directory needs: its model_type and its text_config's.
  static std::optional<Registry> load_for(const std::filesystem::path& rules_dir, const ModelConfig& config,
                                          DiagnosticSink& sink);

  const ArchSpec* find(const std::string& model_type) const;
  const ClassSpec* find_class(const ArchSpec& arch, const std::string& cls) const;
  std::vector<std::string> model_types() const;
  const TpStyle* find_tp_style(const std::string& name) const;
  // Every class name `cls` is an instance of (itself, then bases transitively): isinstance().
  std::vector<std::string> class_chain(const ArchSpec& arch, const std::string& cls) const;

 private:
  std::map<std::string, ArchSpec> archs_;
  std::map<std::string, ClassSpec> builtins_;  // torch.nn and transformers utility classes
  std::map<std::string, TpStyle> tp_styles_;   // rules/models/_tensor_parallel.yaml
};

}  // namespace shardcheck
