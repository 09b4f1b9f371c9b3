"""An agent's ``stream_mode="messages"`` stream as citeflow's events, and an agent state's
session (needs ``langchain-core``).

``messages_stream`` turns the ``ToolMessage``s of the stream into rounds and rewrites the AI
message chunks. Without a session it continues the thread's numbering by itself: the model
calls of an agent with ``CiteflowMiddleware`` carry the thread's rounds and numbering in their
run metadata (``THREAD_KEY``), which LangGraph hands out with every streamed chunk.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Optional

from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage

from .._citeflow import Session, Source
from .._event import Event
from ..rounds import ROUND_KEY, RoundStream, new_session, round_record, session_from_records, sources_from_result
from .chat_model import langchain_provider_events

if TYPE_CHECKING:
    from .._citeflow import _PromptMarkerName

__all__ = [
    "NUMBERING_KEY",
    "SOURCES_KEY",
    "THREAD_KEY",
    "MessagesFeed",
    "amessages_stream",
    "message_round",
    "messages_stream",
    "session_from_state",
    "session_from_thread",
    "thread_record",
]

#: The agent state key holding the numbering (its JSON), kept by a checkpointer.
NUMBERING_KEY = "citeflow_numbering"

#: The agent state key holding the last answer's cited sources (``ListedSource`` dicts, in the
#: order of their numbers).
SOURCES_KEY = "citeflow_sources"

#: The run metadata key under which ``CiteflowMiddleware`` hands the thread's session to its
#: model calls (``thread_record``): streamed chunks carry it, so the stream adapters continue
#: the thread's numbering without being given a session.
THREAD_KEY = "citeflow_thread"


def message_round(message: ToolMessage) -> Optional[dict[str, Any]]:
    """The round a tool message carries: the one ``CiteflowMiddleware`` put in its
    ``additional_kwargs``, else one read from its artifact or JSON content (named by the tool);
    None when it holds no sources."""
    carried = message.additional_kwargs.get(ROUND_KEY)
    if isinstance(carried, Mapping):
        return dict(carried)
    sources = sources_from_result(message.artifact, message.content)
    if not sources:
        return None
    return round_record(sources, message.name)


def _state_records(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        r
        for m in state.get("messages") or []
        if isinstance(m, ToolMessage)
        for r in [message_round(m)]
        if r is not None
    ]


def session_from_state(
    state: Mapping[str, Any],
    *,
    style: str = "brackets",
    session: Optional[Session] = None,
    anchors: Optional[bool] = None,
) -> Session:
    """The session of an agent state (``agent.get_state(config).values``): the rounds of its
    tool messages, in order, and the numbering kept under ``NUMBERING_KEY``. ``session`` gives
    the settings (style, markers, anchors) when set; ``anchors`` turns claim anchors on or off
    (None keeps ``session``'s settings)."""
    settings = session.settings if session is not None else None
    return session_from_records(
        _state_records(state),
        numbering=state.get(NUMBERING_KEY),
        style=settings.style if settings is not None else style,
        settings=settings,
        anchors=anchors,
    )


def thread_record(
    state: Mapping[str, Any],
    *,
    style: str = "brackets",
    marker: _PromptMarkerName = "double_bracket",
    anchors: bool = False,
) -> dict[str, Any]:
    """An agent state's session as plain JSON data (``THREAD_KEY``'s value): its rounds, its
    numbering and the settings the answer is rendered with."""
    return {
        "rounds": _state_records(state),
        "numbering": state.get(NUMBERING_KEY),
        "style": style,
        "marker": marker,
        "anchors": anchors,
    }


def session_from_thread(record: Mapping[str, Any]) -> Session:
    """The session a ``thread_record`` describes."""
    return session_from_records(
        record.get("rounds") or [],
        numbering=record.get("numbering"),
        style=str(record.get("style") or "brackets"),
        marker=record.get("marker") or "double_bracket",
        anchors=bool(record.get("anchors")),
    )


def _split(item: Any) -> tuple[Any, Any]:
    """The message and metadata of one ``stream_mode="messages"`` item: ``(message,
    metadata)``, or ``("messages", (message, metadata))`` when several modes are streamed; a
    message of another mode is None."""
    if isinstance(item, tuple) and len(item) == 2:
        if item[0] == "messages" and isinstance(item[1], tuple):
            return item[1][0], item[1][1] if len(item[1]) > 1 else None
        if isinstance(item[0], str):
            return None, None
        return item[0], item[1]
    return item, None


class MessagesFeed:
    """One run's messages, read one at a time (``step``), then ``finish``: the engine behind
    ``messages_stream`` and ``CiteflowTransformer``.

    With ``session`` None, the session is the thread's when the first message that counts
    carries it in its metadata (``THREAD_KEY``, from ``CiteflowMiddleware``), else a new
    session-scope one (with claim anchors when ``anchors``)."""

    def __init__(self, session: Optional[Session] = None, *, anchors: Optional[bool] = None) -> None:
        self._session = session
        self._anchors = anchors
        self._rs: Optional[RoundStream] = None

    def stream(self, metadata: Any = None) -> RoundStream:
        """The answer's ``RoundStream`` (made on first use, from ``metadata``'s thread)."""
        if self._rs is None:
            session = self._session
            if session is None and isinstance(metadata, Mapping):
                thread = metadata.get(THREAD_KEY)
                if isinstance(thread, Mapping):
                    session = session_from_thread(thread)
            if session is None and self._anchors is not None:
                session = new_session(anchors=self._anchors)
            self._rs = RoundStream(session)
        return self._rs

    def step(self, item: Any) -> list[Event]:
        """The events of one stream item."""
        message, metadata = _split(item)
        return self.message(message, metadata)

    def message(self, message: Any, metadata: Any = None) -> list[Event]:
        """The events of one message: a tool message's round, an AI message's text."""
        if isinstance(message, ToolMessage):
            r = message_round(message)
            if r is None:
                return []
            sources = [Source.from_dict(s) for s in r.get("sources") or []]
            return self.stream(metadata).add_round(sources, r.get("query"))
        if isinstance(message, (AIMessageChunk, AIMessage)):
            # The first model call (a tool call, often without text) carries the thread.
            rs = self.stream(metadata)
            content = message.content
            if isinstance(content, str):
                # Text alone (a str content has no citation annotations): straight to the
                # engine, without LangChain's block translation or an event dict per chunk.
                return rs.feed(content) if content else []
            # The text blocks with their provider-native citations (LangChain's standard
            # ``citation`` annotations, from Anthropic's ``citations`` or OpenAI's
            # ``annotations``), read by a ProviderStream: numbered in the session's table.
            return rs.feed_provider_events(langchain_provider_events(message))
        return []

    def text(self, text: str, metadata: Any = None) -> list[Event]:
        """The events of one text delta."""
        return self.stream(metadata).feed(text)

    def finish(self) -> list[Event]:
        """The last events, ending with the ``DoneEvent``."""
        return self.stream().finish()


def messages_stream(stream: Iterable[Any], session: Optional[Session] = None) -> Iterator[Event]:
    """citeflow's events for a ``graph.stream(..., stream_mode="messages")`` stream: tool
    messages become rounds of the session, AI message chunks are rewritten, the provider
    citations in their content blocks numbered in the same table; a ``DoneEvent`` ends it.

    ``session`` None: the thread's session when the agent has ``CiteflowMiddleware`` (so a
    checkpointed thread's second turn continues its numbers), else a new session-scope one."""
    feed = MessagesFeed(session)
    for item in stream:
        yield from feed.step(item)
    yield from feed.finish()


async def amessages_stream(stream: AsyncIterable[Any], session: Optional[Session] = None) -> AsyncIterator[Event]:
    """``messages_stream`` for ``graph.astream(..., stream_mode="messages")``."""
    feed = MessagesFeed(session)
    async for item in stream:
        for ev in feed.step(item):
            yield ev
    for ev in feed.finish():
        yield ev
