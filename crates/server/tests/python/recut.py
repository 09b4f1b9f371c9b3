"""Writes re-timed copies of the shared OpenAI Responses recordings (issue 39): text deltas
re-cut into pieces of a few characters, each annotation sent some deltas later (never past its
part's end). `python recut.py SHARED_STREAMS OUT_DIR` links every recording into OUT_DIR and
adds the copies as `<name>.recut-<sizes>-lag-<n>.chunks.txt`."""

import json
import os
import sys

VARIANTS = [([1], 0), ([1, 3, 2], 4), ([2], 40)]
RECORDINGS = ["openai-web-search-tool.1", "azure-web-search-preview-tool.1"]


def recut(lines: list[str], sizes: list[int], lag: int) -> list[str]:
    out: list[dict] = []
    waiting: list[list] = []  # [deltas still to wait, payload]
    turn = 0
    for line in lines:
        if not line.strip():
            continue
        v = json.loads(line)
        t = v.get("type", "")
        if t == "response.output_text.delta":
            text = v["delta"]
            at = 0
            while at < len(text):
                n = sizes[turn % len(sizes)]
                turn += 1
                out.append({**v, "delta": text[at : at + n]})
                at += n
                for w in waiting:
                    w[0] -= 1
                while waiting and waiting[0][0] <= 0:
                    out.append(waiting.pop(0)[1])
        elif t == "response.output_text.annotation.added":
            waiting.append([lag, v])
        else:
            if t == "response.output_text.done":
                out.extend(w[1] for w in waiting)
                waiting.clear()
            out.append(v)
    return [json.dumps(v, ensure_ascii=False) for v in out]


def variant_name(name: str, sizes: list[int], lag: int) -> str:
    return f"{name}.recut-{'-'.join(map(str, sizes))}-lag-{lag}.chunks.txt"


def main(src: str, dst: str) -> None:
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        target = os.path.join(dst, f)
        if not os.path.exists(target):
            os.symlink(os.path.join(src, f), target)
    for name in RECORDINGS:
        with open(os.path.join(src, f"{name}.chunks.txt"), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        for sizes, lag in VARIANTS:
            with open(os.path.join(dst, variant_name(name, sizes, lag)), "w", encoding="utf-8") as fh:
                fh.write("\n".join(recut(lines, sizes, lag)) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
