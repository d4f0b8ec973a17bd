"""CLI cases for `shardcheck inspect`. Expected numbers come from the fixtures' EXPECTED.json
(written by scripts/gen_fixtures.py from its own layout description) or from hand arithmetic."""
import json
import pathlib

SRC = pathlib.Path(__file__).resolve().parents[2]


def expected(name):
    return json.loads((SRC / "fixtures" / "models" / name / "EXPECTED.json").read_text())


def json_contract(doc):
    for key in ("model_type", "architecture", "num_params", "num_tensors", "dtypes", "modules", "tied",
                "no_split_modules"):
        if key not in doc:
            return f"JSON lacks {key!r}"
    root = doc["modules"][0]
    if root["path"] != "" or root["num_params"] != doc["num_params"]:
        return f"root module should have path '' and the total count, got {root['path']!r} {root['num_params']}"
    for m in doc["modules"]:
        for k in ("path", "class", "num_params", "params"):
            if k not in m:
                return f"module {m.get('path')} lacks {k!r}"
    return None


def num_params_is(n):
    return lambda doc: None if doc["num_params"] == n else f"num_params {doc['num_params']}, expected {n}"


CASES = [
    {"name": "inspect llama fixture (sharded) prints the collapsed tree",
     "args": ["inspect", "{src}/fixtures/models/llama"],
     "stdout": ["LlamaForCausalLM", "(0-2): 3 x LlamaDecoderLayer", "_no_split_modules: [LlamaDecoderLayer]",
                f"{expected('llama')['num_params']:,} parameters"]},
    {"name": "inspect llama JSON follows the contract",
     "args": ["inspect", "{src}/fixtures/models/llama", "--format", "json"],
     "json": lambda d: json_contract(d) or num_params_is(expected("llama")["num_params"])(d)},
    {"name": "inspect llama config-only gives the same count",
     "args": ["inspect", "{src}/fixtures/models/llama", "--config-only", "--format", "json"],
     "json": lambda d: (None if d["from_checkpoint"] is False else "from_checkpoint should be false")
                       or num_params_is(expected("llama")["num_params"])(d)},
    {"name": "inspect accepts the config.json path itself (config only)",
     "args": ["inspect", "{src}/fixtures/models/llama/config.json", "--config-only"],
     "stdout": ["config.json only"]},
    {"name": "inspect at transformers 4.44 with sdpa names LlamaSdpaAttention",
     "args": ["inspect", "{src}/fixtures/models/llama", "--transformers-version", "4.44.2"],
     "stdout": ["(self_attn): LlamaSdpaAttention", "(rotary_emb): LlamaRotaryEmbedding", "(act_fn): SiLU\n"]},
    {"name": "inspect with flash attention names LlamaFlashAttention2 (as in the seed thread)",
     "args": ["inspect", "{src}/fixtures/models/llama", "--transformers-version", "4.44.2",
              "--attn-implementation", "flash_attention_2"],
     "stdout": ["(self_attn): LlamaFlashAttention2"]},
    {"name": "unknown model_type falls back to guessed classes",
     "args": ["inspect", "{src}/fixtures/models/toyformer"],
     "stdout": ["CLASS NAMES GUESSED"], "stderr": ["ARCH001"]},
    {"name": "missing model directory is an I/O error (exit 3)",
     "args": ["inspect", "{work}/no-such-model"], "exit": 3, "stderr": ["no-such-model", "IO002"]},
    {"name": "bad --format is a usage error (exit 2)",
     "args": ["inspect", "{src}/fixtures/models/llama", "--format", "yaml"], "exit": 2},
    {"name": "bad --transformers-version is a usage error (exit 2)",
     "args": ["inspect", "{src}/fixtures/models/llama", "--transformers-version", "banana"], "exit": 2},
    {"name": "sparse Llama-3.1-405B: 405,853,388,800 parameters",
     # 126 layers x (2*16384*16384 + 2*16384*1024 + 3*16384*53248 + 2*16384) = 126 x 3,187,703,808
     # + embed and lm_head 2 x 128256*16384 + final norm 16384 = 405,853,388,800
     "args": ["inspect", "{gen}/llama-3.1-405b", "--format", "json"],
     "json": num_params_is(405_853_388_800)},
]

# Broken config.json files: each names the file and position, with its own exit code.
CASES += [
    {"name": "truncated config.json is exit 4 with line:column",
     "args": ["inspect", "{src}/fixtures/broken-configs/truncated_json.json"], "exit": 4,
     "stderr": ["truncated_json.json:3:", "not valid JSON", "CFG001"]},
    {"name": "config.json without model_type is exit 4",
     "args": ["inspect", "{src}/fixtures/broken-configs/no_model_type.json"], "exit": 4,
     "stderr": ["expected a string \"model_type\"", "CFG003"]},
    {"name": "unknown model_type without weights is exit 11",
     "args": ["inspect", "{src}/fixtures/broken-configs/unknown_type.json"], "exit": 11,
     "stderr": ["mysterynet", "known model types"]},
    {"name": "a config.json lacking a shape field names the field (exit 4)",
     "args": ["inspect", "{src}/fixtures/broken-configs/missing_hidden_size.json"], "exit": 4,
     "stderr": ["hidden_size", "CFG006"]},
]
CASES += [
    {"name": "a number beyond double range in config.json is exit 4, not a crash (found by fuzzing)",
     "args": ["inspect", "{src}/fixtures/broken-configs/number_overflow.json"], "exit": 4,
     "stderr": ["number_overflow.json", "number overflow", "CFG001"]},
]
