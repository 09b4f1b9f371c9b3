"""Does `citeflow render` stay linear in the text? (not a test; part of scripts/bench.sh)

Runs the CLI as a whole process, as scripts/bench/onyx.py does (`citeflow render --input jsonl
--output jsonl --rank renumber`, JSON-string tokens on stdin from a file, every event as a JSON
line to a file), on onyx.py's workload of N tokens and on the same tokens repeated 100 times,
and on an empty input (the process's start-up and exit, which a 100× longer text does not
repeat). Prints the CPU-time ratio of the two runs, whole and with the empty run subtracted
from both; issue 17 asks for at most 110× (100× the text). Each time is the best of --repeat
runs (CPU time of the child process, as the kernel counts it). The script fails when a render
is empty or does not cite every document.

    python3 scripts/bench/cli_linear.py --citeflow target/release/citeflow [--tokens 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from onyx import N_DOCS, read_citeflow, time_citeflow, tokens  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--citeflow", required=True, help="path of the citeflow binary (release)")
    ap.add_argument("--tokens", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    base = tokens(args.tokens)
    with tempfile.TemporaryDirectory() as tmp:
        sources = Path(tmp) / "sources.json"
        sources.write_text(json.dumps(
            [{"id": f"doc_{i}", "url": f"https://example.org/{i}"} for i in range(1, N_DOCS + 1)]))
        out = Path(tmp) / "out.jsonl"
        cpu = {}
        for name, toks in (("empty", []), ("1x", base), ("100x", base * 100)):
            workload = Path(tmp) / f"{name}.jsonl"
            workload.write_text("".join(json.dumps(t) + "\n" for t in toks))
            _, cpu[name] = time_citeflow(args.citeflow, workload, sources, out, args.repeat)
            if toks:
                text, cited = read_citeflow(out)
                if not text or len(set(cited)) != N_DOCS:
                    print(f"citeflow rendered {len(text)} chars citing {len(set(cited))} documents ({name})")
                    return 1
    whole = cpu["100x"] / cpu["1x"]
    bare = (cpu["100x"] - cpu["empty"]) / max(cpu["1x"] - cpu["empty"], 1e-9)
    print(
        f"CLI linear: {args.tokens:,} → {args.tokens * 100:,} tokens (100× the text) took {whole:.0f}× the CPU time "
        f"({cpu['1x'] * 1e3:.1f} → {cpu['100x'] * 1e3:.0f} ms, whole process), {bare:.0f}× without the "
        f"{cpu['empty'] * 1e3:.1f} ms of an empty input (target ≤ 110×)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
