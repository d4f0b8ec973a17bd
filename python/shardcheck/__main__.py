"""python3 -m shardcheck dump MODEL [-o tree.json]: a model directory's module tree, built on the meta
device (no weights read), as docs/module-tree.md describes it."""
import argparse
import json
import sys

from .dump import dump_model, write_tree


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m shardcheck", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="write a model's module tree for `shardcheck ... --module-tree`")
    d.add_argument("model", help="a model directory or its config.json")
    d.add_argument("--trust-remote-code", action="store_true", help="build the repository's own model class (auto_map)")
    d.add_argument("--adapter", help="a LoRA adapter directory (adapter_config.json) to apply with peft")
    d.add_argument("--dtype", default="auto", help="from_pretrained's dtype: auto (config.json's), float32, bfloat16, ...")
    d.add_argument("-o", "--output", default="-", help="where to write the tree (default: stdout)")
    args = ap.parse_args(argv)

    from .build import build_model

    model_dir = args.model[: -len("config.json")] or "." if args.model.endswith("config.json") else args.model
    try:
        model = build_model(model_dir, args.trust_remote_code, args.adapter, args.dtype)
    except ImportError as e:
        print(f"shardcheck dump: needs torch and transformers in this Python ({e})", file=sys.stderr)
        return 3
    except Exception as e:  # noqa: BLE001 - transformers' own error, said in one line, not a traceback
        print(f"shardcheck dump: transformers cannot build {args.model}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    tree = dump_model(model)
    if args.output == "-":
        json.dump(tree, sys.stdout, indent=1, allow_nan=False)
        print()
    else:
        write_tree(tree, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
