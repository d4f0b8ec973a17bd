"""A Hugging Face Hub on loopback for the Hub model-id tests: real nginx (Debian's nginx-light, run
unprivileged with its own prefix and config on free ports) serving `/{org}/{name}/resolve/{rev}/{file}`
the way huggingface.co does (X-Repo-Commit on every resolve reply, X-Error-Code on errors,
safetensors redirected to a CDN on another host), plus a small Python server for the misbehaviours
nginx cannot produce (503 once, a body shorter than announced, a reply that never comes).

Repositories (commit = sha1 of the repo id, so tests can compute it):
  meta-llama/Meta-Llama-3-8B   tiny sharded llama fixture (index + 2 shards)
  deepseek-ai/DeepSeek-V3      sparse full-size DeepSeek-V3 (163 shards, from generate_sparse)
  meta-llama/Llama-3.1-405B    sparse full-size Llama-3.1-405B, Range ignored (max_ranges 0)
  mistralai/tiny-single        tiny single-file mistral fixture
  peft-test/llama-qv           a PEFT adapter repository (adapter_config.json, adapter_model.safetensors)
  gated/llama                  401 GatedRepo without "Authorization: Bearer <TOKEN>"
  gated/denied                 401 without a token, 403 GatedRepo with any token
  hostile/header-past-end      model.safetensors whose header length points past the file
  hostile/empty-file           an empty model.safetensors (nginx answers its range with 416)
  hostile/redirect-loop        shards redirect CDN a -> b -> a
  (python) flaky/llama         the index answers 429 (Retry-After: 0) once, each shard 503 once
  (python) hostile/always-503  every file but config.json answers 503 (Retry-After: 0)
  (python) hostile/short-body  model.safetensors: 206 announcing 5000 bytes, sending 100
  (python) hostile/slow        config.json answered after 30 s
  (python) hostile/no-commit   no X-Repo-Commit header
The CDN refuses (400) any request that carries an Authorization header, so a leaked token fails.
"""
import hashlib
import http.server
import json
import os
import pathlib
import shutil
import socket
import struct
import subprocess
import threading
import time

TOKEN = "hf_loopbackTestToken0123456789"
CDN_HOST = "127.0.0.2"  # another host than the endpoint's 127.0.0.1 (all of 127/8 is loopback)


def commit_of(repo_id):
    return hashlib.sha1(repo_id.encode()).hexdigest()


def free_port(host="127.0.0.1"):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def header_bytes(path):
    """8 + N of one safetensors file, read independently of shardcheck."""
    with open(path, "rb") as f:
        return 8 + struct.unpack("<Q", f.read(8))[0]


def make_empty_file(out, config_src):
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(config_src, out / "config.json")
    (out / "model.safetensors").write_bytes(b"")


def make_header_past_end(out, config_src):
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(config_src, out / "config.json")
    header = b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    # N claims 1,000,000 header bytes; the file is 72 bytes long.
    (out / "model.safetensors").write_bytes(struct.pack("<Q", 1_000_000) + header + b"\0" * 8)


class LoopbackHub:
    def __init__(self, work, source, generated):
        self.work = pathlib.Path(work).resolve()
        self.source = pathlib.Path(source).resolve()
        self.generated = pathlib.Path(generated).resolve()
        self.port = free_port()
        self.cdn_port = free_port(CDN_HOST)
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.nginx = None
        self.py = None
        self.py_requests = []
        models = self.source / "fixtures" / "models"
        hostile = self.work / "hostile-src"
        make_header_past_end(hostile / "header-past-end", models / "llama" / "config.json")
        make_empty_file(hostile / "empty-file", models / "llama" / "config.json")
        self.repos = {
            "meta-llama/Meta-Llama-3-8B": models / "llama",
            "deepseek-ai/DeepSeek-V3": self.generated / "deepseek-v3",
            "meta-llama/Llama-3.1-405B": self.generated / "llama-3.1-405b",
            "mistralai/tiny-single": models / "mistral",
            "peft-test/llama-qv": self.source / "fixtures" / "peft-oracle" / "adapters" / "llama-qv",
            "gated/llama": models / "llama",
            "gated/denied": models / "llama",
            "hostile/header-past-end": hostile / "header-past-end",
            "hostile/empty-file": hostile / "empty-file",
            "hostile/redirect-loop": models / "llama",
        }
        self.py_repos = {"flaky/llama": models / "llama", "hostile/short-body": models / "mistral",
                         "hostile/slow": models / "mistral", "hostile/no-commit": models / "mistral",
                         "hostile/always-503": models / "mistral"}

    # --- nginx ------------------------------------------------------------------------------
    def _tree(self):
        files = self.work / "nginx" / "files"
        if files.exists():
            shutil.rmtree(files)
        for repo, src in self.repos.items():
            link = files / repo
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(src.resolve(), link)
        return files

    def _repo_locations(self, repo, files):
        c = commit_of(repo)
        rx = repo.replace(".", r"\.")
        revs = f"(?:main|{c})"
        cdn = f"http://{CDN_HOST}:{self.cdn_port}"
        auth = ""
        if repo == "gated/llama":
            auth = (f'if ($http_authorization != "Bearer {TOKEN}") {{ add_header X-Error-Code GatedRepo always; '
                    f'add_header X-Error-Message "Access to model {repo} is restricted." always; return 401; }}')
        elif repo == "gated/denied":
            auth = ('if ($http_authorization = "") { add_header X-Error-Code GatedRepo always; return 401; } '
                    'add_header X-Error-Code GatedRepo always; return 403;')
        if repo == "meta-llama/Llama-3.1-405B":
            # Range ignored: the whole (sparse, ~4 GB) file comes back with 200 to every request.
            shard = f'max_ranges 0; add_header X-Repo-Commit {c} always; alias {files}/{repo}/$f;'
        elif repo == "hostile/redirect-loop":
            shard = f'add_header X-Repo-Commit {c} always; return 302 {cdn}/loop/a;'
        else:
            shard = f'add_header X-Repo-Commit {c} always; return 302 {cdn}/{repo}/{c}/$f;'
        return f"""
    location ~ ^/{rx}/resolve/{revs}/(?<f>.+\\.safetensors)$ {{ {auth} {shard} }}
    location ~ ^/{rx}/resolve/{revs}/(?<f>.+)$ {{
      {auth} add_header X-Repo-Commit {c} always; error_page 404 = @entry404; alias {files}/{repo}/$f; }}
    location /{repo}/resolve/ {{ add_header X-Error-Code RevisionNotFound always; return 404; }}
"""

    def _conf(self, files):
        prefix = self.work / "nginx"
        locations = "".join(self._repo_locations(r, files) for r in self.repos)
        cdn_links = prefix / "cdn"
        if cdn_links.exists():
            shutil.rmtree(cdn_links)
        for repo in self.repos:
            link = cdn_links / repo / commit_of(repo)
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink((files / repo).resolve(), link)
        # Started by root (CI), nginx would drop its workers to `nobody`, who may not read a
        # checkout under a private home directory; keep them as the invoking user.
        user_line = "user root;" if os.geteuid() == 0 else ""
        return f"""
{user_line}
daemon off;
worker_processes 2;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
  log_format hub '$server_port "$request" $status $bytes_sent "$http_range" auth=$http_authorization';
  access_log {prefix}/access.log hub;
  client_body_temp_path {prefix}/tmp-body; proxy_temp_path {prefix}/tmp-proxy;
  fastcgi_temp_path {prefix}/tmp-fcgi; uwsgi_temp_path {prefix}/tmp-uwsgi; scgi_temp_path {prefix}/tmp-scgi;
  types {{ application/json json; application/octet-stream safetensors; }}
  default_type application/octet-stream;
  sendfile on;
  server {{
    listen 127.0.0.1:{self.port};
    location @entry404 {{ add_header X-Error-Code EntryNotFound always; return 404; }}
    {locations}
    location / {{ add_header X-Error-Code RepoNotFound always; return 404; }}
  }}
  server {{
    listen {CDN_HOST}:{self.cdn_port};
    location /loop/a {{ return 302 /loop/b; }}
    location /loop/b {{ return 302 /loop/a; }}
    location / {{
      if ($http_authorization != "") {{ return 400 "token sent to the CDN"; }}
      root {cdn_links};
    }}
  }}
}}
"""

    # --- the Python server for what nginx cannot do ------------------------------------------
    def _py_server(self):
        hub = self
        seen = set()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                hub.py_requests.append(self.path)
                parts = self.path.split("/", 5)  # '', org, name, 'resolve', rev, file
                if len(parts) < 6 or parts[3] != "resolve":
                    return self._reply(404, b"", {"X-Error-Code": "RepoNotFound"})
                repo, file = f"{parts[1]}/{parts[2]}", parts[5]
                src = hub.py_repos.get(repo)
                if src is None:
                    return self._reply(404, b"", {"X-Error-Code": "RepoNotFound"})
                headers = {} if repo == "hostile/no-commit" else {"X-Repo-Commit": commit_of(repo)}
                if repo == "hostile/slow":
                    time.sleep(30)
                if repo == "hostile/always-503" and file != "config.json":
                    return self._reply(503, b"down", dict(headers, **{"Retry-After": "0"}))
                if repo == "flaky/llama" and file.endswith(".index.json") and self.path not in seen:
                    seen.add(self.path)
                    return self._reply(429, b"slow down", dict(headers, **{"Retry-After": "0"}))
                if repo == "flaky/llama" and file.endswith(".safetensors") and self.path not in seen:
                    seen.add(self.path)
                    return self._reply(503, b"busy", headers)
                path = src / file
                if not path.is_file():
                    headers["X-Error-Code"] = "EntryNotFound"
                    return self._reply(404, b"", headers)
                data = path.read_bytes()
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes="):
                    first, last = rng[6:].split("-")
                    first, last = int(first), min(int(last), len(data) - 1)
                    headers["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
                    body = data[first:last + 1]
                    if repo == "hostile/short-body" and file.endswith(".safetensors"):
                        headers["Content-Range"] = f"bytes {first}-{first + 4999}/{len(data) + 5000}"
                        self.send_response(206)
                        for k, v in headers.items():
                            self.send_header(k, v)
                        self.send_header("Content-Length", "5000")
                        self.end_headers()
                        self.wfile.write(body[:100])
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    return self._reply(206, body, headers)
                return self._reply(200, data, headers)

            def _reply(self, status, body, headers):
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self.py_endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self):
        prefix = self.work / "nginx"
        prefix.mkdir(parents=True, exist_ok=True)
        conf = prefix / "nginx.conf"
        conf.write_text(self._conf(self._tree()))
        log = prefix / "access.log"
        if log.exists():
            log.unlink()
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.nginx = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(conf)],
                                      stdout=subprocess.DEVNULL, stderr=open(prefix / "stderr.log", "w"))
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                socket.create_connection((CDN_HOST, self.cdn_port), timeout=0.2).close()
                break
            except OSError:
                if self.nginx.poll() is not None:
                    raise RuntimeError("nginx exited: " + (prefix / "stderr.log").read_text())
                time.sleep(0.05)
        else:
            raise RuntimeError("nginx did not start listening")
        self.py = self._py_server()
        return self

    def stop(self):
        if self.py:
            self.py.shutdown()
        if self.nginx and self.nginx.poll() is None:
            self.nginx.terminate()
            try:
                self.nginx.wait(5)
            except subprocess.TimeoutExpired:
                self.nginx.kill()

    def access_log(self):
        """(port, request line, status, bytes_sent, range, auth) per logged request."""
        path = self.work / "nginx" / "access.log"
        rows = []
        for line in path.read_text().splitlines() if path.exists() else []:
            port, rest = line.split(" ", 1)
            request, rest = rest[1:].split('" ', 1)
            status, sent, rest = rest.split(" ", 2)
            rng, auth = rest.rsplit(" auth=", 1)
            rows.append((int(port), request, int(status), int(sent), rng.strip('"'), auth))
        return rows

    def clear_log(self):
        path = self.work / "nginx" / "access.log"
        if path.exists():
            path.write_text("")
