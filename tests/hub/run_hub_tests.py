#!/usr/bin/env python3
"""Hub model ids against a real HTTP server on loopback (tests/hub/loopback_hub.py).

Every case runs the shardcheck binary with its own empty caches and a HOME without a token, and
checks the exit code, the diagnostic, and — for the cases that succeed — that the JSON equals what
the same command prints for the local directory the server serves. Byte counts come from nginx's
access log ($bytes_sent), i.e. what the server actually sent, and header sizes from the files'
own 8-byte length prefixes. The last line is "N passed, M failed".

  run_hub_tests.py --binary build/shardcheck --source . --work build/hub-work --generated build/generated
  add --bench N to time N cold DeepSeek-V3 reads and print the medians.
"""
import argparse
import hashlib
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from loopback_hub import TOKEN, LoopbackHub, commit_of, free_port, header_bytes  # noqa: E402

LLAMA_ID = "meta-llama/Meta-Llama-3-8B"
ACCEL = "fixtures/check/tf_no_cls.yaml"


class Ctx:
    def __init__(self, opts, hub):
        self.binary = opts.binary
        self.source = pathlib.Path(opts.source)
        self.work = pathlib.Path(opts.work)
        self.gen = pathlib.Path(opts.generated)
        self.hub = hub
        self.case_dir = None

    def fresh(self, name):
        d = self.work / "cases" / name.replace("/", "_")
        if d.exists():
            shutil.rmtree(d)
        (d / "home").mkdir(parents=True)
        self.case_dir = d
        return d

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("HF_", "HUGGING", "TRANSFORMERS_", "SHARDCHECK_", "XDG_"))}
        d = self.case_dir
        env.update({"HOME": str(d / "home"), "HF_ENDPOINT": self.hub.endpoint, "HF_HUB_CACHE": str(d / "hf-cache"),
                    "SHARDCHECK_CACHE": str(d / "sc-cache"), "HF_HUB_DOWNLOAD_TIMEOUT": "5", "CI": "1",
                    "NO_COLOR": "1", "SHARDCHECK_HUB_STATS": "1"})
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def run(self, args, env, timeout=120):
        t0 = time.monotonic()
        p = subprocess.run([self.binary] + args, capture_output=True, text=True, env=env, timeout=timeout,
                           cwd=self.source)
        p.elapsed = time.monotonic() - t0
        return p

    def local(self, args):
        """The same command on a local directory, with no Hub settings at all."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "SHARDCHECK_"))}
        env["NO_COLOR"] = "1"
        return subprocess.run([self.binary] + args, capture_output=True, text=True, env=env, cwd=self.source)


class Fail(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Fail(msg)


def expect_exit(p, code, *needles):
    expect(p.returncode == code, f"exit {p.returncode}, expected {code}\n--- stderr:\n{p.stderr[-3000:]}")
    for n in needles:
        expect(n in p.stderr, f"stderr lacks {n!r}\n--- stderr:\n{p.stderr[-3000:]}")
    expect(TOKEN not in p.stdout and TOKEN not in p.stderr, "the token was printed")


def same_json(a, b, what):
    try:
        ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    except json.JSONDecodeError as e:
        raise Fail(f"{what}: not JSON ({e})\n{a.stderr[-2000:]}")
    expect(ja == jb, f"{what}: JSON differs from the local directory's")


def shard_files(d):
    return sorted(p for p in pathlib.Path(d).iterdir() if p.name.endswith(".safetensors"))


def sent_for(rows, repo, suffix=".safetensors"):
    """bytes nginx sent for requests of repo's files ending in suffix (Hub redirects and CDN replies)."""
    return sum(r[3] for r in rows if f"/{repo}/" in r[1] and r[1].split(" ")[1].endswith(suffix))


def make_hf_cache(root, repo, src, files, ref="main"):
    """A Hugging Face cache as huggingface_hub writes it: blobs/<sha256>, snapshot symlinks, refs/main."""
    commit = commit_of(repo)
    base = pathlib.Path(root) / ("models--" + repo.replace("/", "--"))
    snap = base / "snapshots" / commit
    snap.mkdir(parents=True)
    (base / "blobs").mkdir()
    for name in files:
        data = (pathlib.Path(src) / name).read_bytes()
        blob = base / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        os.symlink(os.path.relpath(blob, snap), snap / name)
    if ref:
        (base / "refs").mkdir()
        (base / "refs" / ref).write_text(commit)
    return snap


# --- cases ---------------------------------------------------------------------------------------

def case_plan_from_hub(c):
    """`plan meta-llama/Meta-Llama-3-8B --config accelerate.yaml` from the loopback Hub, no weights read."""
    c.fresh("plan_from_hub")
    c.hub.clear_log()
    args = ["plan", LLAMA_ID, "--config", ACCEL, "--format", "json"]
    p = c.run(args, c.env())
    expect_exit(p, 0)
    same_json(p, c.local(["plan", "fixtures/models/llama", "--config", ACCEL, "--format", "json"]), "plan")
    rows = c.hub.access_log()
    src = c.source / "fixtures/models/llama"
    shards = shard_files(src)
    headers = sum(header_bytes(s) for s in shards)
    data = sum(s.stat().st_size for s in shards) - headers
    sent = sent_for(rows, LLAMA_ID)
    # Every shard is read by range only: what crossed the wire for the shards (redirects included)
    # is far below the weights it would take to download them.
    expect(all(r[2] in (302, 206) for r in rows if r[1].split(" ")[1].endswith(".safetensors")),
           "a shard was not read by a range request")
    expect(sent < data / 2, f"{sent} bytes sent for shards holding {data} bytes of weights")
    # The second run needs no network: same output, no request.
    c.hub.clear_log()
    p2 = c.run(args, c.env(HF_HUB_OFFLINE="1"))
    expect_exit(p2, 0)
    same_json(p2, p, "second run")
    expect(c.hub.access_log() == [], "the second run made requests")


def case_adapter_from_hub(c):
    """`plan MODEL --adapter org/name`: the adapter repository read like a model (its config and the
    header of adapter_model.safetensors, by range), the same plan as from the local directory."""
    c.fresh("adapter_from_hub")
    c.hub.clear_log()
    base = "fixtures/oracle2/models/llama"
    args = ["plan", str(c.source / base), "--no-env", "--adapter", "peft-test/llama-qv", "--format", "json"]
    p = c.run(args, c.env())
    expect_exit(p, 0)
    local = c.local(["plan", base, "--no-env", "--adapter", "fixtures/peft-oracle/adapters/llama-qv", "--format", "json"])
    got, want = json.loads(p.stdout), json.loads(local.stdout)
    for doc in (got, want):
        doc["peft"].pop("adapter")  # where it came from differs, by design
    expect(got["peft"] == want["peft"] and got["units"] == want["units"] and got["memory"] == want["memory"],
           "the Hub adapter planned differently from the local one")
    requested = sorted(r[1].split(" ")[1] for r in c.hub.access_log() if "/peft-test/" in r[1])
    expect(any(r.endswith("/adapter_config.json") for r in requested) and
           any(r.endswith("/adapter_model.safetensors") for r in requested) and
           not any("model.safetensors.index.json" in r for r in requested), f"requested {requested}")
    # Offline afterwards: from shardcheck's header cache.
    p2 = c.run(args, c.env(HF_HUB_OFFLINE="1"))
    expect_exit(p2, 0)


def case_check_from_hub(c):
    c.fresh("check_from_hub")
    args = ["check", "--no-env", "--config", ACCEL, "--model", LLAMA_ID, "--format", "json"]
    p = c.run(args, c.env())
    local = c.local(["check", "--no-env", "--config", ACCEL, "--model", "fixtures/models/llama", "--format", "json"])
    expect_exit(p, local.returncode)
    same_json(p, local, "check")


def case_config_only_from_hub(c):
    c.fresh("config_only")
    c.hub.clear_log()
    p = c.run(["inspect", LLAMA_ID, "--config-only", "--format", "json"], c.env())
    expect_exit(p, 0)
    same_json(p, c.local(["inspect", "fixtures/models/llama", "--config-only", "--format", "json"]), "config-only")
    requested = [r[1].split(" ")[1] for r in c.hub.access_log()]
    expect(requested == [f"/{LLAMA_ID}/resolve/main/config.json"], f"config-only requested {requested}")


def deepseek_read(c, name):
    c.fresh(name)
    c.hub.clear_log()
    p = c.run(["inspect", "deepseek-ai/DeepSeek-V3", "--format", "json"], c.env())
    return p, c.hub.access_log()


def case_deepseek_ratio(c):
    """Sparse DeepSeek-V3 over loopback: < 1.1x the header bytes, result equal to the local read."""
    p, rows = deepseek_read(c, "deepseek")
    expect_exit(p, 0)
    same_json(p, c.local(["inspect", str(c.gen / "deepseek-v3"), "--format", "json"]), "DeepSeek-V3 inspect")
    shards = shard_files(c.gen / "deepseek-v3")
    headers = sum(header_bytes(s) for s in shards)
    sent = sent_for(rows, "deepseek-ai/DeepSeek-V3")
    ratio = sent / headers
    ranged = sum(1 for r in rows if r[2] == 206)
    print(f"  DeepSeek-V3: {len(shards)} shards, {headers} header bytes, {sent} bytes sent for them "
          f"(redirects, HTTP headers and bodies) = {ratio:.4f}x; {ranged} range replies; "
          f"{sum(r[3] for r in rows)} bytes in all with config.json and the 8.9 MB index; {p.elapsed * 1000:.0f} ms")
    expect(ratio < 1.1, f"transferred {ratio:.3f}x the header bytes")
    # Offline second run from the header cache.
    c.hub.clear_log()
    p2 = c.run(["inspect", "deepseek-ai/DeepSeek-V3", "--format", "json"], c.env(HF_HUB_OFFLINE="1"))
    expect_exit(p2, 0)
    same_json(p2, p, "offline second run")
    expect(c.hub.access_log() == [], "the second run made requests")


def case_range_ignored(c):
    """A server that answers Range with the whole (4 GB sparse) file: read stops after each header."""
    c.fresh("range_ignored")
    c.hub.clear_log()
    p = c.run(["inspect", "meta-llama/Llama-3.1-405B", "--format", "json"], c.env())
    expect_exit(p, 0)
    same_json(p, c.local(["inspect", str(c.gen / "llama-3.1-405b"), "--format", "json"]), "Llama-3.1-405B inspect")
    shards = shard_files(c.gen / "llama-3.1-405b")
    total = sum(s.stat().st_size for s in shards)
    rows = [r for r in c.hub.access_log() if r[1].split(" ")[1].endswith(".safetensors")]
    expect(rows and all(r[2] == 200 for r in rows), "the server was expected to ignore Range")
    received = int(p.stderr.split("bytes received in all")[0].rsplit(" ", 2)[-2])
    print(f"  Llama-3.1-405B with Range ignored: client received {received} bytes in all, nginx sent "
          f"{sum(r[3] for r in rows)} for {len(shards)} shard files of {total} bytes")
    expect(received < 64 * 1024 * 1024, f"received {received} bytes")


def case_hf_cache_offline(c):
    """A model the user downloaded with huggingface_hub: found in HF_HUB_CACHE, no network at all."""
    d = c.fresh("hf_cache_offline")
    src = c.source / "fixtures/models/llama"
    make_hf_cache(d / "hf-cache", LLAMA_ID, src, ["config.json", "model.safetensors.index.json"] +
                  [s.name for s in shard_files(src)])
    dead = f"http://127.0.0.1:{free_port()}"
    local = c.local(["plan", "fixtures/models/llama", "--config", ACCEL, "--format", "json"])
    for ref in (LLAMA_ID, f"{LLAMA_ID}@{commit_of(LLAMA_ID)}"):
        p = c.run(["plan", ref, "--config", ACCEL, "--format", "json"], c.env(HF_HUB_OFFLINE="1", HF_ENDPOINT=dead))
        expect_exit(p, 0)
        same_json(p, local, f"plan {ref} from the HF cache")
    # A cached model needs no network even when the network is allowed (and unreachable).
    p = c.run(["plan", LLAMA_ID, "--config", ACCEL, "--format", "json"], c.env(HF_ENDPOINT=dead))
    expect_exit(p, 0)
    same_json(p, local, "plan from the HF cache, online")


def partial_cache(c, name):
    d = c.fresh(name)
    src = c.source / "fixtures/models/llama"
    make_hf_cache(d / "hf-cache", LLAMA_ID, src, ["config.json", "model.safetensors.index.json"])
    return d


def case_partial_offline(c):
    """Config and index downloaded, shards not: reported precisely, planned from config.json."""
    partial_cache(c, "partial_offline")
    text = c.run(["plan", LLAMA_ID, "--config", ACCEL], c.env(HF_HUB_OFFLINE="1"))
    expect_exit(text, 0, "HUB011", "2 of the 2 shards named by model.safetensors.index.json are missing",
                "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "config.json alone")
    p = c.run(["plan", LLAMA_ID, "--config", ACCEL, "--format", "json"], c.env(HF_HUB_OFFLINE="1"))
    expect_exit(p, 0)
    expect([d["rule"] for d in json.loads(p.stdout)["diagnostics"]] == ["HUB011"], "JSON lacks HUB011")
    local = c.local(["plan", "fixtures/models/llama", "--config-only", "--config", ACCEL, "--format", "json"])
    doc, want = json.loads(p.stdout), json.loads(local.stdout)
    doc.pop("diagnostics", None)
    want.pop("diagnostics", None)
    expect(doc == want, "partial snapshot plan differs from the config-only plan")


def case_partial_online(c):
    """Same partial download with the network allowed: the headers come from the Hub at that commit."""
    partial_cache(c, "partial_online")
    c.hub.clear_log()
    p = c.run(["inspect", LLAMA_ID, "--format", "json"], c.env())
    expect_exit(p, 0)
    expect("HUB011" in json.dumps(json.loads(p.stdout).get("diagnostics", [])), "HUB011 missing from the JSON")
    doc, want = json.loads(p.stdout), json.loads(c.local(["inspect", "fixtures/models/llama", "--format", "json"]).stdout)
    doc.pop("diagnostics", None)
    want.pop("diagnostics", None)
    expect(doc == want, "partial snapshot completed from the Hub differs from the full local read")
    paths = [r[1].split(" ")[1] for r in c.hub.access_log() if r[0] == c.hub.port]
    expect(paths and all(f"/resolve/{commit_of(LLAMA_ID)}/" in x for x in paths),
           f"requests not pinned to the cached commit: {paths}")


def case_offline_miss(c):
    c.fresh("offline_miss")
    p = c.run(["inspect", LLAMA_ID], c.env(HF_HUB_OFFLINE="1"))
    expect_exit(p, 30, "HUB001", "HF_HUB_OFFLINE", "models--meta-llama--Meta-Llama-3-8B")


def case_gated(c):
    c.fresh("gated")
    p = c.run(["inspect", "gated/llama"], c.env())
    expect_exit(p, 33, "HUB004", "gated", "no token", f"{c.hub.endpoint}/gated/llama/resolve/main/config.json")
    local = c.local(["inspect", "fixtures/models/llama", "--format", "json"])
    c.hub.clear_log()
    p = c.run(["inspect", "gated/llama", "--format", "json"], c.env(HF_TOKEN=TOKEN))
    expect_exit(p, 0)
    same_json(p, local, "gated with HF_TOKEN")
    rows = c.hub.access_log()
    expect(all(r[5] == f"Bearer {TOKEN}" for r in rows if r[0] == c.hub.port), "the endpoint did not get the token")
    cdn = [r for r in rows if r[0] == c.hub.cdn_port]
    expect(cdn and all(r[5] == "-" for r in cdn), "the token went to the CDN")


def case_gated_token_file(c):
    d = c.fresh("gated_token_file")
    (d / "hf-home").mkdir()
    (d / "hf-home" / "token").write_text(TOKEN + "\n")
    p = c.run(["inspect", "gated/llama"], c.env(HF_HOME=d / "hf-home"))
    expect_exit(p, 0)
    (d / "elsewhere").write_text(TOKEN)
    p = c.run(["inspect", "gated/llama"], c.env(HF_TOKEN_PATH=d / "elsewhere", SHARDCHECK_CACHE=d / "sc2"))
    expect_exit(p, 0)
    p = c.run(["inspect", "gated/llama"], c.env(HF_TOKEN="hf_wrong", SHARDCHECK_CACHE=d / "sc3"))
    expect_exit(p, 33, "HUB004", "the token from HF_TOKEN")


def case_forbidden(c):
    c.fresh("forbidden")
    p = c.run(["inspect", "gated/denied"], c.env(HF_TOKEN=TOKEN))
    expect_exit(p, 34, "HUB005", "403", "has no access to 'gated/denied'")


def case_not_found(c):
    c.fresh("not_found")
    p = c.run(["inspect", "nobody/nothing"], c.env())
    expect_exit(p, 35, "HUB006", "RepoNotFound", "nobody/nothing/resolve/main/config.json")
    p = c.run(["inspect", f"{LLAMA_ID}@v9.9"], c.env())
    expect_exit(p, 35, "HUB006", "has no revision 'v9.9'")


def case_flaky(c):
    c.fresh("flaky")
    before = len(c.hub.py_requests)
    p = c.run(["inspect", "flaky/llama", "--format", "json"], c.env(HF_ENDPOINT=c.hub.py_endpoint))
    expect_exit(p, 0)
    same_json(p, c.local(["inspect", "fixtures/models/llama", "--format", "json"]), "flaky")
    shard_requests = [x for x in c.hub.py_requests[before:] if x.endswith(".safetensors")]
    expect(len(shard_requests) == 4, f"expected 2 shards x (503 + retry), saw {shard_requests}")
    index_requests = [x for x in c.hub.py_requests[before:] if x.endswith(".index.json")]
    expect(len(index_requests) == 2, f"expected the index twice (429 + retry), saw {index_requests}")
    expect(p.elapsed >= 1.0, f"retried after {p.elapsed:.2f} s; expected a backoff of 1 s")


def case_server_error(c):
    c.fresh("server_error")
    before = len(c.hub.py_requests)
    p = c.run(["inspect", "hostile/always-503"], c.env(HF_ENDPOINT=c.hub.py_endpoint))
    expect_exit(p, 36, "HUB007", "HTTP 503 on each of 6 attempts")
    tries = [x for x in c.hub.py_requests[before:] if x.endswith(".index.json")]
    expect(len(tries) == 6, f"expected 6 attempts at the index, saw {len(tries)}")


def case_short_body(c):
    c.fresh("short_body")
    p = c.run(["inspect", "hostile/short-body"], c.env(HF_ENDPOINT=c.hub.py_endpoint))
    expect_exit(p, 37, "HUB008", "after 100 of the 5000 bytes", "model.safetensors")


def case_slow(c):
    c.fresh("slow")
    p = c.run(["inspect", "hostile/slow"], c.env(HF_ENDPOINT=c.hub.py_endpoint, HF_HUB_DOWNLOAD_TIMEOUT="1"))
    expect_exit(p, 32, "HUB003", "HF_HUB_DOWNLOAD_TIMEOUT")
    expect(p.elapsed < 10, f"took {p.elapsed:.1f} s to time out after 1 s")


def case_no_commit(c):
    c.fresh("no_commit")
    p = c.run(["inspect", "hostile/no-commit"], c.env(HF_ENDPOINT=c.hub.py_endpoint))
    expect_exit(p, 37, "HUB008", "no X-Repo-Commit")


def case_redirect_loop(c):
    c.fresh("redirect_loop")
    p = c.run(["inspect", "hostile/redirect-loop"], c.env())
    expect_exit(p, 38, "HUB009", "redirect loop")


def case_header_past_end(c):
    c.fresh("header_past_end")
    p = c.run(["inspect", "hostile/header-past-end"], c.env())
    url = f"{c.hub.endpoint}/hostile/header-past-end/resolve/{commit_of('hostile/header-past-end')}/model.safetensors"
    expect_exit(p, 6, "ST003", url, "1000000 header bytes")


def case_empty_file(c):
    c.fresh("empty_file")
    p = c.run(["inspect", "hostile/empty-file"], c.env())
    url = f"{c.hub.endpoint}/hostile/empty-file/resolve/{commit_of('hostile/empty-file')}/model.safetensors"
    local = c.local(["inspect", str(c.hub.repos["hostile/empty-file"])])
    expect_exit(p, local.returncode, "ST001", url)


def case_unreachable(c):
    c.fresh("unreachable")
    p = c.run(["inspect", LLAMA_ID], c.env(HF_ENDPOINT=f"http://127.0.0.1:{free_port()}"))
    expect_exit(p, 31, "HUB002", "cannot reach")


def case_cache_unwritable(c):
    d = c.fresh("cache_unwritable")
    (d / "a-file").write_text("")
    p = c.run(["inspect", LLAMA_ID], c.env(SHARDCHECK_CACHE=d / "a-file"))
    expect_exit(p, 39, "HUB010", "SHARDCHECK_CACHE")


def case_not_an_id(c):
    c.fresh("not_an_id")
    for ref in ("no such/model", "a/b/c", "org--x/name", "org/name@", "org/na..me", "org/name.git"):
        p = c.run(["inspect", ref], c.env())
        expect_exit(p, 3, "IO002", "org/name[@revision]")


def case_progress_on_a_terminal(c):
    """A progress line on a terminal (stderr a pty, CI unset), cleared at the end; none otherwise."""
    import pty
    c.fresh("progress")
    env = c.env()
    del env["CI"]
    master, slave = pty.openpty()
    proc = subprocess.Popen([c.binary, "inspect", "deepseek-ai/DeepSeek-V3", "--format", "json"], env=env,
                            stdout=subprocess.DEVNULL, stderr=slave, cwd=c.source)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(60)
    os.close(master)
    text = out.decode(errors="replace")
    expect(proc.returncode == 0, f"exit {proc.returncode}: {text[-1000:]}")
    expect("reading safetensors headers from" in text and "/163 files" in text, f"no progress line: {text[-500:]!r}")
    expect("\r\x1b[K" in text, "the progress line is not cleared")
    p, _ = deepseek_read(c, "progress_ci")  # CI=1, stderr a pipe
    expect("reading safetensors headers" not in p.stderr, "progress printed in CI")


CASES = [v for k, v in sorted(globals().items()) if k.startswith("case_")]


def bench(c, runs):
    times, ratios = [], []
    headers = sum(header_bytes(s) for s in shard_files(c.gen / "deepseek-v3"))
    for i in range(runs):
        p, rows = deepseek_read(c, f"bench{i}")
        expect_exit(p, 0)
        times.append(p.elapsed)
        ratios.append(sent_for(rows, "deepseek-ai/DeepSeek-V3") / headers)
    warm = []
    for _ in range(runs):
        p = c.run(["inspect", "deepseek-ai/DeepSeek-V3", "--format", "json"], c.env(HF_HUB_OFFLINE="1"))
        warm.append(p.elapsed)
    local = []
    for _ in range(runs):
        t0 = time.monotonic()
        c.local(["inspect", str(c.gen / "deepseek-v3"), "--format", "json"])
        local.append(time.monotonic() - t0)
    print(f"bench DeepSeek-V3 over {runs} runs: cold loopback read median {statistics.median(times) * 1000:.0f} ms, "
          f"transfer ratio median {statistics.median(ratios):.4f}; from the header cache "
          f"{statistics.median(warm) * 1000:.0f} ms; local directory {statistics.median(local) * 1000:.0f} ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--generated", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--bench", type=int, default=0)
    opts = ap.parse_args()
    opts.binary = str(pathlib.Path(opts.binary).resolve())
    work = pathlib.Path(opts.work)
    work.mkdir(parents=True, exist_ok=True)
    hub = LoopbackHub(work, opts.source, opts.generated).start()
    passed = failed = 0
    try:
        c = Ctx(opts, hub)
        if opts.bench:
            bench(c, opts.bench)
            return 0
        for case in CASES:
            name = case.__name__[5:]
            if opts.only and opts.only not in name:
                continue
            try:
                case(c)
                passed += 1
                print(f"ok   {name}")
            except Fail as e:
                failed += 1
                print(f"FAIL {name}: {e}")
    finally:
        hub.stop()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
