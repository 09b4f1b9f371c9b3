"""Chunk invariance through the binding (hypothesis): any cut of the input bytes, even inside
a marker or a UTF-8 character, gives the same events as one chunk and as ``rewrite_str``."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings as hsettings, strategies as st

import citeflow
from conftest import merged, run_chunks

SOURCES = [
    citeflow.Source("source_1", title="One", url="https://e.x/1"),
    citeflow.Source("source_3", title="Three", url="https://e.x/3"),
    citeflow.Source("source_7", title="Seven", url="https://e.x/1/"),
    citeflow.Source("doc", title="Doc"),
]

# Biased toward marker syntax: brackets, ids, digits, cite tags, full-width brackets, code
# fences, multi-byte characters.
TOKENS = [
    "[[", "]]", "[", "]", "source_", "source_1", "source_3", "source_7", "source_99", "doc",
    "1", "2", "3", "12", ", ", "<cite:", ">", '<cite id="', '"/>', "</cite>", "【", "】",
    "［", "］", "`", "```\n", "\n", " ", "é", "漢字", "🙂", "x", "The", ".", "\\",
]

text_st = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)
settings_st = st.builds(
    lambda rank, unknown, style, cap, dedupe: citeflow.Settings(
        rank=rank, unknown=unknown, style=style, max_pending_bytes=cap, dedupe=dedupe
    ),
    st.sampled_from(["off", "renumber", "keep"]),
    st.sampled_from(["mark", "drop", "keep"]),
    st.sampled_from(["brackets", "full_width", "markdown_link", "html", "template:<{n}|{id}>"]),
    st.sampled_from([citeflow.MIN_PENDING_BYTES, 64]),
    st.booleans(),
)


def cut(data: bytes, cuts: list[int]) -> list[bytes]:
    pieces, at = [], 0
    for c in sorted(min(c, len(data)) for c in cuts):
        pieces.append(data[at:c])
        at = c
    pieces.append(data[at:])
    return pieces


@hsettings(max_examples=300, deadline=None)
@given(text=text_st, cfg=settings_st, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def prop_chunk_invariance(text: str, cfg: citeflow.Settings, cuts: list[int]) -> None:
    data = text.encode()
    whole = merged(run_chunks([data], SOURCES, cfg))
    pieces = cut(data, cuts)
    got = merged(run_chunks(pieces, SOURCES, cfg))
    assert got == whole, f"chunking {pieces!r}"
    one_shot = citeflow.rewrite_str(text, SOURCES, settings=cfg)
    assert [e.to_dict() for e in one_shot.events] == whole
    # str and bytes chunks are the same input.
    assert merged(run_chunks([text], SOURCES, cfg)) == whole


@hsettings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.characters(blacklist_characters="[]<>【】［］`\\", blacklist_categories=("Cs",)), max_size=80),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def prop_text_without_markers_is_unchanged(text: str, cuts: list[int]) -> None:
    data = text.encode()
    events = run_chunks(cut(data, cuts), SOURCES)
    assert "".join(e.text for e in events if e.type == "text") == text
    done = events[-1]
    assert done.type == "done" and done.report.citations == 0 and done.report.verified


def test_every_event_round_trips_through_to_dict() -> None:
    events = run_chunks(["a [[source_3]] b [[nope]] c [[source_1, source_7]]."], SOURCES)
    kinds: dict[str, Any] = {}
    for e in events:
        kinds[e.type] = e
        assert e == e and repr(e)
    assert set(kinds) == {"text", "source", "citation", "unresolved", "done"}
