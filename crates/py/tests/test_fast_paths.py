"""The fast paths give what ``feed`` gives: ``feed_text``/``finish_text`` (only the text, the
other events kept for ``poll_events``), ``feed_many`` and ``adapters.rewrite_stream`` (many
chunks per call), under any cut (hypothesis) and after an error."""

from __future__ import annotations

from hypothesis import given, settings as hsettings, strategies as st

import citeflow
from citeflow.adapters import rewrite_stream
from conftest import merged, run_chunks
from test_props import SOURCES, cut, settings_st, text_st

cuts_st = st.lists(st.integers(min_value=0, max_value=400), max_size=12)


@hsettings(max_examples=200, deadline=None)
@given(text=text_st, cfg=settings_st, cuts=cuts_st, as_bytes=st.booleans())
def prop_feed_text_gives_feeds_text_and_keeps_the_other_events(
    text: str, cfg: citeflow.Settings, cuts: list[int], as_bytes: bool
) -> None:
    # bytes may be cut inside a UTF-8 character; str is cut between characters.
    pieces = cut(text.encode(), cuts) if as_bytes else cut(text, cuts)  # type: ignore[arg-type]
    want = merged(run_chunks(pieces, SOURCES, cfg))
    rw = citeflow.Rewriter(SOURCES, settings=cfg)
    shown = ""
    kept: list[citeflow.Event] = []
    for p in pieces:
        shown += rw.feed_text(p)
        kept.extend(rw.poll_events())
    shown += rw.finish_text()
    kept.extend(rw.poll_events())
    assert shown == "".join(e["text"] for e in want if e["type"] == "text")
    assert [e.to_dict() for e in kept] == [e for e in want if e["type"] != "text"]
    assert kept[-1].type == "done"


@hsettings(max_examples=200, deadline=None)
@given(text=text_st, cfg=settings_st, cuts=cuts_st, batch=st.integers(min_value=1, max_value=9))
def prop_feed_many_and_rewrite_stream_give_feeds_events(
    text: str, cfg: citeflow.Settings, cuts: list[int], batch: int
) -> None:
    pieces = cut(text.encode(), cuts)
    want = merged(run_chunks(pieces, SOURCES, cfg))
    rw = citeflow.Rewriter(SOURCES, settings=cfg)
    got = merged(list(rw.feed_many(pieces)) + rw.finish())
    assert got == want
    streamed = list(rewrite_stream(iter(pieces), citeflow.Rewriter(SOURCES, settings=cfg), batch=batch))
    assert merged(streamed) == want
    assert streamed[-1].type == "done"


def test_feed_text_returns_the_chunk_itself_when_it_passes_unchanged() -> None:
    rw = citeflow.Rewriter(SOURCES)
    chunk = "Plain words, no marker here"
    assert rw.feed_text(chunk) is chunk
    assert rw.feed_text(" and [[source_3]] cited.") == " and [1] cited."
    assert [e.type for e in rw.poll_events()] == ["source", "citation"]


def test_feed_many_keeps_what_was_released_before_an_error() -> None:
    rw = citeflow.Rewriter(SOURCES, settings=citeflow.Settings(invalid_utf8="error"))
    try:
        rw.feed_many(["Paris [[source_1]] is", b" big \xff bad"])
    except citeflow.RewriteError as e:
        assert e.code == "invalid_utf8"
    else:
        raise AssertionError("no error")
    events = merged(rw.poll_events())
    assert [e["type"] for e in events] == ["text", "source", "citation", "text"]
    assert events[0]["text"] + events[-1]["text"] == "Paris [1] is big "


def test_rewrite_stream_rejects_a_batch_below_one() -> None:
    try:
        list(rewrite_stream(["x"], citeflow.Rewriter(), batch=0))
    except ValueError as e:
        assert "batch must be at least 1" in str(e)
    else:
        raise AssertionError("no error")


@hsettings(max_examples=200, deadline=None)
@given(
    text=text_st,
    cfg=settings_st,
    cuts=cuts_st,
    batch=st.integers(min_value=1, max_value=9),
    bytes_every=st.integers(min_value=0, max_value=4),
)
def prop_feed_many_of_str_gives_feeds_events(
    text: str, cfg: citeflow.Settings, cuts: list[int], batch: int, bytes_every: int
) -> None:
    # str pieces (a list is read in place and written as one chunk), the same as a tuple (the
    # iterator path), and a list with some pieces as bytes (runs of str between them).
    pieces: list[str | bytes] = list(cut(text, cuts))  # type: ignore[arg-type]
    if bytes_every:
        pieces = [p.encode() if i % bytes_every == 0 and isinstance(p, str) else p for i, p in enumerate(pieces)]
    want = merged(run_chunks(pieces, SOURCES, cfg))
    for chunks in (pieces, tuple(pieces)):
        rw = citeflow.Rewriter(SOURCES, settings=cfg)
        got = merged(list(rw.feed_many(chunks)) + rw.finish())
        assert got == want, f"chunks: {chunks!r}"
    streamed = list(rewrite_stream(pieces, citeflow.Rewriter(SOURCES, settings=cfg), batch=batch))
    assert merged(streamed) == want, f"chunks: {pieces!r}, batch {batch}"


def test_feed_many_writes_the_str_before_a_lone_surrogate_and_raises() -> None:
    chunks = ["Paris [[source_1]] is", " big", "\ud800", " never fed"]
    fed = citeflow.Rewriter(SOURCES)
    want = merged(list(fed.feed(chunks[0])) + fed.feed(chunks[1]))
    try:
        fed.feed(chunks[2])
    except UnicodeEncodeError:
        pass
    else:
        raise AssertionError("feed: no error")
    rw = citeflow.Rewriter(SOURCES)
    try:
        rw.feed_many(chunks)
    except UnicodeEncodeError:
        pass
    else:
        raise AssertionError("feed_many: no error")
    got = merged(rw.poll_events())
    assert got == want
    assert "".join(e["text"] for e in got if e["type"] == "text") == "Paris [1] is big"
    assert rw.input_bytes == len("Paris [[source_1]] is big")


def test_feed_many_of_empty_str_after_finish_raises_as_feed() -> None:
    codes = []
    for call in ("feed", "feed_many"):
        rw = citeflow.Rewriter(SOURCES)
        rw.finish()
        try:
            if call == "feed":
                rw.feed("")
            else:
                rw.feed_many([""])
        except citeflow.RewriteError as e:
            codes.append(e.code)
        else:
            raise AssertionError(f"{call}: no error")
    assert codes == ["ended", "ended"]
    rw = citeflow.Rewriter(SOURCES)
    rw.finish()
    assert list(rw.feed_many([])) == []
