#!/usr/bin/env python3
"""The Python helper (python/shardcheck) against the built binary.

Always: fake module objects with torch's module API (named_modules, _parameters, _buffers,
_non_persistent_buffers_set), dumped, read back by `shardcheck inspect/plan --module-tree`, and
preflight on them (a clean one, and the seed's string _no_split_modules). With torch importable
(Debian's python3-torch, not installed by scripts/setup.sh: too heavy for CI's time), plain torch
nn.Modules too. The expected counts are the fake models' own sizes and FSDP1's flat-parameter
arithmetic (torch/distributed/fsdp/_flat_param.py: numel padded to a multiple of the world size).

  run_python_tests.py --binary build/shardcheck --source .
The last line is "N passed, M failed".
"""
import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

ARGS = None


class FakeTensor:
    def __init__(self, *shape, dtype="torch.float32", requires_grad=True):
        self.shape = tuple(shape)
        self.dtype = dtype  # str(torch.float32) is "torch.float32"
        self.requires_grad = requires_grad


class FakeModule:
    """What dump_model reads of a torch module; named_modules as torch's (pre-order, prefix.name)."""

    def __init__(self, **children):
        self._parameters, self._buffers, self._non_persistent_buffers_set = {}, {}, set()
        self._modules = dict(children)

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(prefix=f"{prefix}.{name}" if prefix else name, remove_duplicate=False)


class FakeLinear(FakeModule):
    def __init__(self, n_in, n_out, bias=True):
        super().__init__()
        self._parameters["weight"] = FakeTensor(n_out, n_in)
        if bias:
            self._parameters["bias"] = FakeTensor(n_out)


class FakeEmbedding(FakeModule):
    def __init__(self, n, d):
        super().__init__()
        self._parameters["weight"] = FakeTensor(n, d)


class FakeBlock(FakeModule):
    def __init__(self, d):
        super().__init__(fc1=FakeLinear(d, 3 * d), fc2=FakeLinear(3 * d, d))
        self._buffers["mask"] = FakeTensor(d)  # persistent
        self._buffers["cache"] = FakeTensor(d)
        self._non_persistent_buffers_set.add("cache")


class FakeModuleList(FakeModule):
    pass


class FakeConfig:
    def to_dict(self):
        return {"model_type": "fake", "hidden_size": 8, "ratio": float("nan")}


class FakeModel(FakeModule):
    """An embedding tied to the head, two blocks; _no_split_modules as a subclass sets it."""

    _no_split_modules = ["FakeBlock"]

    def __init__(self):
        embed, head = FakeEmbedding(11, 8), FakeLinear(8, 11, bias=False)
        head._parameters["weight"] = embed._parameters["weight"]  # one Parameter, two names
        super().__init__(embed=embed, layers=FakeModuleList(**{"0": FakeBlock(8), "1": FakeBlock(8)}), head=head)
        self.config = FakeConfig()

    def get_input_embeddings(self):
        return self._modules["embed"]

    def get_output_embeddings(self):
        return self._modules["head"]


class StringNoSplitModel(FakeModel):
    _no_split_modules = "FakeBlock"


BLOCK = 8 * 24 + 24 + 24 * 8 + 8  # fc1 and fc2, weights and biases: 416 elements, each a multiple of 4
# (so FSDP1's 16-byte alignment of float32 parameters adds no padding between them)


def run(*args):
    return subprocess.run([ARGS.binary, *args], capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})


class DumpTest(unittest.TestCase):
    def test_fake_model_dump(self):
        tree = shardcheck.dump_model(FakeModel())
        self.assertEqual(tree["format_version"], shardcheck.FORMAT_VERSION)
        self.assertEqual([m["path"] for m in tree["modules"]],
                         ["", "embed", "layers", "layers.0", "layers.0.fc1", "layers.0.fc2", "layers.1", "layers.1.fc1",
                          "layers.1.fc2", "head"])
        head = tree["modules"][-1]["parameters"][0]
        self.assertEqual(head, {"name": "weight", "shape": [11, 8], "dtype": "float32", "requires_grad": True,
                                "tied_to": "embed.weight"})
        self.assertEqual(tree["modules"][3]["buffers"][1]["persistent"], False)
        self.assertEqual(tree["model"]["no_split_modules"], {"type": "list", "value": ["FakeBlock"]})
        self.assertEqual(tree["model"]["input_embeddings"], "embed")
        self.assertEqual(tree["model"]["config"]["ratio"], "nan")  # strict JSON: no NaN
        self.assertEqual(tree["classes"]["FakeBlock"], ["FakeBlock", "FakeModule"])

    def test_held_types(self):
        self.assertEqual(shardcheck.dump.held("AB"), {"type": "str", "value": "AB"})
        self.assertEqual(shardcheck.dump.held(("A",)), {"type": "tuple", "value": ["A"]})
        self.assertEqual(shardcheck.dump.held(None), {"type": "none", "value": None})
        self.assertEqual(shardcheck.dump.held(frozenset(["A"])), {"type": "frozenset", "value": ["A"]})
        tree = shardcheck.dump_model(StringNoSplitModel())
        self.assertEqual(tree["model"]["no_split_modules"], {"type": "str", "value": "FakeBlock"})
        self.assertEqual(tree["model"]["no_split_modules_declared"], {"class": "StringNoSplitModel", "value": "FakeBlock"})


class BinaryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "tree.json")
        os.environ["SHARDCHECK_BINARY"] = ARGS.binary

    def tearDown(self):
        self.tmp.cleanup()

    def test_inspect_and_plan_read_the_dump(self):
        shardcheck.write_tree(shardcheck.dump_model(FakeModel()), self.path)
        done = run("inspect", "--module-tree", self.path)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("FakeBlock", done.stdout)
        done = run("plan", "--no-env", "--module-tree", self.path, "--world-size", "3", "--format", "json")
        self.assertEqual(done.returncode, 0, done.stderr)
        units = [(u["path"], u["numel"], u["shard_numel"]) for u in json.load(io.StringIO(done.stdout))["units"]]
        # The root keeps the tied embedding once (88 elements, padded to 90 over 3 ranks: 30 each); each
        # block flattens its 416 elements, padded to 417: 139 each.
        self.assertEqual(units, [("", 88, 30), ("layers.0", BLOCK, 139), ("layers.1", BLOCK, 139)])

    def test_preflight_passes_a_clean_model(self):
        with contextlib.redirect_stderr(io.StringIO()):
            report = shardcheck.preflight(FakeModel(), world_size=2)
        self.assertIn("0 error(s)", report)

    def test_preflight_stops_the_seeds_string_no_split_modules(self):
        with self.assertRaises(shardcheck.PreflightError) as caught, contextlib.redirect_stderr(io.StringIO()):
            shardcheck.preflight(StringNoSplitModel(), world_size=2)
        # accelerate iterates the string: list("FakeBlock")[0] is "F", which no module's class is.
        self.assertIn("ValueError: Could not find the transformer layer class F in the model.", str(caught.exception))
        self.assertIn('Make it a list: _no_split_modules = ["FakeBlock"]', caught.exception.report)
        self.assertEqual(caught.exception.exit_code, 1)

    def test_a_broken_dump_exits_13_with_its_position(self):
        with open(self.path, "w") as f:
            f.write('{"format": "shardcheck-module-tree", "format_version": 1,\n "model": []}')
        done = run("plan", "--module-tree", self.path)
        self.assertEqual(done.returncode, 13)
        self.assertIn("tree.json:2:11: error: model: expected an object, found an array", done.stderr)

    def test_dump_without_torch_says_so(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            done = subprocess.run([sys.executable, "-m", "shardcheck", "dump", "x", "-o", self.path],
                                  capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ARGS.python_dir})
            self.assertEqual(done.returncode, 3)
            self.assertIn("needs torch and transformers", done.stderr)
        else:
            self.skipTest("torch is installed")


class CallbackTest(unittest.TestCase):
    """ShardcheckCallback on a stand-in transformers module (TrainerCallback only) when the real one is
    absent: the Trainer's events reach preflight with the arguments' world size."""

    def setUp(self):
        os.environ["SHARDCHECK_BINARY"] = ARGS.binary
        self.stub = "transformers" not in sys.modules and not _importable("transformers")
        if self.stub:
            sys.modules["transformers"] = type(sys)("transformers")
            sys.modules["transformers"].TrainerCallback = type("TrainerCallback", (), {})
        sys.modules.pop("shardcheck.callback", None)

    def tearDown(self):
        if self.stub:
            del sys.modules["transformers"]
        sys.modules.pop("shardcheck.callback", None)

    def test_on_init_end_stops_the_string_model(self):
        args = type("Args", (), {"world_size": 2})()
        callback = shardcheck.ShardcheckCallback()
        with self.assertRaises(shardcheck.PreflightError), contextlib.redirect_stderr(io.StringIO()):
            callback.on_init_end(args, None, None, model=StringNoSplitModel())
        callback.on_train_begin(args, None, None, model=StringNoSplitModel())  # checked once, at init

    def test_on_train_begin_checks_when_added_late(self):
        args = type("Args", (), {"world_size": 2})()
        with contextlib.redirect_stderr(io.StringIO()):
            shardcheck.ShardcheckCallback().on_train_begin(args, None, None, model=FakeModel())


class TransformersTest(unittest.TestCase):
    """A real transformers model and Trainer, when this Python has them (the real-stack chroot:
    ORACLE2_MOUNT=wt40 scripts/oracle2_run.sh env SHARDCHECK_RULES=/wt40/rules python3
    tests/python/run_python_tests.py --binary build/shardcheck --source .)."""

    def setUp(self):
        if not (_importable("torch") and _importable("transformers") and _importable("accelerate")):
            self.skipTest("torch, transformers or accelerate is not installed")
        os.environ["SHARDCHECK_BINARY"] = ARGS.binary
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(vocab_size=37, hidden_size=20, intermediate_size=52, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
        with torch.device("meta"):
            self.model = LlamaForCausalLM(config)
        self.model._no_split_modules = "LlamaDecoderLayer"  # the seed's failure, on the live object

    def test_preflight_raises_accelerates_error(self):
        with self.assertRaises(shardcheck.PreflightError) as caught, contextlib.redirect_stderr(io.StringIO()):
            shardcheck.preflight(self.model, world_size=2)
        # fixtures/module-trees/string-no-split-accelerate.json, "attribute": accelerate 1.14.0's message
        self.assertIn("ValueError: Could not find the transformer layer class L in the model.", str(caught.exception))

    def test_trainer_with_the_callback_stops_at_init(self):
        from transformers import Trainer, TrainingArguments

        with tempfile.TemporaryDirectory() as out, contextlib.redirect_stderr(io.StringIO()):
            args = TrainingArguments(output_dir=out, use_cpu=True, report_to=[])
            with self.assertRaises(shardcheck.PreflightError):
                Trainer(model=self.model.to_empty(device="cpu"), args=args,
                        callbacks=[shardcheck.ShardcheckCallback(world_size=2)])


def _importable(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None


class TorchTest(unittest.TestCase):
    """Plain torch modules, when this Python has torch."""

    def setUp(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        self.torch = torch

    def test_plain_torch_modules(self):
        torch = self.torch
        nn = torch.nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc2 = nn.Linear(8, 24), nn.Linear(24, 8)

        class Net(nn.Module):
            _no_split_modules = ["Block"]

            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(11, 8)
                self.layers = nn.ModuleList([Block(), Block()])
                self.head = nn.Linear(8, 11, bias=False)
                self.head.weight = self.embed.weight
                self.register_buffer("steps", torch.zeros(3), persistent=False)

        net = Net()
        net.layers[0].fc1.weight.requires_grad_(False)
        tree = shardcheck.dump_model(net)
        modules = {m["path"]: m for m in tree["modules"]}
        self.assertEqual(modules["head"]["parameters"][0]["tied_to"], "embed.weight")
        self.assertFalse(modules["layers.0.fc1"]["parameters"][0]["requires_grad"])
        self.assertEqual(modules[""]["buffers"], [{"name": "steps", "shape": [3], "dtype": "float32", "persistent": False}])
        self.assertEqual(tree["classes"]["Linear"], ["Linear", "Module"])
        path = os.path.join(tempfile.mkdtemp(), "tree.json")
        shardcheck.write_tree(tree, path)
        done = run("plan", "--no-env", "--module-tree", path, "--world-size", "4", "--format", "json",
                   "--use-orig-params", "true")
        self.assertEqual(done.returncode, 0, done.stderr)
        units = [(u["path"], u["numel"]) for u in json.load(io.StringIO(done.stdout))["units"]]
        self.assertEqual(units, [("", 88), ("layers.0", BLOCK), ("layers.1", BLOCK)])


def main():
    global ARGS, shardcheck
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    ARGS, rest = ap.parse_known_args()
    ARGS.binary = os.path.abspath(ARGS.binary)
    ARGS.python_dir = os.path.join(os.path.abspath(ARGS.source), "python")
    sys.path.insert(0, ARGS.python_dir)
    import shardcheck as module

    shardcheck = module
    result = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    print(f"{skipped} skipped (no torch / transformers here)" if skipped else "nothing skipped")
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed")
    sys.exit(1 if failed else 0)


shardcheck = None
if __name__ == "__main__":
    main()
