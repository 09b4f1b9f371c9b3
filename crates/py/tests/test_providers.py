"""Provider streams through ``citeflow.ProviderStream`` and the SDK adapters: every recording in
``$CITEFLOW_SHARED_DIR/fixtures/streams/*.chunks.txt`` must give exactly the JSON events that
``citeflow render --input jsonl --output jsonl`` prints for the same file (scripts/test-python.sh
builds the CLI and sets ``CITEFLOW_CLI``), and the ``anthropic`` and ``openai`` SDKs' own event
objects must give the same numbered text and sources."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest

import citeflow
from citeflow import adapters
from conftest import streams_dir, text_of

RESPONSES_RECORDINGS = [
    "openai-web-search-tool.1",
    "openai-web-search-tool.2025-09",
    "openai-file-search-tool.1",
    "openai-file-search-tool.2",
    "azure-web-search-preview-tool.1",
    "xai-web-search-tool.1",
]
ANTHROPIC_RECORDINGS = ["anthropic-web-search-tool.1", "anthropic-web-search-citation-replay.1"]


def recordings() -> list[Path]:
    files = sorted(streams_dir().glob("*.chunks.txt"))
    assert len(files) >= 17, f"expected the 17 provider recordings in {streams_dir()}"
    return files


def cli_events(path: Path) -> list[dict[str, Any]]:
    cli = os.environ.get("CITEFLOW_CLI")
    if not cli:
        pytest.fail("CITEFLOW_CLI is not set (scripts/test-python.sh builds the CLI and sets it)")
    assert Path(cli).is_file(), f"no CLI at {cli}"
    out = subprocess.run(
        [cli, "render", "--input", "jsonl", "--output", "jsonl"],
        input=path.read_bytes(),
        capture_output=True,
        check=True,
    ).stdout
    return [json.loads(line) for line in out.decode("utf-8").splitlines() if line.strip()]


def run(feed: Callable[[citeflow.ProviderStream], list[citeflow.Event]]) -> list[dict[str, Any]]:
    ps = citeflow.ProviderStream()
    events = feed(ps) + ps.finish()
    assert ps.poll_event() is None
    return [e.to_dict() for e in events]


def payloads(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("path", recordings(), ids=lambda p: p.name)
def test_recording_gives_the_cli_events(path: Path) -> None:
    want = cli_events(path)
    assert want[-1]["type"] == "done"
    data = path.read_bytes()

    assert run(lambda ps: ps.feed_bytes(data)) == want, "whole file"

    def cut(ps: citeflow.ProviderStream) -> list[citeflow.Event]:
        return [e for i in range(0, len(data), 7) for e in ps.feed_bytes(data[i : i + 7])]

    assert run(cut) == want, "7-byte pieces (cut inside JSON and UTF-8)"

    def parsed(ps: citeflow.ProviderStream) -> list[citeflow.Event]:
        return [e for p in payloads(path) for e in ps.feed_event(p)]

    assert run(parsed) == want, "one dict per event"

    def json_text(ps: citeflow.ProviderStream) -> list[citeflow.Event]:
        return [e for p in payloads(path) for e in ps.feed_event(json.dumps(p))]

    assert run(json_text) == want, "one JSON text per event"


def numbered(events: list[citeflow.Event]) -> tuple[str, list[dict[str, Any]]]:
    """The final numbered text and the source list."""
    done = events[-1]
    assert isinstance(done, citeflow.DoneEvent)
    text = done.text if done.text is not None else text_of(events)
    return text, [s.to_dict() for s in done.sources]


def cli_numbered(path: Path) -> tuple[str, list[dict[str, Any]]]:
    want = cli_events(path)
    done = want[-1]
    text = done.get("text") or "".join(e["text"] for e in want if e["type"] == "text")
    return text, done["sources"]


@pytest.mark.parametrize("name", ANTHROPIC_RECORDINGS)
def test_anthropic_sdk_events_through_the_adapter_match_the_cli(name: str) -> None:
    import anthropic
    from anthropic.lib.streaming import TextEvent
    from pydantic import TypeAdapter

    path = streams_dir() / f"{name}.chunks.txt"
    adapter: TypeAdapter[anthropic.types.RawMessageStreamEvent] = TypeAdapter(anthropic.types.RawMessageStreamEvent)
    events: list[Any] = []
    snapshot = ""
    for p in payloads(path):
        if p["type"] == "ping":  # the SDK's stream never yields pings
            continue
        ev = adapter.validate_python(p)
        events.append(ev)
        if p["type"] == "content_block_delta" and p["delta"]["type"] == "text_delta":
            # What `client.messages.stream()` adds after each text delta: skipped by the adapter.
            snapshot += p["delta"]["text"]
            events.append(TextEvent(type="text", text=p["delta"]["text"], snapshot=snapshot))
    assert any(isinstance(e, anthropic.types.RawContentBlockDeltaEvent) for e in events)
    got = list(adapters.anthropic_stream(events))
    text, sources = numbered(got)
    assert (text, sources) == cli_numbered(path)
    assert "[1]" in text and sources
    assert all(
        c.provider is not None and c.provider.quote for c in got if isinstance(c, citeflow.CitationEvent)
    ), "Anthropic citations keep their cited_text"


@pytest.mark.parametrize("name", RESPONSES_RECORDINGS)
def test_openai_responses_sdk_events_through_the_adapter_match_the_cli(name: str) -> None:
    from openai._models import construct_type
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter, ValidationError

    path = streams_dir() / f"{name}.chunks.txt"
    adapter: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
    events: list[Any] = []
    validated = 0
    for p in payloads(path):
        try:
            events.append(adapter.validate_python(p))
            validated += 1
        except ValidationError:
            # Older recordings (web search calls without `action`) fail today's strict types; the
            # SDK's own stream builds its events without validation, as construct_type does.
            events.append(construct_type(type_=ResponseStreamEvent, value=p))
    assert validated >= len(events) - 11, f"{name}: only {validated} of {len(events)} events validated"
    got = list(adapters.openai_responses_stream(events))
    assert numbered(got) == cli_numbered(path)
    assert numbered(got)[1], f"{name}: no source numbered"


def test_adapters_use_the_stream_they_are_given() -> None:
    path = streams_dir() / "anthropic-web-search-tool.1.chunks.txt"
    ps = citeflow.ProviderStream(dialect="anthropic", style="fullwidth")
    got = list(adapters.anthropic_stream(payloads(path), ps))
    text, sources = numbered(got)
    assert "【1】" in text and "[1]" not in text
    assert len(ps.numbering) == len(sources) > 0 and ps.dialect == "anthropic"


def cohere(text: str, start: int, end: int, quote: str) -> list[dict[str, Any]]:
    return [
        {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": text}}}},
        {
            "type": "citation-start",
            "index": 0,
            "delta": {
                "message": {
                    "citations": {
                        "start": start,
                        "end": end,
                        "text": quote,
                        "sources": [{"type": "document", "id": "doc:0", "document": {"title": "Ciel"}}],
                    }
                }
            },
        },
    ]


def test_late_citation_offsets_slice_the_same_text_in_every_unit() -> None:
    ps = citeflow.ProviderStream()
    events = [e for p in cohere("Le ciel 😀 est bleu.", 14, 18, "bleu") for e in ps.feed_event(p)] + ps.finish()
    shown = text_of(events)
    assert shown == "Le ciel 😀 est bleu.", "late numbers never change shown text"
    cite = next(e for e in events if isinstance(e, citeflow.CitationEvent))
    detail = cite.provider
    assert detail is not None and detail.late and detail.quote == "bleu" and not detail.replaces_span
    span = detail.span
    assert span is not None
    assert shown[span.start.chars : span.end.chars] == "bleu"
    assert shown.encode()[span.start.bytes : span.end.bytes].decode() == "bleu"
    assert shown.encode("utf-16-le")[2 * span.start.utf16 : 2 * span.end.utf16].decode("utf-16-le") == "bleu"
    assert (cite.char_offset, cite.utf16_offset, cite.byte_offset) == (span.end.chars, span.end.utf16, span.end.bytes)
    done = events[-1]
    assert isinstance(done, citeflow.DoneEvent) and done.text == "Le ciel 😀 est bleu[1]."
    assert cite.to_dict()["provider"] == detail.to_dict() == {
        "quote": "bleu",
        "span": span.to_dict(),
        "late": True,
    }
    assert span == citeflow.Span(span.start, span.end) and hash(span.start) == hash(span.start)
    assert repr(detail).startswith("CitationDetail(quote='bleu', span=Span(start=Position(bytes=")


def test_provider_errors_name_the_line_and_fail_later_calls() -> None:
    ps = citeflow.ProviderStream()
    with pytest.raises(citeflow.ProviderError, match="line 1") as e:
        ps.feed_event({"hello": "world"})
    assert e.value.code == "unknown_dialect"  # type: ignore[attr-defined]
    assert isinstance(e.value, citeflow.CiteflowError)
    with pytest.raises(citeflow.RewriteError) as later:
        ps.feed_event({"hello": "again"})
    assert later.value.code == "failed"  # type: ignore[attr-defined]

    bad = citeflow.ProviderStream()
    with pytest.raises(citeflow.ProviderError) as e:
        bad.feed_bytes(b'{"type":"content-delta"\n')
    assert e.value.code == "invalid_json"  # type: ignore[attr-defined]

    shape = citeflow.ProviderStream(dialect="cohere")
    with pytest.raises(citeflow.ProviderError) as e:
        shape.feed_event('{"type": "content-delta", "delta": {"message": {"content": {"text": 3}}}}')
    assert e.value.code == "unexpected_shape"  # type: ignore[attr-defined]

    with pytest.raises(citeflow.SettingsError):
        citeflow.ProviderStream(dialect="claude")
    with pytest.raises(citeflow.SettingsError):
        citeflow.ProviderStream(framing="xml")
    with pytest.raises(TypeError):
        citeflow.ProviderStream().feed_event(42)


def test_json_text_events_read_like_dicts_and_bad_text_fails_only_its_call() -> None:
    """An event given as JSON text (str or bytes) is read by the dialect from its text: the
    same events as its dict; text that is not JSON is an error of that call alone."""
    path = streams_dir() / "anthropic-web-search-tool.1.chunks.txt"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("{")]

    def run(feed: Callable[[str], Any]) -> list[dict[str, Any]]:
        ps = citeflow.ProviderStream()
        events: list[Any] = []
        for i, line in enumerate(lines):
            if i == 3:
                with pytest.raises(citeflow.ProviderError, match="line 4") as e:
                    ps.feed_event('{"type": "content_block_delta",')
                assert e.value.code == "invalid_json"  # type: ignore[attr-defined]
            events += feed_into(ps, feed(line))
        events += ps.finish()
        return [e.to_dict() for e in events]

    def feed_into(ps: citeflow.ProviderStream, event: Any) -> list[Any]:
        return list(ps.feed_event(event))

    as_dicts = run(json.loads)
    assert run(lambda line: line) == as_dicts
    assert run(lambda line: line.encode("utf-8")) == as_dicts
    assert any(e["type"] == "citation" for e in as_dicts)


def test_text_framing_and_iteration_poll_like_the_rewriter() -> None:
    ps = citeflow.ProviderStream([{"id": "source_1", "title": "One"}], framing="text")
    events = ps.feed_bytes("A fact [[source_1]].")
    ps.end()
    events += list(ps)
    assert [e.type for e in events] == ["text", "source", "citation", "text", "done"]
    assert text_of(events) == "A fact [1]."
    cite = events[2]
    assert isinstance(cite, citeflow.CitationEvent) and cite.provider is None
    assert len(ps.numbering) == 1 and len(ps.sources) == 1 and ps.dialect is None


def langchain_chunks_of_anthropic(path: Path) -> list[Any]:
    """The recorded Anthropic stream as the message chunks a LangChain Anthropic chat model
    streams: each text delta and each citation in a text block of its index, the provider named
    in ``response_metadata`` so that LangChain's own translator makes the standard blocks."""
    from langchain_core.messages import AIMessageChunk

    meta = {"model_provider": "anthropic"}
    chunks: list[Any] = []
    for p in payloads(path):
        if p["type"] != "content_block_delta":
            continue
        i, d = p["index"], p["delta"]
        if d["type"] == "text_delta":
            block = {"type": "text", "text": d["text"], "index": i}
        elif d["type"] == "citations_delta":
            block = {"type": "text", "text": "", "index": i, "citations": [d["citation"]]}
        else:
            continue
        chunks.append(AIMessageChunk(content=[block], response_metadata=meta))
    return chunks


@pytest.mark.parametrize("name", ANTHROPIC_RECORDINGS)
def test_langchain_citations_are_numbered_not_dropped(name: str) -> None:
    path = streams_dir() / f"{name}.chunks.txt"
    chunks = langchain_chunks_of_anthropic(path)
    assert any(c.content_blocks[0].get("annotations") for c in chunks), "LangChain gave no citation"
    got = list(adapters.langchain_citations_stream(chunks))
    text, sources = numbered(got)
    # The same answer as the anthropic SDK's events give: each number at its block's end.
    want_text, want_sources = cli_numbered(path)
    assert text == want_text
    assert sources == want_sources
    assert "[1]" in text and sources
    # The plain adapter drops them: the same words, no numbers.
    plain = list(adapters.langchain_stream(chunks, citeflow.Rewriter()))
    assert text_of(plain) == re.sub(r"\[\d+\]", "", text)


def test_langchain_citations_with_spans_and_documents() -> None:
    from langchain_core.messages import AIMessageChunk

    chunks = [
        AIMessageChunk(content=[{"type": "text", "text": "Paris is the capital", "index": "a"}]),
        AIMessageChunk(content=[{"type": "text", "text": " of France. 東京は首都。", "index": "a"}]),
        AIMessageChunk(
            content=[
                {
                    "type": "text",
                    "text": "",
                    "index": "a",
                    "annotations": [
                        # A span in characters of the block's text: "the capital of France".
                        {"type": "citation", "url": "https://e.org/paris", "title": "Paris",
                         "start_index": 9, "end_index": 30},
                        # A document without url, named by its title.
                        {"type": "citation", "title": "Atlas", "cited_text": "東京"},
                    ],
                }
            ]
        ),
    ]
    got = list(adapters.langchain_citations_stream(chunks))
    text, sources = numbered(got)
    assert text == "Paris is the capital of France[1]. 東京は首都。[2]"
    assert [(s["number"], s["source"].get("url"), s["source"].get("title")) for s in sources] == [
        (1, "https://e.org/paris", "Paris"),
        (2, None, "Atlas"),
    ]
