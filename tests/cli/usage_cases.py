"""CLI cases for usage mistakes: every unknown subcommand, flag and enum value gets a did-you-mean, and
accelerate launch's spellings (commands/launch.py, v1.14.0: --num_processes, --fsdp_sharding_strategy,
'_' between words) are pointed at shardcheck's flag. All exit 2, the usage code."""

LLAMA = "{src}/fixtures/models/llama"

CASES = [
    {"name": "usage: an unknown subcommand is named, with the nearest command and the list",
     "args": ["chek"], "exit": 2,
     "stderr": ["unknown command 'chek'; did you mean 'check'?", "commands: inspect, lint,"],
     "not_stderr": ["A subcommand is required"]},
    {"name": "usage: a misspelled flag gets the nearest flag, not 'arguments were not expected'",
     "args": ["plan", LLAMA, "--world-sise", "8"], "exit": 2,
     "stderr": ["shardcheck plan: unknown option '--world-sise'; did you mean '--world-size'?"],
     "not_stderr": ["not expected"]},
    {"name": "usage: '_' for '-' is pointed at the dashed flag",
     "args": ["plan", LLAMA, "--world_size", "8"], "exit": 2,
     "stderr": ["unknown option '--world_size': shardcheck's options are written with '-': --world-size"]},
    {"name": "usage: accelerate launch's --num_processes is shardcheck's --world-size",
     "args": ["check", "--model", LLAMA, "--num_processes=8"], "exit": 2,
     "stderr": ["unknown option '--num_processes': that is accelerate launch's option; shardcheck calls it "
                "--world-size"]},
    {"name": "usage: accelerate's --fsdp_sharding_strategy is --sharding-strategy",
     "args": ["plan", LLAMA, "--fsdp_sharding_strategy", "FULL_SHARD"], "exit": 2,
     "stderr": ["shardcheck calls it --sharding-strategy"]},
    {"name": "usage: an enum flag's wrong value gets the list and the nearest value",
     "args": ["plan", LLAMA, "--policy", "transfomer"], "exit": 2,
     "stderr": ["expected one of transformer, size or none, found 'transfomer'; did you mean 'transformer'?"]},
    {"name": "usage: --format with a transposition",
     "args": ["lint", "--format", "jsno", "{src}/fixtures/configs/good_fsdp1_accelerate_config.yaml"], "exit": 2,
     "stderr": ["found 'jsno'; did you mean 'json'?"]},
    {"name": "usage: --sharding-strategy's own check suggests too",
     "args": ["plan", LLAMA, "--sharding-strategy", "FULL_SHRAD"], "exit": 2,
     "stderr": ["found 'FULL_SHRAD'; did you mean 'FULL_SHARD'?"]},
    {"name": "usage: no guess that keeps nothing of the word ('1' for '3')",
     "args": ["plan", LLAMA, "--fsdp-version", "3"], "exit": 2,
     "stderr": ["expected 1 or 2, found '3'"], "not_stderr": ["did you mean"]},
    {"name": "usage: a far-off flag gets no guess, only where the options are listed",
     "args": ["lint", "--zzzzzzzzzz"], "exit": 2,
     "stderr": ["unknown option '--zzzzzzzzzz' (shardcheck lint --help lists the options)"],
     "not_stderr": ["did you mean"]},
    {"name": "usage: case-insensitive choices still take any case",
     "args": ["plan", LLAMA, "--backward-prefetch", "backward_pre", "--no-tree"], "exit": 0},
]

# The two YAML files swapped: a Trainer/TRL recipe as --config (accelerate's load_config_from_file would
# refuse every key of it: commands/config/config_args.py v1.14.0), an accelerate config as --training-args
# (HfArgumentParser.parse_yaml_file would refuse its keys as not dataclass fields: transformers hf_argparser.py).
CASES += [
    {"name": "file kinds: a training recipe given as --config is said once, with where it goes",
     "args": ["check", "--no-env", "--config", "{src}/fixtures/configs/training-args-as-config.bad.yaml", "--model",
              LLAMA, "--no-tree"], "exit": 10,
     "stdout": ["4:1: error: this looks like Trainer/TRL training arguments (model_name_or_path,",
                "with --training-args"],
     "not_stdout": ["unknown-top-level-key", "missing-distributed-type"]},
    {"name": "file kinds: lint says the same, once",
     "args": ["lint", "--no-env", "{src}/fixtures/configs/training-args-as-config.bad.yaml"], "exit": 10,
     "stdout": ["[training-args-as-config]"], "not_stdout": ["unknown-top-level-key"]},
    {"name": "file kinds: an accelerate config given as --training-args is refused, not accepted silently",
     "args": ["check", "--no-env", "--model", LLAMA, "--training-args",
              "{src}/fixtures/configs/good_fsdp2_accelerate_config.yaml"], "exit": 2,
     "stderr": ["good_fsdp2_accelerate_config.yaml:1:1: expected Trainer/TRL training arguments",
                "found an accelerate config (compute_environment, distributed_type,", "give it with --config"]},
    {"name": "file kinds: a real training-args file still loads",
     "args": ["plan", LLAMA, "--no-env", "--no-tree", "--training-args", "{src}/fixtures/training-args/sft-qlora.yaml"],
     "exit": 0},
]
