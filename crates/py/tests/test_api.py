"""The Python API: sessions and scopes, settings, values, errors, external numbering,
retransmitted chunks, source lists, the SSE decoder."""

from __future__ import annotations

import gc
import json

import pytest

import citeflow
from conftest import text_of

PARIS = citeflow.Source("source_7", title="Paris", url="https://e.x/paris")
FRANCE = citeflow.Source("source_3", title="France", url="https://e.x/france")


def answer(rw: citeflow.Rewriter, text: str) -> list[citeflow.Event]:
    return rw.feed(text) + rw.finish()


def test_session_scope_continues_numbers_across_answers_and_rounds() -> None:
    s = citeflow.Session(scope="session")
    assert s.append_round([PARIS], query="paris") == 1
    ev1 = answer(s.rewriter(), "A [[source_7]].")
    assert text_of(ev1) == "A [1]."
    assert s.append_round([FRANCE, {"id": "source_7", "title": "again"}], query="france") == 2
    ev2 = answer(s.rewriter(), "B [[source_3]] and [[source_7]].")
    assert text_of(ev2) == "B [2] and [1]."
    srcs = [e for e in ev2 if e.type == "source"]
    assert [(e.number, e.is_new, e.round) for e in srcs] == [(2, True, 2), (1, False, 1)]
    assert srcs[1].source.title == "Paris"  # the first record is kept
    assert [e.number for e in s.numbering.entries()] == [1, 2]
    assert [r.query for r in s.rounds()] == ["paris", "france"]
    assert s.rounds()[1].source_ids == ["source_3", "source_7"]
    done = ev2[-1]
    assert done.type == "done"
    grouped = citeflow.render_list(done.sources, "markdown", s.rounds())
    assert grouped == (
        "**Round 1: paris**\n\n1. [Paris](https://e.x/paris)\n\n"
        "**Round 2: france**\n\n2. [France](https://e.x/france)\n\n"
    )


def test_answer_scope_starts_each_answer_at_one() -> None:
    s = citeflow.Session(scope="answer", style="full_width")
    s.append_round([PARIS, FRANCE])
    assert text_of(answer(s.rewriter(), "[[source_3]]")) == "【1】"
    assert text_of(answer(s.rewriter(), "[[source_7]] [[source_3]]")) == "【1】 【2】"
    assert len(s.numbering) == 0


def test_session_answers_must_stream_one_at_a_time() -> None:
    s = citeflow.Session(scope="session")
    s.append_round([PARIS, FRANCE])
    a, b = s.rewriter(), s.rewriter()
    a.feed("[[source_7]] ")
    with pytest.raises(citeflow.NumberingError) as e:
        b.feed("[[source_3]] ")
    assert e.value.code == "numbering_conflict"


def test_dedupe_merges_same_url_unless_off() -> None:
    a = citeflow.Source("a", url="https://E.x/doc/")
    b = citeflow.Source("b", url="https://e.x/doc")
    assert text_of(answer(citeflow.Rewriter([a, b]), "[[a]] [[b]]")) == "[1] [1]"
    off = citeflow.Settings(dedupe=False)
    assert text_of(answer(citeflow.Rewriter([a, b], settings=off), "[[a]] [[b]]")) == "[1] [2]"
    assert citeflow.Sources.key_of(a, True) == citeflow.Sources.key_of({"id": "b", "url": "https://e.x/doc"}, True)


def test_settings_keywords_round_trip_and_match_the_core_json() -> None:
    st = citeflow.Settings(
        syntaxes=["double_bracket", "bare_id"],
        id_pattern="doc-<word>",
        rank="keep",
        unknown="drop",
        style="template:<{n}>",
        max_pending_bytes=32,
        invalid_utf8="error",
        number_source="external",
        dedupe=False,
        skip_code=False,
    )
    assert st.syntaxes == ["double_bracket", "bare_id"]
    assert (st.id_pattern, st.rank, st.unknown, st.style) == ("doc-<word>", "keep", "drop", "template:<{n}>")
    assert (st.max_pending_bytes, st.invalid_utf8, st.number_source, st.dedupe, st.skip_code) == (
        32, "error", "external", False, False,
    )
    assert citeflow.Settings.from_json(st.to_json()) == st
    assert json.loads(citeflow.Settings().to_json())["max_pending_bytes"] == 64
    assert st.replace(rank="off").rank == "off" and st.rank == "keep"
    assert citeflow.Settings() == citeflow.Settings.from_json("{}")
    assert "Settings(" in repr(st)


@pytest.mark.parametrize(
    "kwargs, code, message",
    [
        ({"style": "bold"}, "unknown_name", 'unknown style "bold"'),
        ({"syntaxes": ["nope"]}, "unknown_name", 'unknown syntax "nope"'),
        ({"rank": "maybe"}, "unknown_name", 'unknown rank mode "maybe"'),
        ({"id_pattern": "x"}, "invalid_id_pattern", 'invalid id pattern "x"'),
        ({"id_pattern": "a b<digits>"}, "invalid_id_prefix", 'invalid id prefix "a b"'),
        ({"max_pending_bytes": 8}, "pending_cap_too_small", "max_pending_bytes 8 is below the minimum 16"),
        ({"invalid_utf8": "ignore"}, "unknown_name", 'unknown invalid utf-8 policy "ignore"'),
    ],
)
def test_bad_settings_raise_settings_error_with_the_core_message(kwargs: dict, code: str, message: str) -> None:
    with pytest.raises(citeflow.SettingsError) as e:
        citeflow.Settings(**kwargs)
    assert isinstance(e.value, citeflow.CiteflowError)
    assert e.value.code == code
    assert str(e.value).startswith(message)


def test_bad_sources_raise_source_error_and_register_nothing() -> None:
    s = citeflow.Sources()
    with pytest.raises(citeflow.SourceError, match="source id a is given twice in one round") as e:
        s.append_round([{"id": "a"}, {"id": "a"}])
    assert e.value.code == "duplicate_id"
    with pytest.raises(citeflow.SourceError, match="source at index 0 has an empty id"):
        citeflow.Rewriter([citeflow.Source(" ")])
    with pytest.raises(citeflow.SourceError, match="invalid source"):
        citeflow.Source.from_dict({"id": 5})
    with pytest.raises(TypeError):
        citeflow.Rewriter("source_1")
    with pytest.raises(TypeError):
        citeflow.Rewriter([3])
    assert len(s) == 0 and not s.rounds()


def test_rewrite_errors_carry_codes_and_later_calls_fail() -> None:
    rw = citeflow.Rewriter([PARIS])
    rw.feed("a")
    rw.finish()
    with pytest.raises(citeflow.RewriteError, match="the stream has already ended") as e:
        rw.feed("b")
    assert e.value.code == "ended"
    strict = citeflow.Rewriter([PARIS], settings=citeflow.Settings(invalid_utf8="error"))
    with pytest.raises(citeflow.RewriteError, match="invalid utf-8 at input byte 3") as e:
        strict.feed(b"ok \xff [[source_7]]")
    assert e.value.code == "invalid_utf8"
    assert text_of(strict.poll_events()) == "ok "  # the valid text before it was processed
    with pytest.raises(citeflow.RewriteError) as e:
        strict.feed("more")
    assert e.value.code == "failed" and "invalid utf-8 at input byte 3" in str(e.value)
    with pytest.raises(TypeError, match="a chunk must be str or bytes, not int"):
        citeflow.Rewriter().feed(5)  # type: ignore[arg-type]


def test_invalid_utf8_is_replaced_by_default_even_split_across_chunks() -> None:
    rw = citeflow.Rewriter()
    events = rw.feed(b"caf\xc3") + rw.feed(b"\xa9 \xff!") + rw.finish()
    assert text_of(events) == "caf\u00e9 \ufffd!"
    assert events[-1].report.input_bytes == 8


def test_feed_seq_and_feed_at_ignore_retransmissions_and_reject_gaps() -> None:
    rw = citeflow.Rewriter([PARIS])
    assert text_of(rw.feed_seq(0, "a [[sou")) == "a "
    assert rw.feed_seq(0, "a [[sou") == []
    with pytest.raises(citeflow.RewriteError, match="chunk gap: expected sequence 1, got 2") as e:
        rw.feed_seq(2, "x")
    assert e.value.code == "chunk_gap"
    assert text_of(rw.feed_seq(1, "rce_7]] b")) == "[1] b"
    assert rw.next_seq == 2
    rw2 = citeflow.Rewriter([PARIS])
    rw2.feed_at(0, "abc")
    assert text_of(rw2.feed_at(1, "bcdef")) == "def"
    with pytest.raises(citeflow.RewriteError, match="chunk gap: expected byte offset 6, got 9"):
        rw2.feed_at(9, "x")
    assert rw2.write_at(0, "abc") is False and rw2.input_bytes == 6


def test_external_numbers_are_asked_for_and_answered() -> None:
    rw = citeflow.Rewriter([PARIS, FRANCE], settings=citeflow.Settings(number_source="external"))
    events = rw.feed("A [[source_3]] B")
    need = [e for e in events if e.type == "number_needed"]
    assert len(need) == 1 and need[0].source_id == "source_3"
    assert rw.is_awaiting_number()
    with pytest.raises(citeflow.RewriteError) as e:
        rw.provide_number("other", 1)
    assert e.value.code == "not_awaiting"
    rw.provide_number(need[0].key, 41)
    rest = rw.poll_events() + rw.finish()
    assert text_of(events + rest) == "A [41] B"
    assert rw.numbering.get(need[0].key) == 41


def test_numbering_round_trips_and_rejects_conflicts() -> None:
    n = citeflow.Numbering([citeflow.NumberEntry(1, "id:a", "a"), citeflow.NumberEntry(2, "id:b", "b")])
    assert citeflow.Numbering.from_json(n.to_json()) == n
    assert n.allocate("id:c", "c") == (3, True) and n.allocate("id:a", "a") == (1, False)
    with pytest.raises(citeflow.NumberingError, match="conflicts") as e:
        n.insert(5, "id:a", "a")
    assert e.value.code == "numbering_conflict"
    with pytest.raises(citeflow.NumberingError):
        citeflow.Numbering([citeflow.NumberEntry(1, "k", "a"), citeflow.NumberEntry(1, "j", "b")])
    rw = citeflow.Rewriter([citeflow.Source("c")], numbering=n)
    assert text_of(answer(rw, "[[c]]")) == "[3]"
    assert rw.numbering.extends(n)


def test_values_have_repr_equality_and_dicts() -> None:
    loc = citeflow.Locator(chapter_title="Down the Rabbit-Hole", cfi="epubcfi(/6/4!/4/2/1:0)")
    s = citeflow.Source("b1", title="Alice", locator=loc, metadata={"lang": "en"})
    assert s == citeflow.Source.from_dict(s.to_dict())
    assert s.to_dict() == {
        "id": "b1",
        "title": "Alice",
        "locator": {"chapter_title": "Down the Rabbit-Hole", "cfi": "epubcfi(/6/4!/4/2/1:0)"},
        "metadata": {"lang": "en"},
    }
    assert repr(s).startswith("Source('b1', title='Alice', locator=Locator(")
    assert s.locator == loc and s.metadata == {"lang": "en"}
    t = citeflow.TextEvent("it's")
    assert t == citeflow.TextEvent("it's") and t != citeflow.TextEvent("x")
    for raw in ["it's", "a'\"\n", "tab\there", "\x01\\"]:
        assert repr(citeflow.TextEvent(raw)) == "TextEvent(text=" + repr(raw) + ")"
    assert t.to_dict() == {"type": "text", "text": "it's"}
    assert t.__match_args__ == ("text",)
    with pytest.raises(TypeError):
        hash(t)


def test_feed_gives_the_same_events_for_str_subclasses_and_bytes() -> None:
    # `feed` has a fast path for exact `str` chunks; every other kind goes the general way.
    class Token(str):
        pass

    chunks = ["Paris ", "is [[sou", "rce_7]]", " 漢字", "."]
    kinds = [
        lambda c: c,
        lambda c: Token(c),
        lambda c: c.encode(),
        lambda c: bytearray(c.encode()),
    ]
    results = []
    for kind in kinds:
        rw = citeflow.Rewriter([PARIS])
        results.append([rw.feed(kind(c)) for c in chunks] + [rw.finish()])
    assert all(r == results[0] for r in results)
    assert [[e.type for e in evs] for evs in results[0][:-1]] == [
        ["text"], ["text"], ["source", "citation", "text"], ["text"], ["text"]
    ]
    for evs in results[1]:
        for e in evs:
            if e.type == "text":
                assert type(e.text) is str
    t = results[0][0][0]
    assert t == citeflow.TextEvent("Paris ") and t.text == "Paris "
    with pytest.raises(AttributeError):
        t.text = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        t.type = "x"  # type: ignore[misc]


def test_byte_offsets_are_utf8_bytes() -> None:
    rw = citeflow.Rewriter([PARIS])
    events = answer(rw, "漢字 [[source_7]]")
    cite = next(e for e in events if e.type == "citation")
    out = text_of(events)
    assert cite.byte_offset == len("漢字 ".encode()) == 7
    assert out.encode()[cite.byte_offset :].decode() == "[1]"


def test_source_list_rendering_and_prompt_helpers() -> None:
    rw = citeflow.Rewriter([PARIS, FRANCE])
    answer(rw, "[[source_3]]")
    assert rw.render_sources() == "[1] France <https://e.x/france>\n"
    assert rw.render_sources("text", all=True) == "[1] France <https://e.x/france>\n"
    assert json.loads(rw.render_sources("json"))[0]["number"] == 1
    with pytest.raises(citeflow.SettingsError, match='unknown list format "pdf"'):
        rw.render_sources("pdf")  # type: ignore[arg-type]
    s = citeflow.Session()
    s.append_round([citeflow.Source("source_3", title="Paris", text="Paris is\nthe capital.")])
    assert s.context_block() == "[[source_3]] Paris: Paris is the capital.\n"
    assert citeflow.context_block([FRANCE], "rank_full_width") == "【1】 France\n"
    assert "[[source_3]]" in s.citation_instruction()
    assert citeflow.prompt_settings("rank").rank == "renumber"


def test_sse_decoder_matches_the_core() -> None:
    dec = citeflow.SseDecoder()
    stream = b'data: {"a":1}\r\n\r\n: ping\n\nid: 7\nevent: x\ndata: l1\ndata: l2\n\ndata: [DONE]\n\n'
    for i in range(len(stream)):
        dec.write(stream[i : i + 1])
    dec.end()
    evs = dec.poll_events()
    assert [(e.id, e.event, e.data) for e in evs] == [(None, None, '{"a":1}'), ("7", "x", "l1\nl2"), (None, None, "[DONE]")]
    small = citeflow.SseDecoder(8)
    with pytest.raises(citeflow.SseError, match="sse line 3 is longer than 8 bytes"):
        small.write(b"data: 1\n\ndata: 123456789")
    assert citeflow.chunk_text('{"choices":[{"delta":{"content":"hi"}}]}') == "hi"
    assert citeflow.chunk_text('{"choices":[{"text":"t"}]}') == "t"
    assert citeflow.chunk_text("{}") is None


def test_many_rewriters_and_garbage_do_not_crash_the_interpreter() -> None:
    for i in range(200):
        rw = citeflow.Rewriter([PARIS])
        rw.feed(bytes(range(256)) * 2)
        rw.feed("[[source_7" * 50)
        rw.finish()
        del rw
    gc.collect()
    with pytest.raises(OverflowError):
        citeflow.Rewriter().feed_seq(-1, "x")


def test_source_label_is_the_number_the_model_was_shown() -> None:
    a = citeflow.Source("a", url="https://e.org/a", label=101)
    b = citeflow.Source("b", url="https://e.org/b", label=7)
    assert (a.label, citeflow.Source("c").label) == (101, None)
    assert a.to_dict()["label"] == 101
    out = citeflow.rewrite_str(
        "See 【7】 and [101].", [a, b], settings=citeflow.Settings(rank="renumber")
    )
    assert out.text == "See [1] and [2]."
    done = out.events[-1]
    assert isinstance(done, citeflow.DoneEvent)
    assert [s.to_dict()["source"]["id"] for s in done.sources] == ["b", "a"]
