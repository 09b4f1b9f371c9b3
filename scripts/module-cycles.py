#!/usr/bin/env python3
"""Import circles between the modules of each crate (issue 19 §3), nested ones too (issue 37).

A module is `src/<name>.rs` or `src/<name>/mod.rs`, with its child files under `src/<name>/`
(children may use their parent's items: quinn-proto's `connection/*` style). An edge a -> b is a
`crate::b` path in a's files (use lines and inline paths; `#[cfg(test)] mod tests` left out).
Inside a module with a directory (`src/provider/`), its children are checked the same way: an
edge a -> b between two children of `provider` is a path to `provider::b` in a's files
(`super::b`, `super::super::b` from a grandchild, `crate::provider::b`); a child's use of its
parent's own items is not an edge. Prints each crate's module and edge counts and any cycle (a
strongly connected component of more than one module), nested ones named `parent/child`, and
exits 1 when a cycle is not in the allowed list. Without arguments it also checks the Python
package (scripts/py-module-cycles.py: import circles between crates/py/python/citeflow's modules).

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


def module_path(src: pathlib.Path, f: pathlib.Path) -> list[str]:
    parts = list(f.relative_to(src).with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    return parts


def refs(path: list[str], text: str) -> set[tuple[str, ...]]:
    """Module paths (absolute, from the crate root) that `text`, in module `path`, names."""
    out: set[tuple[str, ...]] = set()
    for m in re.finditer(r"\b((?:crate|super|self)(?:::(?:super|[a-z_0-9]+))*)::(\{[^;]*?\}|[A-Za-z_0-9]+)", text, re.S):
        head, tail = m.group(1).split("::"), m.group(2)
        if head[0] == "crate":
            base, rest = [], head[1:]
        else:
            base = path[:-1] if head[0] == "super" else list(path)
            rest = head[1:]
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
        base = base + [r for r in rest if r != "super"]
        if tail.startswith("{"):
            names = re.findall(r"(?:^|[,{\s])([a-z_0-9]+)\s*(?=::|,|\}|$)", tail)
        else:
            names = [tail]
        for n in names:
            out.add(tuple(base + [n]))
        if base:
            out.add(tuple(base))
    return out


def nested_graphs(src: pathlib.Path) -> dict[str, dict[str, list[str]]]:
    """For each module with a directory, the graph between its children."""
    files = [f for f in src.rglob("*.rs")]
    texts = {}
    for f in files:
        text = re.split(r"#\[cfg\(test\)\]\s*mod tests", f.read_text())[0]
        texts[f] = re.sub(r"//.*", "", text)
    out = {}
    for d in sorted(p for p in src.rglob("*") if p.is_dir()):
        parent = list(d.relative_to(src).parts)
        children = {p.stem for p in d.glob("*.rs") if p.stem != "mod"}
        children |= {c.name for c in d.iterdir() if c.is_dir() and (c / "mod.rs").exists()}
        if len(children) < 2:
            continue
        graph: dict[str, set[str]] = {c: set() for c in children}
        for f, text in texts.items():
            path = module_path(src, f)
            if path[: len(parent)] != parent or len(path) <= len(parent):
                continue
            child = path[len(parent)]
            if child not in children:
                continue
            for r in refs(path, text):
                if list(r[: len(parent)]) == parent and len(r) > len(parent):
                    other = r[len(parent)]
                    if other in children and other != child:
                        graph[child].add(other)
        out["/".join(parent)] = {c: sorted(v) for c, v in graph.items()}
    return out


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
    default = not dirs
    if default:
        dirs = sorted(p for p in (root / "crates").glob("**/src") if "node_modules" not in p.parts
                      and (p.parent / "Cargo.toml").exists())
    bad = 0
    for src in dirs:
        name = src.parent.name
        g = graph_of(src)
        cs = cycles(g)
        nested = nested_graphs(src)
        for parent, ng in nested.items():
            cs += [[f"{parent}/{m}" for m in c] for c in cycles(ng)]
        inner = sum(len(ng) for ng in nested.values())
        line = (f"{name}: {len(g)} modules, {sum(map(len, g.values()))} edges"
                f" ({inner} nested in {len(nested)} parents)")
        for c in cs:
            key = f"{name}:{' '.join(c)}"
            if key in allowed:
                line += f"; known cycle {' '.join(c)}"
            else:
                line += f"; CYCLE {' '.join(c)}"
                bad += 1
        print(line)
    if default:
        # The Python package too (issue 44 §5): its sibling script, same rule.
        import subprocess

        bad += subprocess.run([sys.executable, str(root / "scripts/py-module-cycles.py")]).returncode
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
