"""Benchmark: the citeflow package against a pure-Python regex processor on the same token stream.

Both rewrite the same deterministic LLM-like token stream (markers split across tokens, several
ids in one marker, unknown ids, multi-byte text) token by token, each returning events per
token, and must produce the same rendered text. Printed: tokens/s of each, the ratio, and the
same at 1x, 10x and 100x the text to show that the cost per token stays flat (linear time), and
the cost of the loop itself around a `feed` that does no work (the floor no processor can beat).
Times are CPU time of this process (``time.process_time``), best of ``--repeat`` runs taken
alternately, so that other processes on a shared machine disturb the figures less.

Runs: `feed` (every event as an object, token by token), `feed_text` (only the text, token by
token), `batch` (`adapters.rewrite_stream`, 256 tokens per call), each against the empty loop of
the same shape.

    python crates/py/bench/bench.py [--base-tokens 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import platform
import random
import re
import sys
import time
from typing import Any, Callable

import citeflow
from citeflow.adapters import rewrite_stream

IDS = [f"source_{n}" for n in (3, 7, 12, 15, 21, 30, 41, 52)]
WORDS = (
    "the of and a to in is was for on that with as by at from his her it an were which are this "
    "be has had not but or have one all their they its been more who when first also into "
    "café naïve résumé 漢字 東京 Zürich über"
).split()


def token_stream(n_tokens: int, seed: int = 42) -> list[str]:
    """A stream of about `n_tokens` tokens: words with leading spaces, punctuation, and a
    marker every ~25 tokens, tokenised the way models split them (`" [["`, `"source"`, `"_"`,
    `"1"`, `"2"`, `"]]."`)."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n_tokens:
        for _ in range(rng.randrange(8, 40)):
            out.append(" " + rng.choice(WORDS))
        out.append(rng.choice([",", ".", "", ""]))
        r = rng.random()
        if r < 0.6:
            ids = rng.sample(IDS, rng.choice([1, 1, 1, 2]))
            if rng.random() < 0.1:
                ids.append("source_99")  # invented by the model
            inner = ", ".join(ids)
            marker = f" [[{inner}]]"
        elif r < 0.8:
            marker = f" <cite:{rng.choice(IDS)}>"
        else:
            marker = f" [{rng.choice(IDS)}]"
        # Split the marker like a tokenizer: 1-4 characters at a time.
        i = 0
        while i < len(marker):
            step = rng.randrange(1, 5)
            out.append(marker[i : i + step])
            i += step
        out.append(rng.choice([".", ". ", "\n\n", ""]))
    return [t for t in out if t]


class RegexProcessor:
    """A straightforward pure-Python streaming rewriter: regexes for complete markers, a regex
    for a possible marker start at the end of the buffer (held back), numbers by first
    appearance, `[?]` for unknown ids, one dict per event."""

    ID = r"source_\d+"
    MARKER = re.compile(
        r"\[\[\s*([^\[\]\n]{1,200}?)\s*\]\]"  # [[a, b]]
        r"|<cite:\s*([^<>\s]{1,100})\s*>"  # <cite:a>
        r"|(?<!\[)\[(" + ID + r"(?:\s*,\s*" + ID + r")*)\](?!\])"  # [a] / [a, b]
    )
    PARTIAL = re.compile(
        r"(?:\[\[[^\[\]\n]*\]?|\[(?:" + ID + r"(?:\s*,\s*(?:" + ID + r")?)*|s(?:o(?:u(?:r(?:c(?:e(?:_\d*)?)?)?)?)?)?)?"
        r"|<(?:c(?:i(?:t(?:e(?::[^<>\s]*)?)?)?)?)?)$"
    )

    def __init__(self, ids: list[str], max_pending: int = 64) -> None:
        self.ids = set(ids)
        self.numbers: dict[str, int] = {}
        self.buf = ""
        self.max_pending = max_pending
        self.out_bytes = 0

    def _render(self, ids: list[str], events: list[dict[str, Any]]) -> str:
        parts = []
        seen: set[int] = set()
        for i in ids:
            i = i.strip()
            if i in self.ids:
                n = self.numbers.get(i)
                if n is None:
                    n = self.numbers[i] = len(self.numbers) + 1
                    events.append({"type": "source", "number": n, "id": i})
                if n in seen:
                    continue
                seen.add(n)
                events.append({"type": "citation", "number": n, "source_id": i, "byte_offset": self.out_bytes})
                parts.append(f"[{n}]")
            else:
                events.append({"type": "unresolved", "reference": i})
                parts.append("[?]")
        return "".join(parts)

    def _scan(self, final: bool) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        buf = self.buf
        text: list[str] = []
        pos = 0
        for m in self.MARKER.finditer(buf):
            text.append(buf[pos : m.start()])
            body = m.group(1) or m.group(2) or m.group(3)
            text.append(self._render(body.split(","), events))
            pos = m.end()
        rest = buf[pos:]
        hold = ""
        if not final:
            p = self.PARTIAL.search(rest)
            if p and len(rest) - p.start() <= self.max_pending:
                hold = rest[p.start() :]
                rest = rest[: p.start()]
        text.append(rest)
        self.buf = hold
        s = "".join(text)
        if s:
            self.out_bytes += len(s.encode())
            events.append({"type": "text", "text": s})
        return events

    def feed(self, chunk: str) -> list[dict[str, Any]]:
        self.buf += chunk
        return self._scan(False)

    def finish(self) -> list[dict[str, Any]]:
        events = self._scan(True)
        events.append({"type": "done", "numbers": dict(self.numbers)})
        return events


def new_rewriter() -> citeflow.Rewriter:
    return citeflow.Rewriter([citeflow.Source(i) for i in IDS], settings=citeflow.Settings(unknown="mark"))


def run_citeflow(tokens: list[str]) -> str:
    """`feed`: every event as an object, token by token."""
    rw = new_rewriter()
    out = []
    for t in tokens:
        for e in rw.feed(t):
            if e.type == "text":
                out.append(e.text)
    for e in rw.finish():
        if e.type == "text":
            out.append(e.text)
    return "".join(out)


def run_feed_text(tokens: list[str]) -> str:
    """`feed_text`: only the text, token by token (the other events wait in the rewriter)."""
    rw = new_rewriter()
    feed = rw.feed_text
    out = [feed(t) for t in tokens]
    out.append(rw.finish_text())
    return "".join(out)


def run_batch(tokens: list[str]) -> str:
    """`adapters.rewrite_stream`: 256 tokens per call into the engine, every event."""
    out = []
    for e in rewrite_stream(tokens, new_rewriter(), batch=256):
        if e.type == "text":
            out.append(e.text)
    return "".join(out)


def run_python(tokens: list[str]) -> str:
    p = RegexProcessor(IDS)
    out = []
    for t in tokens:
        for e in p.feed(t):
            if e["type"] == "text":
                out.append(e["text"])
    for e in p.finish():
        if e["type"] == "text":
            out.append(e["text"])
    return "".join(out)


def run_floor(tokens: list[str]) -> str:
    """The `feed` loop alone: the same loop as `run_citeflow` around a `feed` that does no
    work (one C-level dict lookup that returns a prepared one-event list). No processor can be
    faster than this in this loop."""
    events = [citeflow.TextEvent("x")]
    feed = {t: events for t in set(tokens)}.__getitem__
    out = []
    for t in tokens:
        for e in feed(t):
            if e.type == "text":
                out.append(e.text)
    return "".join(out)


def run_floor_text(tokens: list[str]) -> str:
    """The `feed_text` loop alone: the same loop as `run_feed_text` around a call that does no
    work (a C-level dict lookup returning the token)."""
    feed = {t: t for t in set(tokens)}.__getitem__
    out = [feed(t) for t in tokens]
    return "".join(out)


def best_time(fn: Callable[[list[str]], str], tokens: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn(tokens)
        best = min(best, time.process_time() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-tokens", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    base = token_stream(args.base_tokens)
    a, b = run_citeflow(base), run_python(base)
    if a != b:
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                print(f"outputs differ at char {i}:\n citeflow: {a[i-60:i+60]!r}\n python:   {b[i-60:i+60]!r}")
                break
        else:
            print(f"outputs differ in length: {len(a)} vs {len(b)}")
        return 1
    for fn in (run_feed_text, run_batch):
        if fn(base) != a:
            print(f"{fn.__name__} gives another text than feed")
            return 1
    markers = a.count("[")
    print(f"python {platform.python_version()} on {platform.machine()}, citeflow {citeflow.__version__}")
    print(f"stream: {len(base)} tokens, {len(''.join(base).encode())} bytes, {markers} rendered markers (same text from all)")
    runs = {
        "python": run_python,
        "feed": run_citeflow,
        "feed_text": run_feed_text,
        "batch": run_batch,
        "floor": run_floor,
        "floor_text": run_floor_text,
    }
    per_tok: dict[str, list[float]] = {k: [] for k in runs}
    for scale in (1, 10, 100):
        tokens = base * scale
        n = len(tokens)
        # Alternate the runs so that load from other processes hits all alike; keep the best.
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(args.repeat if scale < 100 else max(1, args.repeat - 1)):
            for k, fn in runs.items():
                best[k] = min(best[k], best_time(fn, tokens, 1))
        for k in runs:
            per_tok[k].append(best[k] / n * 1e9)
    ns = {k: v[-1] for k, v in per_tok.items()}
    print(f"ns/token at 100x ({len(base) * 100} tokens), CPU time, best of {max(1, args.repeat - 1)}:")
    print(f"  {'run':<11} {'ns/token':>9}  ratio")
    print(f"  {'python':<11} {ns['python']:>9.0f}  1.0x (pure-Python regex processor)")
    for k, what in (("feed", "python / feed"), ("feed_text", "python / feed_text"), ("batch", "python / batch")):
        print(f"  {k:<11} {ns[k]:>9.0f}  {ns['python'] / ns[k]:.1f}x ({what})")
    print(f"  {'floor':<11} {ns['floor']:>9.0f}  feed is {ns['feed'] / ns['floor']:.2f}x the empty feed loop")
    print(f"  {'floor_text':<11} {ns['floor_text']:>9.0f}  feed_text is {ns['feed_text'] / ns['floor_text']:.2f}x the empty feed_text loop (target <= 1.5x)")
    print(f"batch is {ns['python'] / ns['batch']:.1f}x the pure-Python processor (target >= 20x)")
    for k in ("feed", "feed_text", "batch"):
        v = per_tok[k]
        # Linear time: 100x the text in at most 110x the time, i.e. ns/token at 100x over 1x.
        print(
            f"{k}: 100x the text took {100 * v[-1] / v[0]:.0f}x the time (target <= 110x); "
            f"ns/token {v[0]:.0f}, {v[1]:.0f}, {v[2]:.0f} at 1x, 10x, 100x; "
            f"varies {max(v) / min(v):.2f}x (1.00 = linear)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
