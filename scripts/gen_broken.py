#!/usr/bin/env python3
"""Writes the catalogue of broken checkpoints under fixtures/broken/ (committed; rerun to refresh).

Each broken safetensors file is fixtures/broken/<name>.safetensors; each broken model directory
is fixtures/broken/index_<name>/. Next to each, <name>.expect holds three lines:
    1. the exit code shardcheck must derive from it (shardcheck/exit_codes.hpp)
    2. a substring of the message that must be reported
    3. the diagnostic code (every error reported for the fixture has this code)
Every fixture has exactly one kind of problem, so a check that is removed leaves its fixture
unreported and tests/unit/test_safetensors.cpp ("broken catalogue") fails.

The layout follows the safetensors format (huggingface/safetensors README.md, tensor.rs @24b0b28):
an 8-byte little-endian header length N, N bytes of JSON, then the data region.

Usage: scripts/gen_broken.py [--out fixtures/broken]
Pure python3, no third-party modules.
"""

import argparse
import json
import shutil
import struct
from pathlib import Path

# shardcheck/exit_codes.hpp
OK, IO, BAD_SAFETENSORS, TRUNCATED, BAD_INDEX = 0, 3, 5, 6, 7

DTYPE_BITS = {"BOOL": 8, "F4": 4, "U8": 8, "I8": 8, "F16": 16, "BF16": 16, "I32": 32, "F32": 32,
              "I64": 64, "F64": 64}


def compact(obj):
    return json.dumps(obj, separators=(",", ":"))


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def safetensors_bytes(header, data=b"", header_len=None):
    """A file image: the length prefix (N = len(header) unless given), the header, the data."""
    if isinstance(header, str):
        header = header.encode("utf-8")
    n = len(header) if header_len is None else header_len
    return struct.pack("<Q", n) + header + data


def valid_shard(tensors):
    """A well-formed file holding `tensors` [(name, dtype, shape)] with zeroed data, the header
    padded with spaces to a multiple of 8 as the reference writer does."""
    header, offset = {}, 0
    for name, dtype, shape in tensors:
        numel = 1
        for d in shape:
            numel *= d
        size = numel * DTYPE_BITS[dtype] // 8
        header[name] = entry(dtype, shape, offset, offset + size)
        offset += size
    text = compact(header)
    text += " " * (-len(text) % 8)
    return safetensors_bytes(text, b"\0" * offset)


def f32(name, *shape):
    return (name, "F32", list(shape))


# --- single files: name -> (bytes, exit code, message substring, diagnostic code) -------------

def broken_files():
    w4 = {"w": entry("F32", [1], 0, 4)}
    return {
        "file_too_small": (b"\x05\x00\x00", TRUNCATED, "3 bytes long", "ST001"),
        "header_too_large": (struct.pack("<Q", 0x0000FFFF00000000) + b"{}", BAD_SAFETENSORS,
                             "allows at most 100000000", "ST002"),
        "header_truncated": (safetensors_bytes('{"w":{"dtype":"F32","shape":[1],"data_',
                                               header_len=200),
                             TRUNCATED, "(missing 162 bytes)", "ST003"),
        "header_not_utf8": (safetensors_bytes(b'{"w\xff":{"dtype":"F32","shape":[1],'
                                              b'"data_offsets":[0,4]}}', b"\0" * 4),
                            BAD_SAFETENSORS, "not valid UTF-8", "ST004"),
        "header_not_json": (safetensors_bytes('{"w":{"dtype":"F32",'), BAD_SAFETENSORS,
                            "not valid JSON", "ST005"),
        "header_not_object": (safetensors_bytes("[1,2,3]"), BAD_SAFETENSORS,
                              "header JSON is an array", "ST006"),
        "metadata_not_string": (safetensors_bytes(compact({"__metadata__": {"format": "pt",
                                                                             "step": 10}, **w4}),
                                                  b"\0" * 4),
                                BAD_SAFETENSORS, "__metadata__ value for 'step'", "ST007"),
        "entry_not_object": (safetensors_bytes(compact({"w": [1, 2]})), BAD_SAFETENSORS,
                             "entry is an array", "ST008"),
        "entry_unknown_key": (safetensors_bytes(compact({"w": {**entry("F32", [1], 0, 4),
                                                               "strides": [1]}}), b"\0" * 4),
                              BAD_SAFETENSORS, "unexpected key 'strides'", "ST008"),
        "entry_missing_key": (safetensors_bytes(compact({"w": {"dtype": "F32", "shape": [1]}})),
                              BAD_SAFETENSORS, "lacks data_offsets", "ST008"),
        "unknown_dtype": (safetensors_bytes(compact({"w": entry("F128", [1], 0, 16)}),
                                            b"\0" * 16),
                          BAD_SAFETENSORS, "unknown dtype 'F128'", "ST009"),
        "negative_shape": (safetensors_bytes(compact({"w": entry("F32", [2, -1], 0, 8)}),
                                             b"\0" * 8),
                           BAD_SAFETENSORS, "shape[1] is -1", "ST010"),
        "fractional_shape": (safetensors_bytes(compact({"w": entry("F32", [2.5], 0, 8)}),
                                               b"\0" * 8),
                             BAD_SAFETENSORS, "shape[0] is 2.5", "ST010"),
        "bad_data_offsets": (safetensors_bytes(compact({"w": {"dtype": "F32", "shape": [1],
                                                              "data_offsets": [0]}})),
                             BAD_SAFETENSORS, "expected [begin, end]", "ST011"),
        "reversed_offsets": (safetensors_bytes(compact({"w": entry("F32", [1], 8, 4)})),
                             BAD_SAFETENSORS, "data_offsets [8, 4] end before begin", "ST012"),
        "size_overflow": (safetensors_bytes(compact({"w": entry("I32", [2, 18446744073709551614],
                                                                0, 16)}), b"\0" * 16),
                          BAD_SAFETENSORS, "overflows 64-bit arithmetic", "ST013"),
        "misaligned_f4": (safetensors_bytes(compact({"w": entry("F4", [3], 0, 2)}), b"\0" * 2),
                          BAD_SAFETENSORS, "12 bits, not a whole number of bytes", "ST014"),
        "wrong_byte_length": (safetensors_bytes(compact({"w": entry("I32", [2, 2], 0, 4)}),
                                                b"\0" * 4),
                              BAD_SAFETENSORS, "span 4 bytes; expected 16", "ST015"),
        # json.dumps cannot repeat a key, so this header is written by hand.
        "duplicate_name": (safetensors_bytes('{"w":{"dtype":"F32","shape":[1],"data_offsets":'
                                             '[0,4]},"w":{"dtype":"F32","shape":[1],'
                                             '"data_offsets":[4,8]}}', b"\0" * 8),
                           BAD_SAFETENSORS, "'w' appears more than once", "ST016"),
        "data_not_at_zero": (safetensors_bytes(compact({"w": entry("F32", [1], 4, 8)}),
                                               b"\0" * 8),
                             BAD_SAFETENSORS, "starts at data offset 4; expected 0", "ST017"),
        "data_hole": (safetensors_bytes(compact({"a": entry("F32", [1], 0, 4),
                                                 "b": entry("F32", [1], 8, 12)}), b"\0" * 12),
                      BAD_SAFETENSORS, "hole of 4 bytes", "ST018"),
        "data_overlap": (safetensors_bytes(compact({"a": entry("F32", [2], 0, 8),
                                                    "b": entry("F32", [2], 4, 12)}), b"\0" * 12),
                         BAD_SAFETENSORS, "in data bytes [4, 8) (4 bytes)", "ST019"),
        # tensor.rs test_json_attack: ten tensors claiming the same 16 bytes.
        "json_attack": (safetensors_bytes(compact({f"weight_{i}": entry("F32", [2, 2], 0, 16)
                                                   for i in range(10)}), b"\0" * 16),
                        BAD_SAFETENSORS, "overlaps tensor", "ST019"),
        "data_truncated": (safetensors_bytes(compact({"w": entry("F32", [4], 0, 16)}), b"\0" * 10),
                           TRUNCATED, "(missing 6 bytes)", "ST020"),
        # tensor.rs test_metadata_incomplete_buffer: a polyglot tail after the data.
        "trailing_bytes": (safetensors_bytes(compact(w4), b"\0" * 4 + b"extra"), TRUNCATED,
                           "5 trailing bytes", "ST021"),
    }


# --- model directories: name -> ({file: bytes}, exit code, substring, diagnostic code) ---------

SHARD1 = "model-00001-of-00002.safetensors"
SHARD2 = "model-00002-of-00002.safetensors"


def index_json(weight_map, total_size=40, raw=None):
    if raw is not None:
        return raw.encode()
    return json.dumps({"metadata": {"total_size": total_size}, "weight_map": weight_map},
                      indent=2).encode()


def broken_dirs():
    shard1 = valid_shard([f32("a.weight", 2, 2), f32("b.weight", 2)])   # 24 data bytes
    shard2 = valid_shard([f32("c.weight", 4)])                          # 16 data bytes
    good_map = {"a.weight": SHARD1, "b.weight": SHARD1, "c.weight": SHARD2}
    shards = {SHARD1: shard1, SHARD2: shard2}

    def with_index(index_bytes, files=None):
        return {**(shards if files is None else files), "model.safetensors.index.json": index_bytes}

    return {
        "not_json": (with_index(b'{"weight_map": {'), BAD_INDEX, "index is not valid JSON",
                     "IX003"),
        "not_object": (with_index(b"[]"), BAD_INDEX, "index JSON is not an object", "IX004"),
        "no_weight_map": (with_index(b'{"metadata": {"total_size": 40}}'), BAD_INDEX,
                          "no weight_map object", "IX005"),
        "shard_not_string": (with_index(index_json({**good_map, "ghost.weight": 1})), BAD_INDEX,
                             "weight_map['ghost.weight'] is 1", "IX006"),
        "duplicate_tensor": (with_index(index_json(None, raw=(
            '{"metadata": {"total_size": 40}, "weight_map": {"a.weight": "%s", "a.weight": "%s",'
            ' "b.weight": "%s", "c.weight": "%s"}}' % (SHARD1, SHARD1, SHARD1, SHARD2)))),
            BAD_INDEX, "'a.weight' is listed twice", "IX007"),
        "path_escape": (with_index(index_json({**good_map,
                                               "ghost.weight": "../outside.safetensors"})),
                        BAD_INDEX, "leads outside the model directory", "IX008"),
        "missing_shard": (with_index(index_json(good_map), files={SHARD1: shard1}), BAD_INDEX,
                          f"shard '{SHARD2}' named by weight_map does not exist", "IX009"),
        "tensor_not_in_shard": (
            with_index(index_json({"a.weight": SHARD1, "b.weight": SHARD1, "c.weight": SHARD1,
                                   "d.weight": SHARD2}, total_size=56),
                       files={SHARD1: shard1,
                              SHARD2: valid_shard([f32("c.weight", 4), f32("d.weight", 4)])}),
            BAD_INDEX, f"'c.weight' is listed in shard '{SHARD1}' but that shard does not hold it",
            "IX010"),
        "tensor_in_two_shards": (
            with_index(index_json(good_map, total_size=56),
                       files={SHARD1: shard1,
                              SHARD2: valid_shard([f32("c.weight", 4), f32("a.weight", 2, 2)])}),
            BAD_INDEX, "and also in shard", "IX011"),
        "unlisted_tensor": (with_index(index_json({"a.weight": SHARD1, "c.weight": SHARD2})),
                            BAD_INDEX, "holds tensor 'b.weight' that weight_map does not list",
                            "IX012"),
        "bad_metadata": (with_index(index_json(good_map, total_size="forty")), BAD_INDEX,
                         "metadata.total_size is \"forty\"", "IX013"),
        "total_size_mismatch": (with_index(index_json(good_map, total_size=48)), BAD_INDEX,
                                "total_size is 48 but the shards' headers describe 40", "IX014"),
        "unlisted_shard_file": (
            with_index(index_json(good_map),
                       files={**shards, "model-00003-of-00003.safetensors": shard2}),
            OK, "'model-00003-of-00003.safetensors' is not referenced", "IX015"),
        "missing": (dict(shards), BAD_INDEX, "2 .safetensors files but no "
                    "model.safetensors.index.json", "IX016"),
    }


def write_expect(path, exit_code, substring, code):
    path.write_text(f"{exit_code}\n{substring}\n{code}\n")


def main():
    here = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=here / "fixtures" / "broken")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.iterdir():  # regenerate from scratch so renamed fixtures do not linger
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink()

    for name, (data, exit_code, substring, code) in broken_files().items():
        (out / f"{name}.safetensors").write_bytes(data)
        write_expect(out / f"{name}.expect", exit_code, substring, code)
    for name, (files, exit_code, substring, code) in broken_dirs().items():
        model_dir = out / f"index_{name}"
        model_dir.mkdir()
        for file_name, data in files.items():
            (model_dir / file_name).write_bytes(data)
        write_expect(out / f"index_{name}.expect", exit_code, substring, code)
    print(f"wrote {len(broken_files())} files and {len(broken_dirs())} directories to {out}")


if __name__ == "__main__":
    main()
