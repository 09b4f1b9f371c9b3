"""The golden vectors of tests/vectors/*.json (shared with the Rust and WASM suites) through
Python: the events must equal the expected JSON exactly, under every chunking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import citeflow
from conftest import VECTORS, chunkings, merged, run_chunks


def cases() -> list[Any]:
    files = sorted(VECTORS.glob("*.json"))
    assert len(files) >= 5, f"expected golden vectors in {VECTORS}"
    out = []
    for f in files:
        for case in json.loads(f.read_text(encoding="utf-8"))["cases"]:
            out.append(pytest.param(case, id=f"{f.stem}: {case['name']}"))
    assert len(out) >= 20
    return out


def setup(case: dict[str, Any]) -> tuple[citeflow.Settings, list[citeflow.Source]]:
    settings = citeflow.Settings.from_json(json.dumps(case["settings"]))
    sources = [citeflow.Source.from_dict(s) for s in case["sources"]]
    return settings, sources


@pytest.mark.parametrize("case", cases())
def test_golden_vector_events_match_exactly(case: dict[str, Any]) -> None:
    settings, sources = setup(case)
    events = run_chunks(case["chunks"], sources, settings)
    got = merged(events)
    assert "".join(e["text"] for e in got if e["type"] == "text") == case["expected_text"]
    assert got == case["expected_events"]


@pytest.mark.parametrize("case", cases())
def test_golden_vector_holds_under_every_chunking(case: dict[str, Any]) -> None:
    settings, sources = setup(case)
    data = "".join(case["chunks"]).encode()
    for name, pieces in chunkings(data, 7):
        got = merged(run_chunks(pieces, sources, settings))
        assert got == case["expected_events"], f"chunking {name} (pin with CITEFLOW_CHUNK_SEED)"


@pytest.mark.parametrize("case", cases())
def test_golden_vector_one_shot_and_dict_sources_agree(case: dict[str, Any]) -> None:
    settings, _ = setup(case)
    out = citeflow.rewrite_str("".join(case["chunks"]), case["sources"], settings=settings)
    assert out.text == case["expected_text"]
    assert [e.to_dict() for e in out.events] == case["expected_events"]


def test_vectors_dir_is_the_workspace_one() -> None:
    assert (Path(VECTORS) / "basic.json").is_file()
