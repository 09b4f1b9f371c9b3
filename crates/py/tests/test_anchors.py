"""Claim anchors (issue 43) through the binding: ``Settings(anchors=True)`` gives an
``AnchorEvent`` per citation as soon as the answer's sentence that holds it closes, quoting the
sentence of the cited source that supports it, with offsets that slice the source's ``str``;
English and Japanese claims; verdicts; chunk invariance; the done list; provider quotes
(Anthropic ``cited_text``) the same as the CLI's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import citeflow
from citeflow import adapters
from conftest import streams_dir, text_of

EIFFEL = citeflow.Source(
    "source_1",
    title="Eiffel Tower",
    text=(
        "The Eiffel Tower was completed in 1889. It was built for the World's Fair in Paris. "
        "Gustave Eiffel's company designed and built the tower. Today it is the most visited "
        "paid monument in the world."
    ),
)
FUJI = citeflow.Source(
    "source_2",
    title="日本",
    text="東京は日本の首都です。富士山は日本で一番高い山です。富士山の高さは3776メートルです。京都には多くの寺があります。",
)
ANCHORS = citeflow.Settings(anchors=True)


def stream(chunks: list[str], settings: citeflow.Settings = ANCHORS) -> list[citeflow.Event]:
    rw = citeflow.Rewriter([EIFFEL, FUJI], settings=settings)
    out: list[citeflow.Event] = []
    for c in chunks:
        out += rw.feed(c)
    return out + rw.finish()


def anchors_of(events: list[citeflow.Event]) -> list[citeflow.AnchorEvent]:
    return [e for e in events if isinstance(e, citeflow.AnchorEvent)]


def only_anchor(answer: str) -> tuple[str, citeflow.AnchorEvent]:
    events = stream([answer])
    (a,) = anchors_of(events)
    return text_of(events), a


def source_text(a: citeflow.AnchorEvent) -> str:
    text = {"source_1": EIFFEL.text, "source_2": FUJI.text}[a.source_id]
    assert text is not None
    return text


def assert_quotes_its_source(a: citeflow.AnchorEvent) -> citeflow.Quote:
    """The quote's offsets slice the source's text in all three units."""
    q = a.quote
    assert q is not None
    text = source_text(a)
    assert q.char_start is not None and q.char_end is not None
    assert text[q.char_start : q.char_end] == q.text
    assert q.byte_start is not None and q.byte_end is not None
    assert text.encode("utf-8")[q.byte_start : q.byte_end].decode("utf-8") == q.text
    assert q.utf16_start is not None and q.utf16_end is not None
    units = text.encode("utf-16-le")
    assert units[2 * q.utf16_start : 2 * q.utf16_end].decode("utf-16-le") == q.text
    assert q.range is not None and (q.range.char_start, q.range.char_end) == (q.char_start, q.char_end)
    return q


def test_english_paraphrase_anchors_to_exactly_the_sentence_that_says_it() -> None:
    text, a = only_anchor("The company of Gustave Eiffel designed the tower [[source_1]].")
    assert text == "The company of Gustave Eiffel designed the tower [1]."
    assert (a.type, a.number, a.source_id) == ("anchor", 1, "source_1")
    # The claim is the answer's sentence, number included, as a `str` slice of the answer.
    assert text[a.claim.char_start : a.claim.char_end] == text
    assert (a.claim.byte_start, a.claim.byte_end, a.claim.utf16_end) == (0, len(text), len(text))
    q = assert_quotes_its_source(a)
    assert q.text == "Gustave Eiffel's company designed and built the tower."
    assert (q.char_start, q.char_end) == (84, 138)
    assert (q.origin, q.cfi, q.truncated) == ("source", None, False)
    assert a.verdict == "supported" and a.support >= 0.5
    # The core's JSON form, with the support in thousandths exactly.
    d = a.to_dict()
    assert d["type"] == "anchor" and d["number"] == 1 and d["source_id"] == "source_1"
    assert d["quote"] == {
        "text": q.text,
        "byte_start": 84,
        "byte_end": 138,
        "char_start": 84,
        "char_end": 138,
        "utf16_start": 84,
        "utf16_end": 138,
        "origin": "source",
    }
    assert d["support"] == a.support and round(a.support, 3) == a.support
    assert d["verdict"] == "supported"
    assert d["claim"] == a.claim.to_dict() == {
        "byte_start": 0,
        "byte_end": len(text),
        "char_start": 0,
        "char_end": len(text),
        "utf16_start": 0,
        "utf16_end": len(text),
    }


def test_japanese_paraphrase_anchors_to_exactly_the_sentence_that_says_it() -> None:
    text, a = only_anchor("富士山の高さは3776メートルある[[source_2]]。")
    assert text == "富士山の高さは3776メートルある[1]。"
    assert (a.number, a.source_id) == (1, "source_2")
    assert text[a.claim.char_start : a.claim.char_end] == text
    # Code points, UTF-8 bytes and UTF-16 units differ for Japanese: each is its own unit.
    assert a.claim.byte_end == len(text.encode("utf-8")) != a.claim.char_end
    q = assert_quotes_its_source(a)
    assert q.text == "富士山の高さは3776メートルです。"
    assert (q.char_start, q.char_end) == (26, 44)
    assert q.byte_start == len("東京は日本の首都です。富士山は日本で一番高い山です。".encode("utf-8"))
    assert a.verdict == "supported"

    _, b = only_anchor("富士山は日本で一番高い山だ[[source_2]]。")
    assert assert_quotes_its_source(b).text == "富士山は日本で一番高い山です。"
    assert b.verdict == "supported"


def test_verdicts_follow_the_documented_thresholds() -> None:
    # A claim the source does not make: a sentence sharing a word is found, but not supported.
    _, olympics = only_anchor("The tower was built for the Olympic Games in London [[source_1]].")
    assert_quotes_its_source(olympics)
    assert olympics.verdict == "unsupported" and olympics.support < 0.25
    # Nothing in the source shares a word with the claim: no quote, support 0.
    _, unrelated = only_anchor("大阪はたこ焼きで有名だ[[source_2]]。")
    assert unrelated.quote is None
    assert (unrelated.support, unrelated.verdict) == (0.0, "unsupported")
    assert unrelated.to_dict()["quote"] is None
    # Half of the claim said (the year, not the gold paint): weak.
    _, part = only_anchor("The Eiffel Tower was completed in 1889 and painted gold by the mayor of London [[source_1]].")
    assert assert_quotes_its_source(part).text == "The Eiffel Tower was completed in 1889."
    assert part.verdict == "weak" and 0.25 <= part.support < 0.5
    # A year the source contradicts scores lower than the year it says.
    _, right_year = only_anchor("The Eiffel Tower was completed in 1889 [[source_1]].")
    _, wrong_year = only_anchor("The Eiffel Tower was completed in 1925 [[source_1]].")
    assert assert_quotes_its_source(wrong_year).text == "The Eiffel Tower was completed in 1889."
    assert right_year.verdict == "supported" and wrong_year.support < right_year.support
    for a in (olympics, unrelated, part, right_year, wrong_year):
        want = "supported" if a.support >= 0.5 else "weak" if a.support >= 0.25 else "unsupported"
        assert a.verdict == want


def test_anchor_arrives_as_soon_as_its_sentence_closes() -> None:
    rw = citeflow.Rewriter([EIFFEL, FUJI], settings=ANCHORS)
    first = rw.feed("The Eiffel Tower was completed in 1889 [[source_1]]")
    assert [e.type for e in first].count("citation") == 1 and not anchors_of(first)
    # The sentence closes mid-stream: its anchor comes with that chunk, long before the end.
    second = rw.feed(". Today it is the most visited paid monument in the world")
    (a,) = anchors_of(second)
    assert a.quote is not None and a.quote.text == "The Eiffel Tower was completed in 1889."
    shown = text_of(first + second)
    assert shown[a.claim.char_start : a.claim.char_end] == "The Eiffel Tower was completed in 1889 [1]."
    third = rw.feed(" [[source_1]]. 富士山は日本で一番高い山だ[[source_2]]")
    (b,) = anchors_of(third)
    assert b.quote is not None and b.quote.text.startswith("Today it is the most visited")
    end = rw.finish()
    # The last sentence has no end punctuation: the answer's end closes it.
    (c,) = anchors_of(end)
    assert (c.number, c.source_id, c.verdict) == (2, "source_2", "supported")
    assert isinstance(end[-1], citeflow.DoneEvent)
    assert [e.type for e in end].index("anchor") < len(end) - 1


def test_anchors_are_the_same_under_every_chunking() -> None:
    answer = (
        "In 1889 the Eiffel Tower was completed [[source_1]]. 富士山の高さは3776メートルある"
        "[[source_2]]。The tower was built for the World's Fair [[source_1]][[source_2]]!"
    )
    whole = [a.to_dict() for a in anchors_of(stream([answer]))]
    assert [(d["number"], d["verdict"]) for d in whole] == [(1, "supported"), (2, "supported"), (1, "supported"), (2, "unsupported")]
    # Two markers closing one sentence share its claim.
    assert whole[2]["claim"] == whole[3]["claim"]
    assert [a.to_dict() for a in anchors_of(stream(list(answer)))] == whole
    for cut in range(1, len(answer), 5):
        assert [a.to_dict() for a in anchors_of(stream([answer[:cut], answer[cut:]]))] == whole, cut


def test_done_list_carries_each_sources_anchors() -> None:
    events = stream(["In 1889 the Eiffel Tower was completed [[source_1]]. Kyoto has many temples [[source_2]]. 京都には寺がたくさんある[[source_2]]。"])
    done = events[-1]
    assert isinstance(done, citeflow.DoneEvent)
    streamed = anchors_of(events)
    by_source = {s.source.id: s.anchors for s in done.sources}
    assert by_source["source_1"] == [streamed[0]]
    assert by_source["source_2"] == streamed[1:]
    assert [a.quote.text if a.quote else None for a in by_source["source_2"]] == [None, "京都には多くの寺があります。"]
    # The list's JSON form holds the anchors without the event's "type".
    assert done.sources[1].to_dict()["anchors"] == [
        {k: v for k, v in a.to_dict().items() if k != "type"} for a in streamed[1:]
    ]
    # Without anchors: no events and empty lists.
    plain = stream(["In 1889 the Eiffel Tower was completed [[source_1]]."], citeflow.Settings())
    assert not anchors_of(plain)
    plain_done = plain[-1]
    assert isinstance(plain_done, citeflow.DoneEvent)
    assert plain_done.sources[0].anchors == [] and "anchors" not in plain_done.sources[0].to_dict()


def test_settings_keywords_everywhere_settings_are_built() -> None:
    s = citeflow.Settings(anchors=True, max_anchor_source_bytes=4096)
    assert (s.anchors, s.max_anchor_source_bytes) == (True, 4096)
    assert citeflow.Settings().anchors is False
    assert citeflow.Settings().max_anchor_source_bytes == 1 << 20
    assert json.loads(s.to_json())["anchors"] is True
    assert citeflow.Settings.from_json(s.to_json()) == s
    assert s.replace(anchors=False).anchors is False
    assert "anchors=True" in repr(s)
    with pytest.raises(citeflow.SettingsError) as e:
        citeflow.Settings(max_anchor_source_bytes=10)
    assert e.value.code == "anchor_source_cap" and "10" in str(e.value)

    session = citeflow.Session(anchors=True)
    session.append_round([EIFFEL])
    rw = session.rewriter()
    (a,) = anchors_of(rw.feed("In 1889 the Eiffel Tower was completed [[source_1]]. ") + rw.finish())
    assert a.quote is not None and a.quote.text == "The Eiffel Tower was completed in 1889."

    ps = citeflow.ProviderStream([EIFFEL], framing="text", anchors=True)
    (p,) = anchors_of(ps.feed_bytes("In 1889 the Eiffel Tower was completed [[source_1]].".encode()) + ps.finish())
    assert p == a


def test_truncated_source_is_anchored_over_its_first_part_and_says_so() -> None:
    filler = "Filler sentence number one about nothing. " * 40  # > 1024 bytes
    long = citeflow.Source("source_9", text=filler + "The Eiffel Tower was completed in 1889.")
    rw = citeflow.Rewriter([long], settings=citeflow.Settings(anchors=True, max_anchor_source_bytes=1024))
    (a,) = anchors_of(rw.feed("The Eiffel Tower was completed in 1889 [[source_9]].") + rw.finish())
    assert a.verdict != "supported"
    if a.quote is not None:
        assert a.quote.truncated and a.quote.char_end is not None and a.quote.char_end <= 1024
    rw = citeflow.Rewriter([long], settings=ANCHORS)
    (b,) = anchors_of(rw.feed("The Eiffel Tower was completed in 1889 [[source_9]].") + rw.finish())
    assert b.quote is not None and b.quote.text == "The Eiffel Tower was completed in 1889." and not b.quote.truncated


def test_provider_quotes_are_kept_and_match_the_cli() -> None:
    """Anthropic ``cited_text``: the provider's quote, scored, equal to ``citeflow render --anchors``."""
    path: Path = streams_dir() / "anthropic-web-search-tool.1.chunks.txt"
    cli = os.environ.get("CITEFLOW_CLI")
    if not cli:
        pytest.fail("CITEFLOW_CLI is not set (scripts/test-python.sh builds the CLI and sets it)")
    out = subprocess.run(
        [cli, "render", "--input", "jsonl", "--output", "jsonl", "--anchors"],
        input=path.read_bytes(),
        capture_output=True,
        check=True,
    ).stdout
    want: list[dict[str, Any]] = [json.loads(line) for line in out.decode("utf-8").splitlines() if line.strip()]
    ps = citeflow.ProviderStream(anchors=True)
    got = ps.feed_bytes(path.read_bytes()) + ps.finish()
    assert [e.to_dict() for e in got] == want
    anchors = anchors_of(got)
    assert anchors, "every Anthropic citation gets an anchor"
    quotes = {e.provider.quote for e in got if isinstance(e, citeflow.CitationEvent) and e.provider}
    for a in anchors:
        assert a.quote is not None and a.quote.origin == "provider"
        assert a.quote.text in quotes
        assert 0.0 <= a.support <= 1.0

    # The SDK adapter with a provider stream that anchors gives the same events.
    payloads = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    through = list(adapters.anthropic_stream(payloads, citeflow.ProviderStream(dialect="anthropic", anchors=True)))
    assert [e.to_dict() for e in through] == want


def test_rewrite_stream_adapter_passes_anchors_through() -> None:
    rw = citeflow.Rewriter([EIFFEL], settings=ANCHORS)
    events = list(adapters.rewrite_stream(["In 1889 the Eiffel ", "Tower was completed [[source_1]]", "."], rw))
    (a,) = anchors_of(events)
    assert a.quote is not None and a.quote.text == "The Eiffel Tower was completed in 1889."
    assert isinstance(events[-1], citeflow.DoneEvent) and events[-1].sources[0].anchors == [a]
