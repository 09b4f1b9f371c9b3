"""citeflow: rewrite streamed LLM citation markers into stable readable numbers.

The engine is the Rust crate ``citeflow-core``; this package only converts between Python and
Rust, so Python gets exactly the core's behaviour (the same golden vectors pass in Rust, Python
and WASM).

Quick start::

    import citeflow

    session = citeflow.Session(style="brackets")
    session.append_round(
        [{"id": "source_7", "title": "Paris"}, {"id": "source_3", "title": "France"}],
        query="capital of France",
    )
    rw = session.rewriter()
    for chunk in ["Paris is the capital [[sou", "rce_7]]."]:
        for ev in rw.feed(chunk):
            if ev.type == "text":
                print(ev.text, end="")
    done = rw.finish()[-1]

Events are ``TextEvent``, ``SourceEvent``, ``CitationEvent``, ``UnresolvedEvent``,
``NumberNeededEvent``, ``AnchorEvent`` (with ``Settings(anchors=True)``: the sentence of the
cited source that supports a citation's sentence, its ``quote``, ``support`` and ``verdict``)
and ``DoneEvent``; each has ``.type``, ``to_dict()`` (the core's JSON
form), equality and a ``repr``. ``byte_offset`` and ``input_byte_offset`` are UTF-8 byte
offsets, as in the core; a citation's ``char_offset`` is its output position as a ``str``
index and ``utf16_offset`` in UTF-16 code units.

``ProviderStream`` reads a provider API's own stream (Anthropic Messages, OpenAI Chat and
Responses, Gemini, Cohere, Bedrock), as bytes or one event at a time, and numbers the
provider's citations (``CitationEvent.provider``: quote, span, late) in the same table as
markers.

Errors derive from ``CiteflowError``: ``SettingsError``, ``SourceError``, ``NumberingError``,
``RewriteError``, ``RestoreError``, ``SseError`` and ``ProviderError``, each with the core's
message and a stable ``code``.

Adapters for the OpenAI, Anthropic and LangChain streams are in ``citeflow.adapters``; the
framework integrations are ``citeflow.langchain`` (agents, LangGraph), ``citeflow.chainlit`` and
``citeflow.llamaindex``, each with its extra (``pip install 'citeflow[langchain]'``).

This module only re-exports (the native module's classes and ``Event``); no module of the
package imports it back.

Books (EPUB) are in ``citeflow.epub`` (``EpubError``, ``CfiError``); their passages become
LangChain documents through ``citeflow.langchain`` and LlamaIndex nodes through
``citeflow.llamaindex`` (neither library is imported by ``import citeflow``); retrieved documents
become the prompt's context and a session through ``citeflow.context``.
"""

from ._citeflow import (
    MIN_PENDING_BYTES,
    AnchorEvent,
    CfiError,
    CitationDetail,
    CitationEvent,
    CiteflowError,
    DoneEvent,
    EpubError,
    ListedSource,
    Locator,
    NumberEntry,
    Numbering,
    NumberingError,
    NumberNeededEvent,
    Position,
    ProviderError,
    ProviderStream,
    Quote,
    Report,
    RestoreError,
    Rewriter,
    RewriteError,
    Rewritten,
    Round,
    Session,
    Settings,
    SettingsError,
    Source,
    SourceError,
    SourceEvent,
    Sources,
    Span,
    SseDecoder,
    SseError,
    SseEvent,
    TextEvent,
    TextRange,
    UnresolvedEvent,
    __version__,
    chunk_text,
    citation_instruction,
    context_block,
    prompt_settings,
    render_list,
    rewrite_str,
)
from ._event import Event

__all__ = [
    "MIN_PENDING_BYTES",
    "AnchorEvent",
    "CfiError",
    "CitationDetail",
    "CitationEvent",
    "CiteflowError",
    "DoneEvent",
    "EpubError",
    "Event",
    "ListedSource",
    "Locator",
    "NumberEntry",
    "NumberNeededEvent",
    "Numbering",
    "NumberingError",
    "Position",
    "ProviderError",
    "ProviderStream",
    "Quote",
    "Report",
    "RestoreError",
    "RewriteError",
    "Rewriter",
    "Rewritten",
    "Round",
    "Session",
    "Settings",
    "SettingsError",
    "Source",
    "SourceError",
    "SourceEvent",
    "Sources",
    "Span",
    "SseDecoder",
    "SseError",
    "SseEvent",
    "TextEvent",
    "TextRange",
    "UnresolvedEvent",
    "__version__",
    "chunk_text",
    "citation_instruction",
    "context_block",
    "prompt_settings",
    "render_list",
    "rewrite_str",
]
