"""The recorded streams in ../shared/fixtures/streams/ through the Python package: the 46
SmolLM2 SSE recordings (decoded with the core's SSE decoder) and the Perplexity recordings in
rank mode against their ``citations`` arrays."""

from __future__ import annotations

import json
import re
from typing import Any

import citeflow
from conftest import streams_dir, text_of


def decode_sse(data: bytes, cut: int) -> list[str]:
    """The chunk texts of an OpenAI SSE recording, fed to the decoder in `cut`-byte pieces."""
    dec = citeflow.SseDecoder()
    texts: list[str] = []
    for i in range(0, len(data), cut):
        dec.write(data[i : i + cut])
        for ev in dec.poll_events():
            if ev.data != "[DONE]":
                t = citeflow.chunk_text(ev.data)
                if t is not None:
                    texts.append(t)
    dec.end()
    for ev in dec.poll_events():
        if ev.data != "[DONE]":
            t = citeflow.chunk_text(ev.data)
            if t is not None:
                texts.append(t)
    return texts


def raw_content(data: bytes) -> str:
    """The streamed content straight from the file, independent of citeflow."""
    out = []
    for line in data.decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            c = json.loads(line[6:])["choices"][0]
            t = (c.get("delta") or {}).get("content")
            if t is None:
                t = c.get("text")
            if isinstance(t, str):
                out.append(t)
    return "".join(out)


SYNTAX = {
    "[[source_N]]": (["double_bracket"], "off", r"\[\[source_(\d+)\]\]"),
    "<cite:source_N>": (["cite_colon"], "off", r"<cite:source_(\d+)>"),
    "[N]": (["double_bracket"], "renumber", r"\[(\d+)\]"),
    "【N】": (["double_bracket"], "renumber", r"【(\d+)】"),
}


def test_smollm2_streams_resolve_offered_ids_and_report_invented_ones() -> None:
    d = streams_dir()
    manifest = [json.loads(l) for l in (d / "smollm2-manifest.jsonl").read_text(encoding="utf-8").splitlines() if l.strip()]
    assert len(manifest) == 46
    total_markers = total_offered = 0
    for m in manifest:
        file, syntax, ids = m["file"], m["marker_syntax"], m["source_ids"]
        data = (d / file).read_bytes()
        syntaxes, rank, pattern = SYNTAX[syntax]
        if "source_" in syntax:
            offered = [i.removeprefix("source_") for i in ids]
            sources = [citeflow.Source(f"source_{n}", title=f"source {n}") for n in offered]
        else:
            offered = [str(n) for n in range(1, len(ids) + 1)]
            sources = [citeflow.Source(f"doc{n}", title=f"source {n}") for n in offered]
        chunks = decode_sse(data, 4096)
        content = raw_content(data)
        assert "".join(chunks) == content, file
        # Every token is its own chunk, as recorded; cutting the SSE bytes differently changes
        # nothing.
        assert decode_sse(data, 7) == chunks, file
        rw = citeflow.Rewriter(sources, settings=citeflow.Settings(syntaxes=syntaxes, rank=rank))
        events = [e for c in chunks for e in rw.feed(c)] + rw.finish()

        found = re.findall(pattern, content)
        good = [n for n in found if n in offered]
        total_markers += len(found)
        total_offered += len(good)
        assert sum(e.type == "citation" for e in events) == len(good), file
        assert sum(e.type == "unresolved" for e in events) == len(found) - len(good), file
        done = events[-1]
        assert done.type == "done" and done.report.verified, file
        assert done.report.new_numbers == len(set(good)), f"{file}: invented ids use no number"
        seen: list[int] = []
        for e in events:
            if e.type == "citation" and e.number not in seen:
                assert e.number == len(seen) + 1, file
                seen.append(e.number)
        text = text_of(events)
        stripped_in = re.sub(pattern, "", content)
        stripped_out = re.sub(r"\[\d+\]|\[\?\]", "", text)
        if rank != "off":
            stripped_in = re.sub(pattern, "", stripped_in)
        assert stripped_out == stripped_in, file
        for near_miss in ["【1904年】", "[cite source_2]", "[FB_SHOP]"]:
            assert content.count(near_miss) == text.count(near_miss), f"{file}: {near_miss}"
    # As in the Rust CLI test: 31 markers, 17 with an offered id.
    assert (total_markers, total_offered) == (31, 17)


def perplexity(name: str) -> tuple[list[str], list[str]]:
    chunks, citations = [], []
    for line in (streams_dir() / name).read_text(encoding="utf-8").splitlines():
        v: dict[str, Any] = json.loads(line)
        citations = v.get("citations") or citations
        t = citeflow.chunk_text(line)
        if t:
            chunks.append(t)
    return chunks, citations


def test_perplexity_ranks_resolve_against_the_citations_array() -> None:
    for name, want_renumber, want_keep, cited in [
        ("perplexity-citations.chunks.txt", "The current population of **[1][2]", "The current population of **[2][3]", [2, 3]),
        ("perplexity-text.chunks.txt", "**EcoVista Day**[1][2]", "**EcoVista Day**[1][5]", [1, 5]),
    ]:
        chunks, citations = perplexity(name)
        assert citations, name
        sources = [citeflow.Source(f"c{i}", url=u) for i, u in enumerate(citations, 1)]
        for rank, want in [("renumber", want_renumber), ("keep", want_keep)]:
            rw = citeflow.Rewriter(sources, settings=citeflow.Settings(rank=rank))
            events = [e for c in chunks for e in rw.feed(c)] + rw.finish()
            assert text_of(events) == want, (name, rank)
            cites = [e for e in events if e.type == "citation"]
            assert [c.source_id for c in cites] == [f"c{n}" for n in cited], (name, rank)
            srcs = [e for e in events if e.type == "source"]
            assert [s.source.url for s in srcs] == [citations[n - 1] for n in cited], (name, rank)
            done = events[-1]
            assert done.type == "done" and done.report.verified
            assert [l.source.url for l in done.sources] == [citations[n - 1] for n in cited]
