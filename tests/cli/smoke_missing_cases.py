"""`shardcheck smoke` when the LibTorch runner is not installed next to shardcheck: a clear message
and its own exit code (27), in every build (these cases need no LibTorch)."""

CASES = [
    {"name": "smoke without shardcheck-smoke",
     "args": ["smoke", "{src}/fixtures/models/llama", "--nproc", "2"],
     "env": {"SHARDCHECK_SMOKE_BINARY": "{work}/no-such-dir/shardcheck-smoke"},
     "exit": 27,
     "stderr": ["shardcheck smoke: cannot run {work}/no-such-dir/shardcheck-smoke: No such file or directory",
                "built only where CMake finds LibTorch"]},
    {"name": "smoke --help without shardcheck-smoke still prints help, exit 0",
     "args": ["smoke", "--help"],
     "env": {"SHARDCHECK_SMOKE_BINARY": "{work}/no-such-dir/shardcheck-smoke"},
     "exit": 0,
     "stdout": ["Usage: shardcheck smoke MODEL [runner options...]", "is not installed here",
                "built only where CMake finds LibTorch"]},
]
