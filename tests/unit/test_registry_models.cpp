// The architecture registry (rules/models/*.yaml) against real checkpoints and published counts:
//  * every tiny fixture in fixtures/models (toyformer aside) builds with no diagnostics, and its
//    parameter count equals EXPECTED.json's (written by scripts/gen_fixtures.py, independently of
//    the registry);
//  * the tree from config.json alone equals the tree confirmed by the safetensors headers, module
//    by module (paths, classes, registration order, parameter names, shapes, dtypes);
//  * _no_split_modules and tied weights as transformers declares them (the modeling files; 5.12.1
//    checked by fixtures/oracle2/models/models.json);
//  * registration-order spot checks per architecture and transformers-version variants;
//  * published parameter counts of real models from their config.json (fixtures/corpus-configs).
#include <doctest/doctest.h>

#include "model_fixtures.hpp"

using namespace model_fixtures;

namespace {

// transformers_version recorded in a fixture's config.json (the generator writes 4.57.6).
std::string fixture_version(const std::string& name) {
  return read_json(models_dir() / name / "config.json").value("transformers_version", "4.57.6");
}

// Models that existed in 4.44.2, so their fixtures must also load cleanly in that layout.
bool in_4_44(const std::string& name) {
  static const Strings old = {"falcon",  "gemma",   "gemma2", "gpt2",  "gpt_neox", "llama",
                              "mistral", "mixtral", "phi3",   "qwen2", "qwen2_moe"};
  return std::find(old.begin(), old.end(), name) != old.end();
}

// Full-size sparse checkpoints are generated at test time by ctest's generate_sparse fixture (never
// committed); a test binary run on its own skips them, saying how to make them.
bool sparse_checkpoint_present(const fs::path& dir) {
  if (fs::exists(dir / "config.json")) return true;
  MESSAGE("skipped: run `scripts/gen_fixtures.py sparse --out " << SHARDCHECK_GENERATED_DIR << "` first");
  return false;
}

std::int64_t breakdown(const nlohmann::json& exp, const std::string& key_prefix) {
  std::int64_t n = 0;
  for (auto it = exp["checkpoint_only_breakdown"].begin(); it != exp["checkpoint_only_breakdown"].end(); ++it)
    if (it.key().rfind(key_prefix, 0) == 0) n += it.value().get<std::int64_t>();
  return n;
}

bool is_deepseek_scale_fusion_error(const Diagnostic& d) {
  return (d.code == "MT004" || d.code == "MT003") && d.message.find("gate_up_proj_scale_inv") != std::string::npos;
}

// Checkpoint tree vs config-only tree, module by module; returns the first difference ("" if none).
std::string first_difference(const ModuleTree& ck, const ModuleTree& co, std::optional<DType> torch_dtype) {
  if (ck.modules.size() != co.modules.size())
    return "module count " + std::to_string(ck.modules.size()) + " vs " + std::to_string(co.modules.size());
  for (std::size_t i = 0; i < ck.modules.size(); ++i) {
    const Module& a = ck.modules[i];
    const Module& b = co.modules[i];
    const std::string at = "module #" + std::to_string(i) + " '" + a.path + "': ";
    if (a.path != b.path) return at + "path vs '" + b.path + "'";
    if (a.cls != b.cls) return at + "class " + a.cls + " vs " + b.cls;
    if (a.parent != b.parent || a.children != b.children) return at + "children differ";
    if (a.params.size() != b.params.size()) return at + "parameter count differs";
    for (std::size_t k = 0; k < a.params.size(); ++k) {
      const ParamInfo& p = a.params[k];
      const ParamInfo& q = b.params[k];
      const std::string pat = at + "param '" + p.name + "': ";
      if (p.name != q.name) return pat + "name vs '" + q.name + "'";
      if (p.shape != q.shape) return pat + "shape " + str(p.shape) + " vs " + str(q.shape);
      if (p.buffer != q.buffer) return pat + "buffer flag differs";
      if (p.tied_to != q.tied_to) return pat + "tied_to '" + p.tied_to + "' vs '" + q.tied_to + "'";
      // dtype: where the checkpoint agrees with config.json's torch_dtype, or the registry states one
      // (FP8 weights, F32 scales and router bias buffers).
      const bool registry_states_dtype = torch_dtype && q.dtype != *torch_dtype;
      const bool checkpoint_matches_config = torch_dtype && p.dtype == *torch_dtype;
      if ((registry_states_dtype || checkpoint_matches_config) && p.dtype != q.dtype)
        return pat + "dtype " + std::string(dtype_name(p.dtype)) + " vs " + std::string(dtype_name(q.dtype));
    }
  }
  if (ck.num_params != co.num_params) return "num_params differ";
  if (ck.num_tensors != co.num_tensors) return "num_tensors differ";
  if (ck.no_split_modules != co.no_split_modules) return "no_split_modules differ";
  if (ck.tied.size() != co.tied.size()) return "tied weights differ";
  return "";
}

std::string tied_str(const ModuleTree& t) {
  std::string s;
  for (const auto& tw : t.tied) s += (s.empty() ? "" : ",") + tw.alias + "->" + tw.target;
  return s;
}

}  // namespace

TEST_CASE("registry models: every fixture builds without diagnostics and counts match EXPECTED.json") {
  const Strings names = fixture_names();
  // Keep the list honest: a fixture that silently disappears must fail here.
  CHECK(join(names) ==
        "deepseek_v3,falcon,gemma,gemma2,gemma3_text,gpt2,gpt_neox,gpt_oss,llama,mistral,mixtral,olmo2,phi3,qwen2,"
        "qwen2_moe,qwen3,qwen3_moe");

  for (const auto& name : names) {
    const auto exp = expected(name);
    std::vector<std::string> versions = {fixture_version(name), "5.0.0", TransformersVersions::newest().str()};
    if (in_4_44(name)) versions.push_back("4.44.2");
    for (const auto& ver : versions) {
      CAPTURE(name);
      CAPTURE(ver);
      const Built b = build_fixture(name, false, options(ver.c_str()));
      const ModuleTree& t = *b.tree;
      CHECK(t.model_type == name);
      CHECK(t.from_checkpoint);
      CHECK_FALSE(t.classes_guessed);

      // DeepSeek's experts are fused from 5.0 on: FP8Experts holds gate_up_proj_scale_inv
      // [E, ceil(2*mI/128), ceil(H/128)] (integrations/finegrained_fp8.py). With the fixture's
      // moe_intermediate_size 20 that is [4, 1, 1], while the per-expert gate and up scales on disk
      // are [1, 1] each (8 elements): transformers could not load them either, and shardcheck says so.
      // Full-size DeepSeek-V3 (mI 2048 = 16 blocks) fuses exactly: see the sparse-checkpoint test.
      const bool deepseek_fused = name == "deepseek_v3" && version(ver.c_str()) >= version("5.0");
      if (deepseek_fused) {
        int mt004 = 0;
        for (const auto* d : b.with(Severity::error)) {
          CHECK_MESSAGE(is_deepseek_scale_fusion_error(*d), d->code << " " << d->message);
          mt004 += d->code == "MT004";
        }
        CHECK(mt004 == 2);  // layers 1 and 2 (layer 0 is dense: first_k_dense_replace 1)
        CHECK(b.with(Severity::warning).empty());
        continue;
      }
      CHECK_MESSAGE(b.with(Severity::error).empty(), b.report());
      CHECK_MESSAGE(b.with(Severity::warning).empty(), b.report());

      // EXPECTED.json's convention (fixtures/models/README.md): num_params EXCLUDES DeepSeek's FP8
      // weight_scale_inv block scales and lists them under checkpoint_only; our tree counts them as
      // parameters, because FP8Linear registers weight_scale_inv as an nn.Parameter. The router's
      // e_score_correction_bias is a persistent buffer (in the checkpoint, not a parameter) in both.
      const std::int64_t scales = breakdown(exp, "deepseek FP8 weight_scale_inv");
      const std::int64_t router_buffers = breakdown(exp, "deepseek mlp.gate.e_score_correction_bias");
      CHECK(numel_with_suffix(t, "scale_inv") == scales);
      CHECK(t.num_params == exp["num_params"].get<std::int64_t>() + scales);
      CHECK(buffer_numel(t) == router_buffers);
      // What the tree drops on load (checkpoint.ignore_unexpected): gpt2's attn.bias buffers,
      // DeepSeek's MTP layer.
      CHECK(t.checkpoint_only_numel == exp["checkpoint_only_numel"].get<std::int64_t>() - scales - router_buffers);
      CHECK(t.num_params + buffer_numel(t) + t.checkpoint_only_numel == exp["checkpoint_numel"].get<std::int64_t>());
    }
  }
}

TEST_CASE("registry models: the config-only tree equals the checkpoint tree") {
  for (const auto& name : fixture_names()) {
    std::vector<std::string> versions = {fixture_version(name), "5.0.0", TransformersVersions::newest().str()};
    if (in_4_44(name)) versions.push_back("4.44.2");
    for (const auto& ver : versions) {
      for (const char* attn : {"", "eager"}) {  // "": transformers' default (sdpa; eager for GPT-OSS)
        CAPTURE(name);
        CAPTURE(ver);
        CAPTURE(attn);
        const Built ck = build_fixture(name, false, options(ver.c_str(), attn));
        const Built co = build_fixture(name, true, options(ver.c_str(), attn));
        CHECK_FALSE(co.tree->from_checkpoint);
        CHECK_MESSAGE(co.with(Severity::error).empty(), co.report());
        CHECK(first_difference(*ck.tree, *co.tree, co.inputs->config.torch_dtype) == "");
        // The FSDP flattening order (named_parameters()) follows from the module order.
        CHECK(join(flat_param_order(*ck.tree, true)) == join(flat_param_order(*co.tree, true)));
      }
    }
  }
}

TEST_CASE("registry models: _no_split_modules and tied weights (hf-architectures.md section 1)") {
  struct Row {
    const char* fixture;
    const char* no_split;
    const char* tied;  // "" = untied (tie_word_embeddings false, explicitly or by class default)
  };
  const Row rows[] = {
      {"llama", "LlamaDecoderLayer", ""},
      {"mistral", "MistralDecoderLayer", ""},
      {"mixtral", "MixtralDecoderLayer", ""},
      // qwen2: class default False, but the fixture's config.json sets tie_word_embeddings true.
      {"qwen2", "Qwen2DecoderLayer", "lm_head.weight->model.embed_tokens.weight"},
      {"qwen2_moe", "Qwen2MoeDecoderLayer", ""},
      {"qwen3", "Qwen3DecoderLayer", ""},
      {"qwen3_moe", "Qwen3MoeDecoderLayer", ""},
      // gemma / gemma3_text: no tie_word_embeddings key, class default True.
      {"gemma", "GemmaDecoderLayer", "lm_head.weight->model.embed_tokens.weight"},
      {"gemma2", "Gemma2DecoderLayer", "lm_head.weight->model.embed_tokens.weight"},
      // Gemma3PreTrainedModel._no_split_modules also names the SigLIP vision classes, read in
      // transformers 5.12.1 itself (fixtures/oracle2/models/models.json records the class's value).
      {"gemma3_text",
       "Gemma3DecoderLayer,SiglipVisionEmbeddings,SiglipEncoderLayer,SiglipMultiheadAttentionPoolingHead",
       "lm_head.weight->model.embed_tokens.weight"},
      {"phi3", "Phi3DecoderLayer", ""},
      {"gpt2", "GPT2Block", "lm_head.weight->transformer.wte.weight"},
      {"gpt_neox", "GPTNeoXLayer", ""},
      {"falcon", "FalconDecoderLayer", "lm_head.weight->transformer.word_embeddings.weight"},
      {"deepseek_v3", "DeepseekV3DecoderLayer", ""},
      {"gpt_oss", "GptOssDecoderLayer", ""},
      {"olmo2", "Olmo2DecoderLayer", ""},
  };
  CHECK(std::size(rows) == fixture_names().size());
  for (const auto& r : rows) {
    for (const char* ver : {"4.57.6", "5.16.0"}) {
      CAPTURE(r.fixture);
      CAPTURE(ver);
      const Built b = build_fixture(r.fixture, true, options(ver));
      const ModuleTree& t = *b.tree;
      CHECK(join(t.no_split_modules) == r.no_split);
      CHECK(tied_str(t) == r.tied);
      if (*r.tied) {
        const std::string alias = std::string(r.tied).substr(0, std::string(r.tied).find("->"));
        const ParamInfo* p = param(t, alias);
        REQUIRE(p != nullptr);
        CHECK(p->tied_to == std::string(r.tied).substr(alias.size() + 2));
      }
      // Every layer is an instance of the first no-split class (what an FSDP auto-wrap policy matches).
      int layers = 0;
      const std::string layer_class = std::string(r.no_split).substr(0, std::string(r.no_split).find(','));
      for (const auto& m : t.modules) layers += t.is_instance(m, layer_class);
      CHECK(layers == b.inputs->config
                          .int_field(b.inputs->config.effective_key(
                              std::string(r.fixture) == "gpt2" ? "n_layer" : "num_hidden_layers"))
                          .value_or(-1));
    }
  }
}

TEST_CASE("registry models: registration order per architecture") {
  SUBCASE("llama: layer self_attn, mlp, input_layernorm, post_attention_layernorm") {
    const auto b = build_fixture("llama", false);
    const auto& t = *b.tree;
    CHECK(join(children(t, "")) == "model,lm_head");
    CHECK(join(children(t, "model")) == "embed_tokens,layers,norm,rotary_emb");
    CHECK(join(children(t, "model.layers.0")) == "self_attn,mlp,input_layernorm,post_attention_layernorm");
    CHECK(join(children(t, "model.layers.0.self_attn")) == "q_proj,k_proj,v_proj,o_proj");
    CHECK(join(children(t, "model.layers.0.mlp")) == "gate_proj,up_proj,down_proj,act_fn");
    const Strings flat = flat_param_order(t);
    REQUIRE(flat.size() >= 2);
    CHECK(flat.front() == "model.embed_tokens.weight");
    CHECK(flat[1] == "model.layers.0.self_attn.q_proj.weight");
    CHECK(flat.back() == "lm_head.weight");
  }
  SUBCASE("mistral: head_dim 7 != hidden/heads") {
    const auto b = build_fixture("mistral", false);
    CHECK(str(shape(*b.tree, "model.layers.0.self_attn.q_proj.weight")) == "[28, 20]");
    CHECK(str(shape(*b.tree, "model.layers.0.self_attn.o_proj.weight")) == "[20, 28]");
  }
  SUBCASE("qwen2: q/k/v biases, none on o_proj") {
    const auto b = build_fixture("qwen2", false);
    CHECK(join(param_names(*b.tree, "model.layers.0.self_attn.q_proj")) == "weight,bias");
    CHECK(join(param_names(*b.tree, "model.layers.0.self_attn.v_proj")) == "weight,bias");
    CHECK(join(param_names(*b.tree, "model.layers.0.self_attn.o_proj")) == "weight");
  }
  SUBCASE("qwen3: q_norm and k_norm [head_dim] after o_proj") {
    const auto b = build_fixture("qwen3", false);
    CHECK(join(children(*b.tree, "model.layers.0.self_attn")) == "q_proj,k_proj,v_proj,o_proj,q_norm,k_norm");
    CHECK(str(shape(*b.tree, "model.layers.0.self_attn.q_norm.weight")) == "[6]");
    CHECK(cls(*b.tree, "model.layers.0.self_attn.k_norm") == "Qwen3RMSNorm");
  }
  SUBCASE("olmo2: post-norm layer, full-width QK norm") {
    const auto b = build_fixture("olmo2", false);
    CHECK(join(children(*b.tree, "model.layers.0")) ==
          "self_attn,mlp,post_attention_layernorm,post_feedforward_layernorm");
    CHECK(join(children(*b.tree, "model.layers.0.self_attn")) == "q_proj,k_proj,v_proj,o_proj,q_norm,k_norm");
    CHECK(str(shape(*b.tree, "model.layers.0.self_attn.q_norm.weight")) == "[20]");  // nH*hd
    CHECK(str(shape(*b.tree, "model.layers.0.self_attn.k_norm.weight")) == "[10]");  // nKV*hd
  }
  SUBCASE("gemma family: norms per layer") {
    const auto g1 = build_fixture("gemma", false);
    CHECK(join(children(*g1.tree, "model.layers.0")) == "self_attn,mlp,input_layernorm,post_attention_layernorm");
    CHECK(param(*g1.tree, "lm_head.weight")->tied_to == "model.embed_tokens.weight");
    const auto g2 = build_fixture("gemma2", false);
    CHECK(join(children(*g2.tree, "model.layers.0")) ==
          "self_attn,mlp,input_layernorm,post_attention_layernorm,pre_feedforward_layernorm,"
          "post_feedforward_layernorm");
    const auto g3 = build_fixture("gemma3_text", false);
    CHECK(cls(*g3.tree, "model") == "Gemma3TextModel");
    CHECK(cls(*g3.tree, "model.embed_tokens") == "Gemma3TextScaledWordEmbedding");
    CHECK(g3.tree->is_instance(require_module(*g3.tree, "model.embed_tokens"), "Embedding"));
    CHECK(join(children(*g3.tree, "model.layers.0.self_attn")) == "q_proj,k_proj,v_proj,o_proj,q_norm,k_norm");
    CHECK(join(children(*g3.tree, "model.layers.1")) ==
          "self_attn,mlp,input_layernorm,post_attention_layernorm,pre_feedforward_layernorm,"
          "post_feedforward_layernorm");
  }
  SUBCASE("phi3: o_proj registered before the fused qkv_proj") {
    const auto b = build_fixture("phi3", false);
    CHECK(join(children(*b.tree, "model.layers.0.self_attn")) == "o_proj,qkv_proj");
    CHECK(str(shape(*b.tree, "model.layers.0.self_attn.qkv_proj.weight")) == "[40, 20]");  // (4+2*2)*5
    CHECK(join(children(*b.tree, "model.layers.0.mlp")) == "gate_up_proj,down_proj,activation_fn");
    CHECK(str(shape(*b.tree, "model.layers.0.mlp.gate_up_proj.weight")) == "[56, 20]");
  }
  SUBCASE("gpt2: block ln_1, attn, ln_2, mlp; Conv1D weights [in, out]; no prefix on disk") {
    const auto b = build_fixture("gpt2", false);
    const auto& t = *b.tree;
    CHECK(join(children(t, "")) == "transformer,lm_head");
    CHECK(join(children(t, "transformer")) == "wte,wpe,drop,h,ln_f");
    CHECK(join(children(t, "transformer.h.0")) == "ln_1,attn,ln_2,mlp");
    CHECK(join(children(t, "transformer.h.0.attn")) == "c_attn,c_proj,attn_dropout,resid_dropout");
    CHECK(join(children(t, "transformer.h.0.mlp")) == "c_fc,c_proj,act,dropout");
    CHECK(str(shape(t, "transformer.h.0.attn.c_attn.weight")) == "[12, 36]");
    CHECK(str(shape(t, "transformer.h.0.mlp.c_fc.weight")) == "[12, 48]");
    CHECK(cls(t, "transformer.h.0.mlp.act") == "NewGELUActivation");
    CHECK(param(t, "transformer.h.0.ln_1.weight")->in_checkpoint);  // matched "h.0.ln_1.weight"
    CHECK(t.checkpoint_only_tensors == 2);                          // h.{0,1}.attn.bias
  }
  SUBCASE("gpt_neox: norms registered before attention and mlp") {
    const auto b = build_fixture("gpt_neox", false, options("4.57.6"));
    const auto& t = *b.tree;
    CHECK(join(children(t, "")) == "gpt_neox,embed_out");
    CHECK(join(children(t, "gpt_neox.layers.0")) ==
          "input_layernorm,post_attention_layernorm,post_attention_dropout,post_mlp_dropout,attention,mlp");
    CHECK(join(children(t, "gpt_neox.layers.0.attention")) == "query_key_value,dense,attention_dropout");
    CHECK(str(shape(t, "gpt_neox.layers.0.attention.query_key_value.weight")) == "[60, 20]");
    CHECK(join(param_names(t, "gpt_neox.layers.0.mlp.dense_h_to_4h")) == "weight,bias");
  }
  SUBCASE("falcon: multi-query qkv, one LayerNorm with parallel_attn") {
    const auto b = build_fixture("falcon", false);
    const auto& t = *b.tree;
    CHECK(join(children(t, "transformer.h.0")) == "self_attention,mlp,input_layernorm");
    CHECK(cls(t, "transformer.h.0.self_attention.query_key_value") == "FalconLinear");
    CHECK(t.is_instance(require_module(t, "transformer.h.0.self_attention.query_key_value"), "Linear"));
    CHECK(str(shape(t, "transformer.h.0.self_attention.query_key_value.weight")) == "[30, 20]");  // H + 2*hd
    CHECK(join(children(t, "transformer.h.0.mlp")) == "dense_h_to_4h,act,dense_4h_to_h");
    CHECK(param(t, "lm_head.weight")->tied_to == "transformer.word_embeddings.weight");
  }
  SUBCASE("gpt_oss: attention sinks are the attention's own parameter; router then experts") {
    const auto b = build_fixture("gpt_oss", false);
    const auto& t = *b.tree;
    CHECK(join(param_names(t, "model.layers.0.self_attn")) == "sinks");
    CHECK(join(children(t, "model.layers.0.mlp")) == "router,experts");
    CHECK(join(param_names(t, "model.layers.0.mlp.router")) == "weight,bias");
    CHECK(join(param_names(t, "model.layers.0.mlp.experts")) ==
          "gate_up_proj,gate_up_proj_bias,down_proj,down_proj_bias");
    CHECK(str(shape(t, "model.layers.0.mlp.experts.gate_up_proj")) == "[3, 20, 24]");  // [E, H, 2I]
    // named_parameters(): a module's own parameters come before its children's.
    const Strings flat = flat_param_order(t);
    const auto at = [&](const std::string& n) { return std::find(flat.begin(), flat.end(), n) - flat.begin(); };
    CHECK(at("model.layers.0.self_attn.sinks") < at("model.layers.0.self_attn.q_proj.weight"));
  }
  SUBCASE("qwen2_moe: mlp_only_layers [1] gives a dense layer 1") {
    const auto b = build_fixture("qwen2_moe", false, options("4.57.6"));
    const auto& t = *b.tree;
    CHECK(cls(t, "model.layers.0.mlp") == "Qwen2MoeSparseMoeBlock");
    CHECK(cls(t, "model.layers.1.mlp") == "Qwen2MoeMLP");
    CHECK(cls(t, "model.layers.2.mlp") == "Qwen2MoeSparseMoeBlock");
    CHECK(join(children(t, "model.layers.0.mlp")) == "gate,experts,shared_expert,shared_expert_gate");
    CHECK(str(shape(t, "model.layers.0.mlp.experts.3.down_proj.weight")) == "[20, 12]");
    CHECK(str(shape(t, "model.layers.0.mlp.shared_expert.up_proj.weight")) == "[28, 20]");
    CHECK(str(shape(t, "model.layers.0.mlp.shared_expert_gate.weight")) == "[1, 20]");
    CHECK(str(shape(t, "model.layers.1.mlp.up_proj.weight")) == "[44, 20]");
  }
  SUBCASE("deepseek_v3 (4.57): MLA, FP8Linear, experts before gate, MTP dropped") {
    const auto b = build_fixture("deepseek_v3", false, options("4.57.6"));
    const auto& t = *b.tree;
    CHECK(join(children(t, "model.layers.0.self_attn")) ==
          "q_a_proj,q_a_layernorm,q_b_proj,kv_a_proj_with_mqa,kv_a_layernorm,kv_b_proj,o_proj");
    CHECK(cls(t, "model.layers.0.mlp") == "DeepseekV3MLP");  // first_k_dense_replace 1
    CHECK(cls(t, "model.layers.1.mlp") == "DeepseekV3MoE");
    CHECK(join(children(t, "model.layers.1.mlp")) == "experts,gate,shared_experts");
    CHECK(cls(t, "model.layers.1.mlp.gate") == "DeepseekV3TopkRouter");
    CHECK(join(param_names(t, "model.layers.1.mlp.gate")) == "weight,e_score_correction_bias");
    const ParamInfo* bias = param(t, "model.layers.1.mlp.gate.e_score_correction_bias");
    CHECK(bias->buffer);
    CHECK(bias->dtype == DType::F32);
    // Quantized projections: FP8Linear with an F8_E4M3 weight and F32 block scales.
    CHECK(cls(t, "model.layers.0.self_attn.q_b_proj") == "FP8Linear");
    CHECK(t.is_instance(require_module(t, "model.layers.0.self_attn.q_b_proj"), "Linear"));
    CHECK(join(param_names(t, "model.layers.0.self_attn.q_b_proj")) == "weight,weight_scale_inv");
    CHECK(param(t, "model.layers.0.self_attn.q_b_proj.weight")->dtype == DType::F8_E4M3);
    CHECK(str(shape(t, "model.layers.0.self_attn.q_b_proj.weight_scale_inv")) == "[2, 1]");  // ceil(144/128)
    CHECK(str(shape(t, "model.layers.0.mlp.down_proj.weight_scale_inv")) == "[1, 2]");       // ceil(136/128)
    CHECK(cls(t, "model.layers.1.mlp.experts.3.up_proj") == "FP8Linear");
    // Not quantized: lm_head (modules_to_not_convert), norms, embeddings, the router.
    CHECK(cls(t, "lm_head") == "Linear");
    CHECK(param(t, "lm_head.weight")->dtype == DType::BF16);
    CHECK(param(t, "model.layers.1.mlp.gate.weight")->dtype == DType::BF16);
    CHECK(module(t, "model.layers.3") == nullptr);  // the MTP layer is checkpoint-only
    CHECK(t.checkpoint_only_numel == 15458);
  }
}

TEST_CASE("registry models: transformers version and attention variants") {
  SUBCASE("llama 4.44: attention class per attn_implementation, per-attention rotary module") {
    const auto sdpa = build_fixture("llama", false, options("4.44.2", "sdpa"));
    CHECK_MESSAGE(sdpa.with(Severity::error).empty(), sdpa.report());
    const Module& attn = require_module(*sdpa.tree, "model.layers.0.self_attn");
    CHECK(attn.cls == "LlamaSdpaAttention");
    CHECK(sdpa.tree->is_instance(attn, "LlamaAttention"));
    const auto chain = sdpa.tree->class_chains.at("LlamaSdpaAttention");
    CHECK(std::find(chain.begin(), chain.end(), "LlamaAttention") != chain.end());
    // The names is_instance accepts for LlamaAttention: itself and the 4.44 SDPA subclass, not a
    // sibling class.
    const auto subclasses = sdpa.tree->subclasses_of("LlamaAttention");
    CHECK(std::count(subclasses.begin(), subclasses.end(), "LlamaAttention") == 1);
    CHECK(std::count(subclasses.begin(), subclasses.end(), "LlamaSdpaAttention") == 1);
    CHECK(std::count(subclasses.begin(), subclasses.end(), "LlamaMLP") == 0);
    CHECK(join(children(*sdpa.tree, "model.layers.0.self_attn")) == "q_proj,k_proj,v_proj,o_proj,rotary_emb");
    CHECK(cls(*build_fixture("llama", true, options("4.44.2", "eager")).tree, "model.layers.0.self_attn") ==
          "LlamaAttention");
    CHECK(cls(*build_fixture("llama", true, options("4.44.2", "flash_attention_2")).tree, "model.layers.0.self_attn") ==
          "LlamaFlashAttention2");
    const auto v457 = build_fixture("llama", true, options("4.57.6", "sdpa"));
    CHECK(cls(*v457.tree, "model.layers.0.self_attn") == "LlamaAttention");
    CHECK(join(children(*v457.tree, "model.layers.0.self_attn")) == "q_proj,k_proj,v_proj,o_proj");
  }
  SUBCASE("mixtral: block_sparse_moe with per-expert w1/w2/w3 in 4.57, fused mlp.experts in 5.0") {
    const auto v4 = build_fixture("mixtral", false, options("4.57.6"));
    const auto& t4 = *v4.tree;
    CHECK(join(children(t4, "model.layers.0")) ==
          "self_attn,block_sparse_moe,input_layernorm,post_attention_layernorm");
    CHECK(join(children(t4, "model.layers.0.block_sparse_moe")) == "gate,experts");
    CHECK(cls(t4, "model.layers.0.block_sparse_moe.gate") == "Linear");
    CHECK(cls(t4, "model.layers.0.block_sparse_moe.experts.0") == "MixtralBlockSparseTop2MLP");
    CHECK(join(children(t4, "model.layers.0.block_sparse_moe.experts.0")) == "w1,w2,w3,act_fn");
    CHECK(str(shape(t4, "model.layers.0.block_sparse_moe.experts.0.w1.weight")) == "[28, 20]");
    CHECK(str(shape(t4, "model.layers.0.block_sparse_moe.experts.2.w2.weight")) == "[20, 28]");

    const auto v5 = build_fixture("mixtral", false, options("5.0.0"));
    const auto& t5 = *v5.tree;
    CHECK_MESSAGE(v5.with(Severity::error).empty(), v5.report());
    CHECK(join(children(t5, "model.layers.0")) == "self_attn,mlp,input_layernorm,post_attention_layernorm");
    CHECK(join(children(t5, "model.layers.0.mlp")) == "gate,experts");
    CHECK(cls(t5, "model.layers.0.mlp.gate") == "MixtralTopKRouter");
    CHECK(cls(t5, "model.layers.0.mlp.experts") == "MixtralExperts");
    CHECK(join(param_names(t5, "model.layers.0.mlp.experts")) == "gate_up_proj,down_proj");
    CHECK(str(shape(t5, "model.layers.0.mlp.experts.gate_up_proj")) == "[3, 56, 20]");  // [E, 2I, H]
    CHECK(str(shape(t5, "model.layers.0.mlp.experts.down_proj")) == "[3, 20, 28]");     // [E, H, I]
    // Filled from the renamed per-expert tensors (block_sparse_moe.experts.{j}.w1/w3/w2).
    CHECK(param(t5, "model.layers.0.mlp.experts.gate_up_proj")->in_checkpoint);
    CHECK(param(t5, "model.layers.0.mlp.gate.weight")->in_checkpoint);
    CHECK(t5.num_params == t4.num_params);
    CHECK(t5.num_tensors == 21);
    CHECK(t4.num_tensors == 35);
  }
  SUBCASE("qwen2_moe: Qwen2MoeSdpaAttention and per-expert ModuleList until 5.0") {
    const auto v4 = build_fixture("qwen2_moe", true, options("4.57.6", "sdpa"));
    CHECK(cls(*v4.tree, "model.layers.0.self_attn") == "Qwen2MoeSdpaAttention");
    CHECK(cls(*v4.tree, "model.layers.0.mlp.experts") == "ModuleList");
    const auto v5 = build_fixture("qwen2_moe", false, options("5.0.0", "sdpa"));
    CHECK_MESSAGE(v5.with(Severity::error).empty(), v5.report());
    CHECK(cls(*v5.tree, "model.layers.0.self_attn") == "Qwen2MoeAttention");
    CHECK(join(children(*v5.tree, "model.layers.0.mlp")) == "gate,experts,shared_expert,shared_expert_gate");
    CHECK(cls(*v5.tree, "model.layers.0.mlp.gate") == "Qwen2MoeTopKRouter");
    CHECK(str(shape(*v5.tree, "model.layers.0.mlp.experts.gate_up_proj")) == "[4, 24, 20]");
    CHECK(str(shape(*v5.tree, "model.layers.0.mlp.experts.down_proj")) == "[4, 20, 12]");
  }
  SUBCASE("qwen3_moe: gate before experts in 4.x, experts before gate from 5.0") {
    const auto v4 = build_fixture("qwen3_moe", false, options("4.57.6"));
    CHECK(join(children(*v4.tree, "model.layers.0.mlp")) == "gate,experts");
    CHECK(cls(*v4.tree, "model.layers.0.mlp.gate") == "Linear");
    const auto v5 = build_fixture("qwen3_moe", false, options("5.0.0"));
    CHECK(join(children(*v5.tree, "model.layers.0.mlp")) == "experts,gate");
    CHECK(cls(*v5.tree, "model.layers.0.mlp.experts") == "Qwen3MoeExperts");
    CHECK(cls(*v5.tree, "model.layers.0.mlp.gate") == "Qwen3MoeTopKRouter");
    CHECK(str(shape(*v5.tree, "model.layers.0.mlp.experts.gate_up_proj")) == "[4, 20, 20]");
  }
  SUBCASE("deepseek_v3: FP8Experts from 5.0, DeepseekV3NaiveMoe without FP8 in 5.0") {
    const auto v5 = build_fixture("deepseek_v3", true, options("5.16.0"));
    const auto& t = *v5.tree;
    CHECK(join(children(t, "model.layers.1.mlp")) == "experts,gate,shared_experts");
    CHECK(cls(t, "model.layers.1.mlp.experts") == "FP8Experts");
    CHECK(join(param_names(t, "model.layers.1.mlp.experts")) ==
          "gate_up_proj,gate_up_proj_scale_inv,down_proj,down_proj_scale_inv");
    CHECK(str(shape(t, "model.layers.1.mlp.experts.gate_up_proj")) == "[4, 40, 20]");
    CHECK(str(shape(t, "model.layers.1.mlp.experts.gate_up_proj_scale_inv")) == "[4, 1, 1]");
    CHECK(param(t, "model.layers.1.mlp.experts.down_proj")->dtype == DType::F8_E4M3);
  }
  SUBCASE("gemma2: attention classes per implementation only before 4.47") {
    CHECK(cls(*build_fixture("gemma2", true, options("4.46.0", "sdpa")).tree, "model.layers.0.self_attn") ==
          "Gemma2SdpaAttention");
    CHECK(cls(*build_fixture("gemma2", true, options("4.47.0", "sdpa")).tree, "model.layers.0.self_attn") ==
          "Gemma2Attention");
  }
  SUBCASE("falcon: FalconFlashAttention2 is still selected in main") {
    const auto b = build_fixture("falcon", true, options("5.16.0", "flash_attention_2"));
    CHECK(cls(*b.tree, "transformer.h.0.self_attention") == "FalconFlashAttention2");
    CHECK(cls(*build_fixture("falcon", true, options("5.16.0", "sdpa")).tree, "transformer.h.0.self_attention") ==
          "FalconAttention");
  }
  SUBCASE("gpt_neox: embed_out head on disk, lm_head in main") {
    const auto v5 = build_fixture("gpt_neox", false, options("5.16.0"));
    CHECK(join(children(*v5.tree, "")) == "gpt_neox,lm_head");
    CHECK(param(*v5.tree, "lm_head.weight")->in_checkpoint);  // renamed from embed_out.weight
    const auto v4 = build_fixture("gpt_neox", false, options("4.44.2"));
    CHECK(cls(*v4.tree, "gpt_neox.layers.0.attention") == "GPTNeoXSdpaAttention");
  }
}

TEST_CASE("registry models: published parameter counts from config.json alone") {
  // fixtures/corpus-configs/*.json are public copies of the Hub config.json files (see the README
  // there); the counts are the checkpoints' published sizes.
  const auto count = [](const char* file, const char* ver = nullptr) {
    const Built b = build(corpus_dir() / file, true, options(ver));
    CHECK_MESSAGE(b.with(Severity::error).empty(), b.report());
    return *b.tree;
  };

  SUBCASE("Meta-Llama-3-8B: 8,030,261,248") {
    // model.safetensors.index.json metadata.total_size 16,060,522,496 bytes / 2 (BF16).
    // By hand (V 128256, H 4096, I 14336, L 32, KV 8*128): embed + lm_head 2*128256*4096 =
    // 1,050,673,152; per layer q,o 2*4096^2 + k,v 2*1024*4096 + mlp 3*14336*4096 + 2 norms 8192 =
    // 218,112,000; * 32 = 6,979,584,000; final norm 4,096.
    for (const char* v : {"4.44.2", "4.57.6", "5.16.0"})
      CHECK(count("meta-llama__Meta-Llama-3-8B.json", v).num_params == 8'030'261'248);
    CHECK(16'060'522'496 / 2 == 8'030'261'248);
  }
  SUBCASE("Llama-3.1-70B-Instruct: 70,553,706,496") {
    // index total_size 141,107,412,992 / 2. By hand: 2*128256*8192 + 80*(2*8192^2 + 2*1024*8192 +
    // 3*28672*8192 + 2*8192) + 8192 = 2,101,346,304 + 68,452,352,000 + 8,192.
    CHECK(count("meta-llama__Llama-3.1-70B-Instruct.json").num_params == 70'553'706'496);
    CHECK(141'107'412'992 / 2 == 70'553'706'496);
  }
  SUBCASE("Qwen2.5-7B: 7,615,616,512") {
    // index total_size 15,231,233,024 / 2 (Qwen2.5-7B-Instruct index; same shapes). By hand:
    // 2*152064*3584 (untied) = 1,089,994,752; per layer q,o 2*3584^2 + k,v 2*512*3584 + q/k/v biases
    // 3584+512+512 + mlp 3*18944*3584 + norms 7168 = 233,057,792; * 28 = 6,525,618,176; norm 3,584.
    CHECK(count("Qwen__Qwen2.5-7B.json").num_params == 7'615'616'512);
    CHECK(15'231'233'024 / 2 == 7'615'616'512);
  }
  SUBCASE("gpt2: 124,439,808") {
    // safetensors docs: model.safetensors holds 137,022,720 F32 elements, including 12 causal-mask
    // buffers h.{i}.attn.bias [1,1,1024,1024] = 1,048,576 each that are not parameters.
    // By hand: wte 50257*768 + wpe 1024*768 + 12*(2 LayerNorms 3,072 + c_attn 768*2304+2304 +
    // c_proj 768*768+768 + c_fc 768*3072+3072 + c_proj 3072*768+768) + ln_f 1,536
    // = 38,597,376 + 786,432 + 12*7,087,872 + 1,536 (lm_head tied to wte).
    const ModuleTree t = count("openai-community__gpt2.json");
    CHECK(t.num_params == 124'439'808);
    CHECK(137'022'720 - 12 * 1'048'576 == 124'439'808);
    CHECK(param(t, "lm_head.weight")->tied_to == "transformer.wte.weight");
  }
  SUBCASE("Qwen3-30B-A3B: 30,532,122,624 (derived by hand)") {
    // H 2048, L 48, nH 32, nKV 4, head_dim 128, V 151936 (untied), 128 experts of width 768, every
    // layer sparse (decoder_sparse_step 1, mlp_only_layers []), no shared expert.
    //   embed_tokens + lm_head: 2 * 151936*2048                        =    622,329,856
    //   per layer: q 4096*2048 + k 512*2048 + v 512*2048 + o 2048*4096  =     18,874,368
    //              q_norm 128 + k_norm 128                              =            256
    //              input/post_attention norms 2*2048                    =          4,096
    //              router 128*2048                                      =        262,144
    //              experts 128 * 3 * 768*2048                           =    603,979,776
    //              layer total                                          =    623,120,640
    //   48 layers                                                       = 29,909,790,720
    //   final norm                                                      =          2,048
    //   total                                                           = 30,532,122,624
    // (the model card's "30.5B total, 3.3B activated").
    CHECK(2 * 151936LL * 2048 + 48 * 623'120'640LL + 2048 == 30'532'122'624);
    for (const char* v : {"4.57.6", "5.16.0"}) {
      CAPTURE(v);
      CHECK(count("Qwen__Qwen3-30B-A3B.json", v).num_params == 30'532'122'624);
    }
  }
  SUBCASE("DeepSeek-V3: 671,026,404,352 main-model parameters + FP8 scales") {
    // Published: 671B main model (+14B MTP module). Our tree counts FP8Linear's weight_scale_inv as
    // parameters; the published count and the fixture generator's EXPECTED.json do not.
    // Scales by hand (blocks of 128; H 7168 = 56 blocks):
    //   attention per layer: q_a [1536,7168] 12*56=672, q_b [24576,1536] 192*12=2,304,
    //     kv_a [576,7168] 5*56=280, kv_b [32768,512] 256*4=1,024, o [7168,16384] 56*128=7,168
    //     = 11,448; * 61 layers                                         =    698,328
    //   dense MLP, layers 0-2: 3 * (gate, up [18432,7168] + down) 3*8,064 =     72,576
    //   MoE layers 3-60 (58): 256 experts * 3 * 896 + shared 3*896 = 690,816; * 58 = 40,067,328
    //   total                                                           = 40,838,232
    for (const char* v : {"4.57.6", "5.16.0"}) {
      CAPTURE(v);
      const ModuleTree t = count("deepseek-ai__DeepSeek-V3.json", v);
      const std::int64_t scales = numel_with_suffix(t, "scale_inv");
      CHECK(scales == 40'838'232);
      CHECK(t.num_params - scales == 671'026'404'352);
      CHECK(buffer_numel(t) == 58 * 256);  // e_score_correction_bias, F32, in the checkpoint
      // The whole checkpoint (684,531,386,000 elements, incl. the MTP layer model.layers.61):
      // the main model with its scales and router buffers, plus the MTP layer = one more MoE
      // decoder layer (with scales and buffer) + its own embed_tokens and shared_head.head
      // (2 * 129280*7168) + enorm, hnorm, shared_head.norm (3 * 7168) + eh_proj [7168, 14336] (BF16).
      const Module& moe_layer = require_module(t, "model.layers.60");
      const std::int64_t mtp = moe_layer.total_numel + 256 + 2 * 129280LL * 7168 + 3 * 7168 + 7168LL * 14336;
      CHECK(mtp == 13'464'128'568);
      CHECK(t.num_params + buffer_numel(t) + mtp == 684'531'386'000);
    }
  }
}

TEST_CASE("registry models: full-size sparse checkpoints (scripts/gen_fixtures.py sparse)") {
  // Generated at test time by ctest's generate_sparse fixture (never committed); skipped when the
  // binary runs on its own without it.
  const fs::path dir = fs::path(SHARDCHECK_GENERATED_DIR) / "deepseek-v3";
  if (!sparse_checkpoint_present(dir)) return;
  const auto exp = read_json(dir / "EXPECTED.json");
  for (const char* v : {"4.57.6", "5.16.0"}) {
    CAPTURE(v);
    const Built b = build(dir, false, options(v));
    CHECK_MESSAGE(b.with(Severity::error).empty(), b.report());
    CHECK_MESSAGE(b.with(Severity::warning).empty(), b.report());
    const ModuleTree& t = *b.tree;
    const std::int64_t scales = breakdown(exp, "deepseek FP8 weight_scale_inv");
    CHECK(scales == 40'838'232);
    CHECK(numel_with_suffix(t, "scale_inv") == scales);  // fused exactly in 5.x: mI 2048 = 16 blocks
    CHECK(t.num_params - scales == exp["num_params"].get<std::int64_t>());
    CHECK(t.num_params - scales == 671'026'404'352);
    CHECK(t.checkpoint_only_numel == breakdown(exp, "deepseek MTP"));
    CHECK(t.num_params + buffer_numel(t) + t.checkpoint_only_numel == exp["checkpoint_numel"].get<std::int64_t>());
    CHECK(exp["checkpoint_numel"].get<std::int64_t>() == 684'531'386'000);
  }
}

// FineGrainedFP8Config(dequantize=True) (--dequantize): plain nn.Linear / plain experts in the model's
// dtype, the *_scale_inv tensors folded into their weights. Then the tree holds exactly what
// EXPECTED.json counts as parameters (its convention already leaves the scales out).
TEST_CASE("registry models: an FP8 checkpoint loaded dequantised") {
  const auto exp = expected("deepseek_v3");
  const std::int64_t scales = breakdown(exp, "deepseek FP8 weight_scale_inv");
  const std::int64_t router_buffers = breakdown(exp, "deepseek mlp.gate.e_score_correction_bias");
  CHECK(scales == 57);  // read from the fixture's EXPECTED.json: 13 in the dense layer, 22 per MoE layer
  for (const char* ver : {"4.57.6", "5.0.0", "5.16.0"}) {
    CAPTURE(ver);
    ResolveOptions opts = options(ver);
    opts.dequantize = true;
    const Built b = build_fixture("deepseek_v3", false, opts);
    CHECK_MESSAGE(b.sink.items().empty(), b.report());  // 5.x: no scale-fusion errors any more
    const ModuleTree& t = *b.tree;
    CHECK(t.dequantized);
    CHECK(t.num_params == exp["num_params"].get<std::int64_t>());
    CHECK(t.num_params == 42'856);
    CHECK(numel_with_suffix(t, "scale_inv") == 0);
    // Every parameter takes torch_dtype (bfloat16), F8 on disk or not.
    CHECK(t.dtype_numel.size() == 1);
    CHECK(t.dtype_numel.count(DType::BF16) == 1);
    CHECK(cls(t, "model.layers.0.self_attn.q_a_proj") == "Linear");
    // Scales, the MTP layer and nothing else are checkpoint-only; with the router buffers that is
    // the whole checkpoint.
    CHECK(t.checkpoint_only_numel == exp["checkpoint_only_numel"].get<std::int64_t>() - router_buffers);
    CHECK(t.num_params + buffer_numel(t) + t.checkpoint_only_numel == exp["checkpoint_numel"].get<std::int64_t>());
    // The same tree from config.json alone.
    const Built co = build_fixture("deepseek_v3", true, opts);
    CHECK(first_difference(t, *co.tree, co.inputs->config.torch_dtype) == "");
  }
  // Without --dequantize nothing changes: FP8Linear with its scales.
  const Built keep = build_fixture("deepseek_v3", false, options("4.57.6"));
  CHECK_FALSE(keep.tree->dequantized);
  CHECK(cls(*keep.tree, "model.layers.0.self_attn.q_a_proj") == "FP8Linear");
  CHECK(numel_with_suffix(*keep.tree, "scale_inv") == scales);
  // A model that is not quantised: a note, and the tree as without the flag.
  ResolveOptions opts = options("4.57.6");
  opts.dequantize = true;
  const Built llama = build_fixture("llama", false, opts);
  CHECK_FALSE(llama.tree->dequantized);
  REQUIRE(llama.sink.items().size() == 1);
  CHECK(llama.sink.items()[0].code == "CFG007");
  CHECK(llama.sink.items()[0].severity == Severity::note);
}

TEST_CASE("registry models: full-size DeepSeek-V3 loaded dequantised") {
  const fs::path dir = fs::path(SHARDCHECK_GENERATED_DIR) / "deepseek-v3";
  if (!sparse_checkpoint_present(dir)) return;
  const auto exp = read_json(dir / "EXPECTED.json");
  for (const char* v : {"4.57.6", "5.16.0"}) {
    CAPTURE(v);
    ResolveOptions opts = options(v);
    opts.dequantize = true;
    const Built b = build(dir, false, opts);
    CHECK_MESSAGE(b.sink.items().empty(), b.report());
    const ModuleTree& t = *b.tree;
    CHECK(t.num_params == 671'026'404'352);  // the published count, now without any scale
    CHECK(t.dtype_numel.at(DType::BF16) == 671'026'404'352);
    CHECK(t.checkpoint_only_numel == breakdown(exp, "deepseek MTP") + breakdown(exp, "deepseek FP8 weight_scale_inv"));
  }
}

TEST_CASE("registry models: phi and starcoder2 from their shape fields (no fixture checkpoints)") {
  // Shape fields of microsoft/phi-2 and bigcode/starcoder2-3b as written here (no copy of their
  // config.json is in the corpus); the counts are the hand arithmetic below, which agree with the
  // Hub's rounded 2.78B / 3.03B.
  const fs::path dir = fs::temp_directory_path() / "shardcheck-test-registry-models";
  fs::create_directories(dir / "phi-2");
  fs::create_directories(dir / "starcoder2-3b");
  std::ofstream(dir / "phi-2" / "config.json")
      << R"({"architectures": ["PhiForCausalLM"], "model_type": "phi", "vocab_size": 51200, "hidden_size": 2560,
            "intermediate_size": 10240, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 32, "hidden_act": "gelu_new", "partial_rotary_factor": 0.4,
            "qk_layernorm": false, "tie_word_embeddings": false, "torch_dtype": "float16"})";
  std::ofstream(dir / "starcoder2-3b" / "config.json")
      << R"({"architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2", "vocab_size": 49152,
            "hidden_size": 3072, "intermediate_size": 12288, "num_hidden_layers": 30, "num_attention_heads": 24,
            "num_key_value_heads": 2, "use_bias": true, "torch_dtype": "bfloat16"})";

  SUBCASE("phi-2: 2,779,683,840") {
    // embed 51200*2560 = 131,072,000; lm_head with bias 131,072,000 + 51,200; per layer q,k,v,dense
    // 4*(2560^2 + 2560) = 26,224,640 + fc1/fc2 2*10240*2560 + 10240 + 2560 = 52,441,600 + LayerNorm
    // 5,120 = 78,671,360; * 32 = 2,517,483,520; final_layernorm 5,120.
    const Built b = build(dir / "phi-2", true, options("4.44.2", "sdpa"));
    CHECK_MESSAGE(b.with(Severity::error).empty(), b.report());
    const auto& t = *b.tree;
    CHECK(t.num_params == 2'779'683'840);
    CHECK(join(children(t, "model.layers.0")) == "self_attn,mlp,input_layernorm,resid_dropout");
    CHECK(join(children(t, "model.layers.0.mlp")) == "activation_fn,fc1,fc2");
    CHECK(cls(t, "model.layers.0.self_attn") == "PhiSdpaAttention");
    CHECK(join(param_names(t, "lm_head")) == "weight,bias");
    CHECK(join(t.no_split_modules) == "PhiDecoderLayer");
    CHECK(t.tied.empty());
  }
  SUBCASE("starcoder2-3b: 3,030,371,328") {
    // embed 49152*3072 = 150,994,944 (tied lm_head); per layer q,o 2*(3072^2 + 3072) + k,v
    // 2*(256*3072 + 256) + c_fc/c_proj 2*12288*3072 + 12288 + 3072 + two LayerNorms 12,288
    // = 95,979,008; * 30 = 2,879,370,240; final norm 6,144.
    const Built b = build(dir / "starcoder2-3b", true, options());
    CHECK_MESSAGE(b.with(Severity::error).empty(), b.report());
    const auto& t = *b.tree;
    CHECK(t.num_params == 3'030'371'328);
    CHECK(join(children(t, "model.layers.0.mlp")) == "c_fc,c_proj,act");
    CHECK(join(param_names(t, "model.layers.0.input_layernorm")) == "weight,bias");
    CHECK(join(param_names(t, "model.layers.0.self_attn.o_proj")) == "weight,bias");
    CHECK(tied_str(t) == "lm_head.weight->model.embed_tokens.weight");
    CHECK(join(t.no_split_modules) == "Starcoder2DecoderLayer");
  }
}
