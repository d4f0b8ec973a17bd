// The table of codes raised by name (codes/finding_codes_table.hpp): the load stages' codes and the
// resolve and simulate codes not yet moved to a check of their own (src/check/ documents those),
// grouped by stage, in code order within a group. Severity is the harshest the code is reported with;
// exit_code is the ExitCode its diagnostic carries (for a code reported with several, the one of its
// harshest case). Codes are stable: never renumber, only append.
#include "codes/finding_codes_table.hpp"

namespace shardcheck {
namespace {

constexpr FindingCode kCodes[] = {
    // ---- safetensors headers (src/load/safetensors.cpp) ----
    {"ST001", Severity::error, ExitCode::truncated_file, "File is shorter than the 8-byte header length prefix",
     "A safetensors file begins with an 8-byte little-endian length N of its JSON header; this file is "
     "shorter than those 8 bytes, so it is empty or was cut short. The reference reader "
     "(safetensors/src/tensor.rs @24b0b28, read_metadata) rejects it with HeaderTooSmall, which the Python "
     "binding raises as SafetensorError when the job loads its weights. Download the file again."},
    {"ST002", Severity::error, ExitCode::bad_safetensors, "Header length is above the format's 100,000,000-byte limit",
     "The length prefix announces a header longer than 100,000,000 bytes, the cap the format sets against "
     "denial-of-service headers; safetensors/src/tensor.rs @24b0b28 refuses it with HeaderTooLarge "
     "(huggingface_hub's header parser is stricter still, at 25,000,000 bytes). No loader will open the "
     "file. The prefix is implausible: the file is not safetensors or its first bytes are corrupted, so "
     "download or re-export it."},
    {"ST003", Severity::error, ExitCode::truncated_file, "Header runs past the end of the file",
     "The length prefix announces N header bytes but fewer than N follow it, so the download stopped inside "
     "the header (or a caller supplied fewer header bytes than N). safetensors/src/tensor.rs @24b0b28 "
     "reports InvalidHeaderLength when 8 + N exceeds the file, and no tensor of the shard can be read. "
     "Download the file again."},
    {"ST004", Severity::error, ExitCode::bad_safetensors, "Header bytes are not valid UTF-8",
     "The JSON header must be UTF-8; shardcheck points at the first invalid byte. The reference reader "
     "(safetensors/src/tensor.rs @24b0b28) fails with InvalidHeader (a UTF-8 error) before it looks at any "
     "tensor, so loading the shard fails on every rank. The file is corrupted or not safetensors; download "
     "or re-save it."},
    {"ST005", Severity::error, ExitCode::bad_safetensors, "Header is not valid JSON",
     "After the length prefix come N bytes of JSON describing the tensors, and these do not parse. "
     "safetensors/src/tensor.rs @24b0b28 raises InvalidHeaderDeserialization (\"invalid JSON in header\"), "
     "which surfaces as SafetensorError when the checkpoint is loaded. Leading and trailing JSON whitespace "
     "is accepted, as the crate accepts it although the README says the header must begin with a brace; "
     "re-download or re-save the file."},
    {"ST006", Severity::error, ExitCode::bad_safetensors, "Header JSON is not an object",
     "The header must be a JSON object mapping tensor names to entries, plus an optional __metadata__; this "
     "one is an array, string, number or literal. The reference reader cannot deserialize it and fails with "
     "InvalidHeaderDeserialization (safetensors/src/tensor.rs @24b0b28). The file was not written by a "
     "safetensors writer; re-save it."},
    {"ST007", Severity::error, ExitCode::bad_safetensors, "__metadata__ is not a map of strings to strings",
     "The optional __metadata__ entry must map strings to strings (\"Arbitrary JSON is not allowed\", "
     "safetensors README @24b0b28); a non-object, a non-string value or a repeated __metadata__ key is "
     "reported, while null is accepted because serde reads it as no metadata. safetensors/src/tensor.rs "
     "@24b0b28 rejects the rest with InvalidHeaderDeserialization, so the file will not load. Rewrite the "
     "metadata values as strings."},
    {"ST008", Severity::error, ExitCode::bad_safetensors,
     "Tensor entry is not an object with exactly dtype, shape and data_offsets",
     "Each tensor's entry must be an object with exactly the keys dtype, shape and data_offsets, each once; "
     "shardcheck reports a non-object entry and every missing, unexpected or repeated key. serde in "
     "safetensors/src/tensor.rs @24b0b28 refuses all of these (a repeated key is a \"duplicate field\") with "
     "InvalidHeaderDeserialization, so the whole file fails to load. The writer is broken; re-save the "
     "checkpoint with a safetensors library."},
    {"ST009", Severity::error, ExitCode::bad_safetensors, "Tensor dtype is not one of the 22 known dtype names",
     "dtype must be one of the 22 names the reference reader knows (BOOL, U8, F16, BF16, F32, F8_E4M3, F4 "
     "and so on), spelled exactly, as names are case-sensitive. An unknown name fails deserialization in "
     "safetensors/src/tensor.rs @24b0b28 (InvalidHeaderDeserialization), and shardcheck cannot size the "
     "tensor. Fix the name; if the dtype is newer than this reader, a newer safetensors may know it."},
    {"ST010", Severity::error, ExitCode::bad_safetensors, "Tensor shape is not an array of non-negative integers",
     "shape must be a JSON array of non-negative integers below 2^64; zero-element and zero-rank (scalar) "
     "shapes are allowed. Anything else fails deserialization in safetensors/src/tensor.rs @24b0b28 "
     "(InvalidHeaderDeserialization), and without a shape shardcheck cannot place the parameter in an FSDP "
     "unit or count its bytes. Re-save the file."},
    {"ST011", Severity::error, ExitCode::bad_safetensors, "data_offsets is not a pair of non-negative integers",
     "data_offsets must be [begin, end], two non-negative integers giving the tensor's byte range relative "
     "to the start of the data region, end being one past the last byte. Any other value fails "
     "deserialization in safetensors/src/tensor.rs @24b0b28 (InvalidHeaderDeserialization), and the "
     "tensor's data cannot be located. Re-save the file."},
    {"ST012", Severity::error, ExitCode::bad_safetensors, "data_offsets ends before it begins",
     "A tensor's byte range [begin, end] must have end >= begin. The reference reader's Metadata::validate "
     "(safetensors/src/tensor.rs @24b0b28) rejects a reversed range with InvalidOffset, so the file cannot "
     "be loaded. The header was corrupted or edited by hand; re-save the file."},
    {"ST013", Severity::error, ExitCode::bad_safetensors, "Tensor element count or bit size overflows 64 bits",
     "The product of the shape's dimensions, or that product times the dtype's bit width, does not fit in "
     "64 bits; shardcheck also rejects a dimension above 2^63-1 in a zero-element shape, which the crate "
     "accepts but no framework can hold. safetensors/src/tensor.rs @24b0b28 fails with ValidationOverflow. "
     "Such a shape is corruption rather than a real tensor; re-save the file."},
    {"ST014", Severity::error, ExitCode::bad_safetensors, "Tensor size is not a whole number of bytes",
     "Elements times the dtype's bit width must be a multiple of 8: sub-byte dtypes (F4, F6_E2M3, F6_E3M2) "
     "must pack into whole bytes. safetensors/src/tensor.rs @24b0b28 raises MisalignedSlice otherwise, so "
     "the file cannot be loaded. Re-export the tensor with a shape whose element count fills whole bytes."},
    {"ST015", Severity::error, ExitCode::bad_safetensors,
     "data_offsets span differs from the size the shape and dtype imply",
     "end - begin must equal elements x bits / 8 for the tensor's dtype and shape; shardcheck shows both "
     "numbers. safetensors/src/tensor.rs @24b0b28 raises TensorInvalidInfo (\"invalid shape, data type, or "
     "offset for tensor\"), so loading fails. The header and the data disagree, and byte counts derived from "
     "either would be wrong; re-save the file."},
    {"ST016", Severity::error, ExitCode::bad_safetensors, "The same tensor name appears twice in the header",
     "Tensor names must be unique: the safetensors README @24b0b28 says duplicate keys are disallowed, and "
     "warns that not all parsers respect this. JSON readers disagree on which entry wins, so two tools can "
     "load different data under one name; shardcheck keeps the first entry and reports the rest. Rewrite "
     "the file."},
    {"ST017", Severity::error, ExitCode::bad_safetensors, "The first tensor does not start at data offset 0",
     "The data region must be entirely indexed, without holes, which prevents polyglot files (safetensors "
     "README @24b0b28). Sorted by data_offsets, the first tensor must therefore begin at 0; "
     "safetensors/src/tensor.rs @24b0b28 (Metadata::validate) raises InvalidOffset otherwise. Leading data "
     "bytes owned by no tensor mean a corrupted or tampered file; re-save it."},
    {"ST018", Severity::error, ExitCode::bad_safetensors, "A hole of unowned bytes between two tensors' data",
     "Sorted by data_offsets, each tensor must begin exactly where the previous one ended; bytes owned by "
     "no tensor are forbidden by the format (safetensors README @24b0b28: no holes, no polyglot files). "
     "safetensors/src/tensor.rs @24b0b28 (Metadata::validate) raises InvalidOffset at the first gap, while "
     "shardcheck reports every one, and only when every entry has usable offsets, since a malformed entry "
     "might fill the gap. Re-save the file."},
    {"ST019", Severity::error, ExitCode::bad_safetensors, "Two tensors' data overlap",
     "Two tensors claim some of the same data bytes. The reference reader rejects this with InvalidOffset "
     "(safetensors/src/tensor.rs @24b0b28, Metadata::validate, which also catches several tensors placed at "
     "one offset), so the file cannot be loaded, and a lenient reader would make the tensors alias each "
     "other's weights. The file is corrupted or crafted; re-save it."},
    {"ST020", Severity::error, ExitCode::truncated_file, "File is shorter than its header says: a download cut short",
     "A safetensors file must be exactly 8 + N + (end of the data region) bytes long; this one is shorter, "
     "and shardcheck says how many bytes are missing (or that the header describes more data than any file "
     "can hold). safetensors/src/tensor.rs @24b0b28 raises MetadataIncompleteBuffer, so loading the weights "
     "would fail after the job has started. This is the usual sign of an interrupted download: download the "
     "file again."},
    {"ST021", Severity::error, ExitCode::truncated_file, "Bytes after the end of the data region",
     "The file is longer than 8 + N + (end of the data region): it carries trailing bytes no tensor owns, "
     "which the format forbids to prevent polyglot files. safetensors/src/tensor.rs @24b0b28 raises "
     "MetadataIncompleteBuffer for it, as for a short file. The file was corrupted or appended to; download "
     "or re-save it."},
    {"ST022", Severity::error, ExitCode::io, "The safetensors file cannot be opened or read",
     "shardcheck opens each safetensors file and reads its 8-byte length prefix and its header; that failed "
     "here (no such file, permission denied, not a regular file, or a short read because the file shrank "
     "while being read). The reference reader reports IoError in the same situation. Check the path and "
     "permissions, and that no download is still writing the file."},

    // ---- checkpoint index and shards (src/load/checkpoint_index.cpp) ----
    {"IX001", Severity::error, ExitCode::io, "The model directory is missing, not a directory, or cannot be listed",
     "shardcheck reads the checkpoint from a model directory: the index and its shards, a single "
     "model.safetensors, or loose *.safetensors files. The path does not exist, is not a directory, or its "
     "entries cannot be listed, so nothing about the checkpoint can be checked, and a job pointed at the "
     "same path would fail to load. Check the path and its permissions."},
    {"IX002", Severity::error, ExitCode::io, "model.safetensors.index.json exists but cannot be read",
     "The index file is present but could not be read (permissions, or not a regular file). shardcheck "
     "still reads every *.safetensors file in the directory, so the shards' own problems are reported in "
     "the same run, but it cannot check them against the index. Fix the file's permissions or download it "
     "again."},
    {"IX003", Severity::error, ExitCode::bad_index, "The index is not valid JSON",
     "model.safetensors.index.json must be UTF-8 JSON; this one is not. Loaders such as huggingface_hub "
     "(hf_api.py @ee0a451, get_safetensors_metadata) parse it to learn which shard holds each tensor, so "
     "loading the checkpoint would fail. shardcheck still checks the shards beside it on their own; "
     "download the index again or copy it from the original checkpoint."},
    {"IX004", Severity::error, ExitCode::bad_index, "The index JSON is not an object",
     "The index must be a JSON object of the form {\"metadata\": {...}, \"weight_map\": {...}}; this one is an "
     "array, string, number or literal, so no loader can find a weight map in it. shardcheck still checks "
     "the shards on their own. Copy the index from the original checkpoint, or regenerate it by re-saving "
     "the model."},
    {"IX005", Severity::error, ExitCode::bad_index, "weight_map is missing or not an object",
     "weight_map maps each tensor name to the shard file that holds it, and it is what huggingface_hub "
     "(hf_api.py @ee0a451, get_safetensors_metadata) reads to find the shards (metadata.total_size is only "
     "informational). Without it the shards cannot be matched to tensors; shardcheck checks the shards on "
     "their own. Regenerate the index."},
    {"IX006", Severity::error, ExitCode::bad_index, "A weight_map value is not a shard file name",
     "Every weight_map value must be a non-empty string naming a .safetensors file of the model directory. "
     "A number, null or empty string names no file, so the tensor it lists cannot be loaded from anywhere. "
     "Fix the entry or regenerate the index by re-saving the model."},
    {"IX007", Severity::error, ExitCode::bad_index, "A tensor is listed twice in weight_map",
     "A tensor name appears twice in weight_map, in the same shard or in two different ones. Which listing "
     "a JSON reader keeps is not defined (shardcheck uses the first), so when the shards differ a loader "
     "may look for the tensor in the wrong file. Regenerate the index from the shards."},
    {"IX008", Severity::error, ExitCode::bad_index, "A shard path in the index leads outside the model directory",
     "Shard paths in weight_map must be relative and free of `..`; an absolute path or one that climbs out "
     "of the model directory is never opened by shardcheck, nor requested from the Hub. Such an index "
     "points loaders at files outside the checkpoint. Only the path text is judged: symlinks are followed, "
     "because the Hugging Face cache is built of them. Fix the index."},
    {"IX009", Severity::error, ExitCode::bad_index, "A shard named by the index does not exist",
     "weight_map names a shard file that is not in the model directory, so the download is incomplete. "
     "Loading the checkpoint would fail on that file after the job has started on every rank, and "
     "shardcheck cannot check the tensors the index assigns to it. Fetch the missing shard."},
    {"IX010", Severity::error, ExitCode::bad_index, "A listed tensor is not in the shard the index names",
     "The index says a tensor is in one shard, but that shard's header does not hold it; shardcheck says "
     "which shard does, if any. The Hub client trusts the index (huggingface_hub (hf_api.py @ee0a451, "
     "get_safetensors_metadata) does not check it against the shards), so index-driven loaders would look "
     "for the tensor in the wrong file. Regenerate the index from the shards, e.g. by re-saving the model."},
    {"IX011", Severity::error, ExitCode::bad_index, "A listed tensor is also stored in another shard",
     "The tensor is in the shard the index names and also in another shard, but a tensor must be stored in "
     "exactly one shard. Which copy a loader uses is unspecified, and the two copies need not be equal. "
     "Remove the stray copy or re-save the checkpoint."},
    {"IX012", Severity::error, ExitCode::bad_index, "A shard holds a tensor the index does not list",
     "A shard's header holds a tensor that weight_map does not list. Loaders driven by the index will never "
     "load it, so the parameter it was meant to fill may end up missing and randomly initialised. "
     "Regenerate the index from the shards."},
    {"IX013", Severity::error, ExitCode::bad_index,
     "Index metadata is not an object, or total_size is not a byte count",
     "metadata is free-form for the Hub client (huggingface_hub (hf_api.py @ee0a451, "
     "get_safetensors_metadata) returns it as it is), but when present it must be an object, and "
     "metadata.total_size must be a non-negative integer byte count; an integral float such as 1.6e10, "
     "which some writers emit, is accepted. shardcheck reads only total_size from it. Fix or remove the "
     "field."},
    {"IX014", Severity::error, ExitCode::bad_index, "metadata.total_size differs from the shards' data bytes",
     "When every shard could be read, shardcheck sums the data bytes their headers describe and compares "
     "the sum with metadata.total_size. A difference usually means a shard was replaced or the index is "
     "stale, although some writers count total_size differently (for example before deduplicating shared "
     "tensors). If the shards are right, regenerate the index."},
    {"IX015", Severity::warning, ExitCode::ok, "A shard-named file on disk is not referenced by the index",
     "A file named like the index's shards (prefix-NNNNN-of-MMMMM.safetensors) sits in the model directory, "
     "but weight_map never names it. It is probably left over from an earlier save, or the index is stale; "
     "nothing loads it, so it harms nothing but disk space, hence a warning. Delete it or regenerate the "
     "index."},
    {"IX016", Severity::error, ExitCode::bad_index, "Several safetensors files but no index to say how they relate",
     "The directory holds several *.safetensors files but neither model.safetensors.index.json nor "
     "model.safetensors, so loaders cannot tell which tensor is where; huggingface_hub (hf_api.py @ee0a451, "
     "get_safetensors_metadata) looks only for those two files and otherwise reports the repository as not "
     "a safetensors repo. shardcheck still reads every file. Copy the index file from the original "
     "checkpoint."},

    // ---- model config.json (src/load/model_config.cpp, src/resolve/module_tree.cpp) ----
    {"CFG001", Severity::error, ExitCode::bad_model_config, "config.json is not valid JSON",
     "shardcheck parses config.json to learn the model type and the fields every parameter shape is "
     "computed from; this file does not parse (the location gives line and column), or holds a value the "
     "parser refuses, such as a number beyond double range. Without it the model cannot be laid out or "
     "planned. Fix the JSON or download config.json again."},
    {"CFG002", Severity::error, ExitCode::bad_model_config, "config.json is not a JSON object",
     "The top level of config.json must be an object of configuration fields; this one is an array, string, "
     "number or literal. No model configuration can be read from it, so the model cannot be planned. Check "
     "that the path points at a model's config.json."},
    {"CFG003", Severity::error, ExitCode::bad_model_config, "config.json has no string model_type",
     "Every transformers config.json names its model_type, which selects the architecture and, in "
     "shardcheck, the registry entry under rules/models/. It is missing, empty or not a string here, so the "
     "model cannot be identified. Check that this is a model directory and its config.json is complete."},
    {"CFG004", Severity::error, ExitCode::bad_model_config, "architectures is not a list of class names",
     "When present and not null, architectures must be a list of strings naming model classes such as "
     "LlamaForCausalLM; shardcheck uses the first to choose which head class of the registry entry to "
     "expand. Any other value leaves the class to build unknown. Fix the field or remove it."},
    {"CFG005", Severity::error, ExitCode::bad_model_config, "torch_dtype or dtype is not a torch dtype name",
     "The checkpoint dtype field (torch_dtype, written by transformers 4.x; dtype, written by transformers "
     "5) must name a torch dtype such as \"bfloat16\". shardcheck uses it as the model's parameter dtype, "
     "which every byte count and FSDP's uniform-dtype checks depend on, so a value it cannot read stops "
     "planning. Fix the field, or remove it to plan in float32."},
    {"CFG006", Severity::error, ExitCode::bad_model_config,
     "config.json lacks a field the model's layout needs, or a size does not evaluate",
     "shardcheck computes every parameter shape from config.json with the registry's formulas for the "
     "model_type. A derived field could not be computed (almost always a shape field missing from "
     "config.json), or a formula gave a negative, overflowing or non-integer size, so the module tree, and "
     "with it every FSDP unit and byte count, cannot be built. Make config.json give every field the "
     "model's layout uses."},
    {"CFG007", Severity::note, ExitCode::ok, "--dequantize was given but config.json has no quantization_config",
     "--dequantize reproduces from_pretrained with the checkpoint's quantization_config set to dequantize "
     "(e.g. FineGrainedFP8Config(dequantize=True)); transformers 5.x also dequantises by itself when no GPU "
     "can run the quantised kernels (quantizers/quantizer_finegrained_fp8.py, validate_environment). This "
     "config.json has no quantization_config, so the checkpoint is not quantised and the flag changes "
     "nothing; drop it."},

    // ---- input files (src/load/model_config.cpp, src/load/model_source.cpp) ----
    {"CFG008", Severity::error, ExitCode::unknown_model, "A bitsandbytes 8-bit checkpoint",
     "config.json's quantization_config says quant_method bitsandbytes with load_in_8bit: from_pretrained "
     "builds Linear8bitLt layers whose Int8Params and their statistics shardcheck does not lay out, so it "
     "gives no plan rather than one of 16-bit weights. 4-bit checkpoints (load_in_4bit) are laid out."},
    {"IO001", Severity::error, ExitCode::io, "config.json cannot be opened",
     "shardcheck could not open the model's config.json for reading: it is missing, unreadable, or not a "
     "file. Without it neither the architecture nor any parameter shape is known, so nothing can be "
     "planned. Check the path and permissions, or download config.json."},
    {"IO002", Severity::error, ExitCode::io, "The model argument is neither a local path nor a valid Hub model id",
     "The model argument may be a model directory, a config.json, or a Hub model id (org/name[@revision]). "
     "Nothing exists at the given path and the text is not a valid model id, so there is nothing to read. "
     "Give the directory that holds config.json (and the safetensors files, if downloaded), or a model id "
     "such as meta-llama/Meta-Llama-3-8B."},
    {"IO004", Severity::note, ExitCode::ok,
     "The model (or --adapter) argument is not a local path; it is tried as a Hub id",
     "A model argument such as llama3-8b or models/x could be a local directory or a Hub model id. When no "
     "local file or directory of that name exists and the Hub lookup then fails (offline, not found, no "
     "network), this note comes first, with the closest name in that directory if one is a likely typo, "
     "so that a mistyped path is not reported only as a network error. The Hub's own finding follows and "
     "decides the exit code. --adapter takes a Hub id the same way (an adapter repository: "
     "adapter_config.json and the header of adapter_model.safetensors)."},
    {"IO005", Severity::error, ExitCode::io, "The adapter's adapter_config.json cannot be read",
     "--adapter takes a PEFT adapter directory (holding adapter_config.json, as peft's save_pretrained "
     "writes it) or the adapter_config.json itself. Nothing readable is at the given path, so the adapter's "
     "layers, and with them the PeftModel's units and memory, are unknown. Check the path."},
    {"IO003", Severity::error, ExitCode::io, "The accelerate config file cannot be read",
     "lint and check read the accelerate YAML named on the command line (or found where accelerate looks "
     "for it: $HF_HOME/accelerate, ${XDG_CACHE_HOME:-~/.cache}/huggingface/accelerate). The path does not "
     "exist, is a directory, or cannot be opened, so nothing was checked; `accelerate launch` would fail "
     "the same way. lint, check and plan all exit with 3 (I/O). Check the path, or run `accelerate config` "
     "to write one."},

    // ---- architecture registry (src/resolve/registry.cpp, module_tree.cpp, checkpoint_match.cpp) ----
    {"REG001", Severity::error, ExitCode::bad_rules, "A file of the architecture registry (rules/models) is malformed",
     "The architecture registry, rules/models/*.yaml (format in rules/models/README.md), describes the "
     "module tree transformers builds for each model_type. A file in it does not match that format, or its "
     "`extends` names an unknown file or forms a cycle; the location gives file, line and column. This is a "
     "problem of shardcheck's rules, not of the model: fix the file or reinstall the rules."},
    {"REG002", Severity::error, ExitCode::bad_rules, "The architecture registry directory was not found",
     "shardcheck expects its architecture registry in the models/ directory of its rules directory; there "
     "is none, so no model can be laid out. This is an installation problem, not a problem of the model. "
     "Pass --rules DIR or set SHARDCHECK_RULES to shardcheck's rules/ directory."},
    {"REG003", Severity::error, ExitCode::bad_rules, "A registry expression failed on this config.json",
     "Registry entries compute config defaults, derived fields, the no-split module list and activation "
     "sizes with expressions over config.json's fields; one of them raised an error for this config. That "
     "is a gap in the registry entry for this model_type rather than a fault of the checkpoint, and the "
     "model cannot be planned until the entry in rules/models is fixed."},
    {"REG004", Severity::error, ExitCode::bad_rules, "The registry uses an undeclared class or has a base-class cycle",
     "While expanding the module tree, the registry named a class that neither the model's rules/models "
     "file nor the builtins declare, or a class whose base classes form a cycle. That is a bug in the "
     "registry, not in config.json, and the model cannot be laid out. Fix the rules/models file."},
    {"REG005", Severity::error, ExitCode::bad_rules, "A checkpoint rule of the registry is invalid",
     "A model's checkpoint rules (tensor renames, ignore patterns for unexpected tensors, the dequantize "
     "condition) could not be evaluated for this config, e.g. an unterminated ${ in a pattern or a bad "
     "regular expression. These rules reproduce how from_pretrained pairs state-dict keys with parameters "
     "(transformers modeling_utils.py), so without them the checkpoint cannot be matched. Fix the "
     "rules/models file."},
    {"REG006", Severity::error, ExitCode::bad_rules,
     "A rules file other than the architecture registry is missing or malformed",
     "Besides the architecture registry (REG001), shardcheck's knowledge is data in three files: "
     "rules/accelerate/schema.yaml (accelerate's config keys: types, choices, renames, the versions in which "
     "each key exists), rules/versions.yaml (which torch, transformers and accelerate releases go together) "
     "and rules/peft.yaml (peft's default LoRA targets per model, MoE target conversion, the FSDP+QLoRA "
     "requirements). One of them is missing, "
     "unreadable or does not match its format, so the checks that need it cannot run. This is a problem of "
     "shardcheck's rules, not of the user's input: restore the file or point --rules at a complete rules "
     "directory."},

    // ---- architecture selection (src/resolve/build_tree.cpp) ----
    {"ARCH001", Severity::error, ExitCode::unknown_model, "model_type is not in the architecture registry",
     "shardcheck lays a model out from its registry entry, rules/models/MODEL_TYPE.yaml. With a checkpoint "
     "but no entry it warns and guesses module classes from tensor names, with registration order taken "
     "from the checkpoint, so wrap classes and unit order may differ from what transformers builds. Without "
     "a checkpoint there is nothing to infer from and it is an error (exit code 11); add a rules/models "
     "file for the model type. A config.json with auto_map is a trust_remote_code model (InternLM, older "
     "Phi-3 and Qwen repositories): its classes come from the repository's own Python files, which the "
     "finding names, not from transformers."},
    {"ARCH002", Severity::error, ExitCode::unknown_model,
     "A composite (multimodal) model_type is not in the registry; only its text_config is",
     "Multimodal wrappers keep the language model in text_config (e.g. llava around llama, gemma3 around "
     "gemma3_text). When the top-level model_type has no registry entry but text_config's has one, "
     "shardcheck lays out the text model so that something can be shown, but the vision tower, the "
     "projector and their layer classes (which the composite model's _no_split_modules adds, and which "
     "accelerate wraps) are missing: the units, the per-rank shards and the memory are not the job's. "
     "This is therefore an error (exit code 11) and the plan gets no fit verdict. Describe the whole model "
     "in rules/models/<model_type>.yaml."},
    {"ARCH003", Severity::error, ExitCode::usage, "The requested architecture class is not described by the registry",
     "A registry entry lists the head classes it can build for its model_type. When config.json's "
     "architectures names another, shardcheck warns and uses the entry's first class, so the head and its "
     "parameters may differ from the real model. When --architecture names a class the entry does not list, "
     "it is a usage error (exit code 2); choose one of the listed classes."},

    // ---- checkpoint matching (src/resolve/checkpoint_match.cpp) ----
    {"ARCH004", Severity::warning, ExitCode::ok,
     "The wrap classes of a model inferred from its tensor names are guessed",
     "A model_type the registry does not describe is laid out from its checkpoint's tensor names (ARCH001), "
     "and its repeated block gets a guessed class name. accelerate's TRANSFORMER_BASED_WRAP without a class "
     "list uses the model class's own _no_split_modules, which only the model's code knows, so the plan "
     "wraps the guessed block in its place and says so. Give the real class with --wrap-cls "
     "(fsdp_transformer_layer_cls_to_wrap) to plan what the job will do."},
    {"ARCH005", Severity::error, ExitCode::findings, "SDPA attention asked of a model that has none",
     "transformers loads a model with attn_implementation=\"sdpa\" only when its class supports it "
     "(PreTrainedModel._supports_sdpa); GPT-OSS does not (modeling_gpt_oss.py, 5.12.1: its attention adds "
     "learned sinks), and from_pretrained raises a ValueError that it does not support an attention "
     "implementation through torch.nn.functional.scaled_dot_product_attention yet. Without an explicit choice "
     "transformers picks eager for such a model, and so does shardcheck (rules/models/<type>.yaml "
     "`supports_sdpa: false`)."},
    {"ARCH006", Severity::error, ExitCode::findings, "transformers' model code fails for this configuration",
     "Some configurations reach code paths of a transformers release that raise for every input: the model "
     "loads, and the job dies at its first forward. Each such case is registry data (rules/models/<type>.yaml "
     "`model_errors`: the condition on config.json and the release, the error, what to do) and was seen in a "
     "real run (fixtures/oracle2/errors). DeepSeek-V2's `topk_method: group_limited_greedy` (DeepSeek-V2 and "
     "V2-Chat; V2-Lite is greedy) reads an attribute DeepseekV2Moe never sets in transformers 5.12.1 "
     "(modeling_deepseek_v2.py route_tokens_to_experts: self.num_experts): AttributeError."},
    {"MT001", Severity::warning, ExitCode::ok, "Checkpoint tensors have no place in the module tree",
     "shardcheck pairs checkpoint tensors with parameters the way from_pretrained does (transformers "
     "modeling_utils.py: base_model_prefix added or stripped, _keys_to_ignore_on_load_unexpected, 5.x "
     "weight conversions). The tensors left over would be dropped on load, and transformers warns \"Some "
     "weights of the model checkpoint were not used\". It can mean a wrong --transformers-version or "
     "model_type, in which case the plan describes a different model than the weights; check both."},
    {"MT002", Severity::error, ExitCode::model_mismatch,
     "A checkpoint tensor's shape differs from the shape config.json implies",
     "The tensor's shape in the safetensors header differs from the parameter shape the registry computes "
     "from config.json for this model_type. The checkpoint and config.json disagree, or the registry is "
     "wrong for this model; either way the weights cannot be loaded into the model as configured, and FSDP "
     "unit sizes would be wrong. Check that config.json belongs to these weights."},
    {"MT003", Severity::error, ExitCode::model_mismatch, "Model parameters are missing from the checkpoint",
     "Parameters of the module tree (other than tied aliases and buffers) that no checkpoint tensor fills "
     "would be randomly initialised by from_pretrained, so training would start from partly random weights "
     "without an error. The download may be incomplete, or config.json describes a different model than the "
     "weights."},
    {"MT004", Severity::error, ExitCode::model_mismatch,
     "Fused checkpoint tensors do not add up to the fused parameter",
     "In transformers 5.x some parameters gather several checkpoint tensors (an MoE's gate_up_proj [E, 2I, "
     "H] gathers every experts.<j>.gate_proj.weight and experts.<j>.up_proj.weight). The tensors gathered "
     "for this parameter hold a different number of elements than its shape, so the weight conversion "
     "cannot build it. Check --transformers-version and that config.json matches the checkpoint."},

    // ---- shard plan (src/simulate/*.cpp, src/resolve/wrap_classes.cpp, src/pipeline/stage_load.cpp; the plan
    // checks' codes, PLAN013-015, PLAN021 and PLAN026-034, are in their files in src/check/) ----
    {"PLAN001", Severity::error, ExitCode::findings, "An FSDP1 unit's first parameter is an integer tensor",
     "FSDP1 flattens each unit's parameters into one FlatParameter and refuses integer tensors, checking "
     "only the first: torch 2.x raises \"ValueError: Cannot flatten integer dtype tensors\" (_flat_param.py, "
     "FlatParamHandle._validate_tensors_to_flatten), torch 1.13 \"ValueError: Integer parameters are "
     "unsupported\". The job would fail while wrapping the model, on every rank. Mark such parameters as "
     "ignored or keep them out of FSDP."},
    {"PLAN002", Severity::error, ExitCode::findings, "An FSDP1 unit mixes parameter dtypes",
     "A FlatParameter has one dtype, so every parameter a unit owns must share it: torch 2.x raises "
     "\"ValueError: Must flatten tensors with uniform dtype\" (_flat_param.py), torch 1.13 \"ValueError: "
     "`FlatParameter` requires uniform dtype\", while wrapping. FP8 checkpoints hit it because their "
     "quantised layers hold F8 weights beside F32 block scales. Load the model in one dtype (dequantised "
     "for FP8, see --dequantize), or wrap the differing parameters in their own unit."},
    {"PLAN003", Severity::error, ExitCode::findings,
     "An FSDP1 unit mixes frozen and trainable parameters with use_orig_params=False",
     "With use_orig_params=False a FlatParameter has a single requires_grad, so FSDP1 refuses a unit that "
     "mixes frozen and trainable parameters: torch 2.x raises \"ValueError: Must flatten tensors with "
     "uniform `requires_grad` when `use_orig_params=False`\" (_flat_param.py), torch 1.13 \"ValueError: "
     "`FlatParameter` requires uniform `requires_grad`\". Set fsdp_use_orig_params: true (torch >= 2.0), or "
     "wrap frozen and trainable parameters in separate units."},
    {"PLAN004", Severity::warning, ExitCode::ok, "A tied parameter is flattened or sharded again by a second unit",
     "When modules sharing a weight (a tied embedding and LM head) fall into different units, FSDP raises "
     "nothing: FSDP1 with use_orig_params=False flattens the shared parameter again in the outer unit, and "
     "FSDP2 shards it a second time in the later fully_shard group. Memory and communication are counted "
     "twice and the tie is silently broken during training. Keep every module that uses a tied weight in "
     "the same unit, e.g. do not wrap the embedding alone."},
    {"PLAN005", Severity::error, ExitCode::findings, "FSDP2 would be given a scalar (0-dimensional) parameter",
     "fully_shard shards every parameter on dim 0, so it refuses 0-d parameters with \"ValueError: "
     "fully_shard doesn't support scalar parameters\" (torch/distributed/fsdp/_fully_shard/_fsdp_param.py; "
     "spelled \"salar\" up to about torch 2.6). The job would fail in fully_shard, before training starts. "
     "Change the parameter to a 1-D tensor with one element, or keep its module out of FSDP."},
    {"PLAN006", Severity::error, ExitCode::findings, "An FSDP2 group mixes original parameter dtypes",
     "FSDPParamGroup._init_mp_dtypes (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py) requires "
     "one original dtype per fully_shard group and raises \"AssertionError: FSDP expects uniform original "
     "parameter dtype\" at the first forward, after the model has loaded. Up to torch 2.7 every parameter "
     "counts; from 2.8 only those that require grad (pytorch PR #154103), so frozen weights may differ. "
     "Load the model in one dtype (FP8 checkpoints dequantised), or put the differing parameters in their "
     "own group."},
    {"PLAN010", Severity::error, ExitCode::findings,
     "TRANSFORMER_BASED_WRAP has no class to wrap (accelerate before 1.0)",
     "With TRANSFORMER_BASED_WRAP and no fsdp_transformer_layer_cls_to_wrap, accelerate falls back to the "
     "model's _no_split_modules, and this model declares none. accelerate before 1.0 then fails while "
     "wrapping the model: up to 0.33 the fallback is the class list [''] and the error \"Exception: Could "
     "not find the transformer layer class to wrap in the model.\" (accelerate PR #2530; "
     "utils/dataclasses.py set_auto_wrap_policy). Set fsdp_transformer_layer_cls_to_wrap to the model's "
     "block class."},
    {"PLAN011", Severity::warning, ExitCode::ok, "TRANSFORMER_BASED_WRAP with an empty class list wraps nothing",
     "From accelerate 1.0, an empty class list (no fsdp_transformer_layer_cls_to_wrap and no "
     "_no_split_modules on the model) becomes transformer_auto_wrap_policy with an empty set: no error, but "
     "only the root is wrapped. Every parameter then stays in the root unit and is all-gathered whole on "
     "every rank for the whole step. Set fsdp_transformer_layer_cls_to_wrap to the model's block class."},
    {"PLAN012", Severity::error, ExitCode::findings, "A transformer layer class to wrap is not in the model",
     "accelerate finds each name in fsdp_transformer_layer_cls_to_wrap (or the model's _no_split_modules) "
     "by exact, case-sensitive class name, without stripping spaces, and raises \"ValueError: Could not find "
     "the transformer layer class NAME in the model.\" at the first it cannot find (utils/dataclasses.py "
     "set_auto_wrap_policy for FSDP1, utils/fsdp_utils.py fsdp2_prepare_auto_wrap_policy for FSDP2). "
     "Typical causes are a space after a comma, a typo, a class of another transformers version, and "
     "accelerate 0.34.0 iterating _no_split_modules per character (fixed in 0.34.1, #3075); use the block "
     "class names shardcheck lists."},
    {"PLAN016", Severity::error, ExitCode::findings, "A regular-expression setting does not compile",
     "The frozen-parameter pattern (--frozen) and fsdp_ignored_modules (or FSDP_IGNORED_MODULES) are "
     "regular expressions; accelerate matches the latter against module names with re.fullmatch (since "
     "v1.10.0), so an invalid one is Python's re.error at launch. shardcheck stops before planning. A bad "
     "value from the config file or the environment exits with code 1; a bad --frozen flag is a usage error "
     "(exit code 2)."},
    {"PLAN017", Severity::error, ExitCode::findings, "fully_shard would be called on a ModuleList or ModuleDict",
     "fully_shard refuses nn.ModuleList and nn.ModuleDict containers that keep nn.Module.forward: "
     "\"ValueError: fully_shard does not support containers that do not implement forward\" "
     "(torch/distributed/fsdp/_fully_shard/_fsdp_init.py _validate_module, torch 2.14.1). Under FSDP2, "
     "accelerate's SIZE_BASED_WRAP calls fully_shard on every module whose whole subtree has more than "
     "min_num_params parameters (accelerate 1.14 fsdp_utils.py fsdp2_prepare_auto_wrap_policy), and the "
     "ModuleList holding the decoder layers always has more than any one layer, so the job stops in "
     "accelerator.prepare. Use TRANSFORMER_BASED_WRAP with FSDP2. Checked against real torch 2.14.1 and "
     "accelerate 1.14.0 (fixtures/oracle2)."},
    {"PLAN018", Severity::error, ExitCode::findings,
     "fully_shard would be called on a module another group already sharded",
     "fully_shard(m) skips only submodules that are themselves FSDPModules; a module that an earlier call "
     "manages without having been passed to it holds DTensor parameters, and sharding those again over the "
     "data-parallel mesh raises \"RuntimeError: Cannot concatenate overlapping meshes\" "
     "(torch/distributed/device_mesh.py, torch 2.14.1). accelerate 1.14's fsdp2_prepare_model checks only "
     "isinstance(module, FSDPModule) before it shards the input embeddings and the [final norm, head] "
     "tail, so a size policy that wraps a module above them (the base model) ends here. With a single process "
     "accelerate has no device mesh and fully_shard makes one without dim names, which the same concatenation "
     "refuses first: \"TypeError: Invariant encountered: value was None when it should not be\". Checked against "
     "real torch 2.14.1 and accelerate 1.14.0 (fixtures/oracle2, fixtures/fuzz)."},
    {"PLAN019", Severity::error, ExitCode::findings, "A tied parameter is held by two fully_shard groups (torch 2.12+)",
     "From torch 2.12 FSDP2 checks at the root's lazy init, i.e. the first forward, that no original "
     "parameter belongs to two fully_shard groups: \"ValueError: Parameter '...' is shared with a parameter "
     "already managed by another FSDP group\" (torch/distributed/fsdp/_fully_shard/_fsdp_state.py "
     "_validate_no_duplicate_params). accelerate 1.14's fsdp2_prepare_model groups a tied embedding with the "
     "final norm and leaves the LM head, which holds the same Parameter, to the root group, so every model "
     "with tie_word_embeddings (Llama 3.2 1B/3B, Qwen2.5 0.5B-3B, Gemma, GPT-2) fails there. FSDP1 with "
     "TRANSFORMER_BASED_WRAP leaves both in the root unit and works; so does untying the head before "
     "accelerator.prepare. Before torch 2.12 the parameter was silently sharded twice (PLAN004). Checked "
     "against real torch 2.14.1 and accelerate 1.14.0 (fixtures/oracle2)."},
    {"PLAN020", Severity::error, ExitCode::findings,
     "FSDP1 use_orig_params=True: a tied weight is used by a module outside the unit that holds it",
     "With use_orig_params=True every original parameter stays registered, its data a view into the rank's "
     "shard of its unit's flat parameter (torch/distributed/fsdp/_flat_param.py). Unsharding re-points only "
     "the registrations inside the owning unit's own modules, so a tied alias on a module of another unit "
     "keeps the 1-D shard: real torch 2.14.1 raises \"RuntimeError: size mismatch, got input (5), mat (5x20), "
     "vec (148)\" in the tied LM head at the first forward, with FULL_SHARD and SHARD_GRAD_OP alike; "
     "NO_SHARD runs (fixtures/oracle2). This happens when a size policy gives the embedding (or the head) a "
     "unit of its own. Keep the tied modules in one unit (TRANSFORMER_BASED_WRAP leaves both in the root) or "
     "use use_orig_params=False, where the head's unit flattens its own copy instead (PLAN004)."},

    // ---- merged settings (src/resolve/validate_settings.cpp; SET005 is a release check, src/check/) ----
    {"SET001", Severity::error, ExitCode::findings, "A setting is outside the values any job can run with",
     "num_processes (the world size), num_machines, fsdp_version, dp_replicate_size and a --min-num-params "
     "flag are checked once after the accelerate config, the environment and the flags are merged, before "
     "anything is simulated: a world size below 1 (accelerate launch hands torchrun a negative "
     "nproc_per_node), zero or negative machines, an fsdp_version other than 1 or 2. Nothing is planned on "
     "such a value. A bad flag is a usage error (exit code 2); a bad value in the config file or the "
     "environment is a finding (exit code 1) that points at its line."},
    {"SET002", Severity::warning, ExitCode::ok, "num_processes is 0: accelerate launch starts one process per machine",
     "accelerate 1.14 utils/launch.py prepare_multi_gpu_env passes nproc_per_node = num_processes // "
     "num_machines to torchrun, or \"1\" when num_processes is 0. The job therefore runs on one rank per "
     "machine, which is rarely what was meant; shardcheck plans that world size and says so. Set "
     "num_processes to the total number of processes over all machines."},
    {"SET003", Severity::error, ExitCode::findings, "The process count does not divide as the launch or the mesh needs",
     "num_processes counts the processes of all machines; accelerate launch starts num_processes // "
     "num_machines per machine (utils/launch.py prepare_multi_gpu_env), so a remainder silently drops "
     "processes and the job runs on a world size other than the configured one (and a hybrid strategy's "
     "shard group is computed from it). For FSDP2 with a parallelism_config, dp_replicate_size x tp_size "
     "must divide num_processes (accelerate parallelism_config.py). No plan is made."},
    {"SET004", Severity::warning, ExitCode::ok, "SIZE_BASED_WRAP with min_num_params 0 wraps nothing",
     "FullyShardedDataParallelPlugin.set_auto_wrap_policy (accelerate 1.14 utils/dataclasses.py) replaces the "
     "size policy by None unless min_num_params > 0 (\"If zero, we silently ignore it\"); the plugin's "
     "default is 0 when neither the config nor FSDP_MIN_NUM_PARAMS sets it. Nothing is auto-wrapped and "
     "every parameter stays in the root unit, under FSDP1 and FSDP2 alike; shardcheck plans exactly that."},

    {"SET006", Severity::error, ExitCode::findings, "Expert parallelism without tensor-parallel ranks",
     "--expert-parallel true stands for from_pretrained(..., distributed_config=DistributedConfig("
     "enable_expert_parallel=True)): the model's base_model_ep_plan replaces its TP plan (modeling_utils.py "
     "PreTrainedModel.tp_plan, transformers 5.12.1) and the experts are shared out over the tensor-parallel "
     "ranks of the mesh. shardcheck lays that out for FSDP2 with tp_size above 1 (accelerate's "
     "parallelism_config); with FSDP1 or tp_size 1 there is no TP dimension to split the experts over, so "
     "the setting is refused rather than ignored. From the command line it is a usage error (exit 2)."},
    {"SET007", Severity::error, ExitCode::findings, "Context and sequence parallelism together",
     "accelerate 1.13.0 and later refuse cp_size and sp_size both above 1 when the ParallelismConfig is built "
     "(parallelism_config.py __post_init__: `ValueError: Context Parallelism (CP) and Sequence Parallelism (SP) "
     "are mutually exclusive.`): both split the sequence dimension. In an accelerate file the lint rule "
     "parallelism-cp-sp-exclusive says the same; this is the same check for flags and the environment. Under "
     "FSDP2 keep cp_size."},
    {"SET008", Severity::error, ExitCode::findings, "Parallelism sizes under FSDP1",
     "accelerate builds N-D meshes for FSDP2 only. With FSDP1, cp_size above 1 stops AcceleratorState "
     "(state.py, 1.10.0+: `Using `cp_size>1` requires FSDP2, but the provided `fsdp_plugin` is using FSDP1.`) "
     "and any other parallelism_config size above 1 stops ParallelismConfig._validate_accelerator "
     "(`ParallelismConfig is only compatible DistributedType.FSDP (version 2) or DistributedType.Multi{Device}"
     "...`), before the model is prepared. The lint rule parallelism-requires-fsdp2 says the same of an "
     "accelerate file; this is the check for flags and the environment."},
    {"SET009", Severity::note, ExitCode::ok, "The accelerate config does not run FSDP",
     "accelerate 1.14 commands/launch.py _validate_launch_command sets use_fsdp = (distributed_type == "
     "DistributedType.FSDP), and multi_gpu, use_deepspeed and the other paradigms from the same key, unless a "
     "launch flag chooses one; only then does the launcher export ACCELERATE_USE_FSDP and the FSDP_* settings "
     "(utils/launch.py prepare_multi_gpu_env). A config with distributed_type MULTI_GPU runs DDP (every rank "
     "holds the whole model, its gradients and optimizer states), DEEPSPEED hands the model to DeepSpeed, NO "
     "runs one process. check plans FSDP jobs, so it says so and plans nothing rather than showing FSDP units, "
     "memory and wrapping advice for a job that never shards with FSDP. ACCELERATE_USE_FSDP=true in the "
     "job's environment makes the Accelerator use FSDP anyway, and then the plan is made."},

    {"PLAN022", Severity::error, ExitCode::findings, "A tensor-parallel split transformers refuses while loading",
     "transformers 5.12.1 (integrations/tensor_parallel.py) cuts each parameter of the model's tp plan while "
     "from_pretrained loads it. A packed style (packed_colwise: an MoE's gate_up_proj holds gate and up as two "
     "blocks) cuts each block of the checkpoint into ceil(block / tp_size) rows, while the model expects ceil(2 x "
     "block / tp_size) rows: when the two differ (moe_intermediate_size 14 over 4 ranks: 8 rows against 7) "
     "from_pretrained stops with \"RuntimeError: You set `ignore_mismatched_sizes` to `False`\" and a size "
     "mismatch for gate_up_proj (run for real: fixtures/oracle2/tp/). Expert parallelism (grouped_gemm) raises "
     "\"ValueError: Global number of experts must be divisible by number of devices\". The job stops at load, "
     "on every rank. Use a tp_size that divides the dimension named."},

    {"PLAN023", Severity::error, ExitCode::findings, "FSDP2 with tensor parallelism and a dp_shard of 1",
     "accelerate 1.14 (utils/fsdp_utils.py fsdp2_prepare_model) passes fully_shard the sub-mesh of the dims "
     "dp_shard_cp (and dp_replicate for HSDP). ParallelismConfig.build_device_mesh keeps only the dims of size "
     "above 1 and flattens dp_shard_cp from dp_shard (and cp), so when tp_size x dp_replicate_size uses every "
     "process, dp_shard is 1, the mesh has no such dim and prepare raises KeyError: \"Invalid mesh_dim_names "
     "('dp_shard_cp',) specified. Valid mesh_dim_names are ['tp'].\" (run for real with torch 2.14.1 and "
     "transformers 5.12.1: fixtures/oracle2/tp/). With HSDP replicas (dp_replicate_size above 1) the same "
     "layout fails earlier: ParallelismConfig.__post_init__ (1.10+) raises \"ValueError: Tensor/Context "
     "parallelism (tp/cp_size > 1) cannot be used with pure data parallelism\". Give FSDP at least two "
     "data-parallel shards, or run tensor parallelism without FSDP."},

    {"PLAN024", Severity::warning, ExitCode::ok, "Tensor parallelism that splits nothing",
     "transformers 5.12.1 applies tensor parallelism from the model's plan (the config's base_model_tp_plan). "
     "An architecture without one (GPT-2, Falcon, StableLM and others) loads with tp_plan=\"auto\" without an "
     "error: verify_tp_plan only logs \"The following layers were not sharded\", and every TP rank holds and "
     "computes the whole model (run for real: fixtures/oracle2/tp/traffic-gpt2-t2.json, no collective at all). "
     "The TP ranks then do the same work twice and FSDP shards over fewer ranks. Use those processes for "
     "dp_shard instead."},
    {"PLAN025", Severity::warning, ExitCode::ok, "Sequence parallelism under FSDP, which builds no device mesh",
     "sp_size above 1 is DeepSpeed's sequence parallelism (ALST/Ulysses): accelerate 1.14 accepts no other "
     "sp_backend (parallelism_config.py) and sets it up only when it prepares a DeepSpeed engine "
     "(accelerator.py _prepare_deepspeed). Under FSDP nothing splits the sequence, and build_device_mesh returns "
     "None for any sp_size above 1, so FSDP2 gets mesh=None and shards over every process, and no dp_replicate, "
     "cp or tp group exists (a script that passes accelerator.torch_device_mesh[\"tp\"] to from_pretrained fails "
     "on None). accelerate skips its num_processes check in that case, so nothing says so. Every rank then runs "
     "the whole sequence: activations are those of the full length. Use cp_size (FSDP2 context parallelism) or "
     "DeepSpeed."},
    {"PLAN035", Severity::error, ExitCode::findings,
     "FSDP1 size policy: ranks wrap different units (a tied weight counted through each rank's slice)",
     "With use_orig_params=True and a sharded strategy, FSDP points every original parameter of a unit at the rank's "
     "slice of its flat shard as soon as the unit is built (torch/distributed/fsdp/_flat_param.py "
     "_use_sharded_views). A tied weight is one Parameter under two names, so when the size policy later asks "
     "about the other name's module (a tied LM head after the embedding's unit) it counts p.numel(), the rank's "
     "slice: a different number on each rank, empty where the rank's shard holds none of the weight. Ranks whose "
     "counts fall on either side of min_num_params build different units and then run collectives that do not "
     "match, so the job hangs or fails at the first all-gather. Only size policies are affected; "
     "TRANSFORMER_BASED_WRAP keeps a tied embedding and head in the root unit, and use_orig_params=False leaves the "
     "original Parameter whole."},
    {"PLAN036", Severity::error, ExitCode::findings, "FSDP1 hybrid sharding strategy without an auto-wrap policy",
     "torch's FSDP1 refuses HYBRID_SHARD and _HYBRID_SHARD_ZERO2 when FSDP(...) gets no auto_wrap_policy, no "
     "process_group and no device_mesh (torch/distributed/fsdp/_init_utils.py _init_process_group_state, 2.0 to "
     "2.14.1): without a policy every unit would be wrapped by hand, and nothing would make them share the intra- and "
     "inter-node process groups. accelerate's FSDP1 path passes neither a group nor a mesh, so NO_WRAP with a hybrid "
     "strategy fails at prepare with \"ValueError: Manual wrapping with ShardingStrategy.HYBRID_SHARD requires "
     "explicit specification of process group or device_mesh.\""},
    {"PLAN037", Severity::error, ExitCode::findings, "An FSDP1 unit wraps a container nobody calls",
     "FSDP1 all-gathers a unit's parameters in the forward of the module it wraps "
     "(torch/distributed/fsdp/fully_sharded_data_parallel.py forward -> _pre_forward). A ModuleList or ModuleDict "
     "has no forward: the model iterates it and calls each layer itself, so a unit around the container never "
     "unshards, and under a sharded strategy its layers compute with each rank's shard of their weights. Real torch "
     "2.14.1 fails in the first layer: \"RuntimeError: The size of tensor a (0) must match the size of tensor b "
     "(20) at non-singleton dimension 2\" (fixtures/fuzz, use_orig_params=True). A class list naming ModuleList, or "
     "one container class, ends here; with one rank per shard group the unit holds whole weights and runs."},

    // ---- module-tree files, --module-tree (src/resolve/module_tree_file.cpp, docs/module-tree.md) ----
    {"TREE001", Severity::error, ExitCode::io, "The module-tree file cannot be read",
     "--module-tree names a file written by `python3 -m shardcheck dump` or shardcheck.dump_model (the "
     "Python helper shipped with shardcheck). It does not exist, is a directory, cannot be read, or is "
     "longer than 512 MiB (a dump of a 405B model is a few MB). Give the path the dump wrote."},
    {"TREE002", Severity::error, ExitCode::bad_module_tree, "The module-tree file is not valid JSON",
     "A module-tree file is one JSON object (RFC 8259, UTF-8). The message gives the line and column of the "
     "first byte that breaks the grammar, what the reader expected there and what it found. An object that "
     "holds one member name twice is refused as well: Python's json.load would silently keep the last, so "
     "the file is not what the helper wrote. Dump the model again."},
    {"TREE003", Severity::error, ExitCode::bad_module_tree, "A module-tree field is missing or has the wrong type",
     "Every field of docs/module-tree.md is checked where it is read: the message names the field's place "
     "(modules[12].parameters[0].shape), its line and column, what the schema expects and what the file "
     "holds. The first problem stops the read, since what follows would be read against a wrong tree."},
    {"TREE004", Severity::error, ExitCode::bad_module_tree, "The module-tree format_version is not this shardcheck's",
     "The file's format_version is not the one this shardcheck reads (docs/module-tree.md says what "
     "changed between versions). Dump the model with the Python helper of the same shardcheck release (it "
     "ships in the same wheel and `cmake --install` tree as the binary)."},
    {"TREE005", Severity::error, ExitCode::bad_module_tree, "The module tree contradicts itself",
     "The fields have the right types but describe no torch module tree: a module listed before its parent "
     "(named_modules() lists a parent first), a path or attribute listed twice, a tied_to that names no "
     "earlier untied parameter or one of another shape or dtype (tied names share one Parameter), a "
     "model.class that is not the root's class, or an embeddings path that is no module."},

    // ---- PEFT adapters (src/load/adapter_config.cpp, src/resolve/peft_model.cpp; PEFT007, PEFT011,
    // PEFT014 and PEFT015 are checks of src/check/) ----
    {"PEFT001", Severity::error, ExitCode::bad_adapter, "adapter_config.json is not a JSON object",
     "peft reads adapter_config.json back with json.load into a LoraConfig (config.py "
     "PeftConfigMixin.from_pretrained, peft 0.20). This file does not parse, or its top level is not an "
     "object, so neither peft nor shardcheck can tell which layers the adapter adds. Write it again with "
     "save_pretrained or fix the JSON."},
    {"PEFT002", Severity::error, ExitCode::bad_adapter, "An adapter_config.json field has the wrong type or value",
     "A LoraConfig field that decides the module tree (r, lora_alpha, bias, target_modules, exclude_modules, "
     "modules_to_save, layers_to_transform, layers_pattern, rank_pattern, alpha_pattern, use_dora, lora_bias) "
     "is not of the type peft expects, or is out of range: r must be a positive integer (lora/layer.py "
     "update_layer raises \"`r` should be a positive integer value\"), bias one of none, all, lora_only "
     "(tuners_utils.py raises NotImplementedError otherwise), module patterns valid regular expressions. "
     "The message names the field and its line."},
    {"PEFT003", Severity::error, ExitCode::bad_adapter, "The adapter is not a LoRA adapter",
     "shardcheck lays out LoRA adapters (peft_type LORA, including DoRA and rsLoRA). Other PEFT methods "
     "(prefix tuning, IA3, LoHa, OFT, ...) add other modules and parameters, so planning them as LoRA, or "
     "as the bare model, would give wrong units and memory. Plan without --adapter to see the base model."},
    {"PEFT004", Severity::error, ExitCode::findings, "No module of the model matches the adapter's target_modules",
     "get_peft_model raises before any training when target_modules (after exclude_modules, modules_to_save "
     "and layers_to_transform) matches no module: \"NoMatchingPeftModuleError: Target modules ... not found "
     "in the base model\" (tuners/tuners_utils.py inject_adapter, peft 0.20), \"No `target_modules` passed but also no "
     "`target_parameters` found\" when peft's transformers 5 MoE conversion left none (a converted MoE model "
     "gets no default targets), or \"Please specify `target_modules` or `target_parameters`in `peft_config`\" "
     "when none is given and peft has no default for the model_type (rules/peft.yaml). A list entry matches a module "
     "name exactly or as a \".\"-suffix; a string is a "
     "regular expression matched against the whole dotted name. The help lists the model's Linear names."},
    {"PEFT005", Severity::error, ExitCode::findings, "A target module is of a type LoRA does not support",
     "peft wraps torch.nn.Linear, Embedding, Conv1d/2d/3d, MultiheadAttention and transformers' Conv1D; a "
     "target that matches anything else, typically a container such as self_attn or mlp, makes "
     "get_peft_model raise \"ValueError: Target module ... is not supported\" (tuners/lora/model.py "
     "_create_new_module, peft 0.20). Name the Linear layers inside it."},
    {"PEFT006", Severity::error, ExitCode::unknown_model, "shardcheck cannot lay out this adapter yet",
     "The adapter adds layers shardcheck does not build yet: LoRA on Conv1d or MultiheadAttention, DoRA on "
     "an embedding, or bitsandbytes' 8-bit weights (load_in_8bit). Planning without them would put the "
     "adapter's parameters nowhere, so no plan is given (exit code 11, like a model shardcheck cannot lay "
     "out). target_parameters, and the fused experts and router of transformers 5 MoE models that peft "
     "targets by itself, are laid out (ParamWrapper)."},

    {"PEFT008", Severity::error, ExitCode::findings,
     "The saved adapter weights do not fit the layers its config builds",
     "PeftModel.from_pretrained loads adapter_model.safetensors into the PeftModel with load_state_dict "
     "(peft 0.20 utils/save_and_load.py set_peft_model_state_dict); a saved lora_A/lora_B/magnitude or "
     "modules_to_save tensor whose shape differs from the layer the config builds is torch's \"RuntimeError: "
     "Error(s) in loading state_dict ... size mismatch for ...\". It happens when an adapter trained on one "
     "base model is loaded on another (another size of the family), or when r or the targets were edited "
     "in adapter_config.json. shardcheck reads only the safetensors header."},
    {"PEFT009", Severity::warning, ExitCode::ok, "Saved adapter tensors that the PeftModel has no place for",
     "adapter_model.safetensors holds tensors for layers this adapter_config.json does not create; peft loads "
     "with strict=False and drops them with a warning, so the run trains without them. The config and the "
     "weights disagree, usually because target_modules or modules_to_save were edited after saving."},

    {"PEFT010", Severity::note, ExitCode::ok, "The model argument is a PEFT adapter; its base model is planned with it",
     "A LoRA run's checkpoints and outputs are adapter directories (adapter_config.json and "
     "adapter_model.safetensors, no config.json). Given one as MODEL, shardcheck does what "
     "AutoPeftModelForCausalLM.from_pretrained does: it loads the base model named by "
     "base_model_name_or_path and the adapter on it. To plan the adapter on another base model, give that "
     "as MODEL and the directory with --adapter."},

    {"PEFT012", Severity::error, ExitCode::findings,
     "Only some of the 4.x projections fused into one 5.x parameter are targeted",
     "transformers 5 fuses the gate and up projections of each expert (w1 and w3 in Mixtral, gate_proj and "
     "up_proj in the Qwen2-MoE family) into one gate_up_proj parameter, and peft 0.20 converts 4.x "
     "target_modules to it (utils/transformers_weight_conversion.py _convert_peft_config_moe). Naming only "
     "one of them is peft's ValueError \"Cannot convert PEFT target(s) w1 without also targeting w3 because "
     "they are fused into gate_up_proj\" (reproduced with peft 0.20 and transformers 5.12.1 on a tiny "
     "Mixtral). Target both, or neither."},
    {"PEFT013", Severity::error, ExitCode::findings, "peft's ParamWrapper refuses this LoRA configuration",
     "Parameters targeted with target_parameters, and the fused experts and router of transformers 5 MoE "
     "models that peft converts all-linear or 4.x projection names into, are wrapped in lora.ParamWrapper, "
     "which raises for lora_dropout other than 0, fan_in_fan_out, lora_bias and DoRA (tuners/lora/layer.py "
     "ParamWrapper.__init__), for a parameter of the top-level module, for a layer also targeted by "
     "target_modules, and for parameters that are not 2-D or 3-D. TRL's default lora_dropout of 0.05 with "
     "all-linear on a Mixtral or Qwen3-MoE model hits the first (reproduced with peft 0.20)."},

    // ---- TRL's ModelConfig in --training-args (src/resolve/trl_model_config.cpp) ----
    {"TRL001", Severity::note, ExitCode::ok, "TRL loads the model in float32 when the file names no dtype",
     "The file holds TRL ModelConfig fields (use_peft, lora_*, load_in_4bit, model_name_or_path), so `trl sft "
     "--config FILE` reads it with ModelConfig, whose dtype defaults to float32 from trl 0.27.0 "
     "(trl/trainer/model_config.py); TRL's scripts pass it to from_pretrained, so the weights are loaded in "
     "float32, twice the memory of a bfloat16 checkpoint, and a 4-bit load computes in float32. Before 0.27 "
     "the default was None, which leaves transformers' own. shardcheck plans float32 unless a flag or the file "
     "says otherwise; write dtype: bfloat16 (or auto) to load in the checkpoint's precision."},
    {"TRL002", Severity::warning, ExitCode::ok, "A one-name lora_target_modules list becomes a regular expression",
     "ModelConfig.__post_init__ turns a lora_target_modules list of one element into that string, and peft "
     "reads a string target_modules as one regular expression re.fullmatch-ed against whole module paths "
     "(tuners_utils.py check_target_module_exists), so [q_proj] matches only a top-level module named q_proj "
     "and get_peft_model usually fails with 'Target modules q_proj not found in the base model' (PEFT004). "
     "List two or more names, or write the pattern, e.g. '.*\\.q_proj'."},
    {"TRL003", Severity::error, ExitCode::findings, "lora_modules_to_save given as a string",
     "TrlParser makes the YAML value the argparse default as it is, so lora_modules_to_save: lm_head reaches "
     "peft's LoraConfig as the string 'lm_head'; peft's _set_trainable tests key.endswith(name) for each name "
     "it iterates, which for a string is each character, so nearly every module becomes a trainable copy. "
     "Write it as a list: [lm_head]."},
    {"TRL004", Severity::warning, ExitCode::ok, "QLoRA through a trl release before 0.26",
     "trl before 0.26 prepared a 4-bit model in its prepare_peft_model: prepare_model_for_kbit_training, or "
     "get_peft_model(autocast_adapter_dtype=False) when the Params4bit weights were still on the CPU or the "
     "meta device (FSDP loading), which decides the adapters' dtype. shardcheck models the current rule "
     "(trl >= 0.26: SFTTrainer casts every trainable parameter to bfloat16) and plans peft's float32 "
     "adapters for the older releases, and says so with this warning."},

    // ---- memory fit (src/pipeline/stage_fit.cpp) ----
    {"FIT001", Severity::error, ExitCode::findings, "The plan does not fit in one GPU's memory",
     "With --seq-len and --micro-batch, shardcheck replays one steady-state training step unit by unit "
     "(docs/step-peak.md): forward with its all-gathers, the loss's logits-sized tensors, backward with "
     "recomputation and reduce-scatter buffers, the optimizer step. Its peak is at most 10% above a real "
     "step's and never below; even a tenth less than it does not fit in the GPU's memory (--gpu or --gpu-memory; "
     "default the h100-80gb preset, 79.11 GiB), so the "
     "job runs out of GPU memory. Without activations the sharded parameters, gradients, optimizer states and "
     "the largest unsharded units are compared instead. Use more GPUs, fsdp_offload_params: true, activation "
     "checkpointing, a smaller micro-batch, or a larger --gpu-memory if the GPU has it."},

    {"FIT002", Severity::warning, ExitCode::ok, "The recipe's optimizer is not modelled: no fit verdict",
     "The optimizer's state per parameter comes from rules/optimizers.yaml, one entry per transformers "
     "TrainingArguments.optim name (states in the parameter's dtype, 8-bit blockwise states, the step's "
     "temporaries). A name it does not list is counted as adamw_torch and the verdict is not_estimated. Add the "
     "optimizer to rules/optimizers.yaml with its source, or pass --optim with a listed name."},
    {"FIT003", Severity::warning, ExitCode::ok, "A training argument that changes a step's memory is not modelled",
     "The step replay counts the loop, the optimizer, gradient accumulation and Liger's fused loss from the "
     "training arguments. Some keys change what a step holds in ways it does not model yet (torch_compile, TRL's "
     "activation_offloading, DPO/ORPO/KTO/CPO's chosen and rejected pairs and reference model, GRPO's "
     "generations, DeepSpeed, the Trainer's own fsdp setting, GaLore): the peak leaves them out, and this "
     "warning names each one so that the verdict is never silently wrong about it."},
    {"FIT004", Severity::warning, ExitCode::ok, "The step may not fit: its peak leaves less than the margin free",
     "The replayed peak of a training step (docs/step-peak.md) is at most 10% above the peak of a real step "
     "and never below it. A GPU also holds the CUDA context, NCCL's and cuBLAS's buffers and the caching "
     "allocator's rounding, which torch does not count as tensors: shardcheck keeps 1 GiB plus 5% of the peak "
     "for them. The peak fits in the GPU but not with that margin. Use more GPUs, activation checkpointing, a "
     "smaller micro-batch or sequence, or measure one step with torch.cuda.max_memory_reserved."},

    // ---- Hugging Face Hub model ids (src/load/hub/, see hub_diagnostics.cpp) ----
    {"HUB001", Severity::error, ExitCode::hub_offline,
     "The model is not local or cached, and HF_HUB_OFFLINE forbids the network",
     "A Hub model id is looked up in the Hugging Face cache (HF_HUB_CACHE), then in shardcheck's header "
     "cache (SHARDCHECK_CACHE), then on the Hub. It is in neither cache and HF_HUB_OFFLINE (or the legacy "
     "TRANSFORMERS_OFFLINE) is set, so it cannot be read. Run once with network access (headers are then "
     "cached), or download the model's config.json and *.safetensors.index.json with `hf download`."},
    {"HUB002", Severity::error, ExitCode::hub_unreachable, "Cannot connect to the Hub (DNS, refused connection, TLS)",
     "shardcheck reads config.json, the index and each shard's header over HTTP from HF_ENDPOINT, and the "
     "connection failed before any reply. Machines that cannot reach the Hub also cannot download the model "
     "at launch. Check the network and HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to use only cached models."},
    {"HUB003", Severity::error, ExitCode::hub_timeout, "The Hub stopped sending for HF_HUB_DOWNLOAD_TIMEOUT seconds",
     "A transfer received no data for HF_HUB_DOWNLOAD_TIMEOUT seconds. Unlike 429 and 5xx replies, timeouts "
     "are not retried: a server that stalls once usually stalls again, and the timeout is the limit the "
     "user asked for. Raise HF_HUB_DOWNLOAD_TIMEOUT (seconds) for a slow link."},
    {"HUB004", Severity::error, ExitCode::hub_unauthorized,
     "HTTP 401: gated, private or unknown repository and no accepted token",
     "The Hub answered 401. huggingface_hub (utils/_http.py, hf_raise_for_status) reads the X-Error-Code "
     "header: GatedRepo means a gated model, and without it a 401 also means \"repository not found\", since "
     "the Hub will not say whether a private repository exists. Check the model id; for a private or gated "
     "model set HF_TOKEN (or `hf auth login`) and accept the model's conditions."},
    {"HUB005", Severity::error, ExitCode::hub_forbidden, "HTTP 403: the token has no access to the repository",
     "The Hub answered 403: a token was sent but may not read this repository, typically because the gated "
     "model's conditions were not accepted for its account, or a fine-grained token lacks read access to "
     "the repository. A job using the same token would be refused the weights too. Accept the conditions on "
     "the model page, or give the token read access."},
    {"HUB006", Severity::error, ExitCode::hub_not_found, "HTTP 404: the repository, revision or file does not exist",
     "The Hub answered 404; when present, the X-Error-Code header tells RepoNotFound, RevisionNotFound and "
     "EntryNotFound apart (huggingface_hub utils/_http.py, hf_raise_for_status). A model id that is neither "
     "on the Hub nor a local directory also ends here. Check the model id and revision; a local directory "
     "must exist to be used as one."},
    {"HUB007", Severity::error, ExitCode::hub_server_error,
     "HTTP 429 or 5xx on every attempt, or another unexpected status",
     "Replies of 429 and 5xx are retried as huggingface_hub's http_backoff does (utils/_http.py): up to 5 "
     "retries, waiting 1, 2, 4, 8 and 8 seconds, or what Retry-After says (capped at 60 s). This code is "
     "reported when every attempt failed, or for any other status than 200, 206, 401, 403, 404 and "
     "redirects. The Hub is overloaded or down; retry later."},
    {"HUB008", Severity::error, ExitCode::hub_bad_response, "A reply that breaks HTTP or the Hub's protocol",
     "shardcheck fetches only byte ranges of each shard (the length prefix and the header) and checks every "
     "reply: a 206 without a valid Content-Range, fewer bytes than announced, or a file whose length "
     "changes between two replies is refused, since it would yield a wrong header and wrong shapes. A proxy "
     "or mirror (HF_ENDPOINT) may be mangling replies."},
    {"HUB009", Severity::error, ExitCode::hub_redirects, "A redirect loop or too many redirects",
     "The Hub redirects file downloads, for instance to a CDN, and shardcheck follows at most 10 redirects "
     "and stops at a loop. Either means the server or a proxy is misconfigured, and the file cannot be "
     "read. Check HF_ENDPOINT and any proxy in between."},
    {"HUB010", Severity::error, ExitCode::hub_cache, "The header cache cannot be written",
     "Headers read from the Hub are stored as a sparse mirror of the snapshot (config.json, the index, and "
     "each shard with its real header and length, the data a hole) in shardcheck's header cache, which the "
     "ordinary directory loader then validates exactly as it validates a download. The cache could not be "
     "written here, so the model cannot be checked. Set SHARDCHECK_CACHE to a writable directory."},
    {"HUB011", Severity::warning, ExitCode::ok, "A Hugging Face cache snapshot is a partial download",
     "The model's snapshot in the Hugging Face cache has config.json but lacks shards its index names, or "
     "holds no safetensors file at all. shardcheck then reads the headers from the Hub at the same commit "
     "or, with HF_HUB_OFFLINE set, plans from config.json alone; a job loading from this cache would fail "
     "on the missing shards. Finish the download (`hf download ORG/NAME`) to check the real checkpoint "
     "offline."},
    {"HUB012", Severity::warning, ExitCode::ok, "The Hub repository has no safetensors checkpoint",
     "The repository has neither model.safetensors.index.json nor model.safetensors at the resolved commit, "
     "which huggingface_hub (hf_api.py @ee0a451, get_safetensors_metadata) reports as not a safetensors "
     "repo. Shapes then come from config.json alone, as for a local config-only directory, so the plan is "
     "not checked against real tensors; a repository with only *.bin weights is planned this way."},
};

}  // namespace

std::span<const FindingCode> table_finding_codes() { return kCodes; }

}  // namespace shardcheck
