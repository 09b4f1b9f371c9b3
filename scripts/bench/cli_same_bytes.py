"""Two builds of `citeflow render` write the same bytes (not a test; the check beside a speed
change of the CLI or of the core's stream path, issue 45 item 4).

Renders, with each of the two builds, and compares byte for byte (stdout, stderr and the exit
status):

- every recording in the shared `fixtures/streams` (the `*.chunks.txt`, one payload a line, and
  the `*.sse`), each framed both ways (a `.chunks.txt` also as SSE: `data: ` before each line and
  a blank line after; an `.sse` also as JSONL: its `data:` values, `[DONE]` left out), with
  `--input jsonl` and `--input sse`, `--output jsonl` and `--output text`: four renders a
  recording; the sources are those the recording's model saw (the SmolLM2 manifest) or
  `source_1` ... `source_30`;
- onyx.py's 100k-token workload (`--input jsonl --rank renumber`, JSONL and text output);
- the same workload and the recordings through a pipe (`cat FILE |`, the reading thread's path)
  with `--output text`, whose bytes do not depend on how the pipe cuts the input;
- the 100k workload's lines cut into one-byte reads is not done (too slow); the core's tests do.

Stdin is the file itself (the path `citeflow render` reads a regular file on) unless piped.
Prints the number of renders compared and every difference; fails on any.

    python3 scripts/bench/cli_same_bytes.py --citeflow NEW --before OLD [--streams DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from onyx import N_DOCS, tokens  # noqa: E402

HERE = Path(__file__).resolve().parent


def sse_of_jsonl(raw: bytes) -> bytes:
    lines = [l for l in raw.split(b"\n") if l.strip()]
    return b"".join(b"data: " + l + b"\n\n" for l in lines)


def jsonl_of_sse(raw: bytes) -> bytes:
    out = []
    for l in raw.split(b"\n"):
        l = l.rstrip(b"\r")
        if l.startswith(b"data:"):
            d = l[5:].lstrip(b" ")
            if d.strip() != b"[DONE]":
                out.append(d + b"\n")
    return b"".join(out)


def run(cmd: list[str], stdin: Path, pipe: bool) -> tuple[int, bytes, bytes]:
    if pipe:
        cat = subprocess.Popen(["cat", str(stdin)], stdout=subprocess.PIPE)
        p = subprocess.run(cmd, stdin=cat.stdout, capture_output=True)
        cat.wait()
    else:
        with stdin.open("rb") as f:
            p = subprocess.run(cmd, stdin=f, capture_output=True)
    return p.returncode, p.stdout, p.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--citeflow", required=True)
    ap.add_argument("--before", required=True)
    ap.add_argument("--streams", default=str(HERE.parents[2] / "shared" / "fixtures" / "streams"))
    args = ap.parse_args()
    streams = Path(args.streams)
    manifest = {}
    mf = streams / "smollm2-manifest.jsonl"
    if mf.exists():
        for line in mf.read_text().splitlines():
            m = json.loads(line)
            manifest[m["file"]] = m["source_ids"]
    recs = sorted(p for p in streams.iterdir() if p.name.endswith((".chunks.txt", ".sse")))
    if not recs:
        print(f"no recordings in {streams}")
        return 1
    cases: list[tuple[str, list[str], Path, bool]] = []
    diffs = 0
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        generic = t / "generic.json"
        generic.write_text(json.dumps([{"id": f"source_{i}", "url": f"https://example.org/s{i}"}
                                       for i in range(1, 31)]))
        for rec in recs:
            raw = rec.read_bytes()
            if rec.name.endswith(".sse"):
                sse, jsonl = raw, jsonl_of_sse(raw)
            else:
                sse, jsonl = sse_of_jsonl(raw), raw
            fj, fs = t / f"{rec.name}.jsonl", t / f"{rec.name}.sse"
            fj.write_bytes(jsonl)
            fs.write_bytes(sse)
            src = generic
            if rec.name in manifest:
                src = t / f"{rec.name}.sources.json"
                src.write_text(json.dumps([{"id": i, "title": f"Title of {i}"} for i in manifest[rec.name]]))
            for inp, f in (("jsonl", fj), ("sse", fs)):
                for out in ("jsonl", "text"):
                    cases.append((f"{rec.name} --input {inp} --output {out}",
                                  ["render", "--input", inp, "--output", out, "--sources", str(src)], f, False))
                cases.append((f"{rec.name} --input {inp} --output text (pipe)",
                              ["render", "--input", inp, "--output", "text", "--sources", str(src)], f, True))
        docs = t / "docs.json"
        docs.write_text(json.dumps([{"id": f"doc_{i}", "url": f"https://example.org/{i}"}
                                    for i in range(1, N_DOCS + 1)]))
        work = t / "100k.jsonl"
        work.write_text("".join(json.dumps(tok) + "\n" for tok in tokens(100000)))
        for out in ("jsonl", "text"):
            cases.append((f"100k tokens --output {out}", ["render", "--input", "jsonl", "--output", out,
                                                          "--rank", "renumber", "--sources", str(docs)], work, False))
        cases.append(("100k tokens --output text (pipe)", ["render", "--input", "jsonl", "--output", "text",
                                                           "--rank", "renumber", "--sources", str(docs)], work, True))
        for name, cmd, stdin, pipe in cases:
            a = run([args.citeflow, *cmd], stdin, pipe)
            b = run([args.before, *cmd], stdin, pipe)
            if a != b:
                diffs += 1
                what = [w for w, x, y in zip(("exit status", "stdout", "stderr"), a, b) if x != y]
                print(f"DIFFERENT ({', '.join(what)}): {name}")
    print(f"{len(cases)} renders compared ({len(recs)} recordings), {diffs} different")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
