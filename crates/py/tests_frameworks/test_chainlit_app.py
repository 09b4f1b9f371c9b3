"""The Chainlit example (examples/chainlit_agent/app.py) run by ``chainlit run --headless`` on a
free loopback port against the replaying upstream (paced, so that the answer streams), driven
by headless Chromium: the numbers appear while the answer streams, each opens its source in the
side panel, and the answer ends with the list grouped by search round. The app has claim anchors
on: each side element shows the sentence of its source that supports the citation in bold in
its passage, and says how well each citation is supported."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from citeflow import AnchorEvent, Rewriter, Settings, Source

from conftest import ROOT

APP = ROOT / "examples/chainlit_agent/app.py"
OUT = ROOT / "target/frameworks-py"
PLAYWRIGHT = ROOT / "crates/server/tests/browser/node_modules/playwright-core/index.mjs"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(path: Path, pattern: str, proc: subprocess.Popen[Any], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if re.search(pattern, path.read_text(errors="replace")):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    pytest.fail(f"no {pattern!r} in {path}:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def paced_upstream() -> Iterator[str]:
    binary = os.environ.get("CITEFLOW_REPLAY_BIN") or str(ROOT / "target/debug/examples/replay_upstream")
    shared = os.environ.get("CITEFLOW_SHARED_DIR") or str(ROOT.parent / "shared")
    env = {**os.environ, "CITEFLOW_REPLAY_AGENT_PACE_MS": "30"}
    proc = subprocess.Popen([binary, f"{shared}/fixtures/streams"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def run_app(upstream: str, model: str, style: str, question: str, name: str) -> dict[str, Any]:
    if shutil.which("node") is None or not PLAYWRIGHT.is_file() or not Path("/usr/bin/chromium").is_file():
        pytest.fail("the browser test needs node, /usr/bin/chromium and playwright-core (scripts/browser-env.sh)")
    app_root = OUT / f"chainlit-{name}"
    app_root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = OUT / f"chainlit-{name}.log"
    env = {
        **os.environ,
        "CHAINLIT_APP_ROOT": str(app_root),
        "OPENAI_BASE_URL": upstream,
        "OPENAI_API_KEY": "test",
        "CITEFLOW_AGENT_MODEL": model,
        "CITEFLOW_STYLE": style,
    }
    chainlit = shutil.which("chainlit", path=os.path.dirname(os.sys.executable)) or "chainlit"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [chainlit, "run", str(APP), "--headless", "--host", "127.0.0.1", "--port", str(port)],
            cwd=app_root, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        wait_for(log, r"Your app is available", proc)
        shot = OUT / f"chainlit-{name}.png"
        driver = subprocess.run(
            ["node", str(Path(__file__).with_name("chainlit_browser.mjs"))],
            env={**os.environ, "CL_URL": f"http://127.0.0.1:{port}/", "QUESTION": question,
                 "SHOT": str(shot), "PLAYWRIGHT_CORE": str(PLAYWRIGHT)},
            capture_output=True, text=True, timeout=120,
        )
        assert driver.returncode == 0, driver.stderr + log.read_text(errors="replace")[-3000:]
        assert shot.stat().st_size > 10_000
        result: dict[str, Any] = json.loads(driver.stdout.strip().splitlines()[-1])
        return result
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def check(result: dict[str, Any], markers: list[str], pattern: str) -> None:
    # The numbers show while the answer streams: some sample has a marker but no list yet.
    streaming = [s for s in result["samples"] if s["links"] and "Round 1" not in s["text"]]
    assert streaming, result["samples"]
    assert any(len(s["links"]) < len(markers) for s in streaming), "never saw a partial answer"
    final = result["final"]
    assert final["links"] == markers
    opened = {o["name"]: o for o in result["opened"]}
    assert sorted(opened) == sorted(set(markers))
    for name, o in opened.items():
        assert o["title"] == name
    assert re.search(pattern, final["text"], re.S), final["text"]


@pytest.mark.usefixtures("paced_upstream")
def test_chainlit_agent_in_the_browser(paced_upstream: str) -> None:
    result = run_app(paced_upstream, "agent-search", "brackets", "Tell me about Paris", "en")
    # The app's web search: "Seine river Paris" → seine, bridges, ...; "Paris museums" →
    # pompidou, seine, ... (seine keeps its number 1 in the second round).
    check(result, ["[1]", "[2]", "[3]", "[1]"],
          r"Round 1: Seine river Paris\s*\n.*The Seine in Paris.*Bridges of Paris.*Round 2: Paris museums.*Centre Pompidou")
    opened = {o["name"]: o["content"] for o in result["opened"]}
    assert opened["[1]"].startswith("The Seine in Paris\nen.wikipedia.org")
    assert "Search: Seine river Paris" in opened["[1]"]
    assert opened["[3]"].startswith("Centre Pompidou")
    assert "Search: Paris museums" in opened["[3]"]

    with warnings.catch_warnings():  # chainlit's dependencies warn on import (pydantic)
        warnings.simplefilter("ignore")
        from citeflow.chainlit import anchor_line

    # Claim anchors: what the engine anchors for this answer over the corpus, shown per source.
    corpus = {p["id"]: p for p in json.loads((APP.parent / "corpus.json").read_text(encoding="utf-8"))}
    answer = (
        "The Seine flows through the heart of Paris [[web-seine]], and its banks are lined with landmarks "
        "[[web-bridges]]. The city's museums hold vast collections [[web-pompidou]], and they draw visitors "
        "from everywhere [[web-seine]]."
    )
    rw = Rewriter([Source(i, text=p["text"]) for i, p in corpus.items()], settings=Settings(anchors=True))
    anchors = [e for e in rw.feed(answer) + rw.finish() if isinstance(e, AnchorEvent)]
    assert [a.number for a in anchors] == [1, 2, 3, 1]
    seine = "The Seine flows through the heart of Paris for thirteen kilometres, from east to west, and divides the city into the Right Bank and the Left Bank."
    assert anchors[0].quote is not None and anchors[0].quote.text == seine
    panels = {o["name"]: o for o in result["opened"]}
    # The quote that supports [1] is on the page, in bold in its passage.
    assert seine in panels["[1]"]["bold"], panels["[1]"]
    for a in anchors:
        panel = panels[f"[{a.number}]"]
        if a.quote is not None:
            assert a.quote.text in panel["bold"], (a, panel)
        # Each citation's support line, weak and unsupported ones marked with ⚠️.
        assert anchor_line(a) in panel["content"], (a, panel["content"])
    lines = [anchor_line(a) for a in anchors]
    assert all(line.startswith("⚠️") == (a.verdict != "supported") for a, line in zip(anchors, lines))
    # [1] was cited twice: its panel has both citations' lines.
    assert panels["[1]"]["content"].count("support 0.") + panels["[1]"]["content"].count("support 1.") == 2


def test_chainlit_agent_in_japanese(paced_upstream: str) -> None:
    result = run_app(paced_upstream, "agent-search-ja", "full_width", "パリについて教えて", "ja")
    check(result, ["【1】", "【2】", "【2】", "【1】"], r"Round 1: セーヌ川 パリ.*セーヌ川.*ルーヴル美術館")
    # Claim anchors in Japanese: each side element says how its citations are supported, and a
    # quote shown in bold is a sentence of the passage shown with it.
    for o in result["opened"]:
        assert re.search(r"(Supported|Weak support|Not supported): .*\(support [01]\.\d\d\)", o["content"]), o
        for quote in o["bold"][1:]:  # the first bold text is the title
            assert quote in o["content"] and quote.endswith("。"), o
    assert any(len(o["bold"]) > 1 for o in result["opened"]), "no quote shown"
