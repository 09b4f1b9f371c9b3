#!/usr/bin/env python3
"""Whether two citeflow builds send the same events on the Messages and Responses routes
(not a test: a check for a change that claims the same output, as
crates/wasm/tests/ai-sdk/same-parts.mjs is for the AI SDK middleware).

    python3 scripts/bench/named_same_events.py BEFORE AFTER

BEFORE and AFTER are citeflow binaries. Each serves (`serve --store memory`, two sources)
every recorded Anthropic stream of `shared/fixtures/streams` on `/v1/messages` and every
recorded Responses stream (OpenAI, Azure, xAI) on `/v1/responses`, from the replaying
upstream (built in release if missing), and the same answer as each API's own events
(scripts/bench/named_stream.py over smollm2-01 and smollm2-03). Every event's name and JSON
value must be equal (the key order inside an event may differ; `citeflow.stream_id` differs
by design). Prints each stream's event count and the differences; exits 1 on any.
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("CITEFLOW_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
SOURCES = [{"id": "source_3", "text": "Paris is the capital of France."},
           {"id": "source_7", "text": "The Seine flows through Paris."}]


def start(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return p, p.stdout.readline().strip()


def events(url, route, body):
    req = urllib.request.Request(f"{url}/{route}", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    raw = urllib.request.urlopen(req, timeout=120).read().decode()
    out = []
    for frame in raw.split("\n\n"):
        name, data = None, None
        for line in frame.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
        if data is not None:
            if isinstance(data, dict) and isinstance(data.get("citeflow"), dict):
                data["citeflow"].pop("stream_id", None)
            out.append((name, data))
    return out


def main():
    before, after = sys.argv[1:3]
    replay = os.path.join(TARGET, "release", "examples", "replay_upstream")
    if not os.path.exists(replay):
        subprocess.run(["cargo", "build", "--quiet", "--locked", "--release", "-p",
                        "citeflow-replay", "--example", "replay_upstream"], cwd=ROOT, check=True)
    streams = os.path.join(SHARED, "fixtures", "streams")
    with tempfile.TemporaryDirectory() as work:
        cases = []
        for f in sorted(os.listdir(streams)):
            if not f.endswith(".chunks.txt"):
                continue
            if f.startswith("anthropic"):
                cases.append(("messages", f))
            elif f.startswith(("openai-", "azure", "xai")) and f != "openai-text.chunks.txt":
                cases.append(("responses", f))
            else:
                continue
            os.symlink(os.path.join(streams, f), os.path.join(work, f))
        for route, src in (("messages", "smollm2-01.sse"), ("responses", "smollm2-03.sse")):
            name = f"bench-{route}.sse"
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "named_stream.py"),
                            route, os.path.join(streams, src), os.path.join(work, name)], check=True)
            cases.append((route, name))
        up, upstream = start([replay, work, "0"])
        got = {}
        try:
            for binary in (before, after):
                srv, line = start([binary, "serve", "--upstream", upstream, "--anthropic-upstream",
                                   upstream, "--listen", "127.0.0.1:0", "--store", "memory"])
                url = line.replace("citeflow listening on ", "")
                url = url if url.endswith("/v1") else url + "/v1"
                try:
                    for route, model in cases:
                        body = {"model": model, "stream": True, "sources": SOURCES}
                        if route == "messages":
                            body.update(max_tokens=512, messages=[{"role": "user", "content": "q"}])
                        else:
                            body["input"] = "q"
                        got.setdefault((route, model), []).append(events(url, route, body))
                finally:
                    srv.kill()
        finally:
            up.kill()
    bad = 0
    for (route, model), (a, b) in got.items():
        same = a == b
        bad += not same
        print(f"{'same' if same else 'DIFFERENT'}: {route} {model}: {len(a)} / {len(b)} events")
        if not same:
            for i, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    print(f"  first difference at event {i}:\n    {json.dumps(x)[:400]}\n    {json.dumps(y)[:400]}")
                    break
    print(f"{len(got) - bad} of {len(got)} streams send the same events")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
