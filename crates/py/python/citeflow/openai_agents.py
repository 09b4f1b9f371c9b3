"""OpenAI Agents SDK: function tool outputs that carry documents become rounds, and a run's answer
is numbered across its tool calls, streamed (``Runner.run_streamed``) or not (``Runner.run``).

``openai-agents`` is imported when this module is, not by ``import citeflow``::

    from agents import Agent, Runner, function_tool
    from citeflow.openai_agents import cite_documents, cite_output, cite_stream
    from citeflow.rounds import agent_instruction

    @function_tool
    def search(query: str) -> str:
        return cite_documents(index.search(query))    # the model reads [[id]] markers

    agent = Agent(name="researcher", instructions=agent_instruction(), tools=[search])
    answer = cite_output(await Runner.run(agent, "What is in Paris?"))
    answer.text, answer.sources                        # "… [1] … [2]", the documents by number

    result = Runner.run_streamed(agent, answer.input_list + [{"role": "user", "content": "More?"}])
    async for ev in cite_stream(result, answer.session):  # continues at [3]
        ...                                             # TextEvent, SourceEvent, DoneEvent

A tool's documents are LangChain ``Document``s, LlamaIndex nodes, dicts (``id``, ``title``,
``url``, ``text``) or ``Source``s. ``cite_documents`` returns the text the model reads (a
``str``) that also holds them (``CitedDocuments.sources``): the run item's ``output`` keeps the
object the tool returned, so each ``tool_output`` becomes a round named by its call's
arguments. A tool that returns documents themselves (a list) gives a round too, though the
model then reads them without markers.

Provider citations: the streamed answer is read as the Responses API's events
(``response.output_text.delta`` and ``response.output_text.annotation.added``) by the engine's
``openai-responses`` reader, so ``url_citation`` and ``file_citation`` annotations (web and
file search) are numbered in the same table as the markers; a ``file_search_call``'s results
become a round (each result keyed by its ``file_id``).

The SDK sends the model only text, so the numbering of a conversation lives in the session:
pass the previous answer's ``session`` to continue it. Every number comes from the Rust engine.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from ._citeflow import DoneEvent, ListedSource, Session, Source, TextEvent
from ._event import Event
from .rounds import RoundStream, new_session, round_query, sources_from_result, tool_block

if TYPE_CHECKING:
    from agents.result import RunResult, RunResultStreaming

    from ._citeflow import _ListFormatName, _PromptMarkerName
else:
    _PromptMarkerName = str
    _ListFormatName = str

__all__ = ["CitedAnswer", "CitedDocuments", "cite_documents", "cite_output", "cite_stream"]

#: The Responses API stream events the engine reads: the answer's text and its annotations.
_PROVIDER_EVENTS = frozenset({"response.output_text.delta", "response.output_text.annotation.added"})


class CitedDocuments(str):
    """The text a tool's model reads (each document under its marker) that also holds the
    documents (``sources``)."""

    sources: list[Source]

    def __new__(cls, text: str, sources: Sequence[Source]) -> CitedDocuments:
        obj = super().__new__(cls, text)
        obj.sources = list(sources)
        return obj

    # The SDK copies a tool's output; the text is immutable and the documents are kept as they
    # are (the copy is the object).
    def __copy__(self) -> CitedDocuments:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> CitedDocuments:
        return self

    def __reduce__(self) -> tuple[Any, tuple[str, list[dict[str, Any]]]]:
        return (_rebuild, (str(self), [s.to_dict() for s in self.sources]))


def _rebuild(text: str, sources: list[dict[str, Any]]) -> CitedDocuments:
    return CitedDocuments(text, [Source.from_dict(s) for s in sources])


def cite_documents(
    documents: Any, *, marker: _PromptMarkerName = "double_bracket", max_chars: int = 1000
) -> CitedDocuments:
    """A function tool's return for its documents: what the model reads (the core's context
    block; "No results." when there are none), holding the documents for the round."""
    sources = sources_from_result(documents)
    return CitedDocuments(tool_block(sources, marker, max_chars) if sources else "No results.", sources)


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _output_sources(output: Any) -> list[Source]:
    if isinstance(output, CitedDocuments):
        return output.sources
    if isinstance(output, str):
        return sources_from_result(None, output)
    return sources_from_result(output)


def _file_search_sources(raw: Any) -> list[Source]:
    """A ``file_search_call``'s results as sources keyed by their ``file_id``."""
    out: list[Source] = []
    for r in _field(raw, "results") or []:
        file_id = _field(r, "file_id")
        if isinstance(file_id, str):
            out.append(Source(file_id, title=_field(r, "filename"), text=_field(r, "text")))
    return out


class _Reader:
    """Run items to rounds: a call's arguments name the round of its output."""

    def __init__(self, rs: RoundStream) -> None:
        self.rs = rs
        self.args: dict[str, Any] = {}

    def item(self, item: Any) -> list[Event]:
        kind = _field(item, "type")
        raw = _field(item, "raw_item")
        if kind == "tool_call_item":
            if _field(raw, "type") == "file_search_call":
                queries = _field(raw, "queries") or []
                return self.rs.add_round(_file_search_sources(raw), " ".join(str(q) for q in queries) or None)
            call_id = _field(raw, "call_id")
            arguments = _field(raw, "arguments")
            if isinstance(call_id, str) and isinstance(arguments, str):
                try:
                    self.args[call_id] = json.loads(arguments)
                except ValueError:
                    self.args[call_id] = arguments
            return []
        if kind == "tool_call_output_item":
            sources = _output_sources(_field(item, "output"))
            if not sources:
                return []
            return self.rs.add_round(sources, round_query(self.args.get(_field(raw, "call_id") or "")))
        return []


@dataclass
class CitedAnswer:
    """A run's answer numbered by citeflow: ``text`` with the numbers, ``raw`` as the model
    wrote it, ``sources`` the cited documents by number, ``events`` the engine's events,
    ``session`` (pass it on to continue the numbering), and ``input_list`` the run's
    ``to_input_list()`` for the next turn."""

    text: str
    raw: str
    sources: list[ListedSource]
    events: list[Event]
    session: Session
    input_list: list[Any] = field(default_factory=list)
    done: Optional[DoneEvent] = field(default=None, repr=False)

    def render_sources(self, format: _ListFormatName = "markdown") -> str:
        """The cited sources as a list grouped by round with its query."""
        if self.done is None:
            return ""
        return RoundStream(self.session).render_sources(self.done, format)


def _answer(rs: RoundStream, raw: str, events: list[Event], input_list: list[Any]) -> CitedAnswer:
    done = next((e for e in reversed(events) if isinstance(e, DoneEvent)), None)
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    if done is not None and done.text is not None:
        text = done.text
    return CitedAnswer(
        text=text,
        raw=raw,
        sources=list(done.sources) if done else [],
        events=events,
        session=rs.session,
        input_list=input_list,
        done=done,
    )


def _message_events(item: Any) -> list[dict[str, Any]]:
    """A message output item as the Responses stream events that carry its text and its
    annotations, in order."""
    out: list[dict[str, Any]] = []
    for part in _field(_field(item, "raw_item"), "content") or []:
        if _field(part, "type") != "output_text":
            continue
        out.append({"type": "response.output_text.delta", "delta": _field(part, "text") or ""})
        for a in _field(part, "annotations") or []:
            dump = a.model_dump() if hasattr(a, "model_dump") else dict(a)
            out.append({"type": "response.output_text.annotation.added", "annotation": dump})
    return out


def cite_output(result: RunResult, session: Optional[Session] = None) -> CitedAnswer:
    """``Runner.run(...)``'s result numbered: its tool outputs are the rounds, its last
    message (``final_output`` and its annotations) the answer. ``session`` (an earlier
    answer's) continues its numbering."""
    rs = RoundStream(session if session is not None else new_session())
    reader = _Reader(rs)
    events: list[Event] = []
    items: Iterable[Any] = result.new_items
    messages = [i for i in items if _field(i, "type") == "message_output_item"]
    last = messages[-1] if messages else None
    for item in result.new_items:
        if item is last:
            events += rs.feed_provider_events(_message_events(item))
        else:
            events += reader.item(item)
    if last is None and isinstance(result.final_output, str):
        events += rs.feed(result.final_output)
    events += rs.finish()
    raw = result.final_output if isinstance(result.final_output, str) else str(result.final_output)
    return _answer(rs, raw, events, result.to_input_list())


async def cite_stream(result: RunResultStreaming, session: Optional[Session] = None) -> AsyncIterator[Event]:
    """citeflow's events for ``Runner.run_streamed(...)``: each ``tool_output`` with documents
    (and each file search's results) a round, the answer's text deltas and annotations
    rewritten with one numbering, a ``DoneEvent`` at the end. ``session`` (an earlier
    answer's) continues its numbering."""
    rs = RoundStream(session if session is not None else new_session())
    reader = _Reader(rs)
    async for event in result.stream_events():
        kind = _field(event, "type")
        if kind == "raw_response_event":
            data = _field(event, "data")
            if _field(data, "type") in _PROVIDER_EVENTS:
                for ev in rs.feed_provider_events([data.model_dump() if hasattr(data, "model_dump") else data]):
                    yield ev
        elif kind == "run_item_stream_event":
            for ev in reader.item(_field(event, "item")):
                yield ev
    for ev in rs.finish():
        yield ev
