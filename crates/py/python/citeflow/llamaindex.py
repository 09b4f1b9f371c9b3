"""LlamaIndex: a streaming ``CitationQueryEngine`` answer renumbered by document, agent workflow
events numbered across tool calls, and a book's passages as ``TextNode``s.

``llama-index-core`` is imported when this module is, not by ``import citeflow``.

``CitationQueryEngine`` numbers its chunks by position (``Source 1:``, ``Source 2:``, ...), so
one document cut in several chunks gets several numbers. ``citation_stream`` rewrites the
streamed answer so that every document has one number, dense, in order of first citation::

    from citeflow.llamaindex import citation_stream

    engine = CitationQueryEngine.from_args(index, streaming=True)
    response = engine.query("What is in Paris?")
    for ev in citation_stream(response, query="What is in Paris?"):
        ...                     # TextEvent "... [1] ... [2]", SourceEvent, CitationEvent, DoneEvent

The sources are the response's ``source_nodes`` in their order (rank ``n`` is ``Source n``),
each keyed by its ``ref_doc_id``: the engine gives chunks of one document one number.

Claim anchors: ``citation_stream(response, anchors=True)`` (or a session whose settings have
anchors on) adds an ``AnchorEvent`` per citation as soon as its sentence closes: the sentence
of the cited node's text that supports it, ``support`` and ``verdict``. When the stream ends the
response's ``metadata["citeflow"]`` holds the rendered answer, its anchors and the cited sources
with theirs (the core's JSON forms). ``workflow_events(..., session)`` streams the anchors of a
session with anchors on the same way.

Not streamed: ``cite_response(engine.query(question), query=question)`` numbers the response
in place (``str(response)`` shows ``[1]``; ``metadata["citeflow"]["raw"]`` keeps the model's
own answer).

Agent workflows (``FunctionAgent``, ``AgentWorkflow``): ``workflow_events`` /
``aworkflow_events`` turn ``handler.stream_events()`` into citeflow's events, each
``ToolCallResult`` whose output holds sources becoming a round (named by the call's arguments)
and each ``AgentStream.delta`` rewritten.

Books::

    from citeflow.llamaindex import load_nodes

    nodes = load_nodes("alice.epub")
    nodes[0].text, nodes[0].node_id      # the passage text and id (``<book_key>#p<n>``)
    nodes[0].metadata                    # flat: passage_id, book_id, chapter_index, chapter_title, cfi, ...

The metadata is kept out of the text LlamaIndex embeds and shows the model
(``excluded_embed_metadata_keys`` / ``excluded_llm_metadata_keys``): the CFI would only add
noise to an embedding; ``citeflow.context`` puts chapter and CFI into the prompt itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from llama_index.core.schema import NodeWithScore, TextNode

from ._citeflow import Book, Passage, Session, Source
from .context import to_source
from .rounds import (
    CITEFLOW_KEY,
    Event,
    RoundStream,
    adrive,
    answer_record,
    drive,
    new_session,
    round_query,
    sources_from_result,
    tool_block,
)

if TYPE_CHECKING:
    from ._citeflow import _PromptMarkerName
else:
    _PromptMarkerName = str

__all__ = [
    "acitation_stream",
    "aworkflow_events",
    "cite_callback",
    "cite_response",
    "citation_stream",
    "load_nodes",
    "node_sources",
    "passage_node",
    "workflow_events",
]

_SOURCE_LABEL = re.compile(r"^Source \d+:\s*")


def node_sources(nodes: Sequence[NodeWithScore]) -> list[Source]:
    """One source per node, in order (rank ``n`` is the ``n``-th node), keyed by the node's
    ``ref_doc_id`` (else its id) so that chunks of one document share a number. The
    ``Source n:`` label ``CitationQueryEngine`` puts before a chunk is left out of its text."""
    out: list[Source] = []
    for i, nws in enumerate(nodes):
        node = nws.node
        doc_id = node.ref_doc_id or node.node_id
        meta = node.metadata or {}
        try:
            base = to_source(node)
            title, url, locator = base.title, base.url, base.locator
        except (TypeError, ValueError):
            title, url, locator = None, None, None
        text = _SOURCE_LABEL.sub("", node.get_content())
        out.append(
            Source(
                f"{node.node_id}#{i + 1}",
                title=title or meta.get("title") or meta.get("file_name") or doc_id,
                url=url or meta.get("url"),
                text=text,
                locator=locator,
                key=f"doc:{doc_id}",
            )
        )
    return out


def _citation_session(
    response: Any,
    session: Optional[Session],
    marker: _PromptMarkerName,
    style: str,
    query: Optional[str],
    anchors: Optional[bool],
) -> Session:
    s = session if session is not None else new_session(marker=marker, style=style, anchors=anchors)
    s.append_round(node_sources(response.source_nodes), query=query)
    return s


def _record(response: Any, session: Session, events: list[Event]) -> None:
    """With anchors on: what citeflow made of the answer in the response's metadata."""
    if not session.settings.anchors:
        return
    metadata = getattr(response, "metadata", None)
    if metadata is None:
        metadata = {}
        response.metadata = metadata
    metadata[CITEFLOW_KEY] = answer_record(events)


def citation_stream(
    response: Any,
    session: Optional[Session] = None,
    *,
    marker: _PromptMarkerName = "rank",
    style: str = "brackets",
    query: Optional[str] = None,
    anchors: Optional[bool] = None,
) -> Iterator[Event]:
    """citeflow's events for a streaming ``CitationQueryEngine`` response (``response_gen``
    and ``source_nodes``): the model's ``[n]`` (``marker="rank"``; ``rank_full_width`` for
    ``【n】``) become one number per document. ``session`` (when given) continues its
    numbering; the round is named ``query``. ``anchors=True`` (for a new session) adds the
    claim anchors, and the response's ``metadata["citeflow"]`` holds them at the end."""
    rs = RoundStream(_citation_session(response, session, marker, style, query, anchors))
    events: list[Event] = []
    for delta in response.response_gen:
        out = rs.feed(delta)
        events += out
        yield from out
    out = rs.finish()
    events += out
    _record(response, rs.session, events)
    yield from out


async def acitation_stream(
    response: Any,
    session: Optional[Session] = None,
    *,
    marker: _PromptMarkerName = "rank",
    style: str = "brackets",
    query: Optional[str] = None,
    anchors: Optional[bool] = None,
) -> AsyncIterator[Event]:
    """``citation_stream`` for an async streaming response (``async_response_gen()``)."""
    rs = RoundStream(_citation_session(response, session, marker, style, query, anchors))
    events: list[Event] = []
    async for delta in response.async_response_gen():
        for ev in rs.feed(delta):
            events.append(ev)
            yield ev
    out = rs.finish()
    events += out
    _record(response, rs.session, events)
    for ev in out:
        yield ev


def cite_response(
    response: Any,
    session: Optional[Session] = None,
    *,
    marker: _PromptMarkerName = "rank",
    style: str = "brackets",
    query: Optional[str] = None,
    anchors: Optional[bool] = None,
) -> Any:
    """A non-streamed ``CitationQueryEngine`` response (``engine.query(...)`` without
    ``streaming``) numbered in place, and returned: its ``response`` (what ``str(response)``
    shows) becomes the answer with one number per document, and ``metadata["citeflow"]`` holds
    the answer as the model wrote it (``raw``), the rendered ``text``, the cited ``sources``
    and the claim ``anchors`` (with ``anchors=True``). ``session`` (when given) continues its
    numbering; the round is named ``query``."""
    rs = RoundStream(_citation_session(response, session, marker, style, query, anchors))
    raw = response.response or ""
    events = rs.feed(raw) + rs.finish()
    record = answer_record(events)
    record["raw"] = raw
    metadata = getattr(response, "metadata", None)
    if metadata is None:
        metadata = {}
        response.metadata = metadata
    metadata[CITEFLOW_KEY] = record
    response.response = record["text"]
    return response


def _workflow_step(rs: RoundStream, event: Any) -> list[Event]:
    name = type(event).__name__
    if name == "ToolCallResult":
        output = getattr(event, "tool_output", None)
        sources = sources_from_result(getattr(output, "raw_output", None), getattr(output, "content", None))
        if not sources:
            return []
        return rs.add_round(sources, round_query(getattr(event, "tool_kwargs", None)))
    if name == "AgentStream":
        delta = getattr(event, "delta", None)
        return rs.feed(delta) if isinstance(delta, str) else []
    return []


def cite_callback(
    marker: _PromptMarkerName = "double_bracket", max_chars_per_source: int = 1000
) -> Callable[[Any], Optional[str]]:
    """A ``FunctionTool`` callback (``FunctionTool.from_defaults(search, callback=...)``)
    showing the model each result of the search function under its marker; the results stay
    the tool output's ``raw_output``, which ``workflow_events`` makes a round."""

    def callback(raw_output: Any) -> Optional[str]:
        sources = sources_from_result(raw_output)
        return tool_block(sources, marker, max_chars_per_source) if sources else None

    return callback


def workflow_events(events: Iterable[Any], session: Optional[Session] = None) -> Iterator[Event]:
    """citeflow's events for an agent workflow's events: ``ToolCallResult`` → a round (its
    ``tool_output.raw_output``: nodes, documents, dicts, or JSON content), ``AgentStream.delta``
    → rewritten text; a ``DoneEvent`` ends it. The tools must show the model ``[[id]]``
    markers (see ``citeflow.rounds.tool_block``)."""
    return drive(events, _workflow_step, session)


def aworkflow_events(events: AsyncIterable[Any], session: Optional[Session] = None) -> AsyncIterator[Event]:
    """``workflow_events`` for ``handler.stream_events()`` (async)."""
    return adrive(events, _workflow_step, session)


def passage_node(passage: Passage) -> TextNode:
    """One passage as a ``TextNode``: its text, id and flat metadata."""
    metadata = passage.metadata()
    keys = list(metadata)
    return TextNode(
        id_=passage.id,
        text=passage.text,
        metadata=metadata,
        excluded_embed_metadata_keys=keys,
        excluded_llm_metadata_keys=keys,
    )


def load_nodes(
    source: Union[str, os.PathLike[str], bytes, bytearray, Book],
    *,
    target_chars: int = 800,
    overlap_chars: int = 100,
    ruby_text: bool = False,
) -> list[TextNode]:
    """A book's passages (cut as ``citeflow ingest`` cuts them) as ``TextNode``s."""
    book = source if isinstance(source, Book) else Book.open(source)
    passages = book.passages(target_chars=target_chars, overlap_chars=overlap_chars, ruby_text=ruby_text)
    return [passage_node(p) for p in passages]
