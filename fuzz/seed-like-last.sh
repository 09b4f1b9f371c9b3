#!/usr/bin/env bash
# Seeds the like_last fuzz target's corpus from the recorded streams of ../shared: each file
# is a stream's first text chunk or delta (its string is where the other records go), the
# texts of the next ones as JSON strings, and a few of them whole, cut at U+001E.
set -euo pipefail
cd "$(dirname "$0")"
shared=${CITEFLOW_SHARED_DIR:-../../shared}
mkdir -p corpus/like_last
python3 - "$shared" <<'PY'
import json, pathlib, sys
shared = pathlib.Path(sys.argv[1]) / "fixtures" / "streams"
out = pathlib.Path("corpus/like_last")
n = 0
def events(path):
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line[5:].strip() if line.startswith("data:") else line.strip()
        if line.startswith("{"):
            yield line
def text_of(ev):
    try:
        v = json.loads(ev)
    except ValueError:
        return None
    if not isinstance(v, dict):
        return None
    d = v.get("delta")
    if isinstance(d, dict) and isinstance(d.get("text"), str):
        return d["text"]
    ch = v.get("choices")
    if isinstance(ch, list) and ch and isinstance(ch[0], dict):
        d = ch[0].get("delta")
        if isinstance(d, dict) and isinstance(d.get("content"), str):
            return d["content"]
    return None
for path in sorted(shared.glob("*.chunks.txt")) + sorted(shared.glob("smollm2-0*.sse")):
    evs = [e for e in events(path) if text_of(e) is not None]
    for start in range(0, len(evs), 16):
        part = evs[start:start + 16]
        # The first event, then the others' texts as literals (written like the first), then
        # the others as they are.
        records = [part[0]] + [json.dumps(text_of(e), ensure_ascii=False) for e in part[1:]] + part[1:4]
        n += 1
        (out / f"seed-{n}").write_text("\u001e".join(records), encoding="utf-8")
print(f"seeded {n} files into fuzz/corpus/like_last")
PY
