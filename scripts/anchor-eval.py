#!/usr/bin/env python3
"""Claim anchors on WiCE (issue 43): `citeflow render --anchors` run as a user runs it, one
process a claim, beside a BM25 top sentence baseline and anchorcite 0.1.0's lexical tier, in
the same run.

    bash scripts/anchor-eval.sh [SPLIT.jsonl] [--json FILE] [--reps 3]   # the documented command
    python3 scripts/anchor-eval.py --quick 100                            # the content check (CI)

Each claim of the split (default `$CITEFLOW_SHARED_DIR/fixtures/wice/dev.jsonl`, the shared
directory defaulting to `../shared` beside the workspace) becomes one answer and one source:

- answer (stdin): `meta.claim_context`, a space if it does not end in one, then the claim with
  ` [[source_1]]` before its final period (a claim without one gets it appended, as the core's
  `examples/wice.rs` does);
- sources (`--sources FILE`): `[{"id": "source_1", "text": <evidence sentences joined with "\\n">}]`.

Figures, with the definitions of `crates/core/examples/wice.rs`:

- hit@1: the quote's code-point range overlaps a sentence of any gold supporting set; claims
  labelled supported or partially_supported with a non-empty gold set; a missing quote is a
  miss. Also hit@1 of the quote's first sentence alone, and the mean number of evidence
  sentences a quote overlaps (quotes may span a few adjacent sentences);
- support AUROC: supported against not_supported (ties count a half);
- flagged: the share of not_supported claims scoring below the threshold at which 90% of
  supported claims pass (the 10th percentile of the supported scores);
- time: citeflow, the whole process with `--anchors` against the same process and input without
  it, the runs of a claim interleaved (`--reps` rounds, alternating which goes first), each
  claim's added time the median of its paired differences; median and p99 over claims, and the
  child CPU time (user + sys) added in the same way. BM25 and anchorcite run in this process:
  their time is the call's own (indexing included), the median of `--reps` calls a claim.
  Indexing speed: the evidence bytes of all claims over the sum of the added times.

The citeflow part and the baseline use the standard library only; anchorcite is imported when
present (`scripts/anchor-eval.sh` installs the pinned version in `target/venv-anchor-eval`).

`--quick N` runs citeflow alone over the first N claims, without timing, and exits 1 when hit@1
< 0.70 or AUROC < 0.80 (floors well below the measured figures, for CI).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUICK_FLOORS = {"hit1": 0.70, "auroc": 0.80}
REFERENCE = {  # the split's README (measured by its authors on dev)
    "bm25": {"hit1": 0.788, "auroc": 0.906},
    "anchorcite": {"hit1": 0.807, "auroc": 0.884, "median_ms": 14.7, "p99_ms": 159},
}
GOALS = "hit@1 ≥ 0.85, support AUROC ≥ 0.92, ≤ 1 ms added a claim (median, whole process), on the held-out split"


# --- the split --------------------------------------------------------------------------------


@dataclass
class Claim:
    index: int
    id: str
    label: str
    claim: str
    answer: str
    text: str
    spans: list[tuple[int, int]]  # each evidence sentence's code-point range in `text`
    gold: set[int]
    evidence: list[str] = field(repr=False)

    @property
    def has_gold(self) -> bool:
        return self.label != "not_supported" and bool(self.gold)


def load_split(path: Path) -> list[Claim]:
    claims = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        v = json.loads(line)
        evidence = list(v["evidence"])
        spans, at = [], 0
        for s in evidence:
            spans.append((at, at + len(s)))
            at += len(s) + 1
        claim = v["claim"]
        context = (v.get("meta") or {}).get("claim_context") or ""
        body = claim[:-1] if claim.endswith(".") else claim
        sep = "" if not context or context[-1].isspace() else " "
        claims.append(
            Claim(
                index=i,
                id=str((v.get("meta") or {}).get("id", i)),
                label=v["label"],
                claim=claim,
                answer=f"{context}{sep}{body} [[source_1]].",
                text="\n".join(evidence),
                spans=spans,
                gold={g for group in v["supporting_sentences"] for g in group},
                evidence=evidence,
            )
        )
    return claims


# --- metrics ----------------------------------------------------------------------------------


@dataclass
class Result:
    """One method's answer for one claim: the quote's code-point range and the support score."""

    quote: tuple[int, int] | None
    support: float
    times_ms: list[float] = field(default_factory=list)  # added (citeflow) or call time
    cpu_ms: list[float] = field(default_factory=list)  # citeflow: child CPU time added


def overlapping(spans: list[tuple[int, int]], a: int, b: int) -> list[int]:
    return [i for i, (s, e) in enumerate(spans) if s < b and a < e]


def auroc(pos: list[float], neg: list[float]) -> float:
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def percentile(xs: list[float], q: float) -> float:
    """The nearest-rank percentile (q in [0, 100])."""
    s = sorted(xs)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def figures(claims: list[Claim], results: list[Result]) -> dict:
    hits = first_hits = with_gold = no_quote = sentences = 0
    pos, neg = [], []
    for c, r in zip(claims, results):
        if c.has_gold:
            with_gold += 1
            if r.quote is None:
                no_quote += 1
            else:
                a, b = r.quote
                over = overlapping(c.spans, a, b)
                sentences += len(over)
                hits += any(i in c.gold for i in over)
                first_hits += bool(over) and over[0] in c.gold
        if c.label == "supported":
            pos.append(r.support)
        elif c.label == "not_supported":
            neg.append(r.support)
    out = {
        "claims": len(claims),
        "with_gold": with_gold,
        "no_quote": no_quote,
        "hit1": hits / with_gold if with_gold else None,
        "hit1_first_sentence": first_hits / with_gold if with_gold else None,
        "sentences_per_quote": sentences / (with_gold - no_quote) if with_gold > no_quote else None,
        "supported": len(pos),
        "not_supported": len(neg),
        "auroc": None,
        "flagged": None,
        "threshold_90": None,
    }
    if pos and neg:
        t = sorted(pos)[len(pos) // 10]
        out.update(
            auroc=auroc(pos, neg),
            flagged=sum(n < t for n in neg) / len(neg),
            threshold_90=t,
        )
    times = [statistics.median(r.times_ms) for r in results if r.times_ms]
    if times:
        evidence_bytes = sum(len(c.text.encode("utf-8")) for c in claims)
        total_s = sum(times) / 1000
        out.update(
            median_ms=statistics.median(times),
            p99_ms=percentile(times, 99),
            evidence_mb=evidence_bytes / 1e6,
            total_added_s=total_s,
            mb_per_s=evidence_bytes / 1e6 / total_s if total_s > 0 else None,
        )
    cpu = [statistics.median(r.cpu_ms) for r in results if r.cpu_ms]
    if cpu:
        cpu_s = sum(cpu) / 1000
        out.update(
            cpu_median_ms=statistics.median(cpu),
            cpu_p99_ms=percentile(cpu, 99),
            cpu_mb_per_s=out["evidence_mb"] / cpu_s if cpu_s > 0 else None,
        )
    return out


# --- citeflow, one process a claim --------------------------------------------------------------


def find_binary() -> Path:
    env = os.environ.get("CITEFLOW_BIN")
    if env:
        path = Path(env)
        if not path.is_file():
            sys.exit(f"CITEFLOW_BIN={env} is not a file")
        return path
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    path = target / "release" / "citeflow"
    if not path.is_file():
        cmd = ["cargo", "build", "--release", "--locked", "-p", "citeflow-cli", "--features", "local-model"]
        print(f"{path} is missing: {' '.join(cmd)} (compiles llama.cpp; takes a while)", file=sys.stderr)
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=sys.stderr)
    return path


def tree(binary: Path) -> str:
    """The checkout's commit and the last one of the anchoring code, and whether a file of it
    changed after the binary was built (then the figures are not the checkout's)."""
    try:
        def git(*a: str) -> str:
            return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True, check=True).stdout.strip()

        head = git("rev-parse", "--short", "HEAD")
        last = git("log", "-1", "--format=%h", "--", *(f"crates/{d}/{f}" for d in ("core", "cli") for f in ("src", "Cargo.toml")))
    except (OSError, subprocess.CalledProcessError):
        return "unknown tree"
    built = binary.stat().st_mtime
    files = [p for d in ("crates/core", "crates/cli") for p in [ROOT / d / "Cargo.toml", *(ROOT / d / "src").rglob("*")]]
    newer = [p for p in files if p.is_file() and p.stat().st_mtime > built]
    note = (f"; {len(newer)} source files of crates/core or crates/cli changed after the binary was built, "
            f"e.g. {newer[0].relative_to(ROOT)}: rebuild for the checkout's figures") if newer else ""
    return f"tree {head} (crates/core and crates/cli as of {last}){note}"


class Citeflow:
    def __init__(self, binary: Path, workdir: Path):
        self.binary = binary
        self.workdir = workdir

    def sources_file(self, c: Claim) -> Path:
        path = self.workdir / f"sources-{c.index}.json"
        if not path.exists():
            path.write_text(json.dumps([{"id": "source_1", "text": c.text}]), encoding="utf-8")
        return path

    def run(self, c: Claim, anchors: bool) -> tuple[float, float, str]:
        """Runs one render; returns (wall ms, child CPU ms, stdout)."""
        cmd = [str(self.binary), "render", "--output", "jsonl", "--sources", str(self.sources_file(c))]
        if anchors:
            cmd.append("--anchors")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, input=c.answer.encode("utf-8"), capture_output=True)
        wall = (time.perf_counter() - t0) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0:
            sys.exit(f"claim {c.index} ({c.id}): {' '.join(cmd)} exited {p.returncode}: {p.stderr.decode()[:500]}")
        cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
        return wall, cpu, p.stdout.decode("utf-8")

    @staticmethod
    def anchor_of(c: Claim, out: str) -> Result:
        anchors = [e for e in map(json.loads, out.splitlines()) if e.get("type") == "anchor"]
        if len(anchors) != 1:
            sys.exit(f"claim {c.index} ({c.id}): {len(anchors)} anchor events, expected 1")
        a = anchors[0]
        q = a.get("quote")
        quote = None
        if q:
            quote = (q["char_start"], q["char_end"])
            if c.text[quote[0] : quote[1]] != q["text"]:
                sys.exit(f"claim {c.index} ({c.id}): the quote's text is not text[char_start:char_end]")
        return Result(quote=quote, support=float(a["support"]))


def run_citeflow(cf: Citeflow, claims: list[Claim], reps: int, timed: bool) -> list[Result]:
    results = []
    for c in claims:
        _, _, out = cf.run(c, anchors=True)
        results.append(cf.anchor_of(c, out))
    if not timed:
        return results
    cf.run(claims[0], anchors=False)  # warm the page cache once more
    for rep in range(reps):
        t_rep = time.perf_counter()
        for c, r in zip(claims, results):
            order = (True, False) if (rep + c.index) % 2 == 0 else (False, True)
            got = {}
            for anchors in order:
                wall, cpu, out = cf.run(c, anchors)
                got[anchors] = (wall, cpu)
                if anchors and cf.anchor_of(c, out) != Result(r.quote, r.support):
                    sys.exit(f"claim {c.index} ({c.id}): the anchor differs between runs")
            r.times_ms.append(got[True][0] - got[False][0])
            r.cpu_ms.append(got[True][1] - got[False][1])
        step(f"citeflow timing round {rep + 1}/{reps}", t_rep)
    return results


def citeflow_process_ms(cf: Citeflow, claims: list[Claim]) -> float:
    """The median whole-process time without anchors over a few claims (context for the table)."""
    return statistics.median(cf.run(c, anchors=False)[0] for c in claims[:25] * 2)


# --- BM25 top sentence (pure Python) ------------------------------------------------------------

# scikit-learn's ENGLISH_STOP_WORDS (the Glasgow IR group's list; `stop_words="english"`).
STOP_WORDS = frozenset(
    """
    a about above across after afterwards again against all almost alone along already also
    although always am among amongst amount an and another any anyhow anyone anything anyway
    anywhere are around as at back be became because become becomes becoming been before beforehand
    behind being below beside besides between beyond bill both bottom but by call can cannot cant
    co con could couldnt cry de describe detail do done down due during each eg eight either eleven
    else elsewhere empty enough etc even ever every everyone everything everywhere except few
    fifteen fify fill find fire first five for former formerly forty found four from front full
    further get give go had has hasnt have he hence her here hereafter hereby herein hereupon hers
    herself him himself his how however hundred i ie if in inc indeed interest into is it its
    itself keep last latter latterly least less ltd made many may me meanwhile might mill mine more
    moreover most mostly move much must my myself name namely neither never nevertheless next nine
    no nobody none noone nor not nothing now nowhere of off often on once one only onto or other
    others otherwise our ours ourselves out over own part per perhaps please put rather re same see
    seem seemed seeming seems serious several she should show side since sincere six sixty so some
    somehow someone something sometime sometimes somewhere still such system take ten than that the
    their them themselves then thence there thereafter thereby therefore therein thereupon these
    they thick thin third this those though three through throughout thru thus to together too top
    toward towards twelve twenty two un under until up upon us very via was we well were what
    whatever when whence whenever where whereafter whereas whereby wherein whereupon wherever
    whether which while whither who whoever whole whom whose why will with within without would yet
    you your yours yourself yourselves
    """.split()
)
WORD = re.compile(r"\w+")


def terms(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower()) if w not in STOP_WORDS]


def bm25_top(c: Claim, k1: float = 1.2, b: float = 0.75) -> Result:
    """BM25 over the evidence sentences (each a document), the claim the query; the quote is the
    top sentence, the score the share of the claim's distinct terms found in the top three."""
    docs = [terms(s) for s in c.evidence]
    n = len(docs)
    avgdl = sum(map(len, docs)) / n if n else 0.0
    df = Counter(t for d in docs for t in set(d))
    query = terms(c.claim)
    qset = set(query)
    scores = []
    for d in docs:
        tf = Counter(d)
        s = 0.0
        for t in qset:
            f = tf.get(t)
            if f:
                idf = math.log((n - df[t] + 0.5) / (df[t] + 0.5) + 1)
                s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(d) / avgdl))
        scores.append(s)
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    if not order or not qset:
        return Result(quote=None, support=0.0)
    covered = set().union(*(docs[i] for i in order[:3])) & qset
    return Result(quote=c.spans[order[0]], support=len(covered) / len(qset))


def run_timed(fn, claims: list[Claim], reps: int, timed: bool) -> list[Result]:
    results = []
    for c in claims:
        t0 = time.perf_counter()
        r = fn(c)
        r.times_ms.append((time.perf_counter() - t0) * 1000)
        for _ in range(reps - 1 if timed else 0):
            t0 = time.perf_counter()
            fn(c)
            r.times_ms.append((time.perf_counter() - t0) * 1000)
        if not timed:
            r.times_ms.clear()
        results.append(r)
    return results


# --- anchorcite 0.1.0, lexical tier -------------------------------------------------------------


def anchorcite_fn():
    """`anchor_claim(claim, text, scorer=LexicalScorer(), threshold=0.0)`, or the reason it is
    unavailable."""
    try:
        import logging

        import anchorcite
        from anchorcite import LexicalScorer, anchor_claim
    except ImportError as e:
        return None, f"anchorcite is not importable ({e}); scripts/anchor-eval.sh installs it"
    if anchorcite.__version__ != "0.1.0":
        return None, f"anchorcite {anchorcite.__version__} is installed, not the pinned 0.1.0"
    logging.getLogger("anchorcite").setLevel(logging.ERROR)

    def fn(c: Claim) -> Result:
        # A new anchorer a call (the function's own behaviour when a scorer is passed): the
        # source is indexed in the timed call, as citeflow's is.
        a = anchor_claim(c.claim, c.text, scorer=LexicalScorer(), threshold=0.0)
        if a is None:
            return Result(quote=None, support=0.0)
        return Result(quote=(a.start_offset, a.end_offset), support=float(a.score))

    return fn, None


# --- output -----------------------------------------------------------------------------------

T0 = time.perf_counter()


def step(name: str, since: float) -> None:
    print(f"  {name}: {time.perf_counter() - since:.1f} s", file=sys.stderr)


def f3(x) -> str:
    return "—" if x is None else f"{x:.3f}"


def table(rows: list[tuple[str, dict | str]], process_ms: float | None) -> str:
    lines = [
        "| method | hit@1 | hit@1, first sentence | sentences a quote | support AUROC | "
        "not_supported flagged (90% of supported pass) | added a claim, median / p99 | indexing speed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, f in rows:
        if isinstance(f, str):
            lines.append(f"| {name} | {f} | | | | | | |")
            continue
        if "median_ms" in f:
            t = f"{f['median_ms']:.2f} / {f['p99_ms']:.2f} ms"
            if "cpu_median_ms" in f:
                t += f" (CPU {f['cpu_median_ms']:.2f} / {f['cpu_p99_ms']:.2f} ms)"
            speed = f"{f['mb_per_s']:.1f} MB/s" if f.get("mb_per_s") else "—"
            if f.get("cpu_mb_per_s"):
                speed += f" (CPU {f['cpu_mb_per_s']:.1f} MB/s)"
        else:
            t = speed = "—"
        flagged = "—" if f["flagged"] is None else f"{f['flagged']:.3f} (below {f['threshold_90']:.3f})"
        lines.append(
            f"| {name} | {f3(f['hit1'])} | {f3(f['hit1_first_sentence'])} | {f3(f['sentences_per_quote'])} | "
            f"{f3(f['auroc'])} | {flagged} | {t} | {speed} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shared = Path(os.environ.get("CITEFLOW_SHARED_DIR") or ROOT.parent / "shared")
    ap.add_argument("split", nargs="?", type=Path, default=shared / "fixtures/wice/dev.jsonl")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--per-claim", type=Path, help="write each claim's quotes and scores here (JSON lines)")
    ap.add_argument("--reps", type=int, default=3, help="timing rounds a claim (default 3)")
    ap.add_argument("--limit", type=int, help="only the first N claims (with timing)")
    ap.add_argument("--quick", type=int, metavar="N", help="citeflow alone, first N claims, no timing; exit 1 below the floors")
    ap.add_argument("--no-anchorcite", metavar="REASON", help="skip anchorcite, printing REASON")
    args = ap.parse_args()
    if not args.split.is_file():
        sys.exit(f"the split {args.split} is missing (CITEFLOW_SHARED_DIR={shared})")
    claims = load_split(args.split)
    limit = args.quick or args.limit
    if limit:
        claims = claims[:limit]
    binary = find_binary()
    timed = not args.quick
    labels = Counter(c.label for c in claims)
    print(
        f"{args.split}: {len(claims)} claims ({', '.join(f'{k} {v}' for k, v in sorted(labels.items()))}); "
        f"{binary}, {tree(binary)}; load average {os.getloadavg()[0]:.2f}",
        file=sys.stderr,
    )

    with tempfile.TemporaryDirectory(prefix="anchor-eval-") as tmp:
        cf = Citeflow(binary, Path(tmp))
        t = time.perf_counter()
        cite = run_citeflow(cf, claims, args.reps, timed)
        step("citeflow" + (f" ({args.reps} timing rounds)" if timed else ""), t)
        process_ms = citeflow_process_ms(cf, claims) if timed else None
    f_cite = figures(claims, cite)
    if args.quick:
        print(table([("citeflow render --anchors", f_cite)], None))
        fails = [
            f"{k} {f_cite[k]:.3f} < {floor}" if f_cite[k] is not None else f"{k} undefined (too few claims)"
            for k, floor in QUICK_FLOORS.items()
            if f_cite[k] is None or f_cite[k] < floor
        ]
        if args.json:
            args.json.write_text(json.dumps({"quick": args.quick, "citeflow": f_cite}, indent=2) + "\n")
        if fails:
            print(f"anchor-eval --quick {args.quick}: FAIL: {'; '.join(fails)}", file=sys.stderr)
            return 1
        print(f"anchor-eval --quick {args.quick}: ok (floors hit@1 {QUICK_FLOORS['hit1']}, AUROC {QUICK_FLOORS['auroc']})", file=sys.stderr)
        return 0

    t = time.perf_counter()
    bm25 = run_timed(bm25_top, claims, args.reps, timed)
    step("BM25 top sentence", t)
    f_bm25 = figures(claims, bm25)

    fn, why = (None, args.no_anchorcite) if args.no_anchorcite else anchorcite_fn()
    if fn is None:
        print(f"skipped: anchorcite 0.1.0: {why}", file=sys.stderr)
        f_ac: dict | str = f"skipped: {why}"
        ac = None
    else:
        t = time.perf_counter()
        ac = run_timed(fn, claims, args.reps, timed)
        step("anchorcite 0.1.0 lexical tier", t)
        f_ac = figures(claims, ac)

    rows = [
        ("citeflow `render --anchors`, whole process, added to the same render without it", f_cite),
        ("BM25 top sentence (k1 1.2, b 0.75, English stop words; coverage of the top 3), pure Python, in process", f_bm25),
        ("anchorcite 0.1.0 lexical tier (`anchor_claim(..., threshold=0.0)`), pure Python, in process", f_ac),
    ]
    print(f"Claim anchors on {args.split.name}, {tree(binary)}, binary built {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(binary.stat().st_mtime))}: "
          f"{len(claims)} claims, {f_cite['with_gold']} with a gold set "
          f"(hit@1), {f_cite['supported']} supported / {f_cite['not_supported']} not_supported (AUROC); "
          f"{args.reps} timing rounds; {len(os.sched_getaffinity(0))} cores, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    print()
    print(table(rows, process_ms))
    print()
    print(f"citeflow render without --anchors: {process_ms:.2f} ms a process (median, whole process). "
          f"Evidence: {f_cite['evidence_mb']:.2f} MB in all. "
          f"The split's README: BM25 {REFERENCE['bm25']['hit1']} / {REFERENCE['bm25']['auroc']}, anchorcite "
          f"{REFERENCE['anchorcite']['hit1']} / {REFERENCE['anchorcite']['auroc']}, "
          f"{REFERENCE['anchorcite']['median_ms']} ms median. Goals (issue 43): {GOALS}.")
    step("total", T0)

    if args.json:
        out = {
            "split": str(args.split),
            "claims": len(claims),
            "reps": args.reps,
            "binary": str(binary),
            "tree": tree(binary),
            "loadavg_end": os.getloadavg(),
            "citeflow": f_cite,
            "citeflow_process_ms": process_ms,
            "bm25": f_bm25,
            "anchorcite": f_ac if isinstance(f_ac, dict) else {"skipped": why},
        }
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    if args.per_claim:
        with args.per_claim.open("w") as fh:
            for i, c in enumerate(claims):
                rec = {"index": c.index, "id": c.id, "label": c.label, "gold": sorted(c.gold), "claim": c.claim}
                for name, rs in (("citeflow", cite), ("bm25", bm25), ("anchorcite", ac)):
                    if rs is None:
                        continue
                    r = rs[i]
                    rec[name] = {
                        "quote": r.quote,
                        "sentences": overlapping(c.spans, *r.quote) if r.quote else [],
                        "support": r.support,
                        "ms": statistics.median(r.times_ms) if r.times_ms else None,
                    }
                fh.write(json.dumps(rec) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
