"""citeflow.pydantic_ai with a real Pydantic AI ``Agent`` whose model is the replaying upstream's
scripted agent model over HTTP (``OpenAIChatModel``, ``agent-search-turns``): it searches twice
("Seine river Paris", "Paris museums"; in a second user turn "Eiffel Tower", "Paris bridges")
and answers citing the first two markers of each tool result."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.messages import ToolReturn
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.toolsets import FunctionToolset

from citeflow import DoneEvent, SourceEvent, TextEvent
from citeflow.pydantic_ai import CiteflowToolset, cite_documents, cite_output, cite_stream
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
FIRST_MARKDOWN = (
    "**Round 1: Seine river Paris**\n\n1. [Seine](https://example.org/seine)\n2. [Louvre](https://example.org/louvre)\n\n"
    "**Round 2: Paris museums**\n\n3. [Musée d'Orsay](https://example.org/orsay)\n\n"
)
FIRST_LIST = [(1, "seine", "Seine"), (2, "louvre", "Louvre"), (3, "orsay", "Musée d'Orsay")]
# The list is in number order: the history's document cited again keeps its number.
SECOND_LIST = [(1, "seine", "Seine"), (4, "eiffel", "Eiffel Tower"), (5, "bridges", "Bridges of Paris"), (6, "pont-neuf", "Pont Neuf")]


def _model(client: AsyncOpenAI) -> OpenAIChatModel:
    return OpenAIChatModel("agent-search-turns", provider=OpenAIProvider(openai_client=client))


def _agent(client: AsyncOpenAI) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(_model(client), instructions=agent_instruction())

    @agent.tool_plain
    def search(query: str) -> ToolReturn:
        """Searches the pages."""
        return cite_documents(hits(query))

    return agent


def _with_client(replay_url: str, body: Callable[[AsyncOpenAI], Awaitable[None]]) -> None:
    """Runs ``body`` with an OpenAI client of the replaying upstream, closed at the end."""

    async def main() -> None:
        async with AsyncOpenAI(base_url=replay_url, api_key="test") as client:
            await body(client)

    asyncio.run(main())


def _listed(sources: Any) -> list[tuple[int, str, str]]:
    return [(s.number, s.source.id, s.source.title) for s in sources]


async def _streamed(agent: Agent[None, str], prompt: str, history: Any = None) -> tuple[str, list[Any], Any]:
    async with agent.run_stream(prompt, message_history=history) as result:
        events = [ev async for ev in cite_stream(result)]
        messages = result.all_messages()
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    return text, events, messages


def test_run_output_is_numbered_and_a_streamed_second_run_continues_it(replay_url: str) -> None:
    _with_client(replay_url, _run_then_stream)


async def _run_then_stream(client: AsyncOpenAI) -> None:
    agent = _agent(client)
    result = await agent.run("What is in Paris?")
    # The model's own answer keeps its markers; the numbered one maps them to the documents.
    assert result.output.startswith("The Seine flows through the heart of Paris [[seine]]")
    answer = cite_output(result)
    assert answer.text == FIRST
    assert answer.raw == result.output
    assert _listed(answer.sources) == FIRST_LIST
    assert [s.source.url for s in answer.sources] == [
        "https://example.org/seine",
        "https://example.org/louvre",
        "https://example.org/orsay",
    ]
    assert answer.render_sources("markdown") == FIRST_MARKDOWN

    text, events, _ = await _streamed(agent, "And what else?", result.all_messages())
    assert text == SECOND
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert _listed(done.sources) == SECOND_LIST
    # Each document of this answer is announced once, in the order the text shows it; the
    # history's document keeps its number.
    assert [(e.number, e.source.id) for e in events if isinstance(e, SourceEvent)] == [
        (4, "eiffel"),
        (1, "seine"),
        (5, "bridges"),
        (6, "pont-neuf"),
    ]


def test_run_stream_numbers_across_two_tool_rounds_and_run_continues_it(replay_url: str) -> None:
    _with_client(replay_url, _stream_then_run)


async def _stream_then_run(client: AsyncOpenAI) -> None:
    agent = _agent(client)
    text, events, messages = await _streamed(agent, "What is in Paris?")
    assert text == FIRST
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert _listed(done.sources) == FIRST_LIST
    assert [s.round for s in done.sources] == [1, 1, 2]

    second = await agent.run("And what else?", message_history=messages)
    answer = cite_output(second)
    assert answer.text == SECOND
    assert _listed(answer.sources) == SECOND_LIST


def test_toolset_makes_plain_document_returns_rounds(replay_url: str) -> None:
    _with_client(replay_url, _toolset)


async def _toolset(client: AsyncOpenAI) -> None:
    def search(query: str) -> list[dict[str, Any]]:
        """Searches the pages."""
        return hits(query)

    agent: Agent[None, str] = Agent(
        _model(client), instructions=agent_instruction(), toolsets=[CiteflowToolset(FunctionToolset([search]))]
    )
    result = await agent.run("What is in Paris?")
    answer = cite_output(result)
    assert answer.text == FIRST
    assert _listed(answer.sources) == FIRST_LIST


def test_import_citeflow_imports_neither_agent_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys, citeflow, citeflow.rounds\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic_ai', 'agents')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
