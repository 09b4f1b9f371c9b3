"""Retrieved documents to a prompt and a session, for any vector store.

Documents carrying a book passage's metadata (``passage_id``, ``chapter_index``,
``chapter_title``, ``cfi``, ``title``, ``url``) come from ``citeflow.langchain.EpubLoader`` or
``citeflow.llamaindex`` through whatever store retrieved them. They may be LangChain
``Document``s, LlamaIndex nodes (``TextNode`` or ``NodeWithScore``), dicts (a document dict with
``page_content``/``text`` and ``metadata``, a flat payload with ``passage_id``, or a source's JSON
form such as a line of ``citeflow ingest``), ``citeflow.epub.Passage``s or ``citeflow.Source``s::

    from citeflow.context import BOOK_TEMPLATE, Context

    docs = vector_store.similarity_search(question, k=4)
    ctx = Context(docs, marker="rank_full_width", template=BOOK_TEMPLATE)
    prompt = ctx.instruction + "\\n\\n" + ctx.block        # 【1】(章:2, CFI:epubcfi(...))\\n<text> ...
    session = ctx.session(query=question)                   # its one round: exactly these documents
    rw = session.rewriter()                                 # a streamed 【1】 becomes that passage's number

The sources are the documents in their order (a repeated ``passage_id`` is kept once), so the
rank a marker names is the rank shown in the block. The block without a template and the
instruction are the core's (``citeflow.context_block`` / ``citation_instruction``); the rewriter
settings are ``citeflow.prompt_settings(marker)``, so what the model is asked to write is what
the scanner reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Optional

from ._citeflow import (
    Locator,
    Passage,
    Session,
    Settings,
    Source,
    SourceError,
    citation_instruction,
    context_block,
    prompt_settings,
)

if TYPE_CHECKING:
    from ._citeflow import _PromptMarkerName
else:
    _PromptMarkerName = str

__all__ = ["BOOK_TEMPLATE", "Context", "to_source", "to_sources"]

#: The context form book RAG apps use: ``【{n}】(章:{chapter_index}, CFI:{cfi})`` and the text on
#: the next line. Placeholders: ``{n}`` (rank), ``{id}``, ``{title}``, ``{url}``, ``{text}``,
#: ``{chapter_index}``, ``{chapter_title}``, ``{cfi}`` (absent values are empty; other braces are
#: kept). The npm package's ``contextTemplate`` fills templates the same way.
BOOK_TEMPLATE = "【{n}】(章:{chapter_index}, CFI:{cfi})\n{text}"


def _opt_int(v: Any) -> Optional[int]:
    return None if v is None or v == "" else int(v)


def _opt_str(v: Any) -> Optional[str]:
    return None if v is None else str(v)


def _from_metadata(text: Optional[str], metadata: Mapping[str, Any], fallback_id: Optional[str]) -> Source:
    sid = metadata.get("passage_id") or metadata.get("id") or fallback_id
    if not sid:
        raise SourceError("a retrieved document has no passage_id in its metadata and no id")
    chapter_index = _opt_int(metadata.get("chapter_index"))
    chapter_title = _opt_str(metadata.get("chapter_title"))
    cfi = _opt_str(metadata.get("cfi"))
    locator = None
    if chapter_index is not None or chapter_title is not None or cfi is not None:
        locator = Locator(chapter_index=chapter_index, chapter_title=chapter_title, cfi=cfi)
    return Source(
        str(sid),
        title=_opt_str(metadata.get("title")),
        url=_opt_str(metadata.get("url")),
        text=text,
        locator=locator,
    )


def to_source(doc: Any) -> Source:
    """One retrieved document (see the module's docs for the kinds read) as a ``Source``.

    Raises ``SourceError`` when it has no id, ``TypeError`` for a kind not read."""
    if isinstance(doc, Source):
        return doc
    if isinstance(doc, Passage):
        return doc.to_source()
    if isinstance(doc, Mapping):
        if "page_content" in doc or isinstance(doc.get("metadata"), Mapping):
            text = doc.get("page_content", doc.get("text"))
            return _from_metadata(_opt_str(text), doc.get("metadata") or {}, _opt_str(doc.get("id")))
        if "passage_id" in doc:
            return _from_metadata(_opt_str(doc.get("text", doc.get("page_content"))), doc, None)
        return Source.from_dict(doc)
    node = getattr(doc, "node", None)
    if node is not None and hasattr(doc, "score"):  # LlamaIndex NodeWithScore
        return to_source(node)
    if hasattr(doc, "page_content") and hasattr(doc, "metadata"):  # LangChain Document
        return _from_metadata(doc.page_content, doc.metadata or {}, getattr(doc, "id", None))
    if hasattr(doc, "get_content") and hasattr(doc, "metadata"):  # LlamaIndex node
        text = getattr(doc, "text", None)
        if not isinstance(text, str):
            text = doc.get_content()
        return _from_metadata(text, doc.metadata or {}, getattr(doc, "node_id", None))
    raise TypeError(f"cannot read a source from {type(doc).__name__}")


def to_sources(docs: Iterable[Any]) -> list[Source]:
    """The documents as sources, in order; a repeated id is kept once (its first place)."""
    out: list[Source] = []
    seen: set[str] = set()
    for d in docs:
        s = to_source(d)
        if s.id not in seen:
            seen.add(s.id)
            out.append(s)
    return out


_PLACEHOLDER = re.compile(r"\{(n|id|title|url|text|chapter_index|chapter_title|cfi)\}")


def _fill(template: str, rank: int, s: Source, max_chars: int) -> str:
    """The template with its placeholders replaced in one pass (a text holding ``{cfi}`` stays
    as it is); other braces are kept."""
    loc = s.locator
    values = {
        "n": str(rank),
        "id": s.id,
        "title": s.title or "",
        "url": s.url or "",
        "text": (s.text or s.snippet or "")[:max_chars],
        "chapter_index": "" if loc is None or loc.chapter_index is None else str(loc.chapter_index),
        "chapter_title": "" if loc is None or loc.chapter_title is None else loc.chapter_title,
        "cfi": "" if loc is None or loc.cfi is None else loc.cfi,
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


class Context:
    """Retrieved documents as the model's sources: the context block, the citation
    instruction, and a session whose one round is exactly these sources.

    ``marker`` is the marker the model is asked to write (``rank_full_width`` for ``【n】``,
    ``rank``, ``double_bracket``, ...). ``template`` (e.g. ``BOOK_TEMPLATE``) writes each source
    as a block of its own, blocks separated by a blank line; without it the block is the core's
    one line per source. Texts are cut to ``max_chars_per_source`` characters.
    """

    def __init__(
        self,
        documents: Iterable[Any],
        *,
        marker: _PromptMarkerName = "rank_full_width",
        template: Optional[str] = None,
        max_chars_per_source: int = 1000,
    ) -> None:
        self.marker = marker
        self.template = template
        self.max_chars_per_source = max_chars_per_source
        self.sources: list[Source] = to_sources(documents)
        # Fail now on an unknown marker, not later in the prompt.
        self._settings = prompt_settings(marker)

    @property
    def block(self) -> str:
        """The numbered sources for the prompt."""
        if self.template is None:
            return context_block(
                self.sources, self.marker, max_chars_per_source=self.max_chars_per_source
            )
        return "\n\n".join(
            _fill(self.template, i + 1, s, self.max_chars_per_source) for i, s in enumerate(self.sources)
        )

    @property
    def instruction(self) -> str:
        """The instruction asking the model to cite with the marker (the core's)."""
        return citation_instruction(self.sources, self.marker)

    def settings(self, base: Optional[Settings] = None) -> Settings:
        """Rewriter settings whose scanner reads the marker (on top of ``base``)."""
        return prompt_settings(self.marker, base)

    def session(self, *, query: Optional[str] = None, settings: Optional[Settings] = None, **options: Any) -> Session:
        """A ``Session`` with these sources as its one round (``query`` its question);
        ``options`` are ``Session``'s keyword arguments (``style``, ``scope``, ...)."""
        session = Session(settings=self.settings(settings), **options)
        session.append_round(self.sources, query=query)
        return session
