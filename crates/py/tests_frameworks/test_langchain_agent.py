"""citeflow.langchain with a real ``create_agent`` whose ``ChatOpenAI`` talks to the replaying
upstream over HTTP: the scripted agent model searches twice, then cites the markers it was
shown."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from citeflow import (
    AnchorEvent,
    CitationEvent,
    DoneEvent,
    Rewriter,
    Session,
    Settings,
    Source,
    SourceEvent,
    TextEvent,
    render_list,
)
from citeflow.langchain import (
    CITEFLOW_KEY,
    NUMBERING_KEY,
    CiteflowMiddleware,
    CiteflowTransformer,
    amessages_stream,
    messages_stream,
    session_from_state,
)

from conftest import PAGES, hits


@tool(response_format="content_and_artifact")
def search_web(query: str) -> tuple[str, list[dict[str, Any]]]:
    """Search the web about Paris."""
    found = hits(query)
    return "\n".join(h["text"] for h in found), found


def agent(url: str, model: str, style: str = "brackets") -> Any:
    llm = ChatOpenAI(base_url=url, api_key="test", model=model, streaming=True, max_retries=0)
    return create_agent(
        llm, tools=[search_web], middleware=[CiteflowMiddleware(style=style)], checkpointer=InMemorySaver()
    )


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def run(graph: Any, thread: str, question: str, style: str = "brackets") -> tuple[list[Any], Session]:
    session = session_from_state(graph.get_state(config(thread)).values, style=style)
    stream = graph.stream({"messages": [("user", question)]}, config(thread), stream_mode="messages")
    return list(messages_stream(stream, session)), session


def text_of(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextEvent))


def test_agent_rounds_share_one_numbering_and_a_second_turn_continues_it(replay_url: str) -> None:
    graph = agent(replay_url, "agent-search-turns")
    events, session = run(graph, "t1", "Tell me about Paris")
    text = text_of(events)
    assert text == (
        "The Seine flows through the heart of Paris [1], and its banks are lined with landmarks [2]. "
        "The city's museums hold vast collections [2], and they draw visitors from everywhere [3]."
    )
    # Streamed: many text events, and each number's source comes before the text showing it.
    assert sum(isinstance(e, TextEvent) for e in events) > 10
    new = [(e.number, e.source.id, e.round) for e in events if isinstance(e, SourceEvent) and e.is_new]
    assert new == [(1, "seine", 1), (2, "louvre", 1), (3, "orsay", 2)]
    assert [e.number for e in events if isinstance(e, CitationEvent)] == [1, 2, 2, 3]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.report.verified
    assert [r.query for r in session.rounds()] == ["Seine river Paris", "Paris museums"]
    listed = render_list(done.sources, "markdown", session.rounds())
    assert re.sub(r"\s+", " ", listed).strip() == (
        "**Round 1: Seine river Paris** 1. [Seine](https://example.org/seine) "
        "2. [Louvre](https://example.org/louvre) **Round 2: Paris museums** "
        "3. [Musée d'Orsay](https://example.org/orsay)"
    )
    # The model read each passage under its marker.
    state = graph.get_state(config("t1")).values
    tool_contents = [m.content for m in state["messages"] if m.type == "tool"]
    assert tool_contents[0].startswith("[[seine]] Seine: The Seine flows through Paris.")
    # The agent state keeps the numbers the stream showed.
    assert state[NUMBERING_KEY] == session.numbering.to_json()

    # Second turn on the same thread (the checkpointer): numbers continue, old ones stay.
    events2, session2 = run(graph, "t1", "What else should I see?")
    assert text_of(events2) == (
        "The Seine flows through the heart of Paris [4], and its banks are lined with landmarks [1]. "
        "The city's museums hold vast collections [5], and they draw visitors from everywhere [6]."
    )
    new2 = [(e.number, e.source.id, e.round) for e in events2 if isinstance(e, SourceEvent) and e.is_new]
    assert new2 == [(4, "eiffel", 3), (5, "bridges", 1), (6, "pont-neuf", 4)]
    assert [r.query for r in session2.rounds()] == [
        "Seine river Paris",
        "Paris museums",
        "Eiffel Tower",
        "Paris bridges",
    ]
    assert graph.get_state(config("t1")).values[NUMBERING_KEY] == session2.numbering.to_json()


@pytest.mark.filterwarnings("ignore:The v3 streaming protocol:langchain_core._api.beta_decorator.LangChainBetaWarning")
def test_sync_async_and_transformer_streams_give_identical_events(replay_url: str) -> None:
    graph = agent(replay_url, "agent-search")
    sync_events, _ = run(graph, "s", "Tell me about Paris")

    async def collect_async() -> list[Any]:
        stream = graph.astream({"messages": [("user", "Tell me about Paris")]}, config("a"), stream_mode="messages")
        return [e async for e in amessages_stream(stream, Session(scope="session"))]

    async_events = asyncio.run(collect_async())
    run_v3 = graph.stream_events(
        {"messages": [("user", "Tell me about Paris")]},
        config("v3"),
        version="v3",
        transformers=[lambda scope: CiteflowTransformer(scope)],
    )
    transformer_events = list(run_v3.extensions["citeflow"])
    # The middleware can register the transformer itself (AgentMiddleware.transformers).
    llm = ChatOpenAI(base_url=replay_url, api_key="test", model="agent-search", streaming=True, max_retries=0)
    registered = create_agent(
        llm, tools=[search_web], middleware=[CiteflowMiddleware(transformer=True)], checkpointer=InMemorySaver()
    )
    run_mw = registered.stream_events({"messages": [("user", "Tell me about Paris")]}, config("mw"), version="v3")
    middleware_events = list(run_mw.extensions["citeflow"])
    expected = [e.to_dict() for e in sync_events]
    assert [e.to_dict() for e in async_events] == expected
    assert [e.to_dict() for e in transformer_events] == expected
    assert [e.to_dict() for e in middleware_events] == expected
    assert "[3]" in text_of(sync_events)


def test_agent_through_citeflow_serve_with_markers_passed_through(citeflow_serve: str) -> None:
    # `citeflow serve` as the agent's upstream (the example's default): tool calls pass through,
    # and `render: client` leaves the markers to the middleware and the stream adapter.
    llm = ChatOpenAI(
        base_url=citeflow_serve, api_key="test", model="agent-search", streaming=True, max_retries=0,
        extra_body={"citeflow": {"render": "client"}},
    )
    graph = create_agent(llm, tools=[search_web], middleware=[CiteflowMiddleware()], checkpointer=InMemorySaver())
    events, session = run(graph, "serve", "Tell me about Paris")
    assert text_of(events) == (
        "The Seine flows through the heart of Paris [1], and its banks are lined with landmarks [2]. "
        "The city's museums hold vast collections [2], and they draw visitors from everywhere [3]."
    )
    assert [r.query for r in session.rounds()] == ["Seine river Paris", "Paris museums"]


def test_japanese_agent_full_width_numbers(replay_url: str) -> None:
    graph = agent(replay_url, "agent-search-ja", style="full_width")
    events, session = run(graph, "ja", "パリについて教えて", style="full_width")
    assert text_of(events) == (
        "セーヌ川はパリの中心を流れています【1】。岸辺には名所が並びます【2】。"
        "パリの美術館は膨大な収蔵品を持ちます【2】。世界中から人が訪れます【3】。"
    )
    assert [r.query for r in session.rounds()] == ["セーヌ川 パリ", "パリ 美術館"]


@pytest.mark.filterwarnings("ignore:The v3 streaming protocol:langchain_core._api.beta_decorator.LangChainBetaWarning")
def test_agent_anchors_quote_the_sentences_of_the_tools_documents(replay_url: str) -> None:
    llm = ChatOpenAI(base_url=replay_url, api_key="test", model="agent-search", streaming=True, max_retries=0)
    graph = create_agent(
        llm, tools=[search_web], middleware=[CiteflowMiddleware(anchors=True)], checkpointer=InMemorySaver()
    )
    session = session_from_state(graph.get_state(config("anchors")).values, anchors=True)
    assert session.settings.anchors
    stream = graph.stream({"messages": [("user", "Tell me about Paris")]}, config("anchors"), stream_mode="messages")
    events = list(messages_stream(stream, session))
    text = text_of(events)
    first = "The Seine flows through the heart of Paris [1], and its banks are lined with landmarks [2]."
    second = "The city's museums hold vast collections [2], and they draw visitors from everywhere [3]."
    assert text == f"{first} {second}"  # the same answer as without anchors
    anchors = [e for e in events if isinstance(e, AnchorEvent)]
    assert [(a.number, a.source_id) for a in anchors] == [(1, "seine"), (2, "louvre"), (2, "louvre"), (3, "orsay")]
    # Each claim is the part of the answer's sentence that the citation ends, number included.
    claims = [text[a.claim.char_start : a.claim.char_end] for a in anchors]
    for a, claim, sentence in zip(anchors, claims, [first, first, second, second]):
        assert claim.strip() and claim in sentence and f"[{a.number}]" in claim, (a, claim)
    # The quotes are the tool's documents' sentences, at their offsets in the document's text.
    seine, landmarks, museums, visitors = anchors
    for a in anchors:
        if a.quote is not None:
            doc = PAGES[a.source_id]["text"]
            assert a.quote.origin == "source"
            assert a.quote.char_start is not None and a.quote.char_end is not None
            assert doc[a.quote.char_start : a.quote.char_end] == a.quote.text == doc
    assert seine.quote is not None and seine.quote.text == "The Seine flows through Paris."
    # "museums" is the Louvre page's "museum": its sentence is the quote.
    assert museums.quote is not None and museums.quote.text == "The Louvre is the largest museum."
    # Nothing in the Louvre page shares a word with "its banks are lined with landmarks".
    assert (landmarks.quote, landmarks.support, landmarks.verdict) == (None, 0.0, "unsupported")
    # Scores and verdicts are the engine's for this answer over the tool's documents.
    answer = (
        "The Seine flows through the heart of Paris [[seine]], and its banks are lined with landmarks [[louvre]]. "
        "The city's museums hold vast collections [[louvre]], and they draw visitors from everywhere [[orsay]]."
    )
    rw = Rewriter([Source(i, text=PAGES[i]["text"]) for i in ("seine", "louvre", "orsay")], settings=Settings(anchors=True))
    engine = [e for e in rw.feed(answer) + rw.finish() if isinstance(e, AnchorEvent)]
    assert [(a.claim, a.quote, a.support, a.verdict) for a in anchors] == [
        (a.claim, a.quote, a.support, a.verdict) for a in engine
    ]
    # The first sentence's anchors come as soon as it closes, while the second still streams.
    first_anchor = next(i for i, e in enumerate(events) if isinstance(e, AnchorEvent))
    citations = [i for i, e in enumerate(events) if isinstance(e, CitationEvent)]
    assert citations[1] < first_anchor < citations[2]
    # The final list: each cited source with its own anchors.
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert {s.source.id: s.anchors for s in done.sources} == {
        "seine": [seine],
        "louvre": [landmarks, museums],
        "orsay": [visitors],
    }
    # The answer's AIMessage in the agent state carries them (after_model of the middleware).
    state = graph.get_state(config("anchors")).values
    answer = state["messages"][-1]
    record = answer.additional_kwargs[CITEFLOW_KEY]
    # The answer as the model wrote it is kept; its content is the numbered text (issue 46 §1).
    assert answer.type == "ai" and "[[seine]]" in record["raw"]
    assert answer.text == record["text"] == text
    assert record["anchors"] == [a.to_dict() for a in anchors]
    assert [(s["number"], [a["verdict"] for a in s["anchors"]]) for s in record["sources"]] == [
        (1, [seine.verdict]),
        (2, [landmarks.verdict, museums.verdict]),
        (3, [visitors.verdict]),
    ]
    assert state[NUMBERING_KEY] == session.numbering.to_json()

    # The LangGraph transformer the middleware registers streams the same anchors.
    registered = create_agent(
        llm, tools=[search_web], middleware=[CiteflowMiddleware(anchors=True, transformer=True)],
        checkpointer=InMemorySaver(),
    )
    run_v3 = registered.stream_events({"messages": [("user", "Tell me about Paris")]}, config("mw-anchors"), version="v3")
    streamed = [e for e in run_v3.extensions["citeflow"] if isinstance(e, AnchorEvent)]
    assert streamed == anchors


def test_japanese_agent_anchors(replay_url: str) -> None:
    llm = ChatOpenAI(base_url=replay_url, api_key="test", model="agent-search-ja", streaming=True, max_retries=0)
    graph = create_agent(
        llm, tools=[search_web], middleware=[CiteflowMiddleware(style="full_width", anchors=True)],
        checkpointer=InMemorySaver(),
    )
    session = session_from_state(graph.get_state(config("ja-anchors")).values, style="full_width", anchors=True)
    stream = graph.stream({"messages": [("user", "パリについて教えて")]}, config("ja-anchors"), stream_mode="messages")
    events = list(messages_stream(stream, session))
    text = text_of(events)
    anchors = [e for e in events if isinstance(e, AnchorEvent)]
    # One anchor per citation, each claim one Japanese sentence ending in 。 (the number inside).
    assert [a.number for a in anchors] == [1, 2, 2, 3]
    claims = [text[a.claim.char_start : a.claim.char_end] for a in anchors]
    assert claims == [
        "セーヌ川はパリの中心を流れています【1】。",
        "岸辺には名所が並びます【2】。",
        "パリの美術館は膨大な収蔵品を持ちます【2】。",
        "世界中から人が訪れます【3】。",
    ]
    # The tool's documents are English: nothing in them shares a word with these sentences.
    assert [(a.quote, a.verdict) for a in anchors] == [(None, "unsupported")] * 4
