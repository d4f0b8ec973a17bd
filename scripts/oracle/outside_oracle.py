#!/usr/bin/python3
"""Models the registry does not describe, planned from their dumps and checked against real FSDP.

Dev-time tool, run in the real-stack chroot with this checkout's Python helper:
  ORACLE2_MOUNT=wt40 scripts/oracle2_run.sh env PYTHONPATH=python:scripts python3 scripts/oracle/outside_oracle.py [TYPE ...]

For each model_type (transformers 5.12.1 has it, rules/models/ does not): the config class's defaults
shrunk to toy sizes (the ones a type's config accepts), built by AutoModelForCausalLM.from_config in
float32 with scripts/torch2_oracle.py's distinct values, then
  * dumped with shardcheck.dump_model to fixtures/module-trees/outside-<type>.json;
  * prepared for real by scripts/torch2_oracle.py's cases (FSDP1 TRANSFORMER_BASED_WRAP over 3 ranks,
    FSDP1 with use_orig_params over 4, FSDP2 over 3; gloo on CPU, one AdamW step), each record written to
    fixtures/oracle2/module-trees/<case>.json in torch2_oracle's format.
tests/unit/test_module_tree_file.cpp plans every record from the dump and compares it to the element.
"""
import os
import sys

import torch
import transformers

import shardcheck
import torch2_oracle as T

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREES = os.path.join(REPO, "fixtures", "module-trees")
RECORDS = os.path.join(REPO, "fixtures", "oracle2", "module-trees")

SMALL = dict(vocab_size=37, hidden_size=24, intermediate_size=52, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=6, max_position_embeddings=64)
MOE = dict(num_experts=4, num_local_experts=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=12,
           first_k_dense_replace=1, n_shared_experts=1, shared_intermediate_size=12)
TYPES = ["lfm2", "ministral", "glm4_moe", "dots1", "ernie4_5_moe", "cohere2_moe", "granitemoeshared", "minimax",
         "exaone_moe", "afmoe", "modernbert_decoder", "mellum", "hy_v3", "laguna", "lfm2_moe"]


def config_for(model_type):
    for extra in (MOE, {}):
        try:
            cfg = transformers.AutoConfig.for_model(model_type, **SMALL, **extra)
        except Exception:  # noqa: BLE001 - a config class that refuses these fields: try fewer
            continue
        if hasattr(cfg, "experts_implementation"):
            cfg.experts_implementation = "eager"
        return cfg
    raise ValueError(f"no toy config for {model_type}")


def build(model_type):
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config_for(model_type), dtype=torch.float32)
    T.fill_distinct(model)
    return model


def cases(model_type):
    return [T.case(model_type, 1, 3, T.TF()), T.case(model_type, 1, 4, T.TF(), use_orig_params=True),
            T.case(model_type, 2, 3, T.TF())]


def main():
    os.makedirs(RECORDS, exist_ok=True)
    T.LOAD_HOOK = lambda c: build(c["model"])
    for model_type in sys.argv[1:] or TYPES:
        try:
            model = build(model_type)
            with torch.no_grad():  # a backward here would start autograd's threads, which the forked ranks cannot use
                model(input_ids=torch.tensor([[1, 2, 3, 4, 5]]), labels=torch.tensor([[1, 2, 3, 4, 5]]))
        except Exception as e:  # noqa: BLE001 - one that does not build or run is left out, said so
            print(f"{model_type}: left out ({type(e).__name__}: {str(e)[:200]})", file=sys.stderr)
            continue
        shardcheck.write_tree(shardcheck.dump_model(model), os.path.join(TREES, f"outside-{model_type}.json"))
        for i, c in enumerate(cases(model_type)):
            T.run_and_write(c, RECORDS, 300, f"{model_type} {i + 1}/3")


if __name__ == "__main__":
    main()
