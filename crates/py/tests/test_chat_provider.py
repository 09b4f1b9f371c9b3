"""Chat chunks and agent messages read through the core's ``ProviderStream`` (issue 37): the
OpenAI adapters number ``url_citation`` annotations and Perplexity's ``citations`` with the
markers; ``Rewriter.provider_stream`` and ``Session.provider_stream`` continue an answer's or a
session's numbering; ``citeflow.langchain.messages_stream`` numbers provider citations in an
agent's content blocks in the session's table."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessageChunk, ToolMessage
from openai.types.chat import ChatCompletionChunk

import citeflow
from citeflow import adapters
from citeflow.langchain import messages_stream
from conftest import streams_dir, text_of


def chunk(delta: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
        **top,
    }


def responses_as_chat(name: str) -> list[dict[str, Any]]:
    """A recorded Responses stream as the Chat Completions chunks of the same answer: its text
    deltas as ``delta.content``, its ``url_citation`` annotations as ``delta.annotations``."""
    out = [chunk({"role": "assistant", "content": ""})]
    for line in (streams_dir() / name).read_text(encoding="utf-8").splitlines():
        v = json.loads(line)
        if v["type"] == "response.output_text.delta":
            out.append(chunk({"content": v["delta"]}))
        elif v["type"] == "response.output_text.annotation.added":
            a = dict(v["annotation"])
            kind = a.pop("type")
            out.append(chunk({"annotations": [{"type": kind, "url_citation": a}]}))
    return out


def numbered(events: list[citeflow.Event]) -> tuple[str, list[tuple[int, Any]]]:
    done = events[-1]
    assert isinstance(done, citeflow.DoneEvent)
    text = done.text if done.text is not None else text_of(events)
    return text, [(s.number, s.source.url) for s in done.sources]


def test_openai_stream_numbers_url_citations_as_the_responses_reader_does() -> None:
    name = "openai-web-search-tool.1.chunks.txt"
    chat = [ChatCompletionChunk.model_validate(c) for c in responses_as_chat(name)]
    rw = citeflow.Rewriter([citeflow.Source("doc1", title="Mine")])
    got = list(adapters.openai_stream(iter(chat), rw))
    text, listed = numbered(got)
    # The same answer as the Responses events of the recording give.
    ps = citeflow.ProviderStream()
    want = ps.feed_bytes((streams_dir() / name).read_bytes()) + ps.finish()
    assert (text, listed) == numbered(want)
    assert len(listed) == 7 and all(url.startswith("https://") for _, url in listed)
    assert "[7]" in text and "](https://" not in text
    # The rewriter holds the final state: its table has the 7 numbers.
    assert [(s.number, s.source.url) for s in rw.listed_sources()] == listed
    assert len(rw.numbering.entries()) == 7 and rw.is_ended()


def test_openai_stream_reads_perplexity_citations_after_the_callers_sources() -> None:
    lines = (streams_dir() / "perplexity-text.chunks.txt").read_text(encoding="utf-8").splitlines()
    citations = json.loads(lines[0])["citations"]
    # Perplexity cites by rank: the caller's rewriter reads `[n]` as ranks (a new
    # `ProviderStream` turns that on by itself when Perplexity lists sources first).
    mine = [citeflow.Source("book_1", title="A book"), citeflow.Source("book_2")]
    rw = citeflow.Rewriter(mine, settings=citeflow.Settings(rank="renumber"))
    got = list(adapters.openai_stream([json.loads(line) for line in lines], rw))
    text, listed = numbered(got)
    # `[1][5]` name Perplexity's 1st and 5th urls, not the caller's sources.
    assert text.startswith("**EcoVista Day**[1][2]"), text
    assert listed == [(1, citations[0]), (2, citations[4])]


def test_rewriter_provider_stream_continues_a_session_answer() -> None:
    session = citeflow.Session(scope="session")
    session.append_round([citeflow.Source("seine", title="Seine")], query="q")
    first = session.rewriter()
    assert text_of(first.feed("The river [[seine]].") + first.finish()) == "The river [1]."
    # The next answer: a marker and a provider citation, numbered after the session's 1.
    rw = session.rewriter()
    ps = rw.provider_stream(dialect="openai-chat")
    events = ps.feed_event(chunk({"content": "Again [[seine]], and news."}))
    events += ps.feed_event(
        chunk({"annotations": [{"type": "url_citation", "url_citation": {
            "url": "https://news.example/", "title": "News", "start_index": 21, "end_index": 25}}]})
    )
    events += ps.finish()
    text, listed = numbered(events)
    assert text == "Again [1], and news[2]."
    assert listed == [(1, None), (2, "https://news.example/")]
    assert [e.source_id for e in session.numbering.entries()] == ["seine", "https://news.example/"]
    assert len(rw.numbering.entries()) == 2 and rw.is_ended()


def test_session_provider_stream_extends_the_session_numbering() -> None:
    session = citeflow.Session(scope="session")
    ps = session.provider_stream(dialect="openai-chat")
    events = ps.feed_event(chunk({"content": "Hello[1]."}, citations=["https://a.example/"]))
    events += ps.finish()
    text, listed = numbered(events)
    assert (text, listed) == ("Hello[1].", [(1, "https://a.example/")])
    assert len(session.numbering.entries()) == 1
    # In answer scope each answer starts at 1 and the session keeps no numbers.
    answer = citeflow.Session()
    ps = answer.provider_stream(dialect="openai-chat")
    ps.feed_event(chunk({"content": "Hi[1]."}, citations=["https://b.example/"]))
    assert numbered(ps.poll_events() + ps.finish())[1] == [(1, "https://b.example/")]
    assert answer.numbering.is_empty()


def test_messages_stream_numbers_provider_citations_in_agent_content_blocks() -> None:
    # An agent turn: a search round, then an answer whose content blocks carry a marker and
    # LangChain's standard citation annotations (as LangChain translates them from the provider).
    tool = ToolMessage(
        content="[[seine]] The Seine.",
        tool_call_id="call_1",
        name="search",
        artifact=[{"id": "seine", "title": "Seine", "url": "https://example.org/seine"}],
    )
    blocks = [
        [{"type": "text", "text": "The Seine flows through Paris [[sei", "index": 0}],
        [{"type": "text", "text": "ne]]. The Louvre is a museum.", "index": 0}],
        [
            {
                "type": "text",
                "text": "",
                "index": 0,
                "annotations": [
                    {"type": "citation", "url": "https://example.org/louvre", "title": "Louvre",
                     "start_index": 41, "end_index": 63},
                ],
            }
        ],
        [{"type": "text", "text": " It is big [[seine]].", "index": 0}],
    ]
    stream = [(tool, {})] + [(AIMessageChunk(content=b), {}) for b in blocks]  # type: ignore[arg-type]
    session = citeflow.Session(scope="session")
    events = list(messages_stream(stream, session))
    text, listed = numbered(events)
    assert text == "The Seine flows through Paris [1]. The Louvre is a museum[2]. It is big [1]."
    assert listed == [(1, "https://example.org/seine"), (2, "https://example.org/louvre")]
    assert [e.source_id for e in session.numbering.entries()] == ["seine", "https://example.org/louvre"]
    # Without citations in the blocks the answer is read as text, as before.
    plain = list(messages_stream([(tool, {}), (AIMessageChunk(content="Yes [[seine]]."), {})]))
    assert text_of(plain) == "Yes [1]."
