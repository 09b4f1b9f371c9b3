"""Shared helpers: paths to the repository's vectors and the shared fixtures, and runners."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

import pytest

import citeflow

WORKSPACE = Path(__file__).resolve().parents[3]
VECTORS = WORKSPACE / "tests" / "vectors"


def shared_dir() -> Path:
    """``CITEFLOW_SHARED_DIR``, else ``../shared`` from the workspace root; fails naming it."""
    d = Path(os.environ.get("CITEFLOW_SHARED_DIR", WORKSPACE.parent / "shared"))
    if not d.is_dir():
        pytest.fail(f"shared fixtures directory {d} is missing (set CITEFLOW_SHARED_DIR)")
    return d


def streams_dir() -> Path:
    d = shared_dir() / "fixtures" / "streams"
    if not d.is_dir():
        pytest.fail(f"recorded streams directory {d} is missing")
    return d


def merged(events: Iterable[citeflow.Event]) -> list[dict[str, Any]]:
    """Events as dicts with adjacent texts merged (the form the golden vectors hold)."""
    out: list[dict[str, Any]] = []
    for e in events:
        d = e.to_dict()
        if d["type"] == "text":
            assert d["text"], "empty text event"
            if out and out[-1]["type"] == "text":
                out[-1]["text"] += d["text"]
                continue
        out.append(d)
    return out


def text_of(events: Iterable[citeflow.Event]) -> str:
    return "".join(e.text for e in events if e.type == "text")


Chunks = Sequence[Union[str, bytes]]


def run_chunks(
    chunks: Chunks,
    sources: Any = None,
    settings: Optional[citeflow.Settings] = None,
    numbering: Optional[citeflow.Numbering] = None,
) -> list[citeflow.Event]:
    rw = citeflow.Rewriter(sources, settings=settings, numbering=numbering)
    events: list[citeflow.Event] = []
    for c in chunks:
        events.extend(rw.feed(c))
    events.extend(rw.finish())
    return events


def chunkings(data: bytes, seed: int) -> list[tuple[str, list[bytes]]]:
    """Whole, one byte per chunk, one char per chunk, and seeded random cuts (bytes, so cuts
    may fall inside a UTF-8 character)."""
    out: list[tuple[str, list[bytes]]] = [("whole", [data]), ("bytes", [data[i : i + 1] for i in range(len(data))])]
    text = data.decode("utf-8", errors="surrogatepass")
    out.append(("chars", [c.encode("utf-8", errors="surrogatepass") for c in text]))
    rng = random.Random(int(os.environ.get("CITEFLOW_CHUNK_SEED", seed)))
    for _ in range(8):
        cuts = sorted(rng.randrange(len(data) + 1) for _ in range(rng.randrange(1, 9)))
        pieces, at = [], 0
        for c in cuts:
            pieces.append(data[at:c])
            at = c
        pieces.append(data[at:])
        out.append((f"cuts {cuts}", pieces))
    return out
