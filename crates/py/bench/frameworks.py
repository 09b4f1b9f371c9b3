"""Benchmark: each framework adapter's cost per streamed chunk against a bare loop over the same
stream (goal: at most 1.5x).

Each pair runs the same real framework call against the replaying upstream (its scripted models
over loopback HTTP, started here): the bare loop iterates the framework's stream and reads each
chunk's text, as an app without citeflow does; the adapter run iterates citeflow's events for the
same stream. Printed per adapter: CPU time of this process per text chunk (``time.process_time``,
so the upstream's own work is not counted), best of ``--repeat`` runs taken alternately, and the
ratio.

- ``openai``: the ``openai`` SDK's chat stream (a recorded 200-chunk answer), reading each
  chunk's ``delta.content`` against ``citeflow.adapters.openai_stream``;
- ``openai-own`` / ``langchain-own``: the adapter's own cost, over the items of a stream
  collected once (a loop that reads each chunk's text against the adapter over the list);
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

    CITEFLOW_REPLAY_BIN=target/debug/examples/replay_upstream python crates/py/bench/frameworks.py [PAIR ...]
    ... frameworks.py --ab DIR [--rounds N] [PAIR ...]   # DIR holds the tree before's citeflow package

Per chunk is per text chunk of the stream as the bare loop counts them (both runs divided by it).
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
    """Best CPU seconds per chunk of ``fn`` (the bare loop, which returns the stream's chunk
    count) and ``other`` (the adapter over the same stream), run alternately; both are divided
    by the bare loop's count, so that an adapter that merges or holds text is not counted as
    having fewer chunks."""
    a = b = float("inf")
    chunks = 1
    for _ in range(repeat):
        for which in (0, 1):
            t0 = time.process_time()
            n = (fn if which == 0 else other)()
            dt = time.process_time() - t0
            if which == 0:
                chunks = max(n, 1)
                a = min(a, dt / chunks)
            else:
                b = min(b, dt / chunks)
    return a, b


def openai_pair(url: str) -> tuple[Callable[[], int], Callable[[], int]]:
    import openai

    from citeflow import Rewriter
    from citeflow.adapters import openai_stream

    client = openai.OpenAI(base_url=url, api_key="test", max_retries=0)

    def stream() -> Any:
        # A recorded SmolLM2 answer: 200 chunks of text, one token each.
        return client.chat.completions.create(
            model="smollm2-01.sse", messages=[{"role": "user", "content": "hi"}], stream=True
        )

    def bare() -> int:
        n = 0
        for chunk in stream():
            if chunk.choices and chunk.choices[0].delta.content:
                n += 1
        return n

    def adapted() -> int:
        return sum(ev.type == "text" for ev in openai_stream(stream(), Rewriter()))

    return bare, adapted


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
                    n += (payload.get("delta") or {}).get("type") == "text-delta"
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


def openai_own_pair(url: str) -> tuple[Callable[[], int], Callable[[], int]]:
    """``openai_stream``'s own cost: the SDK's chunks of a recorded answer built once (as its
    ``Stream`` builds them), then read from a list."""
    import json

    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    from citeflow import Rewriter
    from citeflow.adapters import openai_stream

    shared = os.environ.get("CITEFLOW_SHARED_DIR") or str(ROOT.parent / "shared")
    lines = Path(shared, "fixtures/streams/smollm2-01.sse").read_text(encoding="utf-8").splitlines()
    chunks = [construct_type(type_=ChatCompletionChunk, value=json.loads(ln[6:])) for ln in lines if ln.startswith("data: {")]
    chunks = chunks * 10

    def bare() -> int:
        return sum(1 for c in chunks if c.choices and c.choices[0].delta.content)

    def adapted() -> int:
        return sum(ev.type == "text" for ev in openai_stream(chunks, Rewriter()))

    return bare, adapted


def langchain_own_pair(url: str) -> tuple[Callable[[], int], Callable[[], int]]:
    """``messages_stream``'s own cost: one agent run's ``stream_mode="messages"`` items
    collected once, then read from a list."""
    from langchain_core.messages import AIMessageChunk
    from test_langchain_agent import agent

    from citeflow.langchain import messages_stream

    cfg = {"configurable": {"thread_id": "bench-own"}}
    items = list(agent(url, "agent-search").stream({"messages": [("user", "Tell me about Paris")]}, cfg, stream_mode="messages"))

    def bare() -> int:
        return sum(20 for m, _ in items if isinstance(m, AIMessageChunk) and m.content)

    def adapted() -> int:
        for _ in range(20):
            for _ev in messages_stream(items):
                pass
        return 0

    return bare, adapted


PAIRS: dict[str, Callable[[str], tuple[Callable[[], int], Callable[[], int]]]] = {
    "openai": openai_pair,
    "langchain": langchain_pair,
    "langgraph": langgraph_pair,
    "llamaindex": llamaindex_pair,
    "chainlit": chainlit_pair,
    "openai-own": openai_own_pair,
    "langchain-own": langchain_own_pair,
}


def measure(names: list[str], repeat: int) -> dict[str, tuple[float, float]]:
    """(bare, adapter) CPU seconds per chunk of each pair, against a replaying upstream started
    here."""
    binary = os.environ.get("CITEFLOW_REPLAY_BIN") or str(ROOT / "target/debug/examples/replay_upstream")
    shared = os.environ.get("CITEFLOW_SHARED_DIR") or str(ROOT.parent / "shared")
    proc = subprocess.Popen([binary, f"{shared}/fixtures/streams"], stdout=subprocess.PIPE, text=True)
    out = {}
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        for name in names:
            bare, adapted = PAIRS[name](url)
            bare(), adapted()  # warm up (imports, connections)
            out[name] = best(bare, adapted, repeat)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return out


def ab(before: str, names: list[str], repeat: int, rounds: int) -> None:
    """The tree before (``before``: a directory holding its ``citeflow`` package) against this
    one, each in its own process, alternately ``rounds`` times; prints each pair's median
    ratio (adapter / bare loop) for both."""
    import json
    import statistics

    ratios: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    added: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    for _ in range(rounds):
        for label in ("before", "after"):
            env = dict(os.environ)
            if label == "before":
                env["PYTHONPATH"] = before + os.pathsep + env.get("PYTHONPATH", "")
            cmd = [sys.executable, __file__, "--repeat", str(repeat), "--json", *names]
            got = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout)
            for name, (b, a) in got.items():
                ratios[label].setdefault(name, []).append(a / b)
                added[label].setdefault(name, []).append((a - b) * 1e6)
    print(f"framework adapters / bare loop, per text chunk, median of {rounds} rounds (A/B, {before} first):")
    print("  (the adapter's added CPU per chunk: adapter minus bare loop, median)")
    for name in names:
        bf, af = (statistics.median(ratios[k][name]) for k in ("before", "after"))
        bd, ad = (statistics.median(added[k][name]) for k in ("before", "after"))
        print(f"  {name:<13} before {bf:5.2f}x ({bd:+6.1f} us)  after {af:5.2f}x ({ad:+6.1f} us)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--ab", metavar="DIR", help="A/B against the citeflow package in DIR")
    parser.add_argument("--rounds", type=int, default=3, help="A/B rounds")
    parser.add_argument("pairs", nargs="*", default=list(PAIRS), help=f"of {', '.join(PAIRS)}")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.ab:
        ab(args.ab, args.pairs, args.repeat, args.rounds)
        return
    got = measure(args.pairs, args.repeat)
    if args.json:
        import json

        print(json.dumps(got))
        return
    print(f"framework adapters, per text chunk, best of {args.repeat} (CPU time of this process):")
    for name, (b, a) in got.items():
        print(f"  {name:<11} {a / b:5.2f}x  adapter {a * 1e6:7.1f} us/chunk, bare loop {b * 1e6:7.1f} us/chunk")


if __name__ == "__main__":
    main()
