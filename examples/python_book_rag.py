"""A book in a Python RAG app: EPUB → LangChain documents → a vector store → the retrieved
passages as numbered context → the model's streamed 【n】 → numbers whose list shows chapter and CFI.

    pip install citeflow langchain-core==1.7.2 langchain-qdrant==1.1.0 qdrant-client==1.20.0
    python examples/python_book_rag.py path/to/alice.epub ["question"]

The vector store is Qdrant's local mode, in memory. The embedding is a deterministic hashing
bag-of-words (words → 512 buckets), written here so the example runs offline and without a
model download; swap in any LangChain ``Embeddings`` (OpenAI, HuggingFace, ...) in a real app.
Without a model at hand the answer is replayed from a script (``ANSWER`` below) in token-sized
chunks, as a model would stream it; with a model, feed its stream's text chunks instead.
"""

from __future__ import annotations

import math
import re
import sys
import uuid
import zlib

from langchain_core.embeddings import Embeddings
from langchain_qdrant import QdrantVectorStore
from qdrant_client import QdrantClient
from qdrant_client.http.models import Distance, VectorParams

from citeflow.context import BOOK_TEMPLATE, Context
from citeflow.langchain import EpubLoader

DIM = 512
STOP = set("a an and are as at be but by did do for from had has have he her his i in is it its of on or she so that the their them then there they this to was were what when which who will with you".split())


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


def main() -> None:
    path = sys.argv[1]
    question = sys.argv[2] if len(sys.argv) > 2 else "What did the White Rabbit take out of its waistcoat-pocket?"

    docs = EpubLoader(path).load()  # passages cut as `citeflow ingest` cuts them
    client = QdrantClient(location=":memory:")
    client.create_collection("book", vectors_config=VectorParams(size=DIM, distance=Distance.COSINE))
    store = QdrantVectorStore(client=client, collection_name="book", embedding=HashingEmbeddings())
    # Qdrant point ids are UUIDs: one derived from each passage id (kept in the metadata too).
    store.add_documents(docs, ids=[str(uuid.uuid5(uuid.NAMESPACE_URL, str(d.id))) for d in docs])
    hits = store.similarity_search(question, k=3)

    ctx = Context(hits, marker="rank_full_width", template=BOOK_TEMPLATE)
    print("== prompt")
    print(ctx.instruction)
    print()
    print(ctx.block)

    # The model's answer (replayed): cites the passage that mentions the waistcoat-pocket.
    rank = next((i + 1 for i, d in enumerate(hits) if "waistcoat-pocket" in d.page_content), 1)
    other = 3 if rank != 3 else 1
    answer = (
        f"The White Rabbit took a watch out of its waistcoat-pocket【{rank}】. "
        f"Later it took Alice for its housemaid【{other}】【{rank}】."
    )
    chunks = [answer[i : i + 3] for i in range(0, len(answer), 3)]  # cut anywhere, even inside 【n】

    session = ctx.session(query=question, style="full_width")  # numbers written as 【1】
    rw = session.rewriter()
    print("== answer")
    for chunk in chunks:
        for ev in rw.feed(chunk):
            if ev.type == "text":
                print(ev.text, end="")
    done = [ev for ev in rw.finish() if ev.type == "done"][0]
    print()
    print("== sources")
    for listed in done.sources:
        loc = listed.source.locator
        assert loc is not None
        print(f"[{listed.number}] {listed.source.id} 章:{loc.chapter_index} ({loc.chapter_title}) CFI:{loc.cfi}")


if __name__ == "__main__":
    main()
