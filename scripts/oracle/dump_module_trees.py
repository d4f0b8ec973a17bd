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
  * string-no-split-remote-code.json: the same through `python3 -m shardcheck dump --trust-remote-code`
    of fixtures/remote-code/string-no-split (a repository whose own modeling file declares the string);
  * outside-*.json: models the registry does not describe (scripts/oracle/outside_oracle.py writes the
    ones it checks against real FSDP).
"""
import os
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

import shardcheck
from shardcheck.__main__ import main as shardcheck_main
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
    os.environ.setdefault("HF_MODULES_CACHE", "/tmp/hf_modules")
    remote = os.path.join(REPO, "fixtures", "remote-code", "string-no-split")
    path = os.path.join(OUT, "string-no-split-remote-code.json")
    shardcheck_main(["dump", remote, "--trust-remote-code", "-o", path])
    with open(path) as f:
        text = f.read().replace(REPO + "/", "")  # config._name_or_path: not the chroot's mount point
    with open(path, "w") as f:
        f.write(text)
    print("string-no-split-remote-code")


def main():
    os.makedirs(OUT, exist_ok=True)
    registry_fixtures()
    string_no_split()


if __name__ == "__main__":
    main()
