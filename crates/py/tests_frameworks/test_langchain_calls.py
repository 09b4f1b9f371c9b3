"""Every call shape of an agent with ``CiteflowMiddleware`` numbered (issue 46 §1): ``invoke``,
``ainvoke`` and ``batch`` return the answer with its numbers (the answer as written kept in the
message, the cited sources in the state), and ``messages_stream`` / the LangGraph transformer
continue a checkpointed thread's numbers without being given a session. A real ``create_agent``
whose ``ChatOpenAI`` talks to the replaying upstream's scripted agent model over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from citeflow import SourceEvent, TextEvent
from citeflow.langchain import (
    CITEFLOW_KEY,
    NUMBERING_KEY,
    SOURCES_KEY,
    CiteflowMiddleware,
    amessages_stream,
    messages_stream,
)

from test_langchain_agent import search_web

FIRST = (
    "The Seine flows through the heart of Paris [1], and its banks are lined with landmarks [2]. "
    "The city's museums hold vast collections [2], and they draw visitors from everywhere [3]."
)
FIRST_RAW = (
    "The Seine flows through the heart of Paris [[seine]], and its banks are lined with landmarks [[louvre]]. "
    "The city's museums hold vast collections [[louvre]], and they draw visitors from everywhere [[orsay]]."
)
SECOND = (
    "The Seine flows through the heart of Paris [4], and its banks are lined with landmarks [1]. "
    "The city's museums hold vast collections [5], and they draw visitors from everywhere [6]."
)
SECOND_RAW = (
    "The Seine flows through the heart of Paris [[eiffel]], and its banks are lined with landmarks [[seine]]. "
    "The city's museums hold vast collections [[bridges]], and they draw visitors from everywhere [[pont-neuf]]."
)


def agent(url: str, model: str, **middleware: Any) -> Any:
    llm = ChatOpenAI(base_url=url, api_key="test", model=model, streaming=True, max_retries=0)
    return create_agent(
        llm, tools=[search_web], middleware=[CiteflowMiddleware(**middleware)], checkpointer=InMemorySaver()
    )


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def ask(question: str) -> dict[str, Any]:
    return {"messages": [("user", question)]}


def listed(state: dict[str, Any]) -> list[tuple[int, str]]:
    return [(s["number"], s["source"]["id"]) for s in state[SOURCES_KEY]]


def text_of(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextEvent))


def test_invoke_returns_the_numbered_answer_and_a_second_turn_continues(replay_url: str) -> None:
    graph = agent(replay_url, "agent-search-turns")
    result = graph.invoke(ask("Tell me about Paris"), config("inv"))
    answer = result["messages"][-1]
    assert answer.type == "ai" and answer.content == FIRST
    assert answer.additional_kwargs[CITEFLOW_KEY]["raw"] == FIRST_RAW
    assert answer.additional_kwargs[CITEFLOW_KEY]["text"] == FIRST
    assert listed(result) == [(1, "seine"), (2, "louvre"), (3, "orsay")]
    # The checkpoint holds the numbered answer too.
    assert graph.get_state(config("inv")).values["messages"][-1].content == FIRST

    second = graph.invoke(ask("What else should I see?"), config("inv"))
    answer2 = second["messages"][-1]
    assert answer2.content == SECOND
    assert answer2.additional_kwargs[CITEFLOW_KEY]["raw"] == SECOND_RAW
    assert listed(second) == [(1, "seine"), (4, "eiffel"), (5, "bridges"), (6, "pont-neuf")]
    # The first answer stays as it was numbered.
    assert [m.content for m in second["messages"] if m.type == "ai" and m.text][0] == FIRST


def test_ainvoke_returns_the_numbered_answer(replay_url: str) -> None:
    graph = agent(replay_url, "agent-search")
    result = asyncio.run(graph.ainvoke(ask("Tell me about Paris"), config("ainv")))
    assert result["messages"][-1].content == FIRST
    assert result["messages"][-1].additional_kwargs[CITEFLOW_KEY]["raw"] == FIRST_RAW
    assert listed(result) == [(1, "seine"), (2, "louvre"), (3, "orsay")]


def test_batch_of_two_numbers_each_answer(replay_url: str) -> None:
    graph = agent(replay_url, "agent-search")
    results = graph.batch([ask("Tell me about Paris"), ask("Tell me about Paris")], [config("b1"), config("b2")])
    assert [r["messages"][-1].content for r in results] == [FIRST, FIRST]
    assert [listed(r) for r in results] == [[(1, "seine"), (2, "louvre"), (3, "orsay")]] * 2


def test_full_width_invoke(replay_url: str) -> None:
    graph = agent(replay_url, "agent-search-ja", style="full_width")
    result = graph.invoke(ask("パリについて教えて"), config("ja-inv"))
    assert result["messages"][-1].content == (
        "セーヌ川はパリの中心を流れています【1】。岸辺には名所が並びます【2】。"
        "パリの美術館は膨大な収蔵品を持ちます【2】。世界中から人が訪れます【3】。"
    )


def test_messages_stream_continues_a_checkpointed_thread_without_a_session(replay_url: str) -> None:
    graph = agent(replay_url, "agent-search-turns")
    first = list(messages_stream(graph.stream(ask("Tell me about Paris"), config("ms"), stream_mode="messages")))
    assert text_of(first) == FIRST
    second = list(messages_stream(graph.stream(ask("What else should I see?"), config("ms"), stream_mode="messages")))
    assert text_of(second) == SECOND
    new = [(e.number, e.source.id, e.round) for e in second if isinstance(e, SourceEvent) and e.is_new]
    assert new == [(4, "eiffel", 3), (5, "bridges", 1), (6, "pont-neuf", 4)]
    # The stream and the state agree on the numbers.
    state = graph.get_state(config("ms")).values
    assert state["messages"][-1].content == SECOND
    assert state[NUMBERING_KEY] == graph.get_state(config("ms")).values[NUMBERING_KEY]


def test_amessages_stream_with_several_modes_continues_the_thread(replay_url: str) -> None:
    graph = agent(replay_url, "agent-search-turns")

    async def turn(question: str) -> str:
        stream = graph.astream(ask(question), config("ams"), stream_mode=["messages", "updates"])
        return text_of([e async for e in amessages_stream(stream)])

    assert asyncio.run(turn("Tell me about Paris")) == FIRST
    assert asyncio.run(turn("What else should I see?")) == SECOND


@pytest.mark.filterwarnings("ignore:The v3 streaming protocol:langchain_core._api.beta_decorator.LangChainBetaWarning")
def test_transformer_continues_a_checkpointed_thread(replay_url: str) -> None:
    graph = agent(replay_url, "agent-search-turns", transformer=True)
    run1 = graph.stream_events(ask("Tell me about Paris"), config("v3"), version="v3")
    assert text_of(list(run1.extensions["citeflow"])) == FIRST
    run2 = graph.stream_events(ask("What else should I see?"), config("v3"), version="v3")
    assert text_of(list(run2.extensions["citeflow"])) == SECOND
    # v3 runs the model with output_version "v1": the content is a list of blocks.
    assert graph.get_state(config("v3")).values["messages"][-1].text == SECOND
