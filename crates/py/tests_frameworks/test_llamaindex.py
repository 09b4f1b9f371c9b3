"""citeflow.llamaindex with a real streaming ``CitationQueryEngine`` over a small index (a
deterministic local embedding, nothing downloaded) whose LLM is the replaying upstream's RAG
model over HTTP (``OpenAILike``): it cites the chunks by rank from the last to the first."""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from typing import Any

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.query_engine import CitationQueryEngine
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.llms.openai_like import OpenAILike

from citeflow import AnchorEvent, CitationEvent, DoneEvent, SourceEvent, TextEvent
from citeflow.llamaindex import acitation_stream, citation_stream, cite_response


class HashEmbedding(BaseEmbedding):
    """A bag of hashed words, normalised: deterministic, local."""

    def _vec(self, text: str) -> list[float]:
        v = [0.0] * 64
        for w in re.findall(r"\w+", text.lower()):
            v[int(hashlib.sha256(w.encode()).hexdigest(), 16) % 64] += 1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / n for x in v]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vec(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vec(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vec(text)


def node(node_id: str, doc: str, text: str, title: str) -> TextNode:
    return TextNode(
        id_=node_id,
        text=text,
        metadata={"title": title, "url": f"https://example.org/{doc}"},
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc)},
        excluded_llm_metadata_keys=["title", "url"],
        excluded_embed_metadata_keys=["title", "url"],
    )


NODES = [
    node("seine-1", "seine", "The Seine river flows through Paris from east to west.", "Seine"),
    node("louvre-1", "louvre", "The Louvre in Paris is the largest art museum.", "Louvre"),
    node("seine-2", "seine", "The Seine river divides Paris into the Left Bank and the Right Bank.", "Seine"),
]


def engine(url: str, model: str, streaming: bool = True) -> CitationQueryEngine:
    index = VectorStoreIndex(NODES, embed_model=HashEmbedding())
    llm = OpenAILike(model=model, api_base=url, api_key="test", is_chat_model=True, context_window=8192, max_retries=0)
    return CitationQueryEngine.from_args(index, llm=llm, streaming=streaming, similarity_top_k=3)


def expected_numbers(response: Any) -> list[int]:
    """The numbers the answer must show: ranks 3, 2, 1 (as cited) mapped to their documents,
    numbered densely in order of first appearance."""
    docs = [response.source_nodes[r - 1].node.ref_doc_id for r in (3, 2, 1)]
    first: dict[str, int] = {}
    return [first.setdefault(d, len(first) + 1) for d in docs]


def test_citation_query_engine_one_number_per_document(replay_url: str) -> None:
    question = "What does the Seine river do in Paris?"
    response = engine(replay_url, "cite-sources").query(question)
    assert len(response.source_nodes) == 3
    events = list(citation_stream(response, query=question))
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    numbers = expected_numbers(response)
    assert sorted(set(numbers)) == [1, 2]  # two documents, two numbers
    assert text == (
        f"Paris sits on the Seine [{numbers[0]}]. Its museums are famous [{numbers[1]}]. "
        f"The river divides the city [{numbers[2]}]."
    )
    assert [e.number for e in events if isinstance(e, CitationEvent)] == numbers
    new = [(e.number, e.source.key) for e in events if isinstance(e, SourceEvent) and e.is_new]
    assert [n for n, _ in new] == [1, 2]
    assert {k for _, k in new} == {"doc:seine", "doc:louvre"}
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert [(s.number, s.source.title) for s in done.sources] == sorted(
        (n, "Seine" if k == "doc:seine" else "Louvre") for n, k in new
    )


def test_citation_query_engine_not_streamed_is_numbered(replay_url: str) -> None:
    # issue 46 §1: engine.query(...) without streaming, numbered in place.
    question = "What does the Seine river do in Paris?"
    response = cite_response(engine(replay_url, "cite-sources", streaming=False).query(question), query=question)
    numbers = expected_numbers(response)
    assert sorted(set(numbers)) == [1, 2]
    assert str(response) == (
        f"Paris sits on the Seine [{numbers[0]}]. Its museums are famous [{numbers[1]}]. "
        f"The river divides the city [{numbers[2]}]."
    )
    record = response.metadata["citeflow"]
    assert record["raw"] == "Paris sits on the Seine [3]. Its museums are famous [2]. The river divides the city [1]."
    assert record["text"] == str(response)
    docs = {response.source_nodes[r - 1].node.ref_doc_id: n for r, n in zip((3, 2, 1), numbers)}
    assert [(s["number"], s["source"]["key"]) for s in record["sources"]] == sorted(
        (n, f"doc:{d}") for d, n in docs.items()
    )


def test_citation_query_engine_anchors_in_events_and_response_metadata(replay_url: str) -> None:
    question = "What does the Seine river do in Paris?"
    response = engine(replay_url, "cite-sources").query(question)
    events = list(citation_stream(response, query=question, anchors=True))
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    anchors = [e for e in events if isinstance(e, AnchorEvent)]
    # One anchor per citation (ranks 3, 2, 1), its claim the sentence that holds it.
    claims = [text[a.claim.char_start : a.claim.char_end] for a in anchors]
    assert [c.split(" [")[0] for c in claims] == [
        "Paris sits on the Seine",
        "Its museums are famous",
        "The river divides the city",
    ]
    # Each quote is the text of the node that rank names (one sentence each), at its offsets.
    for a, rank in zip(anchors, (3, 2, 1)):
        node_text = re.sub(r"^Source \d+:\s*", "", response.source_nodes[rank - 1].node.get_content())
        assert a.source_id == f"{response.source_nodes[rank - 1].node.node_id}#{rank}"
        if a.quote is not None:
            assert a.quote.char_start is not None and a.quote.char_end is not None
            assert node_text[a.quote.char_start : a.quote.char_end] == a.quote.text == node_text.strip()
    # The scripted model cites by rank whatever the chunks say: "Its museums are famous" shares
    # no word with its node (the Seine dividing Paris), so it has no quote and is unsupported.
    assert [a.quote is not None for a in anchors] == [True, False, True]
    assert anchors[1].verdict == "unsupported"
    # The response's metadata carries what citeflow made of the answer.
    record = response.metadata["citeflow"]
    assert record["text"] == text
    assert record["anchors"] == [a.to_dict() for a in anchors]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert record["sources"] == [s.to_dict() for s in done.sources]
    assert sum(len(s["anchors"]) for s in record["sources"]) == 3


def test_citation_query_engine_japanese_async(replay_url: str) -> None:
    question = "セーヌ川 Seine river Paris"

    async def collect() -> tuple[Any, list[Any]]:
        response = await engine(replay_url, "cite-sources-ja").aquery(question)
        events = [e async for e in acitation_stream(response, marker="rank_full_width", style="full_width")]
        return response, events

    response, events = asyncio.run(collect())
    numbers = expected_numbers(response)
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    assert text == (
        f"パリはセーヌ川のほとりにあります【{numbers[0]}】。美術館が有名です【{numbers[1]}】。"
        f"川が街を分けています【{numbers[2]}】。"
    )


# LlamaIndex's workflow inspects its agent's members, touching pydantic's deprecated `__fields__`.
@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20")
@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211")
def test_function_agent_workflow_events_share_one_numbering(replay_url: str) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool

    from citeflow import Session
    from citeflow.llamaindex import aworkflow_events, cite_callback

    from conftest import hits

    def search_web(query: str) -> list[dict[str, Any]]:
        """Search the web about Paris."""
        return hits(query)

    tool = FunctionTool.from_defaults(search_web, callback=cite_callback())
    llm = OpenAILike(
        model="agent-search", api_base=replay_url, api_key="test", is_chat_model=True,
        is_function_calling_model=True, context_window=8192, max_retries=0,
    )
    agent = FunctionAgent(tools=[tool], llm=llm, system_prompt="Search, then answer citing [[id]] markers.")
    session = Session(scope="session", style="brackets")

    async def collect() -> list[Any]:
        handler = agent.run("Tell me about Paris")
        events = [e async for e in aworkflow_events(handler.stream_events(), session)]
        await handler
        return events

    events = asyncio.run(collect())
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    assert text == (
        "The Seine flows through the heart of Paris [1], and its banks are lined with landmarks [2]. "
        "The city's museums hold vast collections [2], and they draw visitors from everywhere [3]."
    )
    assert [r.query for r in session.rounds()] == ["Seine river Paris", "Paris museums"]
    new = [(e.number, e.source.id) for e in events if isinstance(e, SourceEvent) and e.is_new]
    assert new == [(1, "seine"), (2, "louvre"), (3, "orsay")]
