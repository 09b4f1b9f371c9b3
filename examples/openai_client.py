"""The official `openai` Python client against `citeflow serve`: only `base_url` changes.

    pip install openai==3.54.0
    CITEFLOW_URL=http://127.0.0.1:8080 CITEFLOW_KEY=sk-mine python examples/openai_client.py

Chat Completions with citeflow's `sources` (numbers in the text, `url_citation` annotations,
the source list), then the Responses API (the provider's own citations, numbered).
"""

import os

import openai

URL = os.environ.get("CITEFLOW_URL", "http://127.0.0.1:8080")
client = openai.OpenAI(base_url=f"{URL}/v1", api_key=os.environ.get("CITEFLOW_KEY", "sk-mine"))

# 1. Chat Completions, streamed, with sources the model cites as [[source_N]].
stream = client.chat.completions.create(
    model=os.environ.get("CITEFLOW_MODEL_CHAT", "gpt-4.1-mini"),
    messages=[{"role": "user", "content": "Tell me about Paris."}],
    stream=True,
    extra_body={
        "sources": [
            {"id": "source_3", "title": "The Seine", "url": "https://en.wikipedia.org/wiki/Seine"},
            {"id": "source_7", "title": "Paris", "url": "https://en.wikipedia.org/wiki/Paris"},
        ]
    },
)
text, annotations, listed = "", [], []
for chunk in stream:
    if chunk.choices:
        text += chunk.choices[0].delta.content or ""
        annotations += (chunk.choices[0].delta.model_extra or {}).get("annotations") or []
    for event in (chunk.model_extra or {}).get("citeflow", {}).get("events", []):
        if event["type"] == "done":
            listed = event["sources"]
print("chat:", text)
for a in annotations:
    u = a["url_citation"]
    print(f"  {text[u['start_index']:u['end_index']]} at {u['start_index']}: {u['url']}")
for s in listed:
    print(f"  [{s['number']}] {s['source']['title']} {s['source']['url']}")

# 2. The Responses API, streamed: the typed annotation events carry the numbers' offsets.
text, annotations = "", []
with client.responses.create(
    model=os.environ.get("CITEFLOW_MODEL_RESPONSES", "gpt-5-mini"),
    input="Tech news today?",
    tools=[{"type": "web_search"}],
    stream=True,
) as events:
    for ev in events:
        if ev.type == "response.output_text.delta":
            text += ev.delta
        elif ev.type == "response.output_text.annotation.added":
            annotations.append(ev.annotation)
print("responses:", text[:300], "…")
for a in annotations:
    if a is not None and a.type == "url_citation":
        print(f"  {text[a.start_index:a.end_index]} {a.url}")
