"""Snapshots: a Python snapshot restores in Python and in Rust (``citeflow render
--snapshot-in``), and a Rust snapshot (``--snapshot-out``) restores in Python."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import citeflow
from conftest import WORKSPACE, merged, text_of

SOURCES = [
    citeflow.Source("source_1", title="One"),
    citeflow.Source("source_2", title="Two", url="https://e.x/2"),
]
INPUT = "x [[source_2]] y [[sou\u00e9rce]] [[source_1]] \u6f22 [source_2] end"


def whole() -> list[citeflow.Event]:
    rw = citeflow.Rewriter(SOURCES)
    return rw.feed(INPUT) + rw.finish()


def test_restored_rewriter_continues_the_same_stream_at_every_cut() -> None:
    want = text_of(whole())
    data = INPUT.encode()
    for cut in range(len(data) + 1):
        rw = citeflow.Rewriter(SOURCES)
        out = rw.feed(data[:cut])
        snap = rw.snapshot()
        del rw
        rw2 = citeflow.Rewriter.from_snapshot(snap)
        out += rw2.feed(data[cut:]) + rw2.finish()
        assert text_of(out) == want, f"cut at byte {cut}"
        assert json.loads(snap)["version"] == 1


def cli() -> list[str]:
    """The citeflow CLI: ``CITEFLOW_CLI`` if set (scripts/test-python.sh builds it), else
    ``cargo run``."""
    exe = os.environ.get("CITEFLOW_CLI")
    if exe:
        if not Path(exe).is_file():
            pytest.fail(f"CITEFLOW_CLI={exe} does not exist")
        return [exe]
    return ["cargo", "run", "-q", "-p", "citeflow-cli", "--"]


def run_cli(args: list[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    p = subprocess.run(cli() + args, input=stdin, capture_output=True, cwd=WORKSPACE, timeout=600)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return p


def test_python_snapshot_restores_in_the_rust_cli(tmp_path: Path) -> None:
    help_text = run_cli(["render", "--help"], b"").stdout.decode()
    assert "--snapshot-in" in help_text
    want = merged(whole())
    data = INPUT.encode()
    # Cut inside a marker and inside a multi-byte character.
    for cut in [data.index(b"[[sou") + 4, data.index("\u6f22".encode()) + 1, len(data)]:
        rw = citeflow.Rewriter(SOURCES)
        before = rw.feed(data[:cut])
        snap = tmp_path / f"snap-{cut}.json"
        snap.write_text(rw.snapshot(), encoding="utf-8")
        p = run_cli(["render", "--snapshot-in", str(snap), "--output", "jsonl"], data[cut:])
        after: list[dict[str, Any]] = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
        got = [e.to_dict() for e in before] + after
        # Merge texts across the process boundary, then compare with one Python run.
        merged_got: list[dict[str, Any]] = []
        for e in got:
            if e["type"] == "text" and merged_got and merged_got[-1]["type"] == "text":
                merged_got[-1]["text"] += e["text"]
            else:
                merged_got.append(dict(e))
        assert merged_got == want, f"cut at byte {cut}"


def test_rust_cli_snapshot_restores_in_python(tmp_path: Path) -> None:
    srcs = tmp_path / "sources.json"
    srcs.write_text(json.dumps([s.to_dict() for s in SOURCES]), encoding="utf-8")
    data = INPUT.encode()
    cut = data.index(b"[[sou") + 4
    snap = tmp_path / "rust-snap.json"
    p = run_cli(
        ["render", "--sources", str(srcs), "--output", "jsonl", "--snapshot-out", str(snap)],
        data[:cut],
    )
    before = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    rw = citeflow.Rewriter.restore(snap.read_text(encoding="utf-8"))
    after = [e.to_dict() for e in rw.feed(data[cut:]) + rw.finish()]
    got: list[dict[str, Any]] = []
    for e in before + after:
        if e["type"] == "text" and got and got[-1]["type"] == "text":
            got[-1]["text"] += e["text"]
        else:
            got.append(dict(e))
    assert got == merged(whole())


def test_bad_snapshots_raise_restore_error() -> None:
    with pytest.raises(citeflow.RestoreError) as e:
        citeflow.Rewriter.from_snapshot("{not json")
    assert e.value.code == "invalid_json"
    snap = json.loads(citeflow.Rewriter(SOURCES).snapshot())
    snap["version"] = 99
    with pytest.raises(citeflow.RestoreError, match="snapshot format version 99 is not supported"):
        citeflow.Rewriter.from_snapshot(json.dumps(snap))
