#!/usr/bin/python3
"""Records transformers' tensor-parallel plans for every model_type in rules/models/.

Dev-time tool, run in the torch 2.x oracle chroot (scripts/oracle2_setup.sh):

  scripts/oracle2_run.sh python3 scripts/tp_plans.py fixtures/oracle2/tp/plans.json

For each registry model_type: the config class's `base_model_tp_plan` (None when it has none), the
`_tp_plan` of the head class transformers' auto mapping gives it (causal LM, else image-text-to-text),
and the config class's `base_model_ep_plan` where it has one (`ep_base`), read from the installed
transformers. tests/unit/test_tp_plans.cpp requires rules/models/<type>.yaml's `tp_plan`
to say the same.
"""
import glob
import json
import os
import sys

import transformers
from transformers import AutoConfig

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def head_class(model_type: str) -> str | None:
    """The causal-LM (or image-text-to-text) head class transformers maps the model_type to."""
    from transformers.models.auto import modeling_auto as ma
    for table in (ma.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, ma.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES):
        if model_type in table:
            return table[model_type]
    return None


out = {"transformers": transformers.__version__, "models": {}}
for path in sorted(glob.glob(os.path.join(REPO, "rules", "models", "*.yaml"))):
    stem = os.path.basename(path)[:-5]
    if stem.startswith("_"):
        continue
    rec = {}
    try:
        cfg_cls = type(AutoConfig.for_model(stem))
        plan = getattr(cfg_cls, "base_model_tp_plan", None)
        rec["base"] = dict(plan) if plan else None
        # Expert parallelism (DistributedConfig(enable_expert_parallel=True)): model.tp_plan is then
        # this plan instead (modeling_utils.py PreTrainedModel.tp_plan, 5.12.1).
        ep = getattr(cfg_cls, "base_model_ep_plan", None)
        if ep:
            rec["ep_base"] = dict(ep)
    except Exception as e:  # noqa: BLE001 - a sub-config type without its own AutoConfig entry
        rec["error"] = f"{type(e).__name__}: {e}"
    arch = head_class(stem)
    if arch and hasattr(transformers, arch):
        rec["head_class"] = arch
        rec["head"] = dict(getattr(getattr(transformers, arch), "_tp_plan", None) or {})
    out["models"][stem] = rec
with open(sys.argv[1], "w") as f:  # transformers logs to stdout: the record goes to a file
    json.dump(out, f, indent=1, sort_keys=True)
    f.write("\n")
