"""What the CLI's start-up costs, against a process that does nothing (not a test; part of
scripts/bench.sh).

Times, in the same run and as onyx.py times citeflow (CPU time of the child process as the
kernel counts it, stdin and stdout already open on files, best of --repeat runs):
`/bin/true` (the floor of any process here), `citeflow --version`, `citeflow render --input
jsonl --output jsonl --rank renumber` on an empty input, and the same render on onyx.py's
100k-token workload. Prints each as milliseconds and as a ratio to `/bin/true`, with the
minor page faults of the best run, and the 100k run against issue 45's target of 6 ms. The
script fails when the 100k render is empty or does not cite every document.

    python3 scripts/bench/cli_startup.py --citeflow target/release/citeflow [--repeat 30]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from onyx import N_DOCS, read_citeflow, tokens  # noqa: E402


def best_cpu(cmd: list[str], stdin: Path, stdout: Path, repeat: int) -> tuple[float, int]:
    """Best CPU time (user + system, seconds) of `repeat` runs of `cmd`, and the minor page
    faults of that run."""
    best, faults = float("inf"), 0
    for _ in range(repeat):
        with stdin.open("rb") as f, stdout.open("wb") as o:
            p = subprocess.Popen(cmd, stdin=f, stdout=o, stderr=subprocess.PIPE)
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            if p.returncode != 0:
                raise SystemExit(f"{cmd[0]} exited with {p.returncode}")
            cpu = ru.ru_utime + ru.ru_stime
            if cpu < best:
                best, faults = cpu, ru.ru_minflt
    return best, faults


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--citeflow", required=True, help="path of the citeflow binary (release)")
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        sources = t / "sources.json"
        sources.write_text(json.dumps(
            [{"id": f"doc_{i}", "url": f"https://example.org/{i}"} for i in range(1, N_DOCS + 1)]))
        empty, work, out = t / "empty.jsonl", t / "100k.jsonl", t / "out.jsonl"
        empty.write_text("")
        work.write_text("".join(json.dumps(tok) + "\n" for tok in tokens(100000)))
        render = [args.citeflow, "render", "--input", "jsonl", "--output", "jsonl", "--rank", "renumber",
                  "--sources", str(sources)]
        runs = (
            ("/bin/true", ["/bin/true"], empty),
            ("citeflow --version", [args.citeflow, "--version"], empty),
            ("render, empty input", render, empty),
            ("render, 100k tokens", render, work),
        )
        got = {name: best_cpu(cmd, stdin, out, args.repeat) for name, cmd, stdin in runs}
        text, cited = read_citeflow(out)
        if not text or len(set(cited)) != N_DOCS:
            print(f"citeflow rendered {len(text)} chars citing {len(set(cited))} documents")
            return 1
    floor = got["/bin/true"][0]
    parts = [f"{name} {cpu * 1e3:.2f} ms ({cpu / floor:.1f}×, {faults} page faults)"
             for name, (cpu, faults) in got.items() if name != "/bin/true"]
    print(f"CLI start-up: /bin/true {floor * 1e3:.2f} ms ({got['/bin/true'][1]} page faults); "
          + "; ".join(parts) + " (target: 100k tokens ≤ 6 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
