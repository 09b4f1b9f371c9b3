"""citeflow's seed app: a Chainlit chat with a LangChain ReAct agent whose searches share one
numbering. Start it with `chainlit run examples/chainlit_agent/app.py` (see README.md).

Two tools: `search_web` over the small bundled corpus (corpus.json) and `search_books` over the
sample books (Alice's Adventures in Wonderland, 草枕). `CiteflowMiddleware` turns every search
into a round and shows the model each passage under its marker; `CitedMessage` streams the
rewritten answer, attaches each source as a side element named as its marker, and ends with the
list grouped by search round.

Settings (environment): OPENAI_BASE_URL (default http://127.0.0.1:8080/v1, `citeflow serve`'s
local model), OPENAI_API_KEY, CITEFLOW_AGENT_MODEL (default `local`), CITEFLOW_STYLE
(`brackets` → [1], `full_width` → 【1】), CITEFLOW_VIA_SERVE (1 when the upstream is `citeflow
serve`: the default when OPENAI_BASE_URL is unset; it then passes the markers through with
`"citeflow": {"render": "client"}`, since the agent's middleware numbers them), CITEFLOW_ANCHORS
(default 1: each citation's side element shows the sentence of its source that supports it, in
bold in its passage, and marks a weakly supported or unsupported citation; 0 turns it off).
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import chainlit as cl
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from citeflow.chainlit import CitedMessage
from citeflow.langchain import CiteflowMiddleware, EpubLoader, amessages_stream, session_from_state

HERE = Path(__file__).resolve().parent
BOOKS = [HERE.parents[1] / "crates/cli/books/alice.epub", HERE.parents[1] / "crates/cli/books/kusamakura.epub"]
STYLE = os.environ.get("CITEFLOW_STYLE", "brackets")
ANCHORS = os.environ.get("CITEFLOW_ANCHORS", "1") != "0"


def _terms(text: str) -> set[str]:
    """Words (Latin) and characters (CJK) of a text, lower-cased."""
    return set(re.findall(r"[a-z0-9']{3,}", text.lower())) | set(re.findall(r"[\u3040-\u9fff]", text))


def _search(docs: list[Document], query: str, k: int) -> list[Document]:
    q = _terms(query)
    scored = [(len(q & _terms(d.page_content + " " + str(d.metadata.get("title", "")))), i) for i, d in enumerate(docs)]
    best = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:k]
    return [docs[i] for _, i in best]


@lru_cache(maxsize=1)
def web_corpus() -> list[Document]:
    pages = json.loads((HERE / "corpus.json").read_text(encoding="utf-8"))
    return [Document(page_content=p["text"], metadata={k: v for k, v in p.items() if k != "text"}, id=p["id"]) for p in pages]


@lru_cache(maxsize=1)
def book_passages() -> list[Document]:
    return [d for path in BOOKS if path.is_file() for d in EpubLoader(path).load()]


@tool(response_format="content_and_artifact")
def search_web(query: str) -> tuple[str, list[Document]]:
    """Search the web (a small corpus about Paris) for pages about the query."""
    found = _search(web_corpus(), query, 3)
    return "\n".join(d.page_content for d in found) or "no results", found


@tool(response_format="content_and_artifact")
def search_books(query: str) -> tuple[str, list[Document]]:
    """Search the sample books (Alice's Adventures in Wonderland, 草枕) for passages."""
    found = _search(book_passages(), query, 3)
    return "\n".join(d.page_content for d in found) or "no results", found


@lru_cache(maxsize=1)
def agent() -> Any:
    via_serve = os.environ.get("CITEFLOW_VIA_SERVE", "0" if "OPENAI_BASE_URL" in os.environ else "1") == "1"
    model = ChatOpenAI(
        base_url=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
        api_key=os.environ.get("OPENAI_API_KEY", "local"),
        model=os.environ.get("CITEFLOW_AGENT_MODEL", "local"),
        streaming=True,
        # citeflow serve would rewrite the markers itself (without the agent's sources).
        extra_body={"citeflow": {"render": "client"}} if via_serve else None,
    )
    return create_agent(
        model,
        tools=[search_web, search_books],
        system_prompt="You answer questions about Paris and about books. Search before answering.",
        middleware=[CiteflowMiddleware(style=STYLE, anchors=ANCHORS)],
        checkpointer=InMemorySaver(),
    )


@cl.on_message
async def on_message(message: cl.Message) -> None:
    graph = agent()
    config: Any = {
        "configurable": {"thread_id": cl.context.session.thread_id},
        "callbacks": [cl.LangchainCallbackHandler()],
    }
    # This thread's rounds and numbers so far: the next answer continues them.
    session = session_from_state((await graph.aget_state(config)).values, style=STYLE, anchors=ANCHORS)
    cited = CitedMessage(session)
    stream = graph.astream({"messages": [("user", message.content)]}, config, stream_mode="messages")
    await cited.send_events(amessages_stream(stream, session))
