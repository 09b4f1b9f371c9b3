"""LangChain chat models: ``chat_model.stream(...)`` rewritten (``langchain_stream``), or read
with its citations (``langchain_citations_stream``: LangChain's standard ``citation``
annotations, from Anthropic's ``citations`` or OpenAI's ``annotations``, numbered in the same
table as the markers). Also importable from ``citeflow.adapters``.

No LangChain package is imported at run time (its types only for type checkers): a chunk is
read through its ``content`` / ``content_blocks`` attributes, and plain dicts work too.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from .._citeflow import ProviderStream, Rewriter
from .._event import Event
from .._event import field as _get

if TYPE_CHECKING:  # pragma: no cover - imported for type checkers only
    from langchain_core.messages import BaseMessageChunk

__all__ = [
    "langchain_astream",
    "langchain_chunk_text",
    "langchain_citations_astream",
    "langchain_citations_stream",
    "langchain_provider_events",
    "langchain_stream",
]


def langchain_chunk_text(chunk: Union[BaseMessageChunk, Any]) -> Optional[str]:
    """The text of one LangChain message chunk: its ``content`` when a str, else the text of its
    text content blocks (str items or ``{"type": "text", "text": ...}``); None without text."""
    content = _get(chunk, "content")
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts) or None
    return None


def langchain_stream(
    stream: Iterable[Union[BaseMessageChunk, Any]],
    rewriter: Rewriter,
) -> Iterator[Event]:
    """Rewrites ``chat_model.stream(...)``: yields the rewriter's events, ending with
    ``DoneEvent``."""
    for chunk in stream:
        text = langchain_chunk_text(chunk)
        if text:
            yield from rewriter.feed(text)
    yield from rewriter.finish()


async def langchain_astream(
    stream: AsyncIterable[Union[BaseMessageChunk, Any]],
    rewriter: Rewriter,
) -> AsyncIterator[Event]:
    """Rewrites ``chat_model.astream(...)``: yields the rewriter's events, ending with
    ``DoneEvent``."""
    async for chunk in stream:
        text = langchain_chunk_text(chunk)
        if text:
            for event in rewriter.feed(text):
                yield event
    for event in rewriter.finish():
        yield event


def _langchain_blocks(chunk: Union[BaseMessageChunk, Any]) -> list[Any]:
    """The chunk's content as LangChain's standard content blocks (``content_blocks``, which
    translates the provider's own blocks), else its ``content`` as it is."""
    blocks = getattr(chunk, "content_blocks", None)
    if isinstance(blocks, list):
        return blocks
    content = _get(chunk, "content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _langchain_annotation(a: Mapping[str, Any]) -> Optional[dict[str, Any]]:
    """A standard ``citation`` annotation as an OpenAI Responses annotation: ``url_citation``
    for a url, else ``file_citation`` named by its id or title."""
    if a.get("type") != "citation":
        return None
    out: dict[str, Any]
    url = a.get("url")
    if isinstance(url, str) and url:
        out = {"type": "url_citation", "url": url}
        if isinstance(a.get("title"), str):
            out["title"] = a["title"]
    else:
        name = a.get("title") or a.get("id") or a.get("cited_text")
        if not isinstance(name, str) or not name:
            return None
        out = {"type": "file_citation", "file_id": str(a.get("id") or name), "filename": name}
    start, end = a.get("start_index"), a.get("end_index")
    if isinstance(start, int) and isinstance(end, int):
        out["start_index"], out["end_index"] = start, end
    return out


def langchain_provider_events(chunk: Union[BaseMessageChunk, Any]) -> Iterator[dict[str, Any]]:
    """A chunk's text blocks and their standard ``citation`` annotations as the OpenAI Responses
    stream events the core's ``openai-responses`` reader takes (one part per block index), for
    a ``ProviderStream``. LangChain's standard blocks are LangChain's own shape (translated from
    each provider's), which the core does not read; this only re-frames them."""
    for block in _langchain_blocks(chunk):
        if isinstance(block, str):
            block = {"type": "text", "text": block}
        if not isinstance(block, Mapping) or block.get("type") != "text":
            continue
        item = f"lc-{block.get('index', 0)}"
        text = block.get("text")
        if isinstance(text, str) and text:
            yield {
                "type": "response.output_text.delta",
                "item_id": item,
                "content_index": 0,
                "delta": text,
            }
        for a in block.get("annotations") or []:
            ann = _langchain_annotation(a) if isinstance(a, Mapping) else None
            if ann is not None:
                yield {
                    "type": "response.output_text.annotation.added",
                    "item_id": item,
                    "content_index": 0,
                    "annotation": ann,
                }


def langchain_citations_stream(
    stream: Iterable[Union[BaseMessageChunk, Any]],
    provider: Optional[ProviderStream] = None,
) -> Iterator[Event]:
    """Reads ``chat_model.stream(...)`` with its citations through ``provider`` (default: a new
    ``ProviderStream(dialect="openai-responses")``, the shape LangChain's standard blocks are
    fed in): yields its events, ending with ``DoneEvent``."""
    ps = provider if provider is not None else ProviderStream(dialect="openai-responses")
    for chunk in stream:
        for event in langchain_provider_events(chunk):
            yield from ps.feed_event(event)
    yield from ps.finish()


async def langchain_citations_astream(
    stream: AsyncIterable[Union[BaseMessageChunk, Any]],
    provider: Optional[ProviderStream] = None,
) -> AsyncIterator[Event]:
    """``langchain_citations_stream`` for ``chat_model.astream(...)``."""
    ps = provider if provider is not None else ProviderStream(dialect="openai-responses")
    async for chunk in stream:
        for event in langchain_provider_events(chunk):
            for e in ps.feed_event(event):
                yield e
    for e in ps.finish():
        yield e

