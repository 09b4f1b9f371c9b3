"""A book's passages as LangChain ``Document``s (needs ``langchain-core``).

The metadata is flat (str and int values), so any vector store can filter on it
(``chapter_index``, ``book_id``, ...); keys whose value would be None (an untitled chapter's
``chapter_title``) are left out. Retrieved documents go to ``citeflow.context`` for the prompt
and the session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Union

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document

from .._citeflow import Book, Passage

__all__ = ["EpubLoader", "passage_document"]


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
