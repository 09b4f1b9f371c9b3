"""LangChain: agents whose search tools share one numbering, streamed text rewritten, and a
book's passages as ``Document``s.

``langchain-core`` is imported when this module is, not by ``import citeflow``; ``langchain``
(v1) and ``langgraph`` only when ``CiteflowMiddleware`` or ``CiteflowTransformer`` is used.

Agents (``langchain.agents.create_agent``)::

    from citeflow.langchain import CiteflowMiddleware, messages_stream

    agent = create_agent(model, tools=[search], middleware=[CiteflowMiddleware()],
                         checkpointer=InMemorySaver())
    session = session_from_state(agent.get_state(config).values)   # this thread's numbering
    stream = agent.stream({"messages": [question]}, config, stream_mode="messages")
    for ev in messages_stream(stream, session):
        ...                               # TextEvent (rewritten text), SourceEvent, ..., DoneEvent

Claim anchors: with ``CiteflowMiddleware(anchors=True)`` and ``session_from_state(...,
anchors=True)`` the stream's events include an ``AnchorEvent`` per citation as soon as its
sentence closes (the sentence of the tool's document that supports it, ``support``,
``verdict``), the ``DoneEvent``'s list carries each source's anchors, and the answer's
``AIMessage`` in the agent state carries them in ``additional_kwargs["citeflow"]``
(``{"text": rendered answer, "anchors": [...], "sources": [...]}``, the core's JSON forms).

The middleware turns each tool result (its artifact, or JSON content) into a round named by the
call's arguments and shows the model each passage under its marker; ``messages_stream`` turns
the ``ToolMessage``s of the stream into the same rounds and rewrites the AI message chunks.
See docs/langchain.md.

Books::

    from citeflow.langchain import EpubLoader

    docs = EpubLoader("alice.epub").load()
    docs[0].page_content                 # the passage text, cut as ``citeflow ingest`` cuts it
    docs[0].metadata                     # flat: passage_id, book_id, chapter_index, chapter_title, cfi, ...
    docs[0].id                           # the passage id (``<book_key>#p<n>``)

The metadata is flat (str and int values), so any vector store can filter on it
(``chapter_index``, ``book_id``, ...); keys whose value would be None (an untitled chapter's
``chapter_title``) are left out. Retrieved documents go to ``citeflow.context`` for the prompt
and the session.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, Optional, Union

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage

from ._citeflow import Book, Passage, Session, Source
from .adapters import langchain_provider_events
from .rounds import (
    CITEFLOW_KEY,
    ROUND_KEY,
    Event,
    RoundStream,
    adrive,
    drive,
    round_record,
    session_from_records,
    sources_from_result,
)

__all__ = [
    "CiteflowMiddleware",
    "CITEFLOW_KEY",
    "CiteflowTransformer",
    "EpubLoader",
    "NUMBERING_KEY",
    "amessages_stream",
    "message_round",
    "messages_stream",
    "passage_document",
    "session_from_state",
]

#: The agent state key holding the numbering (its JSON), kept by a checkpointer.
NUMBERING_KEY = "citeflow_numbering"


def __getattr__(name: str) -> Any:
    # CiteflowMiddleware and CiteflowTransformer (citeflow._langchain_agent) need langchain v1
    # and langgraph; they are imported on first use, so EpubLoader needs langchain-core only.
    if name in ("CiteflowMiddleware", "CiteflowTransformer"):
        from . import _langchain_agent

        return getattr(_langchain_agent, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    records = [
        r
        for m in state.get("messages") or []
        if isinstance(m, ToolMessage)
        for r in [message_round(m)]
        if r is not None
    ]
    settings = session.settings if session is not None else None
    return session_from_records(
        records,
        numbering=state.get(NUMBERING_KEY),
        style=settings.style if settings is not None else style,
        settings=settings,
        anchors=anchors,
    )


def _item_message(item: Any) -> Any:
    """The message of one ``stream_mode="messages"`` item: ``(message, metadata)``, or
    ``("messages", (message, metadata))`` when several modes are streamed."""
    if isinstance(item, tuple) and len(item) == 2:
        if item[0] == "messages" and isinstance(item[1], tuple):
            return item[1][0]
        if isinstance(item[0], str):
            return None
        return item[0]
    return item


def _step(rs: RoundStream, item: Any) -> list[Event]:
    message = _item_message(item)
    if isinstance(message, ToolMessage):
        r = message_round(message)
        if r is None:
            return []
        sources = [Source.from_dict(s) for s in r.get("sources") or []]
        return rs.add_round(sources, r.get("query"))
    if isinstance(message, (AIMessageChunk, AIMessage)):
        # The text blocks with their provider-native citations (LangChain's standard
        # ``citation`` annotations, from Anthropic's ``citations`` or OpenAI's ``annotations``),
        # read by a ProviderStream: the citations are numbered in the session's table.
        return rs.feed_provider_events(langchain_provider_events(message))
    return []


def messages_stream(stream: Iterable[Any], session: Optional[Session] = None) -> Iterator[Event]:
    """citeflow's events for a ``graph.stream(..., stream_mode="messages")`` stream: tool
    messages become rounds of ``session`` (a new session-scope one when None), AI message
    chunks are rewritten, the provider citations in their content blocks numbered in the same
    table; a ``DoneEvent`` ends it."""
    return drive(stream, _step, session)


def amessages_stream(stream: AsyncIterable[Any], session: Optional[Session] = None) -> AsyncIterator[Event]:
    """``messages_stream`` for ``graph.astream(..., stream_mode="messages")``."""
    return adrive(stream, _step, session)


def passage_document(passage: Passage) -> Document:
    """One passage as a ``Document``: its text, flat metadata, and its id."""
    return Document(page_content=passage.text, metadata=passage.metadata(), id=passage.id)


class EpubLoader(BaseLoader):
    """Loads an EPUB (a path, its bytes, or an opened ``citeflow.epub.Book``) as one
    ``Document`` per passage, cut with the options ``citeflow ingest`` takes (defaults: 800
    characters, 100 of overlap, ruby readings left out)."""

    def __init__(
        self,
        source: Union[str, os.PathLike[str], bytes, bytearray, Book],
        *,
        target_chars: int = 800,
        overlap_chars: int = 100,
        ruby_text: bool = False,
    ) -> None:
        self.source = source
        self.target_chars = target_chars
        self.overlap_chars = overlap_chars
        self.ruby_text = ruby_text

    def book(self) -> Book:
        """The book (opened now unless an opened ``Book`` was given)."""
        return self.source if isinstance(self.source, Book) else Book.open(self.source)

    def lazy_load(self) -> Iterator[Document]:
        """One ``Document`` per passage, in reading order."""
        passages = self.book().passages(
            target_chars=self.target_chars, overlap_chars=self.overlap_chars, ruby_text=self.ruby_text
        )
        for p in passages:
            yield passage_document(p)
