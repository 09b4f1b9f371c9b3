#!/usr/bin/env python3
"""Memory per open stream of a proxy at N idle streams (issue 17 §6; not a test).

Starts an upstream on 127.0.0.1 that answers every chat completion with its first SSE chunk and
then holds the stream open, starts the proxy against it, and measures the proxy's resident
memory (VmRSS) after a warm-up of a few streams and again with N streams open at once, every
one having delivered its first chunk to its client and then idle. Prints the RSS delta per
stream for each proxy, so citeflow can be read against the bare pass-through proxy of the same
run.

    python3 scripts/bench/idle_streams.py --citeflow target/release/citeflow \
        [--passthrough target/release/examples/passthrough] [--streams 1000]

Only the standard library: the upstream and the clients are asyncio sockets in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

FIRST = {"id": "c1", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Paris is the capital [[s1]]"}}]}
DONE_CHUNK = {"id": "c1", "object": "chat.completion.chunk", "model": "m",
              "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


class Upstream:
    """Answers each request with one chunk, then holds the stream until `release` is set."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.open = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            m = re.search(rb"(?i)content-length:\s*(\d+)", head)
            if m:
                await reader.readexactly(int(m.group(1)))
            if head.startswith(b"GET"):
                body = b'{"object":"list","data":[]}'
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                             + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)
                await writer.drain()
                return
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"cache-control: no-cache\r\nconnection: close\r\n\r\n")
            writer.write(b"data: " + json.dumps(FIRST).encode() + b"\n\n")
            await writer.drain()
            self.open += 1
            await self.release.wait()
            writer.write(b"data: " + json.dumps(DONE_CHUNK).encode() + b"\n\ndata: [DONE]\n\n")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


REQUEST = json.dumps({
    "model": "m", "stream": True,
    "messages": [{"role": "user", "content": "What is the capital of France?"}],
    "sources": [{"id": "s1", "title": "Paris", "text": "Paris is the capital of France."}],
}).encode()


async def open_stream(host: str, port: int, path: str, first: asyncio.Event | None = None):
    """Opens one streamed chat completion and reads until its first SSE data line."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
                 f"content-length: {len(REQUEST)}\r\n\r\n".encode() + REQUEST)
    await writer.drain()
    seen = b""
    while b"data:" not in seen:
        chunk = await asyncio.wait_for(reader.read(65536), 30)
        if not chunk:
            raise RuntimeError(f"stream closed before its first chunk: {seen[:300]!r}")
        seen += chunk
    if b" 200 " not in seen.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"not 200: {seen[:300]!r}")
    return reader, writer, seen


async def drain(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seen: bytes) -> bytes:
    while b"[DONE]" not in seen:
        chunk = await asyncio.wait_for(reader.read(65536), 30)
        if not chunk:
            break
        seen += chunk
    writer.close()
    return seen


def start(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None if os.environ.get("IDLE_DEBUG") else subprocess.DEVNULL, env=env, text=True)
    line = p.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:\d+", line)
    if not m:
        p.kill()
        raise RuntimeError(f"{cmd[0]} did not say where it listens: {line!r}")
    return p, m.group(0)


async def measure(name: str, cmd: list[str], path: str, streams: int, upstream: Upstream) -> dict:
    env = dict(os.environ, CITEFLOW_LOG="warn")
    proc, base = start(cmd, env)
    host, port = base.removeprefix("http://").split(":")
    port = int(port)
    try:
        upstream.release.clear()
        # Warm-up: pools, buffers and the store's first writes, then released.
        warm = [await open_stream(host, port, path) for _ in range(8)]
        upstream.release.set()
        for r, w, s in warm:
            await drain(r, w, s)
        upstream.release.clear()
        await asyncio.sleep(0.5)
        before = rss_kib(proc.pid)
        t0 = time.perf_counter()
        sem = asyncio.Semaphore(100)

        async def one():
            async with sem:
                return await open_stream(host, port, path)

        opened = await asyncio.gather(*(one() for _ in range(streams)))
        took = time.perf_counter() - t0
        await asyncio.sleep(1.0)
        during = rss_kib(proc.pid)
        # Content check: every client saw its first chunk's text (rewritten by citeflow).
        texts_ok = sum(1 for _, _, s in opened if b"Paris is the capital" in s)
        upstream.release.set()
        ends = await asyncio.gather(*(drain(r, w, s) for r, w, s in opened))
        done_ok = sum(1 for s in ends if b"[DONE]" in s)
        await asyncio.sleep(0.5)
        after = rss_kib(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if texts_ok != streams or done_ok != streams:
        raise RuntimeError(f"{name}: {texts_ok}/{streams} first chunks, {done_ok}/{streams} ends seen")
    return {"name": name, "before": before, "during": during, "after": after, "took": took,
            "per_stream": (during - before) / streams}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--citeflow", required=True)
    ap.add_argument("--passthrough")
    ap.add_argument("--streams", type=int, default=1000)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 4 * a.streams + 256
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    upstream = Upstream()
    server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0, backlog=4096)
    up = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        if a.passthrough:
            results.append(await measure("pass-through proxy", [a.passthrough, up],
                                         "/v1/chat/completions", a.streams, upstream))
        results.append(await measure(
            "citeflow serve (SQLite)",
            [a.citeflow, "serve", "--upstream", up, "--listen", "127.0.0.1:0",
             "--store", f"sqlite:{tmp}/c.db", "--max-streams-per-key", str(a.streams + 100)],
            "/v1/chat/completions", a.streams, upstream))
    server.close()
    print(f"| proxy | RSS before (KiB) | with {a.streams} idle streams | after they end | per open stream |")
    print("|---|---|---|---|---|")
    for r in results:
        print(f"| {r['name']} | {r['before']:,} | {r['during']:,} | {r['after']:,} | "
              f"{r['per_stream']:.1f} KiB |")
    cf = results[-1]
    line = f"memory per idle stream: citeflow {cf['per_stream']:.1f} KiB (target 64 KiB)"
    if a.passthrough:
        pt = results[0]
        line += f", pass-through proxy {pt['per_stream']:.1f} KiB"
    print()
    print(line)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except RuntimeError as e:
        print(f"idle_streams: {e}", file=sys.stderr)
        sys.exit(1)
