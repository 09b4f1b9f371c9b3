"""Adapters for the streams Python users get from LLM SDKs.

Each adapter wraps a stream, feeds the answer text of every chunk to a ``Rewriter`` and yields
the rewriter's events: ``TextEvent`` for the rewritten text, plus ``SourceEvent``,
``CitationEvent``, ``UnresolvedEvent`` as markers resolve, and the ``DoneEvent`` (after
``Rewriter.finish``) when the stream ends. Chunks without text (role-only deltas, the final
``finish_reason`` chunk, usage chunks) are skipped.

- ``openai_stream`` / ``openai_astream``: an OpenAI SDK stream (``Stream`` / ``AsyncStream`` of
  ``ChatCompletionChunk``, or of legacy ``Completion`` chunks), from
  ``client.chat.completions.create(..., stream=True)``. Only choice ``index`` 0 is read.
  Plain dicts of the same JSON shape work too.
- ``langchain_stream`` / ``langchain_astream``: a LangChain chat model stream, from
  ``model.stream(...)`` / ``model.astream(...)`` (message chunks whose ``content`` is a str or
  a list of content blocks; text blocks are used).

Neither library is imported at run time: the adapters read the chunks' attributes, so citeflow
has no dependency on either package (their types are imported for type checkers only).

Offsets in the events are UTF-8 byte offsets of the rewritten text, as everywhere in citeflow.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from ._citeflow import (
    CitationEvent,
    DoneEvent,
    NumberNeededEvent,
    Rewriter,
    SourceEvent,
    TextEvent,
    UnresolvedEvent,
)

if TYPE_CHECKING:  # pragma: no cover - imported for type checkers only
    from langchain_core.messages import BaseMessageChunk
    from openai.types.chat import ChatCompletionChunk
    from openai.types.completion import Completion

Event = Union[
    SourceEvent,
    TextEvent,
    CitationEvent,
    UnresolvedEvent,
    NumberNeededEvent,
    DoneEvent,
]

__all__ = [
    "openai_astream",
    "openai_chunk_text",
    "openai_stream",
    "langchain_astream",
    "langchain_chunk_text",
    "langchain_stream",
]


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def openai_chunk_text(chunk: Union[ChatCompletionChunk, Completion, Mapping[str, Any]]) -> Optional[str]:
    """The answer text of one OpenAI chunk: ``choices[i].delta.content`` (chat) or
    ``choices[i].text`` (completions) of the choice with ``index`` 0; None without text."""
    choices = _get(chunk, "choices")
    if not choices:
        return None
    for choice in choices:
        index = _get(choice, "index")
        if index not in (0, None):
            continue
        delta = _get(choice, "delta")
        if delta is not None:
            content = _get(delta, "content")
            if isinstance(content, str):
                return content
        text = _get(choice, "text")
        if isinstance(text, str):
            return text
        return None
    return None


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


def openai_stream(
    stream: Iterable[Union[ChatCompletionChunk, Completion, Mapping[str, Any]]],
    rewriter: Rewriter,
) -> Iterator[Event]:
    """Rewrites an OpenAI SDK stream: yields the rewriter's events, ending with ``DoneEvent``."""
    for chunk in stream:
        text = openai_chunk_text(chunk)
        if text:
            yield from rewriter.feed(text)
    yield from rewriter.finish()


async def openai_astream(
    stream: AsyncIterable[Union[ChatCompletionChunk, Completion, Mapping[str, Any]]],
    rewriter: Rewriter,
) -> AsyncIterator[Event]:
    """Rewrites an OpenAI SDK ``AsyncStream``: yields the rewriter's events, ending with
    ``DoneEvent``."""
    async for chunk in stream:
        text = openai_chunk_text(chunk)
        if text:
            for event in rewriter.feed(text):
                yield event
    for event in rewriter.finish():
        yield event


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
