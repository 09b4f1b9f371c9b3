"""The official `anthropic` Python client against `citeflow serve --anthropic-upstream`.

    pip install anthropic==2.10.0
    CITEFLOW_URL=http://127.0.0.1:8080 CITEFLOW_KEY=sk-mine python examples/anthropic_client.py

Claude's `citations_delta`s come through as they are (the SDK's typed citations); the text
gets a number at the end of each cited block, and citeflow's source list rides in a
`citeflow` field of the final event.
"""

import os
import re

import anthropic

URL = os.environ.get("CITEFLOW_URL", "http://127.0.0.1:8080")
client = anthropic.Anthropic(base_url=URL, api_key=os.environ.get("CITEFLOW_KEY", "sk-mine"))

with client.messages.stream(
    model=os.environ.get("CITEFLOW_MODEL_MESSAGES", "claude-sonnet-4-5"),
    max_tokens=1024,
    messages=[{"role": "user", "content": "Tech news today?"}],
    tools=[{"type": "web_search_20250305", "name": "web_search"}],
) as stream:
    for text in stream.text_stream:
        print(text, end="", flush=True)
    message = stream.get_final_message()
print()
for block in message.content:
    if block.type == "text" and block.citations:
        # The block's number, at its end.
        number = re.findall(r"\[\d+\]", block.text)[-1]
        for c in block.citations:
            print(f"  {number} ← {c.type}: {getattr(c, 'url', '')}")
# Not streamed: the same message, with citeflow's events (sources and their numbers).
plain = client.messages.create(
    model=os.environ.get("CITEFLOW_MODEL_MESSAGES", "claude-sonnet-4-5"),
    max_tokens=1024,
    messages=[{"role": "user", "content": "Tech news today?"}],
    tools=[{"type": "web_search_20250305", "name": "web_search"}],
)
for event in (plain.model_extra or {})["citeflow"]["events"]:
    if event["type"] == "done":
        for s in event["sources"]:
            print(f"  [{s['number']}] {s['source'].get('title')} {s['source'].get('url')}")
