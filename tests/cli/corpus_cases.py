"""CLI cases for what the public corpus (tests/corpus, issue #37) found, each asserting accelerate's
(v1.14.0) or transformers'/TRL's behaviour, not shardcheck's own output. The corpus files are real
public configs and recipes (tests/corpus/SOURCES); the line-ending cases write their own files."""
import pathlib
import shutil
import tempfile

SRC = pathlib.Path(__file__).resolve().parents[2]
CORPUS = "{src}/tests/corpus"
LLAMA = "{src}/fixtures/models/llama"

_TMP = pathlib.Path(tempfile.mkdtemp(prefix="shardcheck-corpus-cli-"))
TMP = str(_TMP)
# Flattened FSDP keys in a CR-only and a CRLF file: --fix inserts `fsdp_config:` and indents them.
_FLAT = ["compute_environment: LOCAL_MACHINE", "distributed_type: FSDP", "fsdp_version: 2",
         "fsdp_offload_params: false", "num_processes: 2", ""]
(_TMP / "cr_only_flat.yaml").write_bytes("\r".join(_FLAT).encode())
(_TMP / "crlf_flat.yaml").write_bytes("\r\n".join(_FLAT).encode())
# deepspeed_config given as a file name under DEEPSPEED: the DeepSpeed launcher calls .keys() on it.
(_TMP / "ds_string.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                                     "deepspeed_config: ds_config.json\nnum_processes: 2\n")
# `distributed_type: NO` unquoted (the boolean False) without num_processes.
(_TMP / "no_bool_no_procs.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: NO\n"
                                            "mixed_precision: bf16\n")
shutil.copy(SRC / "tests/corpus/configs/148-speak-asr-asr-finetune-accelerate-config.yaml", _TMP / "no_bool.yaml")


def only_line_ending(name, eol):
    def check(_stdout, _binary, _subst):
        data = (_TMP / name).read_bytes()
        lf_alone = data.replace(b"\r\n", b"").count(b"\n")
        cr_alone = data.replace(b"\r\n", b"").count(b"\r")
        if b"fsdp_config:" not in data:
            return f"{name} was not fixed: {data!r}"
        if eol == b"\r" and (lf_alone or b"\r\n" in data):
            return f"{name}: LF written into a CR-only file: {data!r}"
        if eol == b"\r\n" and (lf_alone or cr_alone):
            return f"{name}: a lone LF or CR written into a CRLF file: {data!r}"
        return None
    return check


CASES = [
    # commands/launch.py _validate_launch_command: use_fsdp = distributed_type == FSDP; MULTI_GPU runs
    # DDP (multi_gpu_launcher without ACCELERATE_USE_FSDP), so there is no FSDP plan to show.
    {"name": "check: a MULTI_GPU config (TRL's multi_gpu.yaml) plans no FSDP and says why",
     "args": ["check", "--no-env", "--config", CORPUS + "/configs/125-huggingface-trl-multi-gpu.yaml", "--model", LLAMA],
     "exit": 0, "stdout": ["distributed_type is MULTI_GPU: accelerate launch does not use FSDP", "[SET009]"],
     "not_stdout": ["FSDP1 FULL_SHARD", "PLAN014", "TRANSFORMER_BASED_WRAP"]},
    {"name": "check: a DEEPSPEED config plans no FSDP either",
     "args": ["check", "--no-env", "--config", CORPUS + "/configs/126-huggingface-trl-deepspeed-zero3.yaml", "--model",
              LLAMA], "exit": 0, "stdout": ["distributed_type is DEEPSPEED", "[SET009]"], "not_stdout": ["FSDP1"]},
    {"name": "check: ACCELERATE_USE_FSDP=true in the job's environment makes the Accelerator use FSDP: planned",
     "args": ["check", "--config", CORPUS + "/configs/125-huggingface-trl-multi-gpu.yaml", "--model", LLAMA],
     "env": {"ACCELERATE_USE_FSDP": "true"}, "exit": (0, 1), "not_stdout": ["[SET009]"], "stdout": ["FSDP"]},
    # TrainingArguments has fsdp_config (transformers training_args.py); open-r1's GRPO demo carries a stray
    # num_processes among 35 TRL keys: a recipe, said once, not ~30 unknown-key errors.
    {"name": "lint: a TRL recipe with a stray num_processes is named a recipe, not 30 unknown keys",
     "args": ["lint", "--no-env", CORPUS + "/recipes/005-huggingface-open-r1-config-demo.yaml"], "exit": 10,
     "stdout": ["[training-args-as-config]", "only 1 accelerate key (num_processes)"],
     "not_stdout": ["unknown-top-level-key", "missing-distributed-type"]},
    {"name": "lint: a Trainer recipe named fsdp_config.yaml (fsdp, fsdp_config, num_processes) is a recipe",
     "args": ["lint", "--no-env", CORPUS + "/recipes/001-nota-netspresso-racgeval-fsdp-config.yaml"], "exit": 10,
     "stdout": ["[training-args-as-config]"], "not_stdout": ["unknown-top-level-key"]},
    {"name": "check: a recipe given as --config says so and plans nothing",
     "args": ["check", "--no-env", "--config", CORPUS + "/recipes/002-huggingface-alignment-handbook-config-full.yaml",
              "--model", LLAMA], "exit": 10, "stdout": ["[training-args-as-config]", "--training-args"],
     "not_stdout": ["FSDP1 FULL_SHARD", "PLAN014"]},
    # _validate_launch_command copies a section only `if isinstance(attr, dict)`: a string
    # deepspeed_config under MULTI_GPU is never read; the DeepSpeed launcher calls .keys() on it.
    {"name": "lint: a string deepspeed_config under MULTI_GPU is never read: a warning, not an error",
     "args": ["lint", "--no-env", CORPUS + "/configs/144-phoenixbeaudry-gradients-modified-accelerate-config.yaml"],
     "exit": 0, "stdout": ["warning: `deepspeed_config`: expected a mapping, found a string", "never read"],
     "not_stdout": ["error:"]},
    {"name": "lint: a string deepspeed_config under DEEPSPEED fails in the DeepSpeed launcher: an error",
     "args": ["lint", "--no-env", TMP + "/ds_string.yaml"], "exit": 1,
     "stdout": ["error: `deepspeed_config`: expected a mapping, found a string", ".keys()"]},
    # BaseConfig.__post_init__ converts only a str; launch_command then runs simple_launcher, as for 'NO'.
    {"name": "lint: `distributed_type: NO` (False) with num_processes runs as NO: a warning",
     "args": ["lint", "--no-env", TMP + "/no_bool.yaml"], "exit": 0,
     "stdout": ["warning: `distributed_type: NO` is the boolean False", "single-process launcher"]},
    {"name": "lint: `distributed_type: NO` (False) without num_processes: process_config leaves -1, launch fails",
     "args": ["lint", "--no-env", TMP + "/no_bool_no_procs.yaml"], "exit": 1,
     "stdout": ["error: `distributed_type: NO` is the boolean False", "--num_processes"]},
    # prepare_multi_gpu_env builds --rdzv_endpoint from main_process_ip (None); only the simple
    # launcher has the assert the old message quoted.
    {"name": "lint: FSDP on 2 machines without main_process_ip names torchrun's None rendezvous",
     "args": ["lint", "--no-env", CORPUS + "/configs/040-shiwanghua-swh-trl-fsdp-config.yaml"], "exit": 0,
     "stdout": ["rendezvous address `None:<port>`"], "not_stdout": ["you need to specify the main process IP"]},
    # prepare_deepspeed_cmd_env: the default pdsh launcher adds --master_addr only `if main_process_ip`; the
    # deepspeed runner takes the hostfile's first host.
    {"name": "lint: DEEPSPEED on 64 machines with the default pdsh launcher needs no main_process_ip",
     "args": ["lint", "--no-env", CORPUS + "/configs/079-b1029002-model-training-accelerate-config.yaml"], "exit": 1,
     "stdout": ["[processes-not-divisible]"], "not_stdout": ["multi-node-no-main-ip"]},
    # LLaMA-Factory's parser reads these files (stage, finetuning_type), not TRL's ModelConfig.
    {"name": "check: a LLaMA-Factory training file gets no TRL float32 note",
     "args": ["check", "--no-env", "--training-args", CORPUS + "/recipes/022-aa-n-qwen3-lora-training-args.yaml",
              "--model", "{src}/fixtures/models/qwen3"], "exit": 0, "not_stdout": ["TRL001"]},
    {"name": "check: a TRL recipe without a dtype still gets it",
     "args": ["check", "--no-env", "--training-args", CORPUS + "/recipes/020-huggingface-trl-example-config.yaml",
              "--model", "{src}/fixtures/models/qwen2"], "exit": 0, "stdout": ["TRL001"]},
    # --fix keeps the file's own line ends (PyYAML reads CR, CRLF and LF alike in text mode).
    {"name": "lint --fix on a CR-only file writes CR line ends only",
     "args": ["lint", "--no-env", "--fix", TMP + "/cr_only_flat.yaml"], "exit": 0, "stderr": ["fixed 1 file"],
     "text": only_line_ending("cr_only_flat.yaml", b"\r")},
    {"name": "lint --fix on a CRLF file writes CRLF line ends only",
     "args": ["lint", "--no-env", "--fix", TMP + "/crlf_flat.yaml"], "exit": 0, "stderr": ["fixed 1 file"],
     "text": only_line_ending("crlf_flat.yaml", b"\r\n")},
    {"name": "plan --gpu: a misspelt preset gets a did-you-mean",
     "args": ["plan", LLAMA, "--gpu", "h100-80gbb"], "exit": 2, "stderr": ["did you mean 'h100-80gb'?"]},
    {"name": "plan --gpu: another GPU (b200) is no typo of h200: no guess, the size flag instead",
     "args": ["plan", LLAMA, "--gpu", "b200"], "exit": 2, "stderr": ["--gpu-memory"], "not_stderr": ["did you mean"]},
    {"name": "plan --gpu: a family name lists its presets",
     "args": ["plan", LLAMA, "--gpu", "A100"], "exit": 2, "stderr": ["did you mean one of 'a100-40gb', 'a100-80gb'?",
                                                                     "--gpu-memory"]},
]
