"""Search rounds and streamed text, for the framework helpers (no framework imported).

An agent's answer is text streamed between tool results: each search's results become a round
of the session, and the text is rewritten by the engine with one numbering across the rounds.
``RoundStream`` drives that: ``add_round`` for a tool result, ``feed`` for a text delta,
``finish`` at the end, each returning the engine's events::

    from citeflow.rounds import RoundStream, sources_from_result

    rs = RoundStream()                                  # session scope, [[id]] markers, [n]
    rs.add_round(sources_from_result(docs), query="Seine river Paris")
    for delta in model_deltas:
        for ev in rs.feed(delta): ...                   # TextEvent, SourceEvent, CitationEvent
    done = rs.finish()[-1]                              # DoneEvent
    rs.render_sources(done, "markdown")                 # the list grouped by round with its query

With ``anchors=True`` (``new_session(anchors=True)``, or a session whose settings have it) the
events include an ``AnchorEvent`` per citation as soon as its sentence closes (the quote of the
source that supports it, ``support``, ``verdict``); ``rs.anchors`` keeps every anchor of the
answer, and each source of the ``DoneEvent`` list its own (``ListedSource.anchors``).

``citeflow.langchain``, ``citeflow.chainlit`` and ``citeflow.llamaindex`` only translate their
framework's types to these calls; every number comes from the Rust engine.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from ._citeflow import (
    AnchorEvent,
    CitationEvent,
    DoneEvent,
    Numbering,
    NumberNeededEvent,
    ProviderStream,
    Session,
    Settings,
    Source,
    SourceEvent,
    TextEvent,
    UnresolvedEvent,
    context_block,
    prompt_settings,
    render_list,
)
from ._event import Event
from .context import to_sources

if TYPE_CHECKING:
    from ._citeflow import _DialectName, _ListFormatName, _PromptMarkerName
else:
    _PromptMarkerName = str
    _ListFormatName = str
    _DialectName = str


__all__ = [
    "CITEFLOW_KEY",
    "Event",
    "ROUND_KEY",
    "RoundStream",
    "agent_instruction",
    "answer_record",
    "new_session",
    "round_query",
    "round_record",
    "session_from_records",
    "sources_from_result",
    "tool_block",
]

#: Where a tool message carries its round (``{"query": ..., "sources": [source dicts]}``): the
#: key of ``ToolMessage.additional_kwargs`` (LangChain) the middleware writes.
ROUND_KEY = "citeflow_round"

#: Where an answer message carries what citeflow made of it when anchors are on (``{"text":
#: rendered answer, "anchors": [anchor dicts], "sources": [listed source dicts]}``): the key of
#: ``AIMessage.additional_kwargs`` (LangChain) and of a LlamaIndex response's ``metadata``.
CITEFLOW_KEY = "citeflow"


def new_session(
    *,
    style: str = "brackets",
    marker: _PromptMarkerName = "double_bracket",
    numbering: Optional[Numbering] = None,
    settings: Optional[Settings] = None,
    anchors: Optional[bool] = None,
) -> Session:
    """A session-scope session whose scanner reads ``marker`` and renders ``style``
    (``brackets`` → ``[1]``, ``full_width`` → ``【1】``); ``anchors`` turns claim anchors on or
    off (None keeps ``settings``'s)."""
    return Session(
        scope="session", settings=prompt_settings(marker, settings), style=style, numbering=numbering, anchors=anchors
    )


def _hit(item: Any) -> Any:
    """A search hit as a document the context module reads: a dict without an id but with a
    ``url`` gets the url as its id."""
    if isinstance(item, Mapping) and not any(k in item for k in ("id", "passage_id", "metadata")):
        if "url" in item:
            return {**item, "id": item["url"]}
    return item


def sources_from_result(artifact: Any, content: Any = None) -> list[Source]:
    """The sources of one tool result: its artifact (a list of LangChain ``Document``s,
    LlamaIndex nodes, dicts or ``Source``s, or one of them), else its content when that is a
    JSON list (or object) of results. Empty when neither holds any."""
    if artifact is not None:
        items = artifact if isinstance(artifact, (list, tuple)) else [artifact]
        try:
            return to_sources(_hit(i) for i in items)
        except (TypeError, ValueError):
            pass
    if isinstance(content, str):
        try:
            parsed = json.loads(content)
        except ValueError:
            return []
        if isinstance(parsed, Mapping):
            for key in ("results", "documents", "hits"):
                if isinstance(parsed.get(key), list):
                    parsed = parsed[key]
                    break
            else:
                parsed = [parsed]
        if isinstance(parsed, list) and all(isinstance(p, Mapping) for p in parsed):
            try:
                return to_sources(_hit(p) for p in parsed)
            except (TypeError, ValueError):
                return []
    return []


def round_query(args: Any) -> str:
    """A round's name from a tool call's arguments: its ``query`` (or the one argument), else
    the arguments as JSON."""
    if isinstance(args, Mapping):
        for key in ("query", "q", "question", "input"):
            if isinstance(args.get(key), str):
                return str(args[key])
        if len(args) == 1:
            return str(next(iter(args.values())))
        return json.dumps(args, ensure_ascii=False, sort_keys=True)
    return "" if args is None else str(args)


def round_record(sources: Sequence[Source], query: Optional[str]) -> dict[str, Any]:
    """A round as plain JSON data (to carry in a message or a checkpoint)."""
    return {"query": query, "sources": [s.to_dict() for s in sources]}


def session_from_records(
    records: Iterable[Mapping[str, Any]],
    *,
    numbering: Optional[Union[Numbering, str]] = None,
    style: str = "brackets",
    marker: _PromptMarkerName = "double_bracket",
    settings: Optional[Settings] = None,
    anchors: Optional[bool] = None,
) -> Session:
    """A session with these rounds (``round_record``s, in order) and this numbering (a
    ``Numbering`` or its JSON)."""
    if isinstance(numbering, str):
        numbering = Numbering.from_json(numbering)
    session = new_session(style=style, marker=marker, numbering=numbering, settings=settings, anchors=anchors)
    for r in records:
        session.append_round([Source.from_dict(s) for s in r.get("sources") or []], query=r.get("query"))
    return session


def answer_record(events: Sequence[Event]) -> dict[str, Any]:
    """What citeflow made of one answer, as plain JSON data (``CITEFLOW_KEY``'s value): the
    rendered text, every anchor in order, and the cited sources of the ``DoneEvent`` (each with
    its anchors)."""
    done = next((e for e in reversed(events) if isinstance(e, DoneEvent)), None)
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    if done is not None and done.text is not None:
        text = done.text
    return {
        "text": text,
        "anchors": [e.to_dict() for e in events if isinstance(e, AnchorEvent)],
        "sources": [s.to_dict() for s in done.sources] if done is not None else [],
    }


def tool_block(sources: Sequence[Source], marker: _PromptMarkerName = "double_bracket", max_chars: int = 1000) -> str:
    """What the model reads as a tool's result: each source under the marker it must cite (the
    core's context block)."""
    return context_block(list(sources), marker, max_chars_per_source=max_chars)


def agent_instruction(marker: _PromptMarkerName = "double_bracket") -> str:
    """The citation instruction for an agent whose tools return sources under markers."""
    one = context_block([Source("source_1")], marker).split(" ", 1)[0]
    two = context_block([Source("source_1"), Source("source_2")], marker).split("\n")[1].split(" ", 1)[0]
    return (
        "Search results show each source after its marker, for example "
        f"{one}. After each sentence that uses a source, write that source's marker exactly as "
        f"shown; cite several sources as {one}{two}. Do not invent markers."
    )


class RoundStream:
    """One answer streamed between search rounds, numbered by the engine.

    Call ``add_round`` for each tool result, ``feed`` for each text delta, and ``finish`` once
    at the end; each returns the events to show. Text fed before a round is added is finished
    (without a ``DoneEvent``) so that the next text sees the new round; the one ``DoneEvent``
    comes from ``finish``. The session is in session scope, so its numbering continues in the
    next answer (``session.numbering``).

    With anchors on (the session's settings), ``anchors`` holds every ``AnchorEvent`` the
    answer gave, in order. A claim's offsets are in the text rewritten since the last round
    was added (the whole answer when the rounds all come before its text, as in an agent's
    final answer)."""

    def __init__(self, session: Optional[Session] = None) -> None:
        self.session = session if session is not None else new_session()
        self.anchors: list[AnchorEvent] = []
        self._rw: Any = None
        # Once the answer brings provider citations: the answer's rewriter continued by a
        # ``ProviderStream`` (``Rewriter.provider_stream``), which reads the rest of it.
        self._ps: Optional[ProviderStream] = None

    def add_round(self, sources: Sequence[Source], query: Optional[str] = None) -> list[Event]:
        """Registers a round; returns the events that ended the text before it."""
        events = self._close()
        if sources:
            self.session.append_round(list(sources), query=query)
        return events

    def feed(self, text: str) -> list[Event]:
        """The events of one text delta."""
        if not text:
            return []
        if self._ps is not None:
            # A JSON string payload is a chunk of answer text, in the provider's current part.
            return self._kept(self._ps.feed_event(json.dumps(text)))
        if self._rw is None:
            self._rw = self.session.rewriter()
        return self._kept(self._rw.feed(text))

    def _kept(self, events: list[Event]) -> list[Event]:
        self.anchors.extend(e for e in events if isinstance(e, AnchorEvent))
        return events

    def feed_provider_events(
        self, events: Iterable[Mapping[str, Any]], dialect: _DialectName = "openai-responses"
    ) -> list[Event]:
        """The events of a provider's stream events of ``dialect`` (text deltas with their
        citations): this answer is then read by a ``ProviderStream`` that continues its
        rewriter (``Rewriter.provider_stream``), so the provider's citations are numbered in the
        session's table with the markers. Feed the whole answer this way, from its first text,
        so that each citation finds the text it cites."""
        items = list(events)
        if not items:
            return []
        if self._ps is None:
            if self._rw is None:
                self._rw = self.session.rewriter()
            self._ps = self._rw.provider_stream(dialect=dialect)
        out: list[Event] = []
        for ev in items:
            out.extend(self._ps.feed_event(ev))
        return self._kept(out)

    def _end(self) -> list[Event]:
        if self._ps is not None:
            events: list[Event] = self._ps.finish()
        else:
            if self._rw is None:
                self._rw = self.session.rewriter()
            events = self._rw.finish()
        self._rw = None
        self._ps = None
        return self._kept(events)

    def finish(self) -> list[Event]:
        """The last events, ending with the ``DoneEvent``."""
        return self._end()

    def _close(self) -> list[Event]:
        if self._rw is None:
            return []
        return [e for e in self._end() if not isinstance(e, DoneEvent)]

    def render_sources(self, done: DoneEvent, format: _ListFormatName = "markdown") -> str:
        """The cited sources of ``done`` as a list grouped by round with its query."""
        return render_list(done.sources, format, self.session.rounds())


def drive(
    items: Iterable[Any], step: Callable[[RoundStream, Any], list[Event]], session: Optional[Session] = None
) -> Iterator[Event]:
    """The events of a framework's stream: each item through ``step`` on one ``RoundStream``
    of ``session``, then the end (a ``DoneEvent``)."""
    rs = RoundStream(session)
    for item in items:
        yield from step(rs, item)
    yield from rs.finish()


async def adrive(
    items: AsyncIterable[Any], step: Callable[[RoundStream, Any], list[Event]], session: Optional[Session] = None
) -> AsyncIterator[Event]:
    """``drive`` for an async stream."""
    rs = RoundStream(session)
    async for item in items:
        for ev in step(rs, item):
            yield ev
    for ev in rs.finish():
        yield ev
