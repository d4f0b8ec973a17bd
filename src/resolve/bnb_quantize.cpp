// from_pretrained(..., quantization_config=BitsAndBytesConfig(load_in_4bit=True)) as a module tree
// (shardcheck/quantization.hpp). Checked against real transformers 5.12.1 with bitsandbytes 0.50's
// CPU backend: fixtures/peft-oracle/adapters/*/record-<quant>.json.
#include <fmt/format.h>

#include <regex>
#include <set>

#include "resolve/tree_internal.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/quantization.hpp"

namespace shardcheck {

std::uint64_t bnb_4bit_state_bytes(std::int64_t n, bool double_quant) {
  // bitsandbytes functional.py quantize_4bit (blocksize 64 for Params4bit): absmax, one float32 per
  // block, and the 16-entry float32 code of the quant type, a tensor per weight. Double quant
  // (compress_statistics) stores absmax - mean as uint8 blocks of 256 (quantize_blockwise): one byte
  // per block, the float32 offset, a float32 absmax per 256 blocks and its own 256-entry float32
  // dynamic code, again a tensor per weight. Checked with bitsandbytes 0.50 (fixtures/peft-oracle
  // records' quant_state_bytes).
  const auto blocks = static_cast<std::uint64_t>((n + 63) / 64);
  if (!double_quant) return 4 * blocks + 64;
  return blocks + 64 + 4 + 4 * ((blocks + 255) / 256) + 1024;
}

std::int64_t bnb_4bit_rows(std::int64_t n, DType storage) {
  // bitsandbytes/_ops.py quantize_4bit fake: ((n + 1) // (quant_storage.itemsize * 2), 1).
  const std::int64_t per_row = std::int64_t{std::max(1, dtype_bits(storage) / 8)} * 2;
  return (n + 1) / per_row;
}

std::optional<Bnb4bitConfig> prequantized_bnb_4bit(const ModelConfig& config, bool& eight_bit) {
  eight_bit = false;
  const std::string q = "quantization_config.";
  if (config.string_field(q + "quant_method") != "bitsandbytes") return std::nullopt;
  auto flag = [&](const char* a, const char* b) {
    for (const char* k : {a, b})
      if (config.bool_field(q + k) == true) return true;
    return false;
  };
  if (!flag("load_in_4bit", "_load_in_4bit")) {
    eight_bit = flag("load_in_8bit", "_load_in_8bit");
    return std::nullopt;
  }
  // transformers utils/quantization_config.py BitsAndBytesConfig.to_dict: dtype names without "torch.".
  auto dtype = [&](const char* key, DType fallback) {
    const auto name = config.string_field(q + key);
    return name ? parse_torch_dtype(*name).value_or(fallback) : fallback;
  };
  Bnb4bitConfig c;
  c.quant_storage = dtype("bnb_4bit_quant_storage", DType::U8);
  c.compute_dtype = dtype("bnb_4bit_compute_dtype", DType::F32);
  if (auto type = config.string_field(q + "bnb_4bit_quant_type")) c.quant_type = *type;
  if (auto dq = config.bool_field(q + "bnb_4bit_use_double_quant")) c.double_quant = *dq;
  if (const ConfigField* skip = config.field(q + "llm_int8_skip_modules"))
    if (const ValueList* items = skip->value.as_list())
      for (const Value& m : *items)
        if (const std::string* name = m.as_string()) c.skip_modules.push_back(*name);
  c.source = "config.json quantization_config";
  return c;
}

bool is_bnb_4bit_state_tensor(std::string_view name) {
  for (std::string_view suffix : {".absmax", ".quant_map", ".nested_absmax", ".nested_quant_map",
                                  ".quant_state.bitsandbytes__nf4", ".quant_state.bitsandbytes__fp4"})
    if (name.ends_with(suffix)) return true;
  return false;
}

namespace {

// quantizers/quantizers_utils.py should_convert_module: a pattern matching as a prefix with a dot, as a
// regex from the start (re.match), or as a suffix of the module name keeps it whole.
bool kept_whole(const std::string& name, const std::vector<std::string>& patterns) {
  for (const auto& key : patterns) {
    if (name.ends_with(key)) return true;
    try {
      if (std::regex_search(name, std::regex(key), std::regex_constants::match_continuous)) return true;
    } catch (const std::regex_error&) {
      if (name.starts_with(key)) return true;
    }
  }
  return false;
}

}  // namespace

void quantize_bnb_4bit(ModuleTree& tree, const Bnb4bitConfig& config) {
  // get_keys_to_not_convert: tied parameters (both ends), the module of the last parameter, and the
  // output embeddings; every name without ".weight".
  std::vector<std::string> keep = config.skip_modules;
  auto strip = [](const std::string& k) { return k.ends_with(".weight") ? k.substr(0, k.size() - 7) : k; };
  for (const auto& t : tree.tied) {
    keep.push_back(strip(t.alias));
    keep.push_back(strip(t.target));
  }
  std::string last;
  for (const auto& m : tree.modules)
    for (const auto& p : m.params)
      if (!p.buffer && p.tied_to.empty()) last = qualified_name(m.path, p.name);
  if (!last.empty()) keep.push_back(strip(last));
  if (!tree.output_embeddings.empty()) keep.push_back(tree.output_embeddings);

  for (auto& m : tree.modules) {
    // `type(module) is nn.Linear` (subclasses stay) or isinstance Conv1D.
    const bool conv1d = tree.is_instance(m, "Conv1D");
    if ((m.cls != "Linear" && !conv1d) || m.path.empty() || kept_whole(m.path, keep)) continue;
    m.cls = "Linear4bit";
    for (auto& p : m.params) {
      if (p.name != "weight" || p.buffer) continue;
      // The logical nn.Linear weight [out, in] (Conv1D's [in, out] transposed) stays known for LoRA.
      p.unpacked_shape = conv1d ? std::vector<std::int64_t>{p.shape.at(1), p.shape.at(0)} : p.shape;
      tree.quant_state_bytes += bnb_4bit_state_bytes(p.numel, config.double_quant);
      p.shape = {bnb_4bit_rows(p.numel, config.quant_storage), 1};
      p.numel = p.shape[0];
      p.dtype = config.quant_storage;
      p.requires_grad = false;  // Params4bit(requires_grad=False)
    }
  }
  tree.class_chains["Linear4bit"] = {"Linear4bit", "Linear", "Module"};
  tree.bnb_4bit = config;
  finalize_counts(tree);
}

}  // namespace shardcheck
