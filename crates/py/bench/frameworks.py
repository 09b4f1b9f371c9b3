"""Benchmark: each framework adapter's cost per streamed chunk against a bare loop over the same
stream (goal: at most 1.5x).

Each pair runs the same real framework call against the replaying upstream (its scripted models
over loopback HTTP, started here): the bare loop iterates the framework's stream and reads each
chunk's text, as an app without citeflow does; the adapter run iterates citeflow's events for the
same stream. Printed per adapter: CPU time of this process per text chunk (``time.process_time``,
so the upstream's own work is not counted), best of ``--repeat`` runs taken alternately, and the
ratio.

- ``langchain``: ``create_agent`` + ``CiteflowMiddleware`` (two tool rounds, then the answer),
  ``agent.stream(stream_mode="messages")`` against ``messages_stream`` over it (the bare run
  uses the same agent, middleware included, so the ratio is the stream adapter's cost);
- ``langgraph``: the same agent under ``stream_events(version="v3")``, the raw protocol events
  (text deltas counted) against ``CiteflowTransformer``'s ``run.extensions["citeflow"]``;
- ``llamaindex``: a streaming ``CitationQueryEngine`` query, ``response_gen`` against
  ``citation_stream``;
- ``chainlit``: the agent answer's 7-character deltas streamed into a ``cl.Message``
  (``stream_token``) against ``CitedMessage`` fed with the engine's events for them (rounds,
  side elements, the list), under Chainlit's HTTP context (its emitter sends nothing, so the
  bare loop here is far cheaper than a real socket's; the ratio is an upper bound).

    CITEFLOW_REPLAY_BIN=target/debug/examples/replay_upstream python crates/py/bench/frameworks.py
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "crates/py/tests_frameworks"))


def best(fn: Callable[[], int], other: Callable[[], int], repeat: int) -> tuple[float, float]:
    """Best CPU seconds per chunk of ``fn`` and ``other``, run alternately."""
    a = b = float("inf")
    for _ in range(repeat):
        for which in (0, 1):
            t0 = time.process_time()
            n = (fn if which == 0 else other)()
            dt = (time.process_time() - t0) / max(n, 1)
            if which == 0:
                a = min(a, dt)
            else:
                b = min(b, dt)
    return a, b


def langchain_pair(url: str) -> tuple[Callable[[], int], Callable[[], int]]:
    from langchain_core.messages import AIMessageChunk
    from test_langchain_agent import agent

    from citeflow import TextEvent
    from citeflow.langchain import messages_stream

    graph = agent(url, "agent-search")
    counter = iter(range(10**9))

    def stream() -> Any:
        cfg = {"configurable": {"thread_id": f"bench-{next(counter)}"}}
        return graph.stream({"messages": [("user", "Tell me about Paris")]}, cfg, stream_mode="messages")

    def bare() -> int:
        n = 0
        for msg, _meta in stream():
            if isinstance(msg, AIMessageChunk) and msg.content:
                n += 1
        return n

    def adapted() -> int:
        chunks = 0
        for ev in messages_stream(stream()):
            if isinstance(ev, TextEvent):
                chunks += 1
        return chunks

    return bare, adapted


def langgraph_pair(url: str) -> tuple[Callable[[], int], Callable[[], int]]:
    from langchain_core._api.beta_decorator import LangChainBetaWarning
    from test_langchain_agent import agent

    from citeflow import TextEvent
    from citeflow.langchain import CiteflowTransformer

    warnings.filterwarnings("ignore", category=LangChainBetaWarning)

    graph = agent(url, "agent-search")
    counter = iter(range(10**9))

    def run(transformers: Any) -> Any:
        cfg = {"configurable": {"thread_id": f"bench-v3-{next(counter)}"}}
        return graph.stream_events(
            {"messages": [("user", "Tell me about Paris")]}, cfg, version="v3", transformers=transformers
        )

    def bare() -> int:
        n = 0
        for ev in run([]):
            if ev.get("method") == "messages":
                payload = ev["params"]["data"][0]
                if isinstance(payload, dict) and payload.get("event") == "content-block-delta":
                    n += 1
        return n

    def adapted() -> int:
        r = run([lambda scope: CiteflowTransformer(scope)])
        return sum(isinstance(ev, TextEvent) for ev in r.extensions["citeflow"])

    return bare, adapted


def chainlit_pair(url: str) -> tuple[Callable[[], int], Callable[[], int]]:
    import asyncio

    import chainlit as cl
    from chainlit.context import init_http_context
    from conftest import hits

    from citeflow.chainlit import CitedMessage
    from citeflow.rounds import RoundStream, sources_from_result, tool_block

    rounds = [("Seine river Paris", sources_from_result(hits("Seine river Paris"))),
              ("Paris museums", sources_from_result(hits("Paris museums")))]
    # The agent model's answer for these rounds, in its 7-character deltas.
    import json
    import urllib.request

    body = {"model": "agent-search", "messages": [{"role": "tool", "content": tool_block(s)} for _, s in rounds]}
    req = urllib.request.Request(f"{url}/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"})
    text = json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"]
    deltas = [text[i : i + 7] for i in range(0, len(text), 7)] * 20

    async def bare_run() -> int:
        init_http_context()
        msg = cl.Message(content="")
        for d in deltas:
            await msg.stream_token(d)
        await msg.update()
        return len(deltas)

    async def adapted_run() -> int:
        init_http_context()
        rs = RoundStream()
        cited = CitedMessage(rs.session)
        for q, s in rounds:
            for ev in rs.add_round(s, q):
                await cited.send_event(ev)
        for d in deltas:
            for ev in rs.feed(d):
                await cited.send_event(ev)
        for ev in rs.finish():
            await cited.send_event(ev)
        return len(deltas)

    return (lambda: asyncio.run(bare_run())), (lambda: asyncio.run(adapted_run()))


def llamaindex_pair(url: str) -> tuple[Callable[[], int], Callable[[], int]]:
    from test_llamaindex import engine

    from citeflow import TextEvent
    from citeflow.llamaindex import citation_stream

    qe = engine(url, "cite-sources")

    def bare() -> int:
        n = 0
        for delta in qe.query("What does the Seine river do in Paris?").response_gen:
            n += bool(delta)
        return n

    def adapted() -> int:
        response = qe.query("What does the Seine river do in Paris?")
        return sum(isinstance(ev, TextEvent) for ev in citation_stream(response))

    return bare, adapted


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    binary = os.environ.get("CITEFLOW_REPLAY_BIN") or str(ROOT / "target/debug/examples/replay_upstream")
    shared = os.environ.get("CITEFLOW_SHARED_DIR") or str(ROOT.parent / "shared")
    proc = subprocess.Popen([binary, f"{shared}/fixtures/streams"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        print(f"framework adapters, per text chunk, best of {args.repeat} (CPU time of this process):")
        pairs = (
            ("langchain", langchain_pair),
            ("langgraph", langgraph_pair),
            ("llamaindex", llamaindex_pair),
            ("chainlit", chainlit_pair),
        )
        for name, make in pairs:
            bare, adapted = make(url)
            bare(), adapted()  # warm up (imports, connections)
            b, a = best(bare, adapted, args.repeat)
            print(f"  {name:<11} {a / b:5.2f}x  adapter {a * 1e6:7.1f} us/chunk, bare loop {b * 1e6:7.1f} us/chunk")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
