"""--module-tree FILE (docs/module-tree.md): dumps of real transformers 5.12.1 models
(fixtures/module-trees/, scripts/oracle/dump_module_trees.py) through inspect, plan and check, and the
file's own errors with their exit codes."""

TREES = "{src}/fixtures/module-trees"
ATTRIBUTE = TREES + "/string-no-split-attribute.json"

CASES = [
    {"name": "inspect --module-tree: the dumped Llama's tree",
     "args": ["inspect", "--module-tree", TREES + "/llama.json"], "exit": 0,
     "stdout": ["LlamaForCausalLM", "LlamaDecoderLayer"]},
    {"name": "plan --module-tree: three LlamaDecoderLayer units from the dump's _no_split_modules",
     "args": ["plan", "--no-env", "--module-tree", TREES + "/llama.json", "--world-size", "2"], "exit": 0,
     "stdout": ["3 x LlamaDecoderLayer"]},
    {"name": "check --module-tree: the seed's string _no_split_modules fails with accelerate 1.14.0's error",
     "args": ["check", "--no-env", "--module-tree", ATTRIBUTE, "--world-size", "2"], "exit": 1,
     "stdout": ["ValueError: Could not find the transformer layer class L in the model.",
                "Make it a list: _no_split_modules = [\"LlamaDecoderLayer\"]"]},
    {"name": "check --module-tree: a trust_remote_code class declaring the string (its characters made a set by "
             "transformers' post_init) fails as accelerate fails under PYTHONHASHSEED=0",
     "args": ["check", "--no-env", "--module-tree", TREES + "/string-no-split-remote-code.json", "--world-size", "2"],
     "exit": 1,
     # fixtures/module-trees/string-no-split-accelerate.json, "class": the real run's message
     "stdout": ["ValueError: Could not find the transformer layer class d in the model.",
                "class StringLlamaForCausalLM declares _no_split_modules = 'LlamaDecoderLayer', a string"]},
    {"name": "check --module-tree: an explicit class list wraps the same model cleanly",
     "args": ["check", "--no-env", "--module-tree", ATTRIBUTE, "--world-size", "2", "--wrap-cls", "LlamaDecoderLayer"],
     "exit": 0, "stdout": ["0 error(s)"]},
    {"name": "plan: a MODEL and --module-tree together are a usage error",
     "args": ["plan", "{src}/fixtures/models/llama", "--module-tree", TREES + "/llama.json"], "exit": 2,
     "stderr": ["expected --module-tree alone to give the model"]},
    {"name": "plan: --load-dtype with --module-tree is a usage error (the dump holds the dtypes)",
     "args": ["plan", "--module-tree", TREES + "/llama.json", "--load-dtype", "float32"], "exit": 2,
     "stderr": ["found --load-dtype too"]},
    {"name": "plan: neither MODEL nor --module-tree is a usage error",
     "args": ["plan"], "exit": 2, "stderr": ["expected a model"]},
    {"name": "plan --module-tree: a missing file is an I/O error (exit 3)",
     "args": ["plan", "--module-tree", "{work}/no-such-tree.json"], "exit": 3,
     "stderr": ["cannot open the module-tree file", "[TREE001]"]},
    {"name": "inspect --module-tree: a file that is not JSON exits 13 with its line and column",
     "args": ["inspect", "--module-tree", "{src}/fixtures/configs/seed_000_flattened_fsdp_config.yaml"], "exit": 13,
     "stderr": ["seed_000_flattened_fsdp_config.yaml:1:1: error: not valid JSON", "[TREE002]"]},
    {"name": "check --module-tree: a config.json is no dump (exit 13, expected vs found)",
     "args": ["check", "--no-env", "--module-tree", "{src}/fixtures/models/llama/config.json"], "exit": 13,
     "stdout": ["config.json:1:1: error: the file: expected a member \"format\", found an object without it",
                "[TREE003]"]},
]
