#!/usr/bin/python3
"""What accelerate does with a model whose `_no_split_modules` is a string (issue 40, the seed's failure).

Dev-time tool, run in the real-stack chroot (scripts/oracle2_setup.sh):
  ORACLE2_MOUNT=wt40 scripts/oracle2_run.sh python3 scripts/oracle/no_split_string_probe.py \
      > fixtures/module-trees/string-no-split-accelerate.json

Two ways a live model ends up with a string:
  * class: a trust_remote_code class declares `_no_split_modules = "LlamaDecoderLayer"`; transformers
    5.12.1 PreTrainedModel.post_init does `set(self._no_split_modules or [])` (its characters) and
    unions the children's lists;
  * attribute: the string is assigned to the built object (`model._no_split_modules = "..."`).
For each, TRANSFORMER_BASED_WRAP with no class list, FSDP1 (FullyShardedDataParallelPlugin
.set_auto_wrap_policy, accelerate utils/dataclasses.py) and FSDP2 (fsdp2_prepare_auto_wrap_policy,
accelerate utils/fsdp_utils.py), with the PYTHONHASHSEED oracle2_run.sh sets (0). Prints one JSON
object: the attribute as the object holds it, and the exception each raises. The unit tests take
accelerate's messages from it (tests/unit/test_module_tree_file.cpp); scripts/oracle/dump_module_trees.py
dumps the same two models.
"""
import json
import os
import sys

import accelerate
import torch
import transformers
from accelerate import FullyShardedDataParallelPlugin
from accelerate.utils.fsdp_utils import fsdp2_prepare_auto_wrap_policy
from transformers import LlamaConfig, LlamaForCausalLM


class StringNoSplitLlama(LlamaForCausalLM):
    _no_split_modules = "LlamaDecoderLayer"


def tiny():
    return LlamaConfig(vocab_size=37, hidden_size=20, intermediate_size=52, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)


def wrap_error(model, version):
    plugin = FullyShardedDataParallelPlugin(fsdp_version=version, auto_wrap_policy="transformer_based_wrap")
    try:
        if version == 1:
            plugin.set_auto_wrap_policy(model)
        else:
            fsdp2_prepare_auto_wrap_policy(plugin, model)
    except Exception as e:  # noqa: BLE001 - the exception is the record
        return f"{type(e).__name__}: {e}"
    return None


def held(model):
    v = model._no_split_modules
    return {"type": type(v).__name__, "iterated": list(v)}


def main():
    with torch.device("meta"):
        by_class = StringNoSplitLlama(tiny())
        by_attribute = LlamaForCausalLM(tiny())
    by_attribute._no_split_modules = "LlamaDecoderLayer"
    out = {"versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                        "accelerate": accelerate.__version__},
           "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED")}
    for name, model in (("class", by_class), ("attribute", by_attribute)):
        out[name] = {"held": held(model), "fsdp1": wrap_error(model, 1), "fsdp2": wrap_error(model, 2)}
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
