"""What the CLI's start-up costs, against a process that does nothing (not a test; part of
scripts/bench.sh).

Times, in the same run and as onyx.py times citeflow (CPU time of the child process as the
kernel counts it, stdin and stdout already open on files, best of --repeat runs):
`/bin/true` (the floor of any process here), `cat` of the 100k-token input to the output file
(the floor of a process that reads it and writes as much), `citeflow --version`, `citeflow render --input
jsonl --output jsonl --rank renumber` on an empty input, and the same render on onyx.py's
100k-token workload. Prints each as milliseconds and as a ratio to `/bin/true`, with the
minor page faults of the best run, and the 100k run against issue 45's target of 6 ms. With
--before (a build of the tree before a change), the two builds run in turn in each round and
each figure of --citeflow is also given as a ratio to --before's. The script fails when a 100k
render is empty or does not cite every document.

    python3 scripts/bench/cli_startup.py --citeflow target/release/citeflow [--before OLD] [--repeat 30]
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


def cpu(cmd: list[str], stdin: Path, stdout: Path) -> tuple[float, int]:
    """CPU time (user + system, seconds) of one run of `cmd`, and its minor page faults."""
    with stdin.open("rb") as f, stdout.open("wb") as o:
        p = subprocess.Popen(cmd, stdin=f, stdout=o, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(cmd)} exited with {os.waitstatus_to_exitcode(status)}")
        return ru.ru_utime + ru.ru_stime, ru.ru_minflt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--citeflow", required=True, help="path of the citeflow binary (release)")
    ap.add_argument("--before", help="a build of the tree before, run in turn with --citeflow")
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    load = os.getloadavg()[0]
    bins = [args.citeflow] + ([args.before] if args.before else [])
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        sources = t / "sources.json"
        sources.write_text(json.dumps(
            [{"id": f"doc_{i}", "url": f"https://example.org/{i}"} for i in range(1, N_DOCS + 1)]))
        empty, work, out = t / "empty.jsonl", t / "100k.jsonl", t / "out.jsonl"
        empty.write_text("")
        work.write_text("".join(json.dumps(tok) + "\n" for tok in tokens(100000)))

        def runs(cli: str) -> list[tuple[str, list[str], Path]]:
            render = [cli, "render", "--input", "jsonl", "--output", "jsonl", "--rank", "renumber",
                      "--sources", str(sources)]
            return [
                ("/bin/true", ["/bin/true"], empty),
                ("cat, 100k tokens", ["cat"], work),
                ("citeflow --version", [cli, "--version"], empty),
                ("render, empty input", render, empty),
                ("render, 100k tokens", render, work),
            ]

        best: dict[tuple[str, str], tuple[float, int]] = {}
        for _ in range(args.repeat):
            for cli in bins:
                for name, cmd, stdin in runs(cli):
                    got = cpu(cmd, stdin, out)
                    if (cli, name) not in best or got[0] < best[(cli, name)][0]:
                        best[(cli, name)] = got
                    if stdin == work and cmd[0] == cli:
                        text, cited = read_citeflow(out)
                        if not text or len(set(cited)) != N_DOCS:
                            print(f"{cli} rendered {len(text)} chars citing {len(set(cited))} documents")
                            return 1
    floor = best[(args.citeflow, "/bin/true")][0]
    parts = []
    cat, cat_faults = best[(args.citeflow, "cat, 100k tokens")]
    for name, _, _ in runs(args.citeflow)[2:]:
        c, faults = best[(args.citeflow, name)]
        part = f"{name} {c * 1e3:.2f} ms ({c / floor:.1f}×, {faults} page faults)"
        if "100k" in name:
            part += f" ({c / cat:.1f}× the cat)"
        if args.before:
            b, bfaults = best[(args.before, name)]
            part += f", {c / b:.2f}× the build before ({b * 1e3:.2f} ms, {bfaults} page faults)"
        parts.append(part)
    print(f"CLI start-up: /bin/true {floor * 1e3:.2f} ms ({best[(args.citeflow, '/bin/true')][1]} page faults); "
          + f"cat of the 100k input {cat * 1e3:.2f} ms ({cat_faults} page faults); "
          + "; ".join(parts) + f" (target: 100k tokens ≤ 6 ms; load average {load:.1f} → {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
