"""Benchmark: the agent SDK adapters (``citeflow.pydantic_ai``, ``citeflow.openai_agents``) per
streamed text chunk against a bare loop over the same run (goal: at most 1.5x).

Each pair runs the same real agent against the replaying upstream's scripted agent model (two
search tool rounds, then an answer in 7-character deltas; over loopback HTTP, started here): the
bare loop iterates the framework's stream and reads each text delta, as an app without citeflow
does; the adapter run iterates citeflow's events for the same run (rounds from the tool returns,
the text rewritten). CPU time of this process (``time.process_time``, so the upstream's own work
is not counted) per text chunk of the bare loop, best of ``--repeat`` runs taken alternately.

- ``pydantic-ai``: ``agent.run_stream(...)`` with ``OpenAIChatModel`` (chat completions):
  ``stream_text(delta=True, debounce_by=None)`` against ``cite_stream``;
- ``openai-agents``: ``Runner.run_streamed(...)`` with ``OpenAIResponsesModel`` (Responses API):
  its ``response.output_text.delta`` raw events against ``cite_stream``.

    CITEFLOW_REPLAY_BIN=target/debug/examples/replay_upstream python crates/py/bench/agent_sdks.py [PAIR ...]
"""


import argparse
import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "crates/py/tests_frameworks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from frameworks import best  # noqa: E402

Pair = tuple[Callable[[], Awaitable[int]], Callable[[], Awaitable[int]]]


def pydantic_ai_pair(client: Any) -> Pair:
    from conftest import hits
    from pydantic_ai import Agent
    from pydantic_ai.messages import ToolReturn
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from citeflow import TextEvent
    from citeflow.pydantic_ai import cite_documents, cite_stream
    from citeflow.rounds import agent_instruction

    agent: Agent[None, str] = Agent(
        OpenAIChatModel("agent-search", provider=OpenAIProvider(openai_client=client)),
        instructions=agent_instruction(),
    )

    @agent.tool_plain
    def search(query: str) -> ToolReturn:
        """Searches the pages."""
        return cite_documents(hits(query))

    async def bare() -> int:
        n = 0
        async with agent.run_stream("Tell me about Paris") as result:
            async for delta in result.stream_text(delta=True, debounce_by=None):
                n += bool(delta)
        return n

    async def adapted() -> int:
        n = 0
        async with agent.run_stream("Tell me about Paris") as result:
            async for ev in cite_stream(result):
                n += isinstance(ev, TextEvent)
        return n

    return bare, adapted


def openai_agents_pair(client: Any) -> Pair:
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.models.openai_responses import OpenAIResponsesModel
    from conftest import hits

    from citeflow import TextEvent
    from citeflow.openai_agents import cite_documents, cite_stream
    from citeflow.rounds import agent_instruction

    @function_tool
    def search(query: str) -> str:
        """Searches the pages."""
        return cite_documents(hits(query))

    agent: Agent[Any] = Agent(
        name="researcher",
        instructions=agent_instruction(),
        model=OpenAIResponsesModel(model="agent-search", openai_client=client),
        tools=[search],
    )
    config = RunConfig(tracing_disabled=True)

    async def bare() -> int:
        n = 0
        result = Runner.run_streamed(agent, "Tell me about Paris", run_config=config)
        async for ev in result.stream_events():
            if ev.type == "raw_response_event" and ev.data.type == "response.output_text.delta":
                n += 1
        return n

    async def adapted() -> int:
        n = 0
        async for ev in cite_stream(Runner.run_streamed(agent, "Tell me about Paris", run_config=config)):
            n += isinstance(ev, TextEvent)
        return n

    return bare, adapted


PAIRS: dict[str, Callable[[Any], Pair]] = {"pydantic-ai": pydantic_ai_pair, "openai-agents": openai_agents_pair}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("pairs", nargs="*", default=list(PAIRS), help=f"of {', '.join(PAIRS)}")
    args = parser.parse_args()
    binary = os.environ.get("CITEFLOW_REPLAY_BIN") or str(ROOT / "target/debug/examples/replay_upstream")
    shared = os.environ.get("CITEFLOW_SHARED_DIR") or str(ROOT.parent / "shared")
    proc = subprocess.Popen([binary, f"{shared}/fixtures/streams"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        loop = asyncio.new_event_loop()
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=url, api_key="test", max_retries=0)
        print(f"agent SDK adapters, per text chunk, best of {args.repeat} (CPU time of this process):")
        for name in args.pairs:
            bare, adapted = PAIRS[name](client)
            # One warm-up run each (imports, first connection).
            loop.run_until_complete(bare())
            loop.run_until_complete(adapted())
            b, a = best(
                lambda: loop.run_until_complete(bare()), lambda: loop.run_until_complete(adapted()), args.repeat
            )
            print(f"  {name:<13} {a / b:5.2f}x  adapter {a * 1e6:7.1f} us/chunk, bare loop {b * 1e6:7.1f} us/chunk")
        loop.run_until_complete(client.close())
        loop.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
