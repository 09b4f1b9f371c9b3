"""The official `openai` client, pointed at `citeflow serve` with base_url, works unchanged."""

import json
import os
import urllib.request
from collections.abc import Iterator

import openai
import pytest

BASE = os.environ["CITEFLOW_URL"]
KEY = os.environ["CITEFLOW_API_KEY"]
SOURCES = [{"id": f"source_{i}", "title": f"Source {i}"} for i in range(1, 6)]


@pytest.fixture
def client() -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{BASE}/v1", api_key=KEY, max_retries=0) as c:
        yield c


def test_streaming_with_citations(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="smollm2-17.sse",
        messages=[{"role": "user", "content": "Who was Natsume Soseki?"}],
        stream=True,
        extra_body={"sources": SOURCES, "citeflow": {"marker": "rank", "inject_prompt": False}},
    )
    text = ""
    events = []
    stream_ids = set()
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        extra = (chunk.model_extra or {}).get("citeflow")
        assert extra is not None, "every chunk carries citeflow data"
        stream_ids.add(extra["stream_id"])
        events.extend(extra["events"])
    assert len(stream_ids) == 1
    kinds = [e["type"] for e in events]
    assert "citation" in kinds and kinds[-1] == "done"
    numbers = [e["number"] for e in events if e["type"] == "citation"]
    assert numbers and min(numbers) == 1
    for n in set(numbers):
        assert f"[{n}]" in text
    done = events[-1]
    assert done["report"]["verified"] is True
    assert [s["number"] for s in done["sources"]] == sorted({*numbers})


def test_plain_stream_passes_through(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="openai-text.chunks.txt",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text.startswith("**")
    assert len(text) > 200


def test_non_streaming_answer_is_rewritten(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model="json-answer",
        messages=[{"role": "user", "content": "Paris?"}],
        extra_body={"sources": [{"id": "source_7", "title": "Paris"}]},
    )
    assert answer.choices[0].message.content == "Paris is the capital [1], see also [?]."
    events = (answer.model_extra or {})["citeflow"]["events"]
    assert [e["type"] for e in events] == ["source", "citation", "unresolved", "done"]


def test_upstream_errors_reach_the_client_as_api_errors(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(
            model="no-such-model", messages=[{"role": "user", "content": "x"}], stream=True
        )
    assert e.value.code == "upstream_error"


def test_a_wrong_key_is_refused(client: openai.OpenAI) -> None:
    with openai.OpenAI(base_url=f"{BASE}/v1", api_key="wrong", max_retries=0) as bad:
        with pytest.raises(openai.AuthenticationError) as e:
            bad.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert e.value.code == "invalid_api_key"


def test_a_session_keeps_numbers_across_answers(client: openai.OpenAI) -> None:
    req = urllib.request.Request(
        f"{BASE}/v1/sessions",
        data=json.dumps({"sources": SOURCES}).encode(),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req) as resp:
        session = json.load(resp)["id"]

    def numbers() -> list[int]:
        stream = client.chat.completions.create(
            model="smollm2-17.sse",
            messages=[{"role": "user", "content": "q"}],
            stream=True,
            extra_body={
                "citeflow": {"session": session, "scope": "session", "marker": "rank", "inject_prompt": False}
            },
        )
        out = []
        for chunk in stream:
            for e in (chunk.model_extra or {})["citeflow"]["events"]:
                if e["type"] == "citation":
                    out.append(e["number"])
        return out

    first = numbers()
    second = numbers()
    assert first and first == second


# Issue 39: the Responses route read with the official client, under any cutting and timing.
from recut import RECORDINGS, VARIANTS, variant_name  # noqa: E402


def _first_appearances(text: str) -> list[int]:
    import re

    seen: list[int] = []
    for m in re.finditer(r"\[(\d+)\]", text):
        n = int(m.group(1))
        if n not in seen:
            seen.append(n)
    return seen


def _final_answer(client: openai.OpenAI, model: str, hold: int | None, stream: bool) -> tuple[str, list[int]]:
    extra = {"citeflow": {"settings": {"max_link_hold_bytes": hold}}} if hold is not None else {}
    if stream:
        completed = None
        deltas = ""
        with client.responses.create(model=model, input="news?", stream=True, extra_body=extra) as s:
            for event in s:
                if event.type == "response.output_text.delta":
                    deltas += event.delta
                if event.type == "response.completed":
                    completed = event.response
        assert completed is not None
        response = completed
    else:
        response = client.responses.create(model=model, input="news?", extra_body=extra)
    text = response.output_text
    numbers = []
    message = next(o for o in response.output if o.type == "message")
    part = message.content[0]
    assert part.type == "output_text" and part.text == text
    for a in part.annotations:
        n = (a.model_extra or {})["number"]
        assert a.type == "url_citation"
        assert text[a.start_index : a.end_index] == f"[{n}]", (a, text)
        numbers.append(n)
    if stream and hold is None:
        # Within the hold nothing is bound late: the streamed text is the final answer.
        assert deltas == text
    return text, numbers


@pytest.mark.parametrize("recording", RECORDINGS)
def test_responses_final_answer_under_any_cutting_and_lag(client: openai.OpenAI, recording: str) -> None:
    finals = set()
    for sizes, lag in VARIANTS:
        model = variant_name(recording, sizes, lag)
        for hold in (None, 16):
            for stream in (True, False):
                text, numbers = _final_answer(client, model, hold, stream)
                shown = _first_appearances(text)
                assert shown == list(range(1, len(shown) + 1)), (model, hold, text)
                assert sorted(set(numbers)) == shown, (model, hold)
                finals.add(text)
    # The final answer depends on neither the cutting, the lag, the hold nor streaming.
    assert len(finals) == 1, finals
    (text,) = finals
    if recording.startswith("openai"):
        assert "utm_source=openai" not in text
        assert _first_appearances(text) == list(range(1, 8))
    else:
        assert _first_appearances(text) == [1]
