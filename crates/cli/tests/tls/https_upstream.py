"""`citeflow` against an HTTPS upstream, as a user runs the release binary.

    python3 crates/cli/tests/tls/https_upstream.py path/to/citeflow

Nothing else in the tests reaches an upstream over TLS (the replaying upstream speaks plain
HTTP), and the binary carries one crypto provider of its own (ring, installed by
`citeflow_server::install_crypto_provider`; reqwest is built without one). This script checks,
by content:

1. `citeflow serve --upstream https://127.0.0.1:P/v1`, trusting a certificate authority made
   here (given as `SSL_CERT_FILE`, which the platform verifier reads), streams a scripted chat
   answer from a real HTTPS server (Python's `ssl`) and renumbers it: the text is exactly
   "… [1]. … [2]." and the `done` event lists Paris as 1 and The Seine as 2.
2. The same server trusting another authority refuses the upstream's certificate: 502 with the
   JSON error `upstream_unreachable`, and the server answers /healthz after it (no panic).
3. `citeflow ask` (its own HTTPS client) gets the scripted answer over TLS and prints it.
4. The binary links ring and not aws-lc (its symbol table, read with `nm`).

Certificates are made with the `openssl` command; everything listens on 127.0.0.1 and is
stopped at the end. Exits non-zero with the first difference.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ANSWER = [
    "Paris is the capital of France [[source_7]].",
    " The Seine flows through it [[source_3]].",
]
RENDERED = "Paris is the capital of France [1]. The Seine flows through it [2]."
SOURCES = [
    {"id": "source_3", "title": "The Seine", "url": "https://en.wikipedia.org/wiki/Seine"},
    {"id": "source_7", "title": "Paris", "url": "https://en.wikipedia.org/wiki/Paris"},
]
ASK_ANSWER = ["Alice follows ", "the White Rabbit", " down the hole."]


def fail(msg: str) -> None:
    print(f"https_upstream: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_authority(d: Path, name: str) -> None:
    """A self-signed certificate authority `{name}.pem` / `{name}.key` in `d`."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", "-subj", f"/CN=citeflow test {name}",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign", cwd=d)


def make_server_cert(d: Path, ca: str) -> None:
    """`server.pem` / `server.key` for IP 127.0.0.1, signed by the authority `ca`."""
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=127.0.0.1", cwd=d)
    (d / "ext.cnf").write_text(
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)


def chat_stream(pieces: list[str]) -> bytes:
    out = b""
    for piece in pieces:
        chunk = {"id": "chatcmpl-tls", "object": "chat.completion.chunk", "created": 1,
                 "model": "scripted", "choices": [{"index": 0, "delta": {"content": piece},
                                                   "finish_reason": None}]}
        out += b"data: " + json.dumps(chunk).encode() + b"\n\n"
    out += b"data: [DONE]\n\n"
    return out


class Upstream(http.server.BaseHTTPRequestHandler):
    """The scripted model: a streamed chat answer (JSON when the request does not stream)."""

    protocol_version = "HTTP/1.1"
    seen: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        Upstream.seen.append(self.path)
        asks = any("Alice" in str(m.get("content", "")) for m in body.get("messages", []))
        pieces = ASK_ANSWER if asks else ANSWER
        if body.get("stream"):
            data, kind = chat_stream(pieces), "text/event-stream"
        else:
            data = json.dumps({"id": "chatcmpl-tls", "object": "chat.completion", "created": 1,
                               "model": "scripted", "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": "".join(pieces)}}]}).encode()
            kind = "application/json"
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def start_upstream(d: Path) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "server.pem", d / "server.key")
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def start_serve(citeflow: str, upstream: str, ca: Path, log: Path) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, SSL_CERT_FILE=str(ca), CITEFLOW_LOG="warn")
    env.pop("SSL_CERT_DIR", None)
    proc = subprocess.Popen(
        [citeflow, "serve", "--upstream", upstream, "--listen", "127.0.0.1:0", "--store", "memory"],
        stdout=subprocess.PIPE, stderr=log.open("wb"), env=env, text=True)
    deadline = time.monotonic() + 30
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"http://127\.0\.0\.1:\d+", line)
        if m:
            return proc, m.group(0)
    proc.kill()
    fail(f"citeflow serve did not print its address; stderr:\n{log.read_text()}")
    raise AssertionError


def post_chat(base: str) -> tuple[int, bytes]:
    req = urllib.request.Request(
        f"{base}/v1/chat/completions", method="POST",
        headers={"content-type": "application/json"},
        data=json.dumps({"model": "scripted", "stream": True, "sources": SOURCES,
                         "messages": [{"role": "user", "content": "Tell me about Paris."}]}).encode())
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def check_serve_trusted(citeflow: str, upstream: str, d: Path) -> None:
    proc, base = start_serve(citeflow, upstream, d / "trusted.pem", d / "serve1.log")
    try:
        status, body = post_chat(base)
        if status != 200:
            fail(f"serve over HTTPS: status {status}: {body[:400]!r}")
        text, listed = "", []
        for line in body.decode().splitlines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[len("data: "):])
            for choice in chunk.get("choices", []):
                text += choice.get("delta", {}).get("content") or ""
            for ev in chunk.get("citeflow", {}).get("events", []):
                if ev["type"] == "done":
                    listed = [(s["number"], s["source"]["title"]) for s in ev["sources"]]
        if text != RENDERED:
            fail(f"serve over HTTPS streamed {text!r}, want {RENDERED!r}")
        if listed != [(1, "Paris"), (2, "The Seine")]:
            fail(f"serve over HTTPS listed {listed!r}")
        print(f"ok: serve streamed {RENDERED!r} from the HTTPS upstream, listing {listed}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def check_serve_untrusted(citeflow: str, upstream: str, d: Path) -> None:
    proc, base = start_serve(citeflow, upstream, d / "other.pem", d / "serve2.log")
    try:
        status, body = post_chat(base)
        try:
            code = json.loads(body)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = None
        if (status, code) != (502, "upstream_unreachable"):
            fail(f"an untrusted upstream certificate gave {status} {body[:400]!r}, "
                 "want 502 upstream_unreachable")
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as r:
            if r.status != 200:
                fail(f"/healthz after the refused certificate: {r.status}")
        if proc.poll() is not None:
            fail("citeflow serve exited after the refused certificate")
        print("ok: an untrusted certificate is refused: 502 upstream_unreachable; /healthz 200")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if "panicked" in (d / "serve2.log").read_text():
        fail("citeflow serve panicked:\n" + (d / "serve2.log").read_text())


def check_ask(citeflow: str, upstream: str, d: Path) -> None:
    shared = Path(os.environ.get("CITEFLOW_SHARED_DIR", Path(__file__).resolve().parents[5] / "shared"))
    book = shared / "fixtures" / "epub" / "alice.epub"
    env = dict(os.environ, SSL_CERT_FILE=str(d / "trusted.pem"))
    env.pop("SSL_CERT_DIR", None)
    r = subprocess.run([citeflow, "ask", "--book", str(book), "--upstream", upstream,
                        "--model", "scripted", "Whom does Alice follow?"],
                       capture_output=True, text=True, env=env, timeout=120)
    want = "".join(ASK_ANSWER)
    if r.returncode != 0 or want not in r.stdout:
        fail(f"ask over HTTPS: status {r.returncode}, stdout {r.stdout[:600]!r}, "
             f"stderr {r.stderr[-600:]!r}; want {want!r} in stdout")
    print(f"ok: ask printed {want!r} from the HTTPS upstream")


def check_symbols(citeflow: str) -> None:
    if shutil.which("nm") is None:
        fail("nm (binutils) is needed to read the binary's symbols")
    names = subprocess.run(["nm", citeflow], capture_output=True, text=True, check=True).stdout
    ring = sum(1 for n in names.splitlines() if "ring_core" in n)
    aws = sum(1 for n in names.splitlines() if "aws_lc" in n)
    if ring == 0:
        fail("no ring symbol in the binary (stripped? the check needs its symbol table)")
    if aws:
        fail(f"the binary links aws-lc ({aws} symbols) beside ring")
    print(f"ok: one crypto provider: {ring} ring symbols, no aws-lc")


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    citeflow = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        make_authority(d, "trusted")
        make_authority(d, "other")
        make_server_cert(d, "trusted")
        upstream = start_upstream(d)
        url = f"https://127.0.0.1:{upstream.server_address[1]}/v1"
        try:
            check_serve_trusted(citeflow, url, d)
            check_serve_untrusted(citeflow, url, d)
            check_ask(citeflow, url, d)
        finally:
            upstream.shutdown()
        if "/v1/chat/completions" not in Upstream.seen:
            fail(f"the upstream saw {Upstream.seen!r}")
    check_symbols(citeflow)


if __name__ == "__main__":
    main()
