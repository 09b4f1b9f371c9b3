"""Adapters for the streams Python users get from LLM SDKs.

Each adapter wraps a stream, feeds the answer text of every chunk to a ``Rewriter`` and yields
the rewriter's events: ``TextEvent`` for the rewritten text, plus ``SourceEvent``,
``CitationEvent``, ``UnresolvedEvent`` as markers resolve, and the ``DoneEvent`` (after
``Rewriter.finish``) when the stream ends. Chunks without text (role-only deltas, the final
``finish_reason`` chunk, usage chunks) are skipped.

- ``openai_stream`` / ``openai_astream``: an OpenAI SDK stream (``Stream`` / ``AsyncStream`` of
  ``ChatCompletionChunk``, or of legacy ``Completion`` chunks), from
  ``client.chat.completions.create(..., stream=True)``. Only choice ``index`` 0 is read. Each
  chunk goes through ``rewriter.provider_stream(dialect="openai-chat")``: the core's OpenAI Chat
  reader, which also numbers ``url_citation`` annotations and Perplexity's ``citations`` /
  ``search_results`` in the rewriter's table. Plain dicts of the same JSON shape work too.
- ``langchain_stream`` / ``langchain_astream`` (from ``citeflow.langchain.chat_model``, re-exported
  here): a LangChain chat model stream, from
  ``model.stream(...)`` / ``model.astream(...)`` (message chunks whose ``content`` is a str or
  a list of content blocks; text blocks are used).

- ``rewrite_stream``: any iterable of text chunks already at hand (a replay, a log, a buffered
  stream), fed ``batch`` chunks per call into the engine (``Rewriter.feed_many``).

Provider-native citations (the API reports them beside the text) go through a
``ProviderStream``, which numbers them in the same table as markers; each adapter yields its
events, ending with the ``DoneEvent`` (whose ``text`` is the final answer when a citation was
bound after its text was shown):

- ``anthropic_stream`` / ``anthropic_astream``: the ``anthropic`` SDK's stream events
  (``RawMessageStreamEvent`` from ``client.messages.create(..., stream=True)``, or the
  ``MessageStreamEvent``s of ``client.messages.stream(...)``, whose helper events ``text``,
  ``citation``, ``thinking``, ``signature`` and ``input_json`` repeat the raw deltas and are
  skipped).
- ``openai_responses_stream`` / ``openai_responses_astream``: the ``openai`` SDK's Responses
  stream events (``ResponseStreamEvent`` from ``client.responses.create(..., stream=True)``;
  also Azure OpenAI and xAI).
- ``langchain_citations_stream`` / ``langchain_citations_astream``: a LangChain chat model
  stream whose chunks carry citations (``chunk.content_blocks``, LangChain's standard blocks:
  text blocks with ``citation`` annotations, which LangChain translates from Anthropic's
  ``citations`` and OpenAI's ``annotations``): the citations are numbered instead of dropped.
  A citation with ``start_index``/``end_index`` (characters of its text block) is placed at
  its span's end; one without (Anthropic's) at the end of its text block.

Plain dicts of the APIs' JSON work too. No SDK is imported at run time: SDK events are read with
``model_dump(mode="json")``, so citeflow has no dependency on any of these packages (their types
are imported for type checkers only).

Offsets in the events are UTF-8 byte offsets of the rewritten text, as everywhere in citeflow;
citations also carry ``char_offset`` (a ``str`` index) and ``utf16_offset``.

Claim anchors: give a rewriter or provider stream with anchors on (``Rewriter(sources,
settings=Settings(anchors=True))``, ``ProviderStream(dialect="anthropic", anchors=True)``) and
the adapter yields its ``AnchorEvent``s too, one per citation as soon as its sentence closes; a
provider's own quote (Anthropic ``cited_text``) is kept as the quote and scored.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from ._citeflow import ProviderStream, Rewriter
from ._event import Event
from ._event import field as _get
from .langchain.chat_model import (
    langchain_astream,
    langchain_chunk_text,
    langchain_citations_astream,
    langchain_citations_stream,
    langchain_provider_events,
    langchain_stream,
)

if TYPE_CHECKING:  # pragma: no cover - imported for type checkers only
    from anthropic.lib.streaming import MessageStreamEvent
    from anthropic.types import RawMessageStreamEvent
    from openai.types.chat import ChatCompletionChunk
    from openai.types.completion import Completion
    from openai.types.responses import ResponseStreamEvent


__all__ = [
    "rewrite_stream",
    "anthropic_astream",
    "anthropic_stream",
    "openai_responses_astream",
    "openai_responses_stream",
    "openai_astream",
    "openai_chunk_text",
    "openai_stream",
    "langchain_astream",
    "langchain_citations_astream",
    "langchain_citations_stream",
    "langchain_chunk_text",
    "langchain_provider_events",
    "langchain_stream",
]


def openai_chunk_text(chunk: Union[ChatCompletionChunk, Completion, Mapping[str, Any]]) -> Optional[str]:
    """The answer text of one OpenAI chunk: ``choices[i].delta.content`` (chat) or
    ``choices[i].text`` (completions) of the choice with ``index`` 0; None without text.

    Text only, for callers that want the words of a chunk; the adapters read chunks through
    ``ProviderStream`` instead, which also reads the chunk's citations."""
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




def rewrite_stream(
    chunks: Iterable[Union[str, bytes]],
    rewriter: Rewriter,
    *,
    batch: int = 256,
) -> Iterator[Event]:
    """Rewrites an iterable of text chunks, ``batch`` chunks per call into the engine
    (``Rewriter.feed_many``): yields the events, adjacent texts merged, ending with
    ``DoneEvent``. For chunks already at hand (a replay, a log, a buffered stream); a live
    stream that must show each token at once wants ``batch=1`` or ``Rewriter.feed``."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    if type(chunks) is list:
        # A list is cut by slicing (cheaper than islice); the length is read again each time,
        # as a list iterator does.
        i = 0
        while i < len(chunks):
            yield from rewriter.feed_many(chunks[i : i + batch])
            i += batch
    else:
        it = iter(chunks)
        while True:
            part = list(itertools.islice(it, batch))
            if not part:
                break
            yield from rewriter.feed_many(part)
    yield from rewriter.finish()


def _openai_text_alone(chunk: Any) -> Optional[str]:
    """The text of an SDK chat chunk that holds text and nothing else the core's reader reads
    (one choice, index 0, no role, finish reason, tool call, refusal or extra field: no
    ``url_citation`` annotation, no Perplexity ``citations``), else None. Its text goes to
    ``ProviderStream.feed_text`` (what the reader would have given), which skips
    ``model_dump`` and the dict's conversion. Plain dicts and every other chunk take the
    reader."""
    if getattr(chunk, "model_extra", None) != {}:
        return None  # not an SDK model, or one with fields beyond its type's (citations)
    choices = getattr(chunk, "choices", None)
    if not isinstance(choices, list) or len(choices) != 1:
        return None
    choice = choices[0]
    if choice.index != 0 or choice.finish_reason is not None or choice.model_extra:
        return None
    delta = getattr(choice, "delta", None)  # legacy completions have none
    if delta is None or delta.role is not None or delta.tool_calls or delta.refusal or delta.model_extra:
        return None
    if getattr(delta, "function_call", None) is not None:
        return None
    content = delta.content
    return content if isinstance(content, str) else None


def openai_stream(
    stream: Iterable[Union[ChatCompletionChunk, Completion, Mapping[str, Any]]],
    rewriter: Rewriter,
) -> Iterator[Event]:
    """Rewrites an OpenAI SDK stream: each chunk is read by the core's OpenAI Chat reader
    (``rewriter.provider_stream(dialect="openai-chat")``), so that the markers in the text,
    ``url_citation`` annotations and Perplexity's ``citations`` / ``search_results`` are
    numbered in the rewriter's table; yields the events, ending with ``DoneEvent``. The
    rewriter holds the final state afterwards."""
    ps = rewriter.provider_stream(dialect="openai-chat")
    for chunk in stream:
        text = None if isinstance(chunk, Mapping) else _openai_text_alone(chunk)
        yield from ps.feed_event(chunk) if text is None else ps.feed_text(text)
    yield from ps.finish()


async def openai_astream(
    stream: AsyncIterable[Union[ChatCompletionChunk, Completion, Mapping[str, Any]]],
    rewriter: Rewriter,
) -> AsyncIterator[Event]:
    """``openai_stream`` for an OpenAI SDK ``AsyncStream``."""
    ps = rewriter.provider_stream(dialect="openai-chat")
    async for chunk in stream:
        text = None if isinstance(chunk, Mapping) else _openai_text_alone(chunk)
        for event in ps.feed_event(chunk) if text is None else ps.feed_text(text):
            yield event
    for event in ps.finish():
        yield event






AnthropicEvent = Union["RawMessageStreamEvent", "MessageStreamEvent", Mapping[str, Any]]
ResponsesEvent = Union["ResponseStreamEvent", Mapping[str, Any]]

#: Events of the ``anthropic`` SDK's ``MessageStream`` that repeat a raw delta.
_ANTHROPIC_HELPER_EVENTS = frozenset({"text", "citation", "thinking", "signature", "input_json"})


def _anthropic_raw(event: AnthropicEvent) -> bool:
    return _get(event, "type") not in _ANTHROPIC_HELPER_EVENTS


def anthropic_stream(
    stream: Iterable[AnthropicEvent],
    provider: Optional[ProviderStream] = None,
) -> Iterator[Event]:
    """Reads an ``anthropic`` SDK message stream through ``provider`` (default: a new
    ``ProviderStream(dialect="anthropic")``): yields its events, ending with ``DoneEvent``.
    Citations (``citations_delta``) are numbered at the end of the text block they cite."""
    ps = provider if provider is not None else ProviderStream(dialect="anthropic")
    for event in stream:
        if _anthropic_raw(event):
            yield from ps.feed_event(event)
    yield from ps.finish()


async def anthropic_astream(
    stream: AsyncIterable[AnthropicEvent],
    provider: Optional[ProviderStream] = None,
) -> AsyncIterator[Event]:
    """``anthropic_stream`` for an ``AsyncStream`` / ``AsyncMessageStream``."""
    ps = provider if provider is not None else ProviderStream(dialect="anthropic")
    async for event in stream:
        if _anthropic_raw(event):
            for e in ps.feed_event(event):
                yield e
    for e in ps.finish():
        yield e


def openai_responses_stream(
    stream: Iterable[ResponsesEvent],
    provider: Optional[ProviderStream] = None,
) -> Iterator[Event]:
    """Reads an ``openai`` SDK Responses stream through ``provider`` (default: a new
    ``ProviderStream(dialect="openai-responses")``): yields its events, ending with
    ``DoneEvent``. ``url_citation`` annotations replace the model's own inline link to the cited
    url, or are bound to their span; ``file_citation`` goes at its index."""
    ps = provider if provider is not None else ProviderStream(dialect="openai-responses")
    for event in stream:
        yield from ps.feed_event(event)
    yield from ps.finish()


async def openai_responses_astream(
    stream: AsyncIterable[ResponsesEvent],
    provider: Optional[ProviderStream] = None,
) -> AsyncIterator[Event]:
    """``openai_responses_stream`` for an ``AsyncStream``."""
    ps = provider if provider is not None else ProviderStream(dialect="openai-responses")
    async for event in stream:
        for e in ps.feed_event(event):
            yield e
    for e in ps.finish():
        yield e









