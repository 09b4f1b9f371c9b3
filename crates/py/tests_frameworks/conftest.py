"""Fixtures of the framework tests: the replaying upstream (real HTTP, scripted models) and the
documents its agent model is shown."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]

# Importing chainlit writes its config (.chainlit/) into its app root, the working directory by
# default: keep it under target/.
_CHAINLIT_ROOT = ROOT / "target/frameworks-py/chainlit-import"
_CHAINLIT_ROOT.mkdir(parents=True, exist_ok=True)
os.environ.setdefault("CHAINLIT_APP_ROOT", str(_CHAINLIT_ROOT))

#: The search results by query: a document found in two rounds (``louvre``, ``seine``), and a
#: second turn's searches (``Eiffel Tower``, ``Paris bridges``) that bring new ones.
PAGES: dict[str, dict[str, str]] = {
    "seine": {"title": "Seine", "url": "https://example.org/seine", "text": "The Seine flows through Paris."},
    "louvre": {"title": "Louvre", "url": "https://example.org/louvre", "text": "The Louvre is the largest museum."},
    "bridges": {"title": "Bridges of Paris", "url": "https://example.org/bridges", "text": "Thirty-seven bridges cross the Seine."},
    "orsay": {"title": "Musée d'Orsay", "url": "https://example.org/orsay", "text": "The Orsay holds Impressionist art."},
    "eiffel": {"title": "Eiffel Tower", "url": "https://example.org/eiffel", "text": "The tower was built in 1889."},
    "pont-neuf": {"title": "Pont Neuf", "url": "https://example.org/pont-neuf", "text": "The oldest standing bridge."},
}
RESULTS: dict[str, list[str]] = {
    "Seine river Paris": ["seine", "louvre", "bridges"],
    "Paris museums": ["louvre", "orsay"],
    "Eiffel Tower": ["eiffel", "seine"],
    "Paris bridges": ["bridges", "pont-neuf"],
    "セーヌ川 パリ": ["seine", "louvre", "bridges"],
    "パリ 美術館": ["louvre", "orsay"],
    "エッフェル塔": ["eiffel", "seine"],
    "パリ 橋": ["bridges", "pont-neuf"],
}


def hits(query: str) -> list[dict[str, Any]]:
    """The search hits for a query (dicts with id, title, url, text)."""
    return [{"id": i, **PAGES[i]} for i in RESULTS.get(query, [])]


@pytest.fixture(scope="session")
def replay_url() -> Iterator[str]:
    """The replaying upstream on a loopback port (``CITEFLOW_REPLAY_BIN``, built by the test
    script), stopped at the end of the session."""
    binary = os.environ.get("CITEFLOW_REPLAY_BIN") or str(ROOT / "target/debug/examples/replay_upstream")
    if not Path(binary).is_file():
        pytest.fail(f"the replaying upstream is not built: {binary}")
    shared = os.environ.get("CITEFLOW_SHARED_DIR") or str(ROOT.parent / "shared")
    proc = subprocess.Popen([binary, f"{shared}/fixtures/streams"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture(scope="session")
def citeflow_serve(replay_url: str) -> Iterator[str]:
    """``citeflow serve`` (``CITEFLOW_CLI``, else target/debug/citeflow) on a loopback port in
    front of the replaying upstream; its ``…/v1`` URL."""
    binary = os.environ.get("CITEFLOW_CLI") or str(ROOT / "target/debug/citeflow")
    if not Path(binary).is_file():
        pytest.fail(f"no citeflow binary at {binary} (set CITEFLOW_CLI)")
    args = [binary, "serve", "--listen", "127.0.0.1:0", "--upstream", replay_url, "--store", "memory"]
    proc = subprocess.Popen(
        [*args, "--no-sample-books"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in line, line
        yield line.split("listening on ", 1)[1].strip() + "/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
