"""The adapters with the real ``openai`` and ``langchain-core`` packages, fed from a recorded
stream without network: the OpenAI client talks to an ``httpx.MockTransport`` that answers
with the recorded SSE bytes; the LangChain chat model yields the recorded tokens."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any, Optional

import httpx
import pytest
import openai
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from openai.types.chat import ChatCompletionChunk

import citeflow
from citeflow import adapters
from conftest import merged, streams_dir, text_of

# smollm2-17: a chat stream with four `[N]` rank markers, each split across chunks.
RECORDING = "smollm2-17.sse"


def recording() -> tuple[bytes, list[dict[str, Any]]]:
    data = (streams_dir() / RECORDING).read_bytes()
    payloads = [
        json.loads(line[6:])
        for line in data.decode().splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]
    return data, payloads


def tokens() -> list[str]:
    _, payloads = recording()
    out = []
    for p in payloads:
        t = (p["choices"][0].get("delta") or {}).get("content")
        if t:
            out.append(t)
    return out


def new_rewriter() -> citeflow.Rewriter:
    session = citeflow.Session(rank="renumber", syntaxes=["double_bracket"])
    session.append_round([citeflow.Source(f"doc{n}", title=f"source {n}") for n in range(1, 6)], query="soseki")
    return session.rewriter()


def expected() -> list[dict[str, Any]]:
    rw = new_rewriter()
    events = [e for t in tokens() for e in rw.feed(t)] + rw.finish()
    got = merged(events)
    assert sum(e["type"] == "citation" for e in got) == 4
    return got


def sse_handler(request: httpx.Request) -> httpx.Response:
    assert request.url.path.endswith("/chat/completions")
    body = json.loads(request.content)
    assert body["stream"] is True
    data, _ = recording()
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=data)


def test_openai_stream_from_the_real_sdk() -> None:
    http = httpx.Client(transport=httpx.MockTransport(sse_handler))
    client = openai.OpenAI(api_key="test", base_url="http://recorded.invalid/v1", http_client=http)
    stream = client.chat.completions.create(
        model="SmolLM2-135M-Instruct-Q4_1", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    events = list(adapters.openai_stream(stream, new_rewriter()))
    assert merged(events) == expected()
    assert events[-1].type == "done" and events[-1].report.citations == 4
    client.close()


def test_openai_astream_from_the_real_async_sdk() -> None:
    async def main() -> list[citeflow.Event]:
        http = httpx.AsyncClient(transport=httpx.MockTransport(sse_handler))
        client = openai.AsyncOpenAI(api_key="test", base_url="http://recorded.invalid/v1", http_client=http)
        stream = await client.chat.completions.create(
            model="SmolLM2-135M-Instruct-Q4_1", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        out = [e async for e in adapters.openai_astream(stream, new_rewriter())]
        await client.close()
        return out

    assert merged(asyncio.run(main())) == expected()


def test_openai_adapters_take_validated_chunk_objects_and_dicts() -> None:
    _, payloads = recording()
    chunks = [ChatCompletionChunk.model_validate(p) for p in payloads]
    assert merged(adapters.openai_stream(iter(chunks), new_rewriter())) == expected()
    assert merged(adapters.openai_stream(payloads, new_rewriter())) == expected()

    async def agen() -> AsyncIterator[ChatCompletionChunk]:
        for c in chunks:
            yield c

    async def main() -> list[citeflow.Event]:
        return [e async for e in adapters.openai_astream(agen(), new_rewriter())]

    assert merged(asyncio.run(main())) == expected()


class RecordedChatModel(BaseChatModel):
    """A chat model whose stream replays recorded tokens, one chunk each."""

    recorded: list[str]

    @property
    def _llm_type(self) -> str:
        return "recorded"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: Optional[list[str]] = None,
        run_manager: Optional[CallbackManagerForLLMRun] = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="".join(self.recorded)))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: Optional[list[str]] = None,
        run_manager: Optional[CallbackManagerForLLMRun] = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for t in self.recorded:
            yield ChatGenerationChunk(message=AIMessageChunk(content=t))


def test_langchain_stream_of_a_chat_model() -> None:
    model = RecordedChatModel(recorded=tokens())
    stream = model.stream("tell me about Soseki")
    assert merged(adapters.langchain_stream(stream, new_rewriter())) == expected()


def test_langchain_astream_of_a_chat_model() -> None:
    model = RecordedChatModel(recorded=tokens())

    async def main() -> list[citeflow.Event]:
        return [e async for e in adapters.langchain_astream(model.astream("hi"), new_rewriter())]

    assert merged(asyncio.run(main())) == expected()


def test_langchain_generic_fake_model_and_content_blocks() -> None:
    answer = "".join(tokens())
    model = GenericFakeChatModel(messages=iter([AIMessage(content=answer)]))
    events = list(adapters.langchain_stream(model.stream("hi"), new_rewriter()))
    assert merged(events) == expected()
    # List content (content blocks) is read through its text blocks.
    blocks = [AIMessageChunk(content=[{"type": "text", "text": t}]) for t in tokens()]
    assert merged(adapters.langchain_stream(blocks, new_rewriter())) == expected()
    assert text_of(events).count("[1]") >= 1


# issue 45 §2: openai_stream hands an SDK chunk of text alone to the engine as a text payload
# (no model_dump); every other chunk (role, finish, tool calls, annotations, Perplexity's
# citations, usage) takes the core's reader. The events must be exactly the reader's.
@pytest.mark.parametrize(
    "name",
    ["openai-text.chunks.txt", "perplexity-citations.chunks.txt", "perplexity-text.chunks.txt", "smollm2-01.sse",
     "openai-web-search-tool.1.chunks.txt"],
)
def test_openai_stream_of_sdk_chunks_equals_the_reader_of_their_json(name: str) -> None:
    import json

    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    from conftest import streams_dir
    from test_chat_provider import responses_as_chat

    if name.startswith("openai-web-search"):
        payloads = responses_as_chat(name)  # text deltas and url_citation annotations
    else:
        text = (streams_dir() / name).read_text(encoding="utf-8")
        lines = [ln[6:] if ln.startswith("data: ") else ln for ln in text.splitlines()]
        payloads = [json.loads(ln) for ln in lines if ln.startswith("{")]
    # The SDK builds its chunks this way (``Stream`` -> ``construct_type``), extra fields kept.
    sdk = [construct_type(type_=ChatCompletionChunk, value=p) for p in payloads]
    sources = [citeflow.Source("doc1", title="Mine")]

    def events(items: list[Any]) -> list[dict[str, Any]]:
        return [e.to_dict() for e in adapters.openai_stream(iter(items), citeflow.Rewriter(sources))]

    async def aevents(items: list[Any]) -> list[dict[str, Any]]:
        async def agen() -> AsyncIterator[Any]:
            for i in items:
                yield i

        return [e.to_dict() async for e in adapters.openai_astream(agen(), citeflow.Rewriter(sources))]

    want = events(payloads)
    assert events(sdk) == want
    assert asyncio.run(aevents(sdk)) == want
    assert want[-1]["type"] == "done" and sum(e["type"] == "text" for e in want) > 3
