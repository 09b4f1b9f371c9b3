"""A book in a Python RAG stack, with the real parts: citeflow.langchain.EpubLoader into Qdrant's
local mode (qdrant-client, in memory) through langchain-qdrant, a similarity search, the
retrieved documents as context (the 【n】(章:…, CFI:…) form) and a session, and a streamed answer
(token chunks made here, as a model would send them) whose 【n】 become numbers listing chapter
and CFI; LlamaIndex nodes; dicts, sources and ingest lines; the example script.

The embedding is a deterministic hashing bag-of-words written below (no model download is
possible here): words hashed into 512 buckets, L2-normalised. It is a real embedding function
for the store, only a weak one."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import uuid
import zlib
from typing import Any

import pytest
from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_qdrant import QdrantVectorStore
from qdrant_client import QdrantClient
from qdrant_client.http.models import Distance, VectorParams

import citeflow
from citeflow.context import BOOK_TEMPLATE, Context, to_source, to_sources
from citeflow.epub import Book
from citeflow.langchain import EpubLoader
from conftest import WORKSPACE, shared_dir

QUESTION = "What did the White Rabbit take out of its waistcoat-pocket?"
DIM = 512
STOP = set(
    "a an and are as at be but by did do for from had has have he her his i in is it its of on or she so that "
    "the their them then there they this to was were what when which who will with you".split()
)


class HashingEmbeddings(Embeddings):
    """Bag of words hashed into DIM buckets (crc32), L2-normalised: deterministic, offline."""

    def _embed(self, text: str) -> list[float]:
        v = [0.0] * DIM
        for w in re.findall(r"[a-z]+", text.lower()):
            if w not in STOP:
                v[zlib.crc32(w.encode()) % DIM] += 1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / n for x in v]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def alice_path() -> str:
    p = shared_dir() / "fixtures" / "epub" / "alice.epub"
    if not p.is_file():
        pytest.fail(f"fixture book {p} is missing")
    return str(p)


def qdrant_store(docs: list[Document]) -> QdrantVectorStore:
    client = QdrantClient(location=":memory:")
    client.create_collection("alice", vectors_config=VectorParams(size=DIM, distance=Distance.COSINE))
    store = QdrantVectorStore(client=client, collection_name="alice", embedding=HashingEmbeddings())
    store.add_documents(docs, ids=[str(uuid.uuid5(uuid.NAMESPACE_URL, str(d.id))) for d in docs])
    return store


def test_import_citeflow_imports_neither_langchain_nor_llamaindex() -> None:
    code = (
        "import sys, citeflow, citeflow.epub, citeflow.context\n"
        "bad = [m for m in sys.modules if m.startswith(('langchain', 'llama_index', 'qdrant'))]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "[]\n", out.stderr


def test_epub_loader_is_a_langchain_loader_of_passages() -> None:
    loader = EpubLoader(alice_path())
    assert isinstance(loader, BaseLoader)
    docs = loader.load()
    passages = Book.open(alice_path()).passages()
    assert [d.page_content for d in docs] == [p.text for p in passages]
    assert [d.id for d in docs] == [p.id for p in passages]
    assert [d.metadata for d in docs] == [p.metadata() for p in passages]
    # Flat: every value a str or an int, so any store filters on it.
    assert all(isinstance(v, (str, int)) for d in docs for v in d.metadata.values())
    assert docs[3].metadata["chapter_index"] == 2 and docs[3].metadata["chapter_title"] == "Down The Rabbit-Hole"
    # The options are ingest's; an opened Book works too.
    small = EpubLoader(Book.open(alice_path()), target_chars=300, overlap_chars=40).load()
    assert [d.page_content for d in small] == [
        p.text for p in Book.open(alice_path()).passages(target_chars=300, overlap_chars=40)
    ]


def test_qdrant_search_context_session_and_streamed_answer() -> None:
    book = Book.open(alice_path())
    docs = EpubLoader(book).load()
    store = qdrant_store(docs)
    hits = store.similarity_search(QUESTION, k=3)
    assert len(hits) == 3
    top = hits[0]
    assert "took a watch out of its waistcoat-pocket" in top.page_content
    assert top.metadata["passage_id"] == "alice-s-adve-e50036#p3"
    assert top.metadata["chapter_index"] == 2
    cfi = top.metadata["cfi"]
    assert cfi == "epubcfi(/6/8!/4/2,/8/1:192,/12/3:565)"
    # What came back from the store still opens the book at exactly that text.
    assert book.reading(cfi).text == top.page_content

    ctx = Context(hits, marker="rank_full_width", template=BOOK_TEMPLATE)
    assert [s.id for s in ctx.sources] == [h.metadata["passage_id"] for h in hits]
    expected_block = "\n\n".join(
        f"【{i + 1}】(章:{h.metadata['chapter_index']}, CFI:{h.metadata['cfi']})\n{h.page_content}"
        for i, h in enumerate(hits)
    )
    assert ctx.block == expected_block
    assert ctx.block.startswith(f"【1】(章:2, CFI:{cfi})\ngetting up and picking the daisies, when suddenly a White Rabbit")
    assert ctx.instruction == citeflow.citation_instruction(ctx.sources, "rank_full_width")
    assert "for example 【1】" in ctx.instruction and "【1】【2】" in ctx.instruction
    # Without a template: the core's one line per source.
    core_block = Context(hits, marker="rank_full_width").block
    assert core_block == citeflow.context_block(ctx.sources, "rank_full_width")
    assert core_block.startswith(f"【1】 (章:Down The Rabbit-Hole, CFI:{cfi}) Alice's Adventures in Wonderland")

    # The model's answer, streamed: cites rank 1 and rank 3, a marker cut across chunks.
    tokens = ["The", " White", " Rabbit", " took", " a", " watch", " out of its", " waistcoat", "-pocket",
              "【", "1", "】", ". It", " later", " took", " Alice", " for", " Mary", " Ann", "【3", "】【", "1】", "."]
    whole = "".join(tokens)
    for chunks in [tokens, [whole], list(whole)]:
        session = ctx.session(query=QUESTION)
        rw = session.rewriter()
        text = ""
        for c in chunks:
            text += "".join(e.text for e in rw.feed(c) if e.type == "text")
        end = rw.finish()
        text += "".join(e.text for e in end if e.type == "text")
        assert text == "The White Rabbit took a watch out of its waistcoat-pocket[1]. It later took Alice for Mary Ann[2][1]."
        done = end[-1]
        assert done.type == "done"
        listed = [(x.number, x.source.id, x.source.locator) for x in done.sources]
        assert listed == [
            (1, top.metadata["passage_id"], citeflow.Locator(chapter_index=2, chapter_title="Down The Rabbit-Hole", cfi=cfi)),
            (
                2,
                hits[2].metadata["passage_id"],
                citeflow.Locator(
                    chapter_index=hits[2].metadata["chapter_index"],
                    chapter_title=hits[2].metadata["chapter_title"],
                    cfi=hits[2].metadata["cfi"],
                ),
            ),
        ]
        assert session.rounds()[0].query == QUESTION
        assert session.rounds()[0].source_ids == [h.metadata["passage_id"] for h in hits]
    rendered = citeflow.render_list(done.sources, "text")
    assert rendered.splitlines()[0] == (
        "[1] Alice's Adventures in Wonderland — Down The Rabbit-Hole "
        "<book:edu.nyu.itp.future-of-publishing.alice-in-wonderland> "
        f"(chapter: Down The Rabbit-Hole, CFI: {cfi})"
    )
    # A session keeping 【n】 as written in full width.
    rw = ctx.session(query=QUESTION, style="full_width").rewriter()
    out = "".join(e.text for c in tokens for e in rw.feed(c) if e.type == "text")
    out += "".join(e.text for e in rw.finish() if e.type == "text")
    assert out.endswith("waistcoat-pocket【1】. It later took Alice for Mary Ann【2】【1】.")


def test_llamaindex_nodes_carry_the_passages() -> None:
    from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

    from citeflow.llamaindex import load_nodes

    passages = Book.open(alice_path()).passages()
    nodes = load_nodes(alice_path())
    assert all(isinstance(n, TextNode) for n in nodes)
    assert [(n.node_id, n.text, n.metadata) for n in nodes] == [(p.id, p.text, p.metadata()) for p in passages]
    # The metadata stays out of what is embedded and shown: the text alone.
    assert nodes[3].get_content(metadata_mode=MetadataMode.EMBED) == passages[3].text
    assert nodes[3].get_content(metadata_mode=MetadataMode.LLM) == passages[3].text
    retrieved = [NodeWithScore(node=nodes[3], score=0.9), NodeWithScore(node=nodes[37], score=0.5)]
    ctx = Context(retrieved, template=BOOK_TEMPLATE)
    assert ctx.sources == [passages[3].to_source(), passages[37].to_source()]
    assert ctx.block.split("\n")[0] == f"【1】(章:2, CFI:{passages[3].cfi})"


def test_context_reads_dicts_sources_passages_and_ingest_lines() -> None:
    p = Book.open(alice_path()).passages()[3]
    s = p.to_source()
    forms: list[Any] = [
        s,
        p,
        p.to_dict(),  # a line of `citeflow ingest`
        {"page_content": p.text, "metadata": p.metadata()},  # a document dict
        {"text": p.text, **p.metadata()},  # a flat store payload
        Document(page_content=p.text, metadata=p.metadata()),
    ]
    for f in forms:
        assert to_source(f) == s, type(f)
    # A repeated passage is one source; the order is kept.
    q = Book.open(alice_path()).passages()[4]
    assert [x.id for x in to_sources([p, q, p.to_dict()])] == [p.id, q.id]
    with pytest.raises(citeflow.SourceError):
        to_source({"page_content": "x", "metadata": {}})
    with pytest.raises(TypeError):
        to_source(42)
    with pytest.raises(citeflow.SettingsError):
        Context([p], marker="nope")  # type: ignore[arg-type]
    # Placeholders are filled once: a text holding "{cfi}" keeps it; other braces stay.
    odd = citeflow.Source("x", text="a {cfi} b", locator=citeflow.Locator(chapter_index=2, cfi="epubcfi(/6/8!/4)"))
    assert Context([odd], template=BOOK_TEMPLATE).block == "【1】(章:2, CFI:epubcfi(/6/8!/4))\na {cfi} b"
    assert Context([odd], template="{x} {n}{ {title}|", max_chars_per_source=3).block == "{x} 1{ |"
        # The double-bracket marker: the model writes the passage id.
    ctx = Context([p], marker="double_bracket")
    assert ctx.block.startswith(f"[[{p.id}]] (chapter: Down The Rabbit-Hole, CFI: {p.cfi})")
    assert citeflow.rewrite_str(f"Watch [[{p.id}]].", ctx.sources, settings=ctx.settings()).text == "Watch [1]."


def test_the_book_rag_example_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-W", "error", str(WORKSPACE / "examples" / "python_book_rag.py"), alice_path()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    i = lines.index("== answer")
    assert lines[i + 1] == "The White Rabbit took a watch out of its waistcoat-pocket【1】. Later it took Alice for its housemaid【2】【1】."
    assert lines[i + 3] == (
        "[1] alice-s-adve-e50036#p3 章:2 (Down The Rabbit-Hole) CFI:epubcfi(/6/8!/4/2,/8/1:192,/12/3:565)"
    )
    assert lines[i + 4].startswith("[2] alice-s-adve-e50036#p37 章:5 (The Rabbit Sends In A Little Bill) CFI:epubcfi(")
    assert "【1】(章:2, CFI:epubcfi(/6/8!/4/2,/8/1:192,/12/3:565))" in lines
