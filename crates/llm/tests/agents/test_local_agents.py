"""The local model (SmolLM2-135M) as an agent's model, over real HTTP (issue 47): the official
``openai`` client gets tool calls as the OpenAI contract defines them, and a real LangChain
``create_agent`` searches and ends with a cited answer whose numbers map to the tool's documents.

Run by scripts/test-llm.sh, which starts ``agent_upstream`` (the model and the citeflow proxy in
front of it) and sets CITEFLOW_MODEL_URL and CITEFLOW_PROXY_URL."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import jsonschema
import openai
import pytest

MODEL_URL = os.environ["CITEFLOW_MODEL_URL"]
PROXY_URL = os.environ["CITEFLOW_PROXY_URL"]


def function(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


SEARCH = function(
    "search_books",
    "Search the sample books for passages about the query.",
    {"type": "object", "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 60}}, "required": ["query"]},
)
NESTED = function(
    "book_room",
    "Book a room for a traveller.",
    {
        "type": "object",
        "properties": {
            "traveller": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 30}, "age": {"type": "integer"}},
                "required": ["name", "age"],
            },
            "nights": {"type": "integer"},
        },
        "required": ["traveller", "nights"],
    },
)
ENUM = function(
    "set_units",
    "Set the temperature unit.",
    {
        "type": "object",
        "properties": {"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "precise": {"type": "boolean"}},
        "required": ["unit", "precise"],
    },
)
ARRAY = function(
    "tag_passage",
    "Tag a passage with keywords.",
    {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 20}, "minItems": 1, "maxItems": 3}},
        "required": ["tags"],
    },
)
QUESTION = "What did the White Rabbit take out of its waistcoat-pocket?"


def client(url: str = MODEL_URL) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="local", max_retries=0, timeout=120)


def ask(tools: list[dict[str, Any]], choice: Any, url: str = MODEL_URL, content: str = QUESTION) -> Any:
    return client(url).chat.completions.create(
        model="local",
        messages=[{"role": "user", "content": content}],
        tools=tools,  # type: ignore[arg-type]
        tool_choice=choice,
        # One call: a 135M model allowed four (the default) writes four.
        parallel_tool_calls=False,
        max_tokens=80,
        temperature=0,
    )


def valid_arguments(tool: dict[str, Any], arguments: str) -> dict[str, Any]:
    args = json.loads(arguments)
    jsonschema.validate(args, tool["function"]["parameters"])
    return args  # type: ignore[no-any-return]


@pytest.mark.parametrize("url", [MODEL_URL, PROXY_URL], ids=["model", "proxy"])
def test_required_gives_a_search_call_with_valid_arguments(url: str) -> None:
    r = ask([SEARCH], "required", url)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert calls and calls[0].type == "function" and calls[0].id
    assert calls[0].function.name == "search_books"
    args = valid_arguments(SEARCH, calls[0].function.arguments)
    assert args["query"].strip()


def test_a_named_tool_is_the_one_called() -> None:
    r = ask([SEARCH, ENUM], {"type": "function", "function": {"name": "set_units"}}, content="Use celsius, precisely.")
    calls = r.choices[0].message.tool_calls
    assert calls and [c.function.name for c in calls] == ["set_units"]
    assert valid_arguments(ENUM, calls[0].function.arguments)["unit"] in {"celsius", "fahrenheit"}


@pytest.mark.parametrize(
    ("tool", "content"),
    [
        (NESTED, "Book two nights for Alice, who is 7."),
        (ENUM, "Show temperatures in fahrenheit."),
        (ARRAY, "Tag this passage: the White Rabbit looked at its watch."),
    ],
    ids=["nested", "enum", "array"],
)
def test_arguments_are_valid_for_each_schema(tool: dict[str, Any], content: str) -> None:
    r = ask([tool], "required", content=content)
    calls = r.choices[0].message.tool_calls
    assert calls and calls[0].function.name == tool["function"]["name"]
    valid_arguments(tool, calls[0].function.arguments)


def test_none_gives_prose_and_no_call() -> None:
    r = ask([SEARCH], "none")
    choice = r.choices[0]
    assert choice.message.tool_calls is None
    assert choice.finish_reason in {"stop", "length"}
    assert (choice.message.content or "").strip()


@pytest.mark.parametrize("url", [MODEL_URL, PROXY_URL], ids=["model", "proxy"])
def test_streamed_calls_arrive_as_delta_tool_calls(url: str) -> None:
    stream = client(url).chat.completions.create(
        model="local",
        messages=[{"role": "user", "content": QUESTION}],
        tools=[SEARCH],  # type: ignore[list-item]
        tool_choice="auto",
        max_tokens=80,
        temperature=0,
        stream=True,
    )
    calls: dict[int, dict[str, str]] = {}
    finish = None
    for chunk in stream:
        if not chunk.choices:
            continue
        c = chunk.choices[0]
        for tc in c.delta.tool_calls or []:
            slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            if tc.id:
                slot["id"] = tc.id
            if tc.function and tc.function.name:
                slot["name"] = tc.function.name
            if tc.function and tc.function.arguments:
                slot["arguments"] += tc.function.arguments
        finish = c.finish_reason or finish
    # The agent policy: a user's question and a search tool, so the turn is a search.
    assert finish == "tool_calls"
    assert list(calls) == [0] and calls[0]["id"] and calls[0]["name"] == "search_books"
    valid_arguments(SEARCH, calls[0]["arguments"])


# --- LangChain create_agent ---------------------------------------------------------------

PASSAGES = [
    {
        "id": "alice-watch",
        "title": "Down the Rabbit-Hole",
        "url": "https://example.org/alice#watch",
        "text": "Suddenly a White Rabbit with pink eyes ran close by her. The Rabbit actually took a watch out of its waistcoat-pocket, looked at it, and then hurried on.",
    },
    {
        "id": "alice-well",
        "title": "Down the Rabbit-Hole",
        "url": "https://example.org/alice#well",
        "text": "Down, down, down. The rabbit-hole went straight on like a tunnel, and then dipped suddenly down into a very deep well.",
    },
    {
        "id": "alice-tea",
        "title": "A Mad Tea-Party",
        "url": "https://example.org/alice#tea",
        "text": "There was a table set out under a tree in front of the house, and the March Hare and the Hatter were having tea at it.",
    },
]


def _terms(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']{3,}", text.lower()))


def test_langchain_create_agent_searches_and_cites_the_tools_documents() -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    from citeflow import CitationEvent, DoneEvent, SourceEvent, TextEvent
    from citeflow.langchain import CiteflowMiddleware, messages_stream, session_from_state

    queries: list[str] = []
    returned: set[str] = set()

    @tool(response_format="content_and_artifact")
    def search_books(query: str) -> tuple[str, list[dict[str, Any]]]:
        """Search the sample books for passages about the query."""
        queries.append(query)
        q = _terms(query)
        found = sorted(PASSAGES, key=lambda p: -len(q & _terms(p["text"] + " " + p["title"])))[:2]
        returned.update(p["id"] for p in found)
        return "\n".join(p["text"] for p in found), found

    llm = ChatOpenAI(base_url=MODEL_URL, api_key="local", model="local", streaming=True, max_retries=0, max_tokens=96, temperature=0)
    graph = create_agent(llm, tools=[search_books], middleware=[CiteflowMiddleware()], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "local"}}
    session = session_from_state(graph.get_state(config).values)
    stream = graph.stream({"messages": [("user", QUESTION)]}, config, stream_mode="messages")
    events = list(messages_stream(stream, session))
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    print(f"queries {queries}; answer {text!r}")
    assert len(queries) == 1 and queries[0].strip()
    cited = [e.number for e in events if isinstance(e, CitationEvent)]
    shown = {e.number: e.source.id for e in events if isinstance(e, SourceEvent)}
    assert cited, text
    assert all(n in shown and shown[n] in returned for n in cited), (cited, shown, returned)
    assert all(f"[{n}]" in text for n in cited)
    done = events[-1]
    assert isinstance(done, DoneEvent)
