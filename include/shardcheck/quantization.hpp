#pragma once
// Stage "resolve": a model loaded in 4 bits by bitsandbytes (QLoRA): from_pretrained with
// BitsAndBytesConfig(load_in_4bit=True, ...) replaces every torch.nn.Linear (exactly that class) and
// transformers Conv1D but the modules it keeps whole by Linear4bit, whose weight is a Params4bit
// packing two 4-bit values per byte of the storage dtype (transformers 5.12.1
// integrations/bitsandbytes.py replace_with_bnb_linear, quantizers/base.py get_keys_to_not_convert;
// bitsandbytes 0.50 _ops.py quantize_4bit, nn/modules.py Params4bit).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <string_view>

#include "shardcheck/dtype.hpp"

namespace shardcheck {
struct ModelConfig;

struct ModuleTree;

struct Bnb4bitConfig {
  DType quant_storage = DType::U8;        // bnb_4bit_quant_storage (transformers' default uint8)
  DType compute_dtype = DType::F32;       // bnb_4bit_compute_dtype (default float32)
  std::string quant_type = "fp4";         // fp4 | nf4 (no effect on the layout)
  bool double_quant = false;              // bnb_4bit_use_double_quant (quant state only)
  std::vector<std::string> skip_modules;  // llm_int8_skip_modules: kept whole besides the defaults
  std::string source;                     // "--load-in-4bit", for messages
};

// Rows of a Params4bit holding n elements: ((n + 1) // (itemsize(storage) * 2), 1).
std::int64_t bnb_4bit_rows(std::int64_t n, DType storage);
// Bytes of the QuantState of a 4-bit weight of n elements (not parameters: whole on every rank).
std::uint64_t bnb_4bit_state_bytes(std::int64_t n, bool double_quant);

// A checkpoint saved already quantized by bitsandbytes (config.json's quantization_config with
// quant_method "bitsandbytes"; transformers' save_pretrained of a 4-bit model, e.g. the "-bnb-4bit"
// Hub models): from_pretrained builds the model from that config and loads the packed Params4bit
// bytes as they are. Returns the 4-bit config; nullopt when the checkpoint is not one (`eight_bit`
// set for a load_in_8bit one, which shardcheck does not lay out).
std::optional<Bnb4bitConfig> prequantized_bnb_4bit(const ModelConfig& config, bool& eight_bit);
// The tensors save_pretrained writes beside each packed weight W (bitsandbytes nn/modules.py
// Params4bit / functional.py QuantState.as_dict(packed=True)): W.absmax, W.quant_map,
// W.nested_absmax, W.nested_quant_map, W.quant_state.bitsandbytes__<nf4|fp4>; not parameters.
bool is_bnb_4bit_state_tensor(std::string_view name);

// Rewrites the tree as loaded in 4 bits. `tree` must be the model as transformers builds it (before
// any PEFT adapter).
void quantize_bnb_4bit(ModuleTree& tree, const Bnb4bitConfig& config);

}  // namespace shardcheck
