"""Tool results read as rounds: JSON content, book passages (EpubLoader) with chapter and CFI
through a real agent, and how the Chainlit side element shows a passage."""

from __future__ import annotations

import json
import warnings
from functools import lru_cache

from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from citeflow import SourceEvent, TextEvent
from citeflow.langchain import CiteflowMiddleware, EpubLoader, message_round, messages_stream
from citeflow.rounds import sources_from_result

from conftest import ROOT, hits

ALICE = ROOT / "crates/cli/books/alice.epub"


def test_json_content_and_hits_without_ids_become_sources() -> None:
    content = json.dumps([{"title": "Seine", "url": "https://example.org/seine", "text": "x"}, hits("Paris museums")[0]])
    sources = sources_from_result(None, content)
    assert [s.id for s in sources] == ["https://example.org/seine", "louvre"]
    wrapped = sources_from_result(None, json.dumps({"results": hits("Paris museums")}))
    assert [s.id for s in wrapped] == ["louvre", "orsay"]
    assert sources_from_result(None, "plain text, no results") == []
    r = message_round(ToolMessage(content=json.dumps(hits("Paris museums")), tool_call_id="c", name="search"))
    assert r is not None and r["query"] == "search" and len(r["sources"]) == 2


@lru_cache(maxsize=1)
def alice() -> list[Document]:
    return EpubLoader(ALICE).load()


@tool(response_format="content_and_artifact")
def search_books(query: str) -> tuple[str, list[Document]]:
    """Search the sample books."""
    docs = alice()
    found = docs[3:6] if "Seine" in query else docs[4:6]
    return "\n".join(d.page_content for d in found), found


def test_book_passages_keep_chapter_and_cfi(replay_url: str) -> None:
    llm = ChatOpenAI(base_url=replay_url, api_key="test", model="agent-search", streaming=True, max_retries=0)
    graph = create_agent(llm, tools=[search_books], middleware=[CiteflowMiddleware()])
    events = list(messages_stream(graph.stream({"messages": [("user", "Alice?")]}, stream_mode="messages")))
    new = [e for e in events if isinstance(e, SourceEvent) and e.is_new]
    # Passages 3 and 4 cited in round 1; 4 again (keeps 2) and 5 in round 2.
    assert [e.number for e in new] == [1, 2, 3]
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    assert "[1]" in text and "[3]" in text and "[[" not in text
    with warnings.catch_warnings():  # chainlit's dependencies warn on import (pydantic)
        warnings.simplefilter("ignore")
        from citeflow.chainlit import source_markdown
    for e in new:
        loc = e.source.locator
        assert loc is not None and loc.cfi and loc.cfi.startswith("epubcfi(")
        shown = source_markdown(e.source, "Seine river Paris")
        assert f"CFI: `{loc.cfi}`" in shown and "Chapter:" in shown and "Search: Seine river Paris" in shown
