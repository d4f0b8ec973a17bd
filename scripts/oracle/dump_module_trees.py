#!/usr/bin/python3
"""Module-tree dumps (docs/module-tree.md) of real transformers models, committed as fixtures.

Dev-time tool, run in the real-stack chroot (scripts/oracle2_setup.sh; torch 2.14.1, transformers
5.12.1, accelerate 1.14.0) with the Python helper of this checkout:
  ORACLE2_MOUNT=wt40 scripts/oracle2_run.sh env PYTHONPATH=python python3 scripts/oracle/dump_module_trees.py

Writes fixtures/module-trees/:
  * <name>.json for every registry fixture fixtures/models/<name> that transformers builds
    (`python3 -m shardcheck dump fixtures/models/<name>`, meta device, config.json's dtype): the
    unit tests plan each one and the registry path's tree of the same config, and require the same plan;
  * string-no-split-attribute.json, string-no-split-class.json: the seed's failure, a Llama whose
    _no_split_modules is a string (assigned to the object; declared by a trust_remote_code-style
    subclass), as scripts/oracle/no_split_string_probe.py builds them;
  * outside-*.json: models the registry does not describe.
"""
import os
import sys

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

import shardcheck
from shardcheck.build import build_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(REPO, "fixtures", "module-trees")


class StringNoSplitLlama(LlamaForCausalLM):
    _no_split_modules = "LlamaDecoderLayer"


def tiny_llama():
    return LlamaConfig(vocab_size=37, hidden_size=20, intermediate_size=52, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)


def write(name, model):
    shardcheck.write_tree(shardcheck.dump_model(model), os.path.join(OUT, name + ".json"))
    print(name)


def registry_fixtures():
    models = os.path.join(REPO, "fixtures", "models")
    for name in sorted(os.listdir(models)):
        path = os.path.join(models, name)
        if not os.path.isfile(os.path.join(path, "config.json")):
            continue
        try:
            model = build_model(path)
        except Exception as e:  # noqa: BLE001 - a config transformers cannot build is skipped, said so
            print(f"{name}: not built ({type(e).__name__}: {e})", file=sys.stderr)
            continue
        model.config._name_or_path = f"fixtures/models/{name}"  # not the chroot's mount point
        write(name, model)


def string_no_split():
    with torch.device("meta"):
        by_class = StringNoSplitLlama(tiny_llama())
        by_attribute = LlamaForCausalLM(tiny_llama())
    by_attribute._no_split_modules = "LlamaDecoderLayer"
    write("string-no-split-class", by_class)
    write("string-no-split-attribute", by_attribute)


def outside_registry():
    """Architectures transformers has and the registry does not, from their config class's defaults
    shrunk to toy sizes."""
    small = dict(vocab_size=37, hidden_size=24, intermediate_size=52, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=64)
    for model_type in sys.argv[1:] or ["lfm2", "dbrx", "zamba2"]:
        try:
            config = transformers.AutoConfig.for_model(model_type, **small)
            with torch.device("meta"):
                model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
        except Exception as e:  # noqa: BLE001
            print(f"{model_type}: not built ({type(e).__name__}: {e})", file=sys.stderr)
            continue
        write("outside-" + model_type, model)


def main():
    os.makedirs(OUT, exist_ok=True)
    registry_fixtures()
    string_no_split()
    outside_registry()


if __name__ == "__main__":
    main()
