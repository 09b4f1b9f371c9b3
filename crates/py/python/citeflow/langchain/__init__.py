"""LangChain: agents whose search tools share one numbering, streamed text rewritten, chat model
streams with their citations, and a book's passages as ``Document``s.

This module only re-exports; each name is imported from its module on first use, so
``from citeflow.langchain import EpubLoader`` needs ``langchain-core`` only, and
``CiteflowMiddleware`` / ``CiteflowTransformer`` need ``langchain`` (v1) and ``langgraph``
(``pip install 'citeflow[langchain]'`` / ``'citeflow[langgraph]'``). ``import citeflow``
imports none of them.

- ``citeflow.langchain.agent``: ``CiteflowMiddleware``, ``CiteflowState``,
  ``CiteflowTransformer``.
- ``citeflow.langchain.messages``: ``messages_stream`` / ``amessages_stream``,
  ``session_from_state``, ``message_round`` and the state keys.
- ``citeflow.langchain.chat_model``: ``langchain_stream``, ``langchain_citations_stream`` (a
  chat model's own stream; also in ``citeflow.adapters``).
- ``citeflow.langchain.documents``: ``EpubLoader``, ``passage_document``.

Agents (``langchain.agents.create_agent``)::

    from citeflow.langchain import CiteflowMiddleware, messages_stream

    agent = create_agent(model, tools=[search], middleware=[CiteflowMiddleware()],
                         checkpointer=InMemorySaver())
    result = agent.invoke({"messages": [question]}, config)
    result["messages"][-1].content        # the answer with its numbers: "... Paris [1]."
    result["citeflow_sources"]            # the cited sources, in the order of their numbers

    stream = agent.stream({"messages": [question]}, config, stream_mode="messages")
    for ev in messages_stream(stream):    # continues this thread's numbering
        ...                               # TextEvent (rewritten text), SourceEvent, ..., DoneEvent

Claim anchors: with ``CiteflowMiddleware(anchors=True)`` the stream's events include an
``AnchorEvent`` per citation as soon as its sentence closes, the ``DoneEvent``'s list carries
each source's anchors, and the answer's ``AIMessage`` carries them in
``additional_kwargs["citeflow"]`` (``{"text", "raw", "anchors", "sources"}``, the core's JSON
forms). See docs/langchain.md.

Books::

    from citeflow.langchain import EpubLoader

    docs = EpubLoader("alice.epub").load()
    docs[0].page_content                 # the passage text, cut as ``citeflow ingest`` cuts it
    docs[0].metadata                     # flat: passage_id, book_id, chapter_index, chapter_title, cfi, ...
    docs[0].id                           # the passage id (``<book_key>#p<n>``)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..rounds import CITEFLOW_KEY
    from .agent import CiteflowMiddleware, CiteflowState, CiteflowTransformer
    from .chat_model import (
        langchain_astream,
        langchain_chunk_text,
        langchain_citations_astream,
        langchain_citations_stream,
        langchain_provider_events,
        langchain_stream,
    )
    from .documents import EpubLoader, passage_document
    from .messages import (
        NUMBERING_KEY,
        SOURCES_KEY,
        THREAD_KEY,
        amessages_stream,
        message_round,
        messages_stream,
        session_from_state,
    )

#: Each public name and the module it lives in (imported on first use).
_module_lookup = {
    "CITEFLOW_KEY": "citeflow.rounds",
    "CiteflowMiddleware": "citeflow.langchain.agent",
    "CiteflowState": "citeflow.langchain.agent",
    "CiteflowTransformer": "citeflow.langchain.agent",
    "langchain_astream": "citeflow.langchain.chat_model",
    "langchain_chunk_text": "citeflow.langchain.chat_model",
    "langchain_citations_astream": "citeflow.langchain.chat_model",
    "langchain_citations_stream": "citeflow.langchain.chat_model",
    "langchain_provider_events": "citeflow.langchain.chat_model",
    "langchain_stream": "citeflow.langchain.chat_model",
    "EpubLoader": "citeflow.langchain.documents",
    "passage_document": "citeflow.langchain.documents",
    "NUMBERING_KEY": "citeflow.langchain.messages",
    "SOURCES_KEY": "citeflow.langchain.messages",
    "THREAD_KEY": "citeflow.langchain.messages",
    "amessages_stream": "citeflow.langchain.messages",
    "message_round": "citeflow.langchain.messages",
    "messages_stream": "citeflow.langchain.messages",
    "session_from_state": "citeflow.langchain.messages",
}

__all__ = [
    "CITEFLOW_KEY",
    "CiteflowMiddleware",
    "CiteflowState",
    "CiteflowTransformer",
    "EpubLoader",
    "NUMBERING_KEY",
    "SOURCES_KEY",
    "THREAD_KEY",
    "amessages_stream",
    "langchain_astream",
    "langchain_chunk_text",
    "langchain_citations_astream",
    "langchain_citations_stream",
    "langchain_provider_events",
    "langchain_stream",
    "message_round",
    "messages_stream",
    "passage_document",
    "session_from_state",
]


def __getattr__(name: str) -> Any:
    if name in _module_lookup:
        value = getattr(importlib.import_module(_module_lookup[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return list(__all__)
