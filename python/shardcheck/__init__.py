"""shardcheck from Python: dump a model's module tree, and check it before FSDP wraps it.

    import shardcheck
    shardcheck.preflight(model, accelerator)      # right before accelerator.prepare(model)
    trainer.add_callback(shardcheck.ShardcheckCallback())   # or, for transformers' Trainer / TRL

Standard library only: the model's own torch, transformers and peft are used when the caller has
them. `preflight` runs the `shardcheck` binary (`shardcheck check --module-tree ...`); the schema of
the dump is docs/module-tree.md.
"""
from .dump import FORMAT_VERSION, dump_model, write_tree
from .run import PreflightError, find_binary, preflight

__version__ = "0.1.0"
__all__ = ["FORMAT_VERSION", "PreflightError", "ShardcheckCallback", "dump_model", "find_binary", "preflight",
           "write_tree"]


def __getattr__(name):
    # transformers is imported only by those who ask for the callback.
    if name == "ShardcheckCallback":
        from .callback import ShardcheckCallback

        return ShardcheckCallback
    raise AttributeError(f"module 'shardcheck' has no attribute {name!r}")
