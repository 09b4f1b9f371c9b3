"""citeflow.openai_agents with the real OpenAI Agents SDK (``Runner.run``, ``Runner.run_streamed``)
whose model is the replaying upstream's scripted agent model on the Responses API over HTTP
(``OpenAIResponsesModel``, ``agent-search-turns``): it searches twice ("Seine river Paris",
"Paris museums"; in a second user turn "Eiffel Tower", "Paris bridges") and answers citing the
first two markers of each tool output."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from agents import Agent, RunConfig, Runner, WebSearchTool, function_tool
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

from citeflow import DoneEvent, SourceEvent, TextEvent
from citeflow.openai_agents import cite_documents, cite_output, cite_stream
from citeflow.rounds import agent_instruction

from conftest import hits

FIRST = (
    "The Seine flows through the heart of Paris [1], and its banks are lined with landmarks [2]. "
    "The city's museums hold vast collections [2], and they draw visitors from everywhere [3]."
)
SECOND = (
    "The Seine flows through the heart of Paris [4], and its banks are lined with landmarks [1]. "
    "The city's museums hold vast collections [5], and they draw visitors from everywhere [6]."
)
FIRST_LIST = [(1, "seine", "Seine", 1), (2, "louvre", "Louvre", 1), (3, "orsay", "Musée d'Orsay", 2)]
# In number order: the first turn's document cited again keeps its number (and its round).
SECOND_LIST = [(1, "seine", "Seine", 1), (4, "eiffel", "Eiffel Tower", 3), (5, "bridges", "Bridges of Paris", 1), (6, "pont-neuf", "Pont Neuf", 4)]
NO_TRACING = RunConfig(tracing_disabled=True)


@function_tool
def search(query: str) -> str:
    """Searches the pages."""
    return cite_documents(hits(query))


@function_tool
def search_plain(query: str) -> list[dict[str, Any]]:
    """Searches the pages (the documents themselves)."""
    return hits(query)


def _agent(client: AsyncOpenAI, tool: Any = search) -> Agent[Any]:
    model = OpenAIResponsesModel(model="agent-search-turns", openai_client=client)
    return Agent(name="researcher", instructions=agent_instruction(), model=model, tools=[tool])


def _with_client(replay_url: str, body: Callable[[AsyncOpenAI], Awaitable[None]]) -> None:
    async def main() -> None:
        async with AsyncOpenAI(base_url=replay_url, api_key="test") as client:
            await body(client)

    asyncio.run(main())


def _listed(sources: Any) -> list[tuple[int, str, str, Any]]:
    return [(s.number, s.source.id, s.source.title, s.round) for s in sources]


def test_run_final_output_is_numbered_and_a_streamed_turn_continues_it(replay_url: str) -> None:
    async def body(client: AsyncOpenAI) -> None:
        agent = _agent(client)
        result = await Runner.run(agent, "What is in Paris?", run_config=NO_TRACING)
        assert result.final_output.startswith("The Seine flows through the heart of Paris [[seine]]")
        answer = cite_output(result)
        assert answer.text == FIRST
        assert answer.raw == result.final_output
        assert _listed(answer.sources) == FIRST_LIST
        assert [s.source.url for s in answer.sources] == [
            "https://example.org/seine",
            "https://example.org/louvre",
            "https://example.org/orsay",
        ]
        assert answer.render_sources("markdown") == (
            "**Round 1: Seine river Paris**\n\n1. [Seine](https://example.org/seine)\n"
            "2. [Louvre](https://example.org/louvre)\n\n"
            "**Round 2: Paris museums**\n\n3. [Musée d'Orsay](https://example.org/orsay)\n\n"
        )

        turn = answer.input_list + [{"role": "user", "content": "And what else?"}]
        streamed = Runner.run_streamed(agent, turn, run_config=NO_TRACING)
        events = [ev async for ev in cite_stream(streamed, answer.session)]
        assert "".join(e.text for e in events if isinstance(e, TextEvent)) == SECOND
        done = events[-1]
        assert isinstance(done, DoneEvent)
        assert _listed(done.sources) == SECOND_LIST
        assert [(e.number, e.source.id) for e in events if isinstance(e, SourceEvent)] == [
            (4, "eiffel"),
            (1, "seine"),
            (5, "bridges"),
            (6, "pont-neuf"),
        ]

    _with_client(replay_url, body)


def test_run_streamed_numbers_text_deltas_across_two_tool_rounds(replay_url: str) -> None:
    async def body(client: AsyncOpenAI) -> None:
        agent = _agent(client)
        streamed = Runner.run_streamed(agent, "What is in Paris?", run_config=NO_TRACING)
        events = [ev async for ev in cite_stream(streamed)]
        texts = [e.text for e in events if isinstance(e, TextEvent)]
        assert "".join(texts) == FIRST
        # The model's deltas cut every marker; no delta shows a half marker.
        assert len(texts) > 10 and not any("[[" in t or "]]" in t for t in texts)
        done = events[-1]
        assert isinstance(done, DoneEvent)
        assert _listed(done.sources) == FIRST_LIST
        assert streamed.final_output.startswith("The Seine flows through the heart of Paris [[seine]]")

    _with_client(replay_url, body)


def test_tool_returning_documents_gives_rounds(replay_url: str) -> None:
    async def body(client: AsyncOpenAI) -> None:
        result = await Runner.run(_agent(client, search_plain), "What is in Paris?", run_config=NO_TRACING)
        answer = cite_output(result)
        # The model read the documents without markers: it cites none, the rounds are there.
        assert answer.text == "I found no sources to cite."
        assert [(r.query, r.source_ids) for r in answer.session.rounds()] == [
            ("Seine river Paris", ["seine", "louvre", "bridges"]),
            ("Paris museums", ["louvre", "orsay"]),
        ]

    _with_client(replay_url, body)


WEB = " The Seine is 777 kilometres long.[1][4]"


def test_url_citations_join_the_tool_rounds_numbering(replay_url: str) -> None:
    """With the hosted web search tool the scripted answer ends with a sentence carrying two
    ``url_citation`` annotations: the Seine page a tool round already numbered [1], and a page
    no tool returned, which gets the next number."""

    async def body(client: AsyncOpenAI) -> None:
        agent = _agent(client)
        agent.tools.append(WebSearchTool())
        streamed = Runner.run_streamed(agent, "What is in Paris?", run_config=NO_TRACING)
        events = [ev async for ev in cite_stream(streamed)]
        # The annotations come after their text was shown: the streamed text has no numbers
        # for them, the DoneEvent's text is the final answer with them.
        shown = "".join(e.text for e in events if isinstance(e, TextEvent))
        assert shown == FIRST + " The Seine is 777 kilometres long."
        done = events[-1]
        assert isinstance(done, DoneEvent)
        assert done.text == FIRST + WEB
        expected = [
            (1, "seine", "https://example.org/seine"),
            (2, "louvre", "https://example.org/louvre"),
            (3, "orsay", "https://example.org/orsay"),
            (4, "https://en.wikipedia.org/wiki/Seine", "https://en.wikipedia.org/wiki/Seine"),
        ]
        assert [(s.number, s.source.id, s.source.url) for s in done.sources] == expected

        answer = cite_output(await Runner.run(agent, "What is in Paris?", run_config=NO_TRACING))
        assert answer.text == FIRST + WEB
        assert [(s.number, s.source.id, s.source.url) for s in answer.sources] == expected

    _with_client(replay_url, body)
