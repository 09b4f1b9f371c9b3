"""LlamaIndex: a book's passages as ``TextNode``s.

``llama-index-core`` is imported when this module is, not by ``import citeflow``::

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
from typing import Union

from llama_index.core.schema import TextNode

from ._citeflow import Book, Passage

__all__ = ["load_nodes", "passage_node"]


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
