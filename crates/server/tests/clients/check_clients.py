"""The official Python clients against `citeflow serve` fed by the replaying upstream.

Run by scripts/test-clients.sh with CITEFLOW_PROXY=http://127.0.0.1:PORT, CITEFLOW_PROXY_PACED
(the same, with keep-alive comments between paced events), CITEFLOW_KEY and CITEFLOW_SHARED_DIR. `openai` for chat completions and responses, `anthropic` for messages,
streaming and not. Each check asserts content: the numbered text, the sources, and the
annotations (their offsets slice the cited number).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import urllib.request
from typing import Any

import anthropic
import openai

PROXY = os.environ["CITEFLOW_PROXY"]
KEY = os.environ.get("CITEFLOW_KEY", "sk-citeflow-test")
SHARED = os.environ["CITEFLOW_SHARED_DIR"]
# The recorded OpenAI web-search answer: 12 url_citation annotations over 7 distinct pages.
RESPONSES = "openai-web-search-tool.1.chunks.txt"
# The recorded Anthropic web-search answer: citations of 4 distinct pages.
MESSAGES = "anthropic-web-search-tool.1.chunks.txt"
# A local model's chat stream citing [1]..[4] of five sources by rank.
CHAT = "smollm2-17.sse"

oa = openai.OpenAI(base_url=f"{PROXY}/v1", api_key=KEY, max_retries=0)
an = anthropic.Anthropic(base_url=PROXY, api_key=KEY, max_retries=0)
# A second citeflow serve (--sse-keep-alive-ms 3) in front of a replay that waits 15 ms
# before each event: its streams carry keep-alive comments between their events.
PACED = os.environ["CITEFLOW_PROXY_PACED"]


def numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", text)]


def check_dense(text: str, sources: int) -> None:
    """Every number 1..sources is shown, and no other."""
    seen = sorted(set(numbers(text)))
    assert seen == list(range(1, sources + 1)), (seen, sources, text)


def field(obj: Any, name: str) -> Any:
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def extra(model: Any, name: str) -> Any:
    return (getattr(model, "model_extra", None) or {}).get(name)


def check_url_citations(text: str, annotations: list[Any], count: int) -> None:
    assert len(annotations) == count, (len(annotations), annotations)
    for a in annotations:
        assert field(a, "type") == "url_citation", a
        cited = text[field(a, "start_index") : field(a, "end_index")]
        assert re.fullmatch(r"\[\d+\]", cited), (cited, a)
        assert field(a, "url").startswith("https://"), a


def chat_sources() -> list[dict[str, str]]:
    path = os.path.join(SHARED, "fixtures/streams/smollm2-manifest.jsonl")
    with open(path) as f:
        entry = next(e for e in map(json.loads, f) if e["file"] == CHAT)
    return [
        {"id": s, "title": f"Source {s}", "url": f"https://example.org/{s}"}
        for s in entry["source_ids"]
    ]


def chat_stream() -> None:
    sources = chat_sources()
    text, events, annotations = "", [], []
    stream = oa.chat.completions.create(
        model=CHAT,
        messages=[{"role": "user", "content": "Tell me about Paris."}],
        stream=True,
        extra_body={"sources": sources, "citeflow": {"marker": "rank", "inject_prompt": False}},
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        if chunk.choices:
            delta = chunk.choices[0].delta
            annotations += getattr(delta, "annotations", None) or extra(delta, "annotations") or []
        events += (extra(chunk, "citeflow") or {}).get("events", [])
    done = [e for e in events if e["type"] == "done"]
    assert len(done) == 1, events
    listed = done[0]["sources"]
    assert listed, "no sources listed"
    check_dense(text, len(listed))
    given = {s["id"]: s["url"] for s in sources}
    for s in listed:
        assert s["source"]["url"] == given[s["source"]["id"]], s
    cites = [e for e in events if e["type"] == "citation"]
    assert len(cites) == len(numbers(text)), (cites, text)
    for c in cites:
        # char_offset counts characters of the rewritten text: it points at the number shown.
        start = c["char_offset"]
        assert text[start:].startswith(f"[{c['number']}]"), (c, text[start : start + 8])
    # The same citations as standard delta.annotations (url_citation, characters of the
    # rewritten content).
    assert len(annotations) == len(cites), annotations
    by_number = {s["number"]: s["source"]["url"] for s in listed}
    for a, c in zip(annotations, cites):
        u = field(a, "url_citation")
        assert field(a, "type") == "url_citation"
        assert text[field(u, "start_index") : field(u, "end_index")] == f"[{c['number']}]", a
        assert field(u, "url") == by_number[c["number"]], a
    print(f"  chat stream: {len(listed)} sources, {len(cites)} citations and annotations")


def chat_plain() -> None:
    answer = oa.chat.completions.create(
        model="json-answer",
        messages=[{"role": "user", "content": "Paris?"}],
        extra_body={"sources": [{"id": "source_7", "title": "Paris", "url": "https://paris.fr/"}]},
    )
    text = answer.choices[0].message.content
    assert text == "Paris is the capital [1], see also [?].", text
    events = extra(answer, "citeflow")["events"]
    assert [e["type"] for e in events] == ["source", "citation", "unresolved", "done"], events
    # Typed message.annotations: one url_citation slicing [1].
    (a,) = answer.choices[0].message.annotations or []
    assert a.type == "url_citation" and a.url_citation.url == "https://paris.fr/", a
    assert text[a.url_citation.start_index : a.url_citation.end_index] == "[1]", a
    assert a.url_citation.title == "Paris"
    print("  chat (not streaming): [1] and [?], message.annotations typed")


def responses_stream() -> str:
    text, annotations, seq = "", [], []
    done_text = final = None
    with oa.responses.create(model=RESPONSES, input="Tech news today?", stream=True) as stream:
        for ev in stream:
            seq.append(ev.sequence_number)
            if ev.type == "response.output_text.delta":
                text += ev.delta
            elif ev.type == "response.output_text.annotation.added":
                annotations.append(ev.annotation)
            elif ev.type == "response.output_text.done":
                done_text = ev.text
            elif ev.type == "response.completed":
                final = ev.response
    assert seq == list(range(len(seq))), seq[:20]
    assert done_text == text
    assert final is not None and final.output_text == text
    check_url_citations(text, annotations, 12)
    check_dense(text, 7)
    assert "utm_source=openai" not in text
    print(f"  responses stream: {len(annotations)} annotations, 7 sources")
    return text


def responses_plain(streamed: str) -> None:
    r = oa.responses.create(model=RESPONSES, input="Tech news today?")
    assert r.output_text == streamed
    msg = next(o for o in r.output if o.type == "message")
    check_url_citations(r.output_text, msg.content[0].annotations, 12)
    print("  responses (not streaming): the same text and annotations")


def messages() -> None:
    body: dict[str, Any] = dict(
        model=MESSAGES, max_tokens=1024, messages=[{"role": "user", "content": "Tech news today?"}]
    )
    with an.messages.stream(**body) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    text = "".join(b.text for b in final.content if b.type == "text")
    assert text == streamed
    check_dense(text, 4)
    cited = [c for b in final.content if b.type == "text" for c in (b.citations or [])]
    assert cited and all(c.type == "web_search_result_location" for c in cited), cited
    # The blocks that carry provider citations show their number at their end.
    for b in final.content:
        if b.type == "text" and b.citations:
            assert re.search(r"\[\d+\]\s*$", b.text), b.text
    plain = an.messages.create(**body)
    assert "".join(b.text for b in plain.content if b.type == "text") == text
    events = extra(plain, "citeflow")["events"]
    done = next(e for e in events if e["type"] == "done")
    assert [s["number"] for s in done["sources"]] == [1, 2, 3, 4], done
    urls = {c.url for c in cited}
    assert {s["source"]["url"] for s in done["sources"]} <= urls, (done, urls)
    print(f"  messages: 4 sources, {len(cited)} provider citations, same text not streaming")


def passthrough() -> None:
    models = oa.models.list()
    assert [m.id for m in models.data] == ["replay"]
    emb = oa.embeddings.create(model="e", input=["a b"])
    assert emb.data[0].embedding == [3.0, (ord("a") + ord(" ") + ord("b")) % 97 / 97, 0.5]
    print("  pass-through: models, embeddings")


def chat_text(client: openai.OpenAI) -> str:
    stream = client.chat.completions.create(
        model=CHAT,
        messages=[{"role": "user", "content": "Tell me about Paris."}],
        stream=True,
        extra_body={"sources": chat_sources(), "citeflow": {"marker": "rank", "inject_prompt": False}},
    )
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def messages_text(client: anthropic.Anthropic) -> str:
    body: dict[str, Any] = dict(
        model=MESSAGES, max_tokens=1024, messages=[{"role": "user", "content": "Tech news today?"}]
    )
    with client.messages.stream(**body) as stream:
        return "".join(stream.text_stream)


def keep_alive() -> None:
    """A stream silent past the keep-alive period carries comment lines between its events,
    and the official clients read it as they read the same stream without them (the Python
    SDKs once failed on a blank line after a comment: an event with no data)."""
    body = {"model": CHAT, "stream": True, "sources": chat_sources(),
            "messages": [{"role": "user", "content": "Tell me about Paris."}],
            "citeflow": {"marker": "rank", "inject_prompt": False}}
    req = urllib.request.Request(
        f"{PACED}/v1/chat/completions", data=json.dumps(body).encode(),
        headers={"authorization": f"Bearer {KEY}", "content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        raw = r.read().decode()
    comments = raw.count("\n:\n") + raw.startswith(":\n")
    assert comments >= 3, raw[:500]
    assert "\n:\n\n" not in raw and not raw.startswith(":\n\n"), "a comment followed by a blank line"
    with openai.OpenAI(base_url=f"{PACED}/v1", api_key=KEY, max_retries=0) as paced_oa:
        chat = chat_text(paced_oa)
    assert chat == chat_text(oa) and numbers(chat), chat
    with anthropic.Anthropic(base_url=PACED, api_key=KEY, max_retries=0) as paced_an:
        text = messages_text(paced_an)
    assert text == messages_text(an) and numbers(text), text
    print(f"  keep-alive: {comments} comment lines in one chat stream; chat and messages streams read as without them")


def main() -> int:
    print(f"openai {openai.__version__}, anthropic {anthropic.__version__}")
    for check in (chat_stream, chat_plain, lambda: responses_plain(responses_stream()), messages, passthrough, keep_alive):
        started = time.monotonic()
        check()
        print(f"    ({time.monotonic() - started:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
