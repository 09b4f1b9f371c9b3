#!/usr/bin/env python3
"""Import circles between the top-level modules of each crate (issue 19 §3).

A module is `src/<name>.rs` or `src/<name>/mod.rs`, with its child files under `src/<name>/`
(children may use their parent's items: quinn-proto's `connection/*` style). An edge a -> b is a
`crate::b` path in a's files (use lines and inline paths; `#[cfg(test)] mod tests` left out).
Prints each crate's module and edge counts and any cycle (a strongly connected component of
more than one module), and exits 1 when a cycle is not in the allowed list.

    python3 scripts/module-cycles.py [--allow "crate:a b c"]... [crates/*/src ...]
"""

import pathlib
import re
import sys


def graph_of(src: pathlib.Path) -> dict[str, list[str]]:
    mods: dict[str, list[pathlib.Path]] = {}
    for p in src.glob("*.rs"):
        if p.stem in ("lib", "main"):
            continue
        mods[p.stem] = [p] + sorted((src / p.stem).rglob("*.rs")) if (src / p.stem).is_dir() else [p]
    for d in src.iterdir():
        if d.is_dir() and (d / "mod.rs").exists():
            mods[d.name] = sorted(d.rglob("*.rs"))
    graph = {}
    for m, files in mods.items():
        deps = set()
        for f in files:
            text = re.split(r"#\[cfg\(test\)\]\s*mod tests", f.read_text())[0]
            text = re.sub(r"//.*", "", text)
            deps.update(re.findall(r"crate::\{?\s*([a-z_0-9]+)", text))
            for g in re.finditer(r"use crate::\{([^;]*)\};", text, re.S):
                deps.update(re.findall(r"(?:^|[,{\s])([a-z_0-9]+)::", g.group(1)))
        graph[m] = sorted(d for d in deps if d in mods and d != m)
    return graph


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop()
                on.discard(w)
                c.append(w)
                if w == v:
                    break
            if len(c) > 1:
                found.append(sorted(c))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def main() -> int:
    args = sys.argv[1:]
    allowed = set()
    dirs = []
    while args:
        a = args.pop(0)
        if a == "--allow":
            allowed.add(args.pop(0))
        else:
            dirs.append(pathlib.Path(a))
    root = pathlib.Path(__file__).resolve().parent.parent
    if not dirs:
        dirs = sorted(p for p in (root / "crates").glob("**/src") if "node_modules" not in p.parts
                      and (p.parent / "Cargo.toml").exists())
    bad = 0
    for src in dirs:
        name = src.parent.name
        g = graph_of(src)
        cs = cycles(g)
        line = f"{name}: {len(g)} modules, {sum(map(len, g.values()))} edges"
        for c in cs:
            key = f"{name}:{' '.join(c)}"
            if key in allowed:
                line += f"; known cycle {' '.join(c)}"
            else:
                line += f"; CYCLE {' '.join(c)}"
                bad += 1
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
