"""Pydantic AI: tool returns that carry documents become rounds, and an agent's answer is numbered
across its tool calls, streamed (``agent.run_stream``) or not (``agent.run``), continuing the
numbering of the message history.

``pydantic-ai-slim`` is imported when this module is, not by ``import citeflow``::

    from citeflow.pydantic_ai import cite_documents, cite_output, cite_stream
    from citeflow.rounds import agent_instruction

    agent = Agent(model, instructions=agent_instruction())

    @agent.tool_plain
    def search(query: str) -> ToolReturn:
        return cite_documents(index.search(query))   # the model reads [[id]] markers

    result = await agent.run("What is in Paris?")
    answer = cite_output(result)                      # answer.text "… [1] … [2]", answer.sources

    async with agent.run_stream("And more?", message_history=result.all_messages()) as r:
        async for ev in cite_stream(r):               # TextEvent "… [3]", SourceEvent, DoneEvent
            ...

A tool's documents are LangChain ``Document``s, LlamaIndex nodes, dicts (``id``, ``title``,
``url``, ``text``) or ``Source``s. ``cite_documents`` shows them to the model under their
markers and keeps them in the ``ToolReturnPart``'s ``metadata`` (never sent to the model);
``CiteflowToolset`` does the same for any tool of a toolset that returns documents. A tool
return without that metadata whose content is a list of documents is read as a round too.

The numbering is rebuilt from the messages: every earlier answer of the history (each final
model text, as the model wrote it) is read again by the engine with the rounds before it, so
the run's answer continues where the history's last answer stopped; a ``Session`` passed in
is used as it is instead. Every number comes from the Rust engine.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturn, ToolReturnPart
from pydantic_ai.toolsets import WrapperToolset

from ._citeflow import DoneEvent, ListedSource, Session, Source, TextEvent
from ._event import Event
from .rounds import (
    ROUND_KEY,
    RoundStream,
    new_session,
    round_query,
    round_record,
    sources_from_result,
    tool_block,
)

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.agent import AgentRunResult
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.result import StreamedRunResult
    from pydantic_ai.toolsets.abstract import ToolsetTool

    from ._citeflow import _ListFormatName, _PromptMarkerName
else:
    _PromptMarkerName = str
    _ListFormatName = str

__all__ = [
    "CitedAnswer",
    "CiteflowToolset",
    "cite_documents",
    "cite_output",
    "cite_stream",
    "session_from_messages",
]


def cite_documents(
    documents: Any, *, marker: _PromptMarkerName = "double_bracket", max_chars: int = 1000
) -> ToolReturn:
    """A tool's documents as its return: the model reads each under its marker (the core's
    context block), and the ``ToolReturnPart``'s ``metadata`` keeps them as a round
    (``{"citeflow_round": {"query": None, "sources": [...]}}``; the query is taken from the
    call's arguments). No documents: the model reads "No results."."""
    sources = sources_from_result(documents)
    text = tool_block(sources, marker, max_chars) if sources else "No results."
    return ToolReturn(return_value=text, metadata={ROUND_KEY: round_record(sources, None)})


class CiteflowToolset(WrapperToolset[Any]):
    """A toolset whose tools' documents become rounds: a tool that returns documents (see
    ``cite_documents``) returns them under their markers instead, with the round in the
    return's metadata; any other return is passed on unchanged."""

    def __init__(
        self, wrapped: Any, *, marker: _PromptMarkerName = "double_bracket", max_chars: int = 1000
    ) -> None:
        super().__init__(wrapped)
        self.marker: _PromptMarkerName = marker
        self.max_chars = max_chars

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        result = await super().call_tool(name, tool_args, ctx, tool)
        if isinstance(result, ToolReturn) or not sources_from_result(result):
            return result
        return cite_documents(result, marker=self.marker, max_chars=self.max_chars)


def _round_sources(part: ToolReturnPart) -> list[Source]:
    """The documents of one tool return: its citeflow metadata, else its content."""
    meta = part.metadata
    if isinstance(meta, Mapping) and isinstance(meta.get(ROUND_KEY), Mapping):
        return [Source.from_dict(s) for s in meta[ROUND_KEY].get("sources") or []]
    if isinstance(part.content, (list, tuple)):
        return sources_from_result(list(part.content))
    if isinstance(part.content, str):
        return sources_from_result(None, part.content)
    return []


class _Reader:
    """Reads messages in order: tool returns become rounds of ``rs`` (named by their call's
    arguments), final answers' text goes through the engine."""

    def __init__(self, rs: RoundStream) -> None:
        self.rs = rs
        self.args: dict[str, Any] = {}

    def read(self, messages: Iterable[ModelMessage], *, answers: bool) -> list[Event]:
        out: list[Event] = []
        for message in messages:
            if isinstance(message, ModelResponse):
                calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
                for c in calls:
                    self.args[c.tool_call_id] = c.args_as_dict()
                if answers and not calls:
                    for p in message.parts:
                        if isinstance(p, TextPart):
                            out += self.rs.feed(p.content)
                    # One answer ends: the next one gets its own list.
                    out += self.rs.finish()
            elif isinstance(message, ModelRequest):
                for r in message.parts:
                    if isinstance(r, ToolReturnPart):
                        sources = _round_sources(r)
                        if sources:
                            out += self.rs.add_round(sources, round_query(self.args.get(r.tool_call_id)))
        return out


def session_from_messages(
    messages: Sequence[ModelMessage], *, style: str = "brackets", marker: _PromptMarkerName = "double_bracket"
) -> Session:
    """The session that numbered these messages: their rounds, and the numbers their answers
    gave (each earlier answer read again by the engine)."""
    rs = RoundStream(new_session(style=style, marker=marker))
    _Reader(rs).read(messages, answers=True)
    return rs.session


@dataclass
class CitedAnswer:
    """An answer numbered by citeflow: ``text`` with the numbers, ``raw`` as the model wrote
    it, ``sources`` the cited documents by number (in order), ``events`` the engine's events,
    and ``session`` (its numbering continues in the next answer)."""

    text: str
    raw: str
    sources: list[ListedSource]
    events: list[Event]
    session: Session
    done: Optional[DoneEvent] = field(default=None, repr=False)

    def render_sources(self, format: _ListFormatName = "markdown") -> str:
        """The cited sources as a list grouped by round with its query."""
        if self.done is None:
            return ""
        return RoundStream(self.session).render_sources(self.done, format)


def _history_and_new(all_messages: Sequence[ModelMessage], new: Sequence[ModelMessage]) -> tuple[
    Sequence[ModelMessage], Sequence[ModelMessage]
]:
    cut = len(all_messages) - len(new)
    return all_messages[:cut], all_messages[cut:]


def _start(result: Any, session: Optional[Session]) -> tuple[RoundStream, _Reader, Sequence[ModelMessage]]:
    history, new = _history_and_new(result.all_messages(), result.new_messages())
    if session is None:
        session = session_from_messages(history)
    rs = RoundStream(session)
    reader = _Reader(rs)
    return rs, reader, new


def cite_output(result: AgentRunResult[str], session: Optional[Session] = None) -> CitedAnswer:
    """``agent.run(...)``'s result numbered: its tool returns are the rounds, its ``output``
    the answer. Without ``session``, the numbering continues the message history's."""
    rs, reader, new = _start(result, session)
    events = reader.read(new, answers=False)
    raw = result.output if isinstance(result.output, str) else str(result.output)
    events += rs.feed(raw) + rs.finish()
    return _answer(rs, raw, events)


def _answer(rs: RoundStream, raw: str, events: list[Event]) -> CitedAnswer:
    done = next((e for e in reversed(events) if isinstance(e, DoneEvent)), None)
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    if done is not None and done.text is not None:
        text = done.text
    return CitedAnswer(
        text=text, raw=raw, sources=list(done.sources) if done else [], events=events, session=rs.session, done=done
    )


async def cite_stream(
    result: StreamedRunResult[Any, str], session: Optional[Session] = None, *, debounce_by: Optional[float] = None
) -> AsyncIterator[Event]:
    """citeflow's events for ``agent.run_stream(...)``'s result: the run's tool returns are
    the rounds, ``stream_text(delta=True)`` the answer, rewritten as it streams; a
    ``DoneEvent`` (the cited sources by number) ends it. Without ``session``, the numbering
    continues the message history's."""
    rs, reader, new = _start(result, session)
    for ev in reader.read(new, answers=False):
        yield ev
    async for delta in result.stream_text(delta=True, debounce_by=debounce_by):
        for ev in rs.feed(delta):
            yield ev
    for ev in rs.finish():
        yield ev
