"""citeflow render against Onyx's citation processors on the same token stream (not a test).

Onyx (github.com/onyx-dot-app/onyx, MIT outside its `ee/` directories) is the open-source RAG
app whose streaming citation processor is the peer most like citeflow: it turns `[n]` ranks
into its own display numbers while the answer streams. Its code is not vendored here: give a
clone (or a bare git directory) of the Onyx repository in ONYX_GIT, and this script reads the
two processors from it with `git show`:

- `DynamicCitationProcessor` (backend/onyx/chat/citation_processor.py at ONYX_REV, default
  HEAD), the newest;
- `CitationProcessor` (backend/onyx/chat/stream_processing/citation_processing.py at
  ONYX_OLD_REV, default the parent of the commit that removed it).

Their imports of other Onyx modules (`SearchDoc`, `CitationInfo`, `LlmDoc`, ...) are replaced by
minimal stand-ins (plain classes; Onyx's own are pydantic models, which are slower, so Onyx's
figures here are, if anything, too good).

The workload: an answer of N tokens (words with leading spaces, punctuation, and a rank
citation `[n]` or `[n, m]` every ~25 tokens, split across tokens as tokenizers do) citing 20
documents. Onyx's processors run in-process (interpreter start and imports not counted).
citeflow runs as a whole process, `citeflow render --input jsonl --output jsonl --rank
renumber` reading the tokens as JSON strings, one per line, from a file on stdin and writing
every event as a JSON line to a file on stdout. What is timed for citeflow is exactly that
process, from its spawn to its exit (`subprocess.run`, with stdin and stdout already open:
start-up, reading, parsing, rendering and writing every event counted); the workload file is
written before, and the output file is read and parsed by this script (json.loads of every
line, the harness's own cost) after the timing. For Onyx, the timed region is the loop that feeds every token to the processor and
collects its output. Each is the best of --repeat runs, in wall-clock time (the issue's
measure) and in CPU time (the citeflow process's, as the kernel counts its children; Onyx's
interpreter's), which a loaded machine disturbs less. Both must cite the same documents in
the same order of first appearance, and citeflow's text must not be empty, or the script
fails.

    python3 scripts/bench/onyx.py --citeflow target/release/citeflow [--tokens 100000,300000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any, Callable

N_DOCS = 20
WORDS = (
    "the of and a to in is was for on that with as by at from his her it an were which are this "
    "be has had not but or have one all their they its been more who when first also into "
    "revenue growth quarter customers product market report data analysis results"
).split()


def tokens(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        for _ in range(rng.randrange(10, 40)):
            out.append(" " + rng.choice(WORDS))
        nums = sorted(rng.sample(range(1, N_DOCS + 1), rng.choice([1, 1, 1, 2])))
        marker = " [" + ", ".join(map(str, nums)) + "]"
        # Split like a tokenizer: " [", "12", "]" / " [", "3", ",", " 7", "]".
        i = 0
        while i < len(marker):
            step = rng.randrange(1, 4)
            out.append(marker[i : i + step])
            i += step
        out.append(rng.choice([".", ",", ".\n\n", ""]))
    return [t for t in out[:n] if t]


def git_show(git: str, rev: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git, "show", f"{rev}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def git_dir(path: str) -> str:
    p = Path(path)
    return str(p / ".git") if (p / ".git").exists() else str(p)


def old_rev(git: str) -> str:
    """The parent of the newest commit that touched the old processor's file (its removal)."""
    path = "backend/onyx/chat/stream_processing/citation_processing.py"
    last = subprocess.run(
        ["git", "--git-dir", git, "log", "-1", "--format=%H", "HEAD", "--", path],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"{last}^"


def stand_ins() -> None:
    """Minimal modules for the names the two processors import from Onyx."""

    class Doc:
        def __init__(self, document_id: str, link: str) -> None:
            self.document_id = document_id
            self.link = link

    class CitationInfo:
        def __init__(self, citation_number: int, document_id: str) -> None:
            self.citation_number = citation_number
            self.document_id = document_id

    class OnyxAnswerPiece:
        def __init__(self, answer_piece: str) -> None:
            self.answer_piece = answer_piece

    class DocumentIdOrderMapping:
        def __init__(self, order_mapping: dict[str, int]) -> None:
            self.order_mapping = order_mapping

    import logging

    mods: dict[str, dict[str, Any]] = {
        "onyx": {},
        "onyx.configs": {},
        "onyx.configs.chat_configs": {"STOP_STREAM_PAT": None},
        "onyx.context": {},
        "onyx.context.search": {},
        "onyx.context.search.models": {"SearchDoc": Doc},
        "onyx.prompts": {},
        "onyx.prompts.constants": {"TRIPLE_BACKTICK": "```"},
        "onyx.server": {},
        "onyx.server.query_and_chat": {},
        "onyx.server.query_and_chat.streaming_models": {"CitationInfo": CitationInfo},
        "onyx.utils": {},
        "onyx.utils.logger": {"setup_logger": lambda *a, **k: logging.getLogger("onyx")},
        "onyx.chat": {},
        "onyx.chat.models": {"LlmDoc": Doc, "OnyxAnswerPiece": OnyxAnswerPiece},
        "onyx.chat.stream_processing": {},
        "onyx.chat.stream_processing.utils": {"DocumentIdOrderMapping": DocumentIdOrderMapping},
    }
    for name, attrs in mods.items():
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        m.__path__ = []  # type: ignore[attr-defined]
        sys.modules[name] = m


def load(source: str, name: str) -> types.ModuleType:
    m = types.ModuleType(name)
    exec(compile(source, f"<onyx {name}>", "exec"), m.__dict__)
    return m


def docs() -> list[Any]:
    Doc = sys.modules["onyx.context.search.models"].SearchDoc
    return [Doc(f"doc_{i}", f"https://example.org/{i}") for i in range(1, N_DOCS + 1)]


def run_new(mod: types.ModuleType, toks: list[str]) -> tuple[str, list[str]]:
    p = mod.DynamicCitationProcessor()
    p.update_citation_mapping({i + 1: d for i, d in enumerate(docs())})
    out: list[str] = []
    cited: list[str] = []
    for t in toks:
        for r in p.process_token(t):
            if isinstance(r, str):
                out.append(r)
            else:
                cited.append(r.document_id)
    for r in p.process_token(None):
        if isinstance(r, str):
            out.append(r)
    return "".join(out), cited


def run_old(mod: types.ModuleType, toks: list[str]) -> tuple[str, list[str]]:
    ds = docs()
    mapping = sys.modules["onyx.chat.stream_processing.utils"].DocumentIdOrderMapping(
        {d.document_id: i + 1 for i, d in enumerate(ds)}
    )
    p = mod.CitationProcessor(ds, mapping)
    out: list[str] = []
    cited: list[str] = []
    for t in toks:
        for r in p.process_token(t):
            if hasattr(r, "answer_piece"):
                out.append(r.answer_piece)
            else:
                cited.append(r.document_id)
    for r in p.process_token(None):
        out.append(r.answer_piece)
    return "".join(out), cited


def cpu_seconds(children: bool) -> float:
    """CPU time of this process, or of its finished children."""
    u = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Best wall-clock and best CPU time (of this process) of `repeat` runs of `fn`, and the
    last result."""
    t, c, r = float("inf"), float("inf"), None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), cpu_seconds(children=False)
        r = fn()
        t = min(t, time.perf_counter() - t0)
        c = min(c, cpu_seconds(children=False) - c0)
    return t, c, r


def time_citeflow(cli: str, workload: Path, sources: Path, out: Path, repeat: int) -> tuple[float, float]:
    """Best wall-clock and best CPU time of `repeat` runs of the citeflow process. The timed
    region is `subprocess.run` alone (spawn to exit), stdin and stdout already open on the
    workload file and the (truncated) output file; nothing is read back inside it."""
    t, c = float("inf"), float("inf")
    for _ in range(repeat):
        with workload.open("rb") as f, out.open("wb") as o:
            t0, c0 = time.perf_counter(), cpu_seconds(children=True)
            subprocess.run(
                [cli, "render", "--input", "jsonl", "--output", "jsonl", "--rank", "renumber",
                 "--sources", str(sources)],
                stdin=f,
                stdout=o,
                stderr=subprocess.PIPE,
                check=True,
            )
            t = min(t, time.perf_counter() - t0)
            c = min(c, cpu_seconds(children=True) - c0)
    return t, c


def read_citeflow(out: Path) -> tuple[str, list[str]]:
    """After the timing: the text and the cited documents of the events citeflow wrote."""
    data = out.read_bytes()
    text: list[str] = []
    cited: list[str] = []
    for line in data.splitlines():
        e = json.loads(line)
        if e["type"] == "text":
            text.append(e["text"])
        elif e["type"] == "source":
            cited.append(e["source"]["id"])
    return "".join(text), cited


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--citeflow", required=True, help="path of the citeflow binary (release)")
    ap.add_argument("--tokens", default="100000,300000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    git = os.environ.get("ONYX_GIT")
    if not git:
        print("| Onyx comparison | skipped: set ONYX_GIT to a clone of github.com/onyx-dot-app/onyx | |")
        return 0
    git = git_dir(git)
    stand_ins()
    new_src = git_show(git, os.environ.get("ONYX_REV", "HEAD"), "backend/onyx/chat/citation_processor.py")
    old_src = git_show(git, os.environ.get("ONYX_OLD_REV", old_rev(git)),
                       "backend/onyx/chat/stream_processing/citation_processing.py")
    new_mod, old_mod = load(new_src, "onyx_new"), load(old_src, "onyx_old")
    with tempfile.TemporaryDirectory() as tmp:
        sources = Path(tmp) / "sources.json"
        sources.write_text(json.dumps(
            [{"id": f"doc_{i}", "url": f"https://example.org/{i}"} for i in range(1, N_DOCS + 1)]))
        for n in (int(x) for x in args.tokens.split(",")):
            toks = tokens(n)
            workload = Path(tmp) / f"w{n}.jsonl"
            workload.write_text("".join(json.dumps(t) + "\n" for t in toks))
            out = Path(tmp) / f"out{n}.jsonl"
            tc, cc = time_citeflow(args.citeflow, workload, sources, out, args.repeat)
            c_text, c_cited = read_citeflow(out)
            tn, cn, (n_text, n_cited) = best(lambda: run_new(new_mod, toks), args.repeat)
            to, co, (o_text, o_cited) = best(lambda: run_old(old_mod, toks), max(1, args.repeat - 1))
            # The same documents, in the same order of first citation.
            if not (c_cited == n_cited == o_cited):
                print(f"cited documents differ: citeflow {c_cited[:5]}…, Onyx new {n_cited[:5]}…, old {o_cited[:5]}…")
                return 1
            if not c_text or len(c_cited) != N_DOCS:
                print(f"citeflow rendered {len(c_text)} chars citing {len(c_cited)} documents")
                return 1
            cmd = f"python3 scripts/bench/onyx.py --citeflow … --tokens {n}"
            for name, tp, cp in (("DynamicCitationProcessor", tn, cn), ("CitationProcessor (older)", to, co)):
                print(
                    f"| CLI vs Onyx {name}, {n // 1000}k tokens | **{tp / tc:.0f}×** wall "
                    f"(citeflow {tc * 1e3:.1f} ms whole process, Onyx {tp * 1e3:.0f} ms in-process); "
                    f"{cp / cc:.0f}× CPU ({cc * 1e3:.1f} / {cp * 1e3:.0f} ms) | `{cmd}` |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
