"""Books: open an EPUB, list its chapters, cut it into passages exactly as ``citeflow ingest``
does, open it at a CFI, and parse, compare and resolve CFIs.

The engine is the Rust crate ``citeflow-epub`` (spec-exact EPUB CFI 1.1); this module only
re-exports its classes from the native module::

    from citeflow.epub import Book

    book = Book.open("alice.epub")              # a path, or the file's bytes
    for ch in book.chapters:                     # Chapter(index, title, cfi, ...)
        print(ch.index, ch.title, ch.cfi)
    passages = book.passages()                   # 800 characters, 100 of overlap (as ingest)
    p = passages[5]
    p.id, p.chapter_index, p.chapter_title, p.cfi, p.language
    p.to_source()                                # a citeflow.Source (id, title, url, text, locator)
    p.metadata()                                 # flat dict for vector stores
    assert book.reading(p.cfi).text == p.text    # the reading view marks exactly the passage

Passage ids, titles, urls and JSON (``Passage.to_json()``) are those of ``citeflow ingest``'s
output for the same book and options. Errors: ``EpubError`` (a book that cannot be opened;
``code``, and ``limit`` naming an exceeded budget) and ``CfiError`` (a CFI that cannot be
parsed, ``code`` ``cfi_parse`` with ``position``, or that does not resolve in the book).

LangChain documents come from ``citeflow.langchain.EpubLoader``, LlamaIndex nodes from
``citeflow.llamaindex``; retrieved documents become a prompt and a session through
``citeflow.context``.
"""

from __future__ import annotations

import os
from typing import Union

from ._citeflow import Book, Cfi, CfiError, Chapter, EpubError, Passage, Reading, ReadingParagraph

__all__ = [
    "Book",
    "Cfi",
    "CfiError",
    "Chapter",
    "EpubError",
    "Passage",
    "Reading",
    "ReadingParagraph",
    "open_book",
]


def open_book(source: Union[str, os.PathLike[str], bytes, bytearray]) -> Book:
    """``Book.open``: a book from a path or the bytes of an ``.epub`` file."""
    return Book.open(source)
