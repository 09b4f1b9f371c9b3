"""The Next.js example's agent route (examples/nextjs-ai-sdk/app/api/agent) on the local model,
as its README sets it up: `next start` of the example's build (scripts/next-example.sh) with
`citeflow serve`'s proxy in front of SmolLM2-135M as its model (what `citeflow serve` runs with
no upstream; no key). One POST of the page's question, read as the AI SDK UI message stream:
the model calls the book's `search` tool (the agent policy, under the tool grammar), the tool
returns passages of the sample book, and the answer's numbers are the passages citeflow
lists, each with its chapter and CFI."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = ROOT / "examples/nextjs-ai-sdk"
PROXY_URL = os.environ["CITEFLOW_PROXY_URL"]
OUT = ROOT / "target/llm-agents"
QUESTION = "Who does Alice follow down the rabbit hole?"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ui_parts(body: str) -> list[dict[str, Any]]:
    parts = []
    for line in body.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            parts.append(json.loads(line[len("data: "):]))
    return parts


def test_nextjs_agent_route_on_the_local_model_cites_the_searched_passages() -> None:
    if not (EXAMPLE / ".next/BUILD_ID").is_file():
        pytest.fail("the example is not built: scripts/test-llm.sh builds it (scripts/next-example.sh)")
    OUT.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = OUT / "nextjs-local.log"
    env = {**os.environ, "CITEFLOW_EXAMPLE_BASE_URL": PROXY_URL, "CITEFLOW_EXAMPLE_CITEFLOW_SERVE": "1",
           "NEXT_TELEMETRY_DISABLED": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["./node_modules/.bin/next", "start", "-H", "127.0.0.1", "-p", str(port)],
            cwd=EXAMPLE, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "Ready" not in log.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
        started = time.monotonic()
        r = httpx.post(
            f"http://127.0.0.1:{port}/api/agent",
            json={"messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": QUESTION}]}]},
            timeout=600,
        )
        print(f"agent route on the local model: {time.monotonic() - started:.1f} s")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert r.status_code == 200, r.text[-2000:]
    assert r.headers["x-vercel-ai-ui-message-stream"] == "v1"
    parts = ui_parts(r.text)
    (OUT / "nextjs-local.parts.json").write_text(json.dumps(parts, indent=1, ensure_ascii=False))
    errors = [p for p in parts if p["type"] == "error"]
    assert not errors, errors

    # The model searched (the policy's call, its query capped at 64 characters) ...
    calls = [p for p in parts if p["type"] == "tool-input-available"]
    assert calls and all(c["toolName"] == "search" for c in calls), calls
    queries = [c["input"]["query"] for c in calls]
    assert all(isinstance(q, str) and 0 < len(q) <= 64 for q in queries), queries
    # ... and the tool answered with the book's passages.
    outputs = [p for p in parts if p["type"] == "tool-output-available"]
    assert len(outputs) == len(calls), outputs
    found = {d["id"]: d for o in outputs for d in o["output"]["documents"]}
    assert found and all(re.fullmatch(r".+#p\d+", i) for i in found), sorted(found)

    # The answer cites: every [n] in its text is a listed source, numbered 1..k in order, and
    # each listed source is a passage the search found, with its chapter and CFI.
    text = "".join(p["delta"] for p in parts if p["type"] == "text-delta")
    print(f"answer: {text!r}")
    listed = [p for p in parts if p["type"] == "source-document"]
    numbers = [p["providerMetadata"]["citeflow"]["number"] for p in listed]
    assert numbers == list(range(1, len(numbers) + 1)), listed
    assert listed, f"no source listed for {text!r}"
    for p in listed:
        meta = p["providerMetadata"]["citeflow"]
        assert meta["sourceId"] in found, (meta, sorted(found))
        passage = found[meta["sourceId"]]
        assert meta["cfi"] == passage["locator"]["cfi"] and meta["cfi"].startswith("epubcfi(/6/"), meta
        assert meta["chapterTitle"] == passage["locator"]["chapter_title"], meta
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", text)}
    assert cited and cited <= set(numbers), (text, numbers)
    assert "[[" not in text and "[?]" not in text, text
