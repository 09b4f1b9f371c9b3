#!/usr/bin/env python3
"""A chat recording's answer as an Anthropic Messages or an OpenAI Responses stream (not a test).

    python3 scripts/bench/named_stream.py messages|responses IN.sse OUT.sse

Reads the `delta.content` of every chunk of IN (a recorded chat stream, e.g. smollm2-01.sse)
and writes the same text as the other API's events: one text block (Messages:
message_start, content_block_start, a `text_delta` per chunk, content_block_stop,
message_delta, message_stop) or one output_text part (Responses: response.created, the
item and part added, an `output_text.delta` per chunk, the part and item done,
response.completed), each event with its `event:` line, as the APIs send them. For
scripts/bench/chunk_instructions.sh's Messages and Responses routes.
"""
import json
import sys


def deltas(path):
    out = []
    for line in open(path, encoding="utf-8"):
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            continue
        choices = json.loads(data).get("choices") or [{}]
        text = (choices[0].get("delta") or {}).get("content")
        if isinstance(text, str):
            out.append(text)
    return out


def frame(kind, data):
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def messages(texts):
    yield frame("message_start", {"type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "bench",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})
    yield frame("content_block_start", {"type": "content_block_start", "index": 0,
                                        "content_block": {"type": "text", "text": ""}})
    for t in texts:
        yield frame("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "text_delta", "text": t}})
    yield frame("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield frame("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": len(texts)}})
    yield frame("message_stop", {"type": "message_stop"})


def responses(texts):
    seq = iter(range(1 << 30))
    item = {"id": "msg_bench", "type": "message", "status": "in_progress", "role": "assistant",
            "content": []}
    resp = {"id": "resp_bench", "object": "response", "status": "in_progress", "model": "bench",
            "output": []}
    yield frame("response.created", {"type": "response.created", "sequence_number": next(seq),
                                     "response": resp})
    yield frame("response.output_item.added", {"type": "response.output_item.added",
                                               "sequence_number": next(seq), "output_index": 0,
                                               "item": item})
    part = {"type": "output_text", "annotations": [], "text": ""}
    where = {"item_id": "msg_bench", "output_index": 0, "content_index": 0}
    yield frame("response.content_part.added", {"type": "response.content_part.added",
                                                "sequence_number": next(seq), **where,
                                                "part": part})
    for t in texts:
        yield frame("response.output_text.delta", {"type": "response.output_text.delta",
                                                   "sequence_number": next(seq), **where,
                                                   "delta": t, "logprobs": []})
    whole = "".join(texts)
    yield frame("response.output_text.done", {"type": "response.output_text.done",
                                              "sequence_number": next(seq), **where,
                                              "text": whole, "logprobs": []})
    done_part = {"type": "output_text", "annotations": [], "text": whole}
    yield frame("response.content_part.done", {"type": "response.content_part.done",
                                               "sequence_number": next(seq), **where,
                                               "part": done_part})
    done_item = dict(item, status="completed", content=[done_part])
    yield frame("response.output_item.done", {"type": "response.output_item.done",
                                              "sequence_number": next(seq), "output_index": 0,
                                              "item": done_item})
    yield frame("response.completed", {"type": "response.completed",
                                       "sequence_number": next(seq),
                                       "response": dict(resp, status="completed",
                                                        output=[done_item])})


def main():
    kind, src, dst = sys.argv[1:4]
    texts = deltas(src)
    events = {"messages": messages, "responses": responses}[kind](texts)
    with open(dst, "w", encoding="utf-8") as f:
        f.writelines(events)


if __name__ == "__main__":
    main()
