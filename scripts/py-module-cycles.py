#!/usr/bin/env python3
"""Import circles between the modules of the Python package (issue 44 §5), the sibling of
module-cycles.py (which runs it).

A module is a `.py` file under the package (a package's `__init__.py` is the package itself). An
edge a -> b is an import of b anywhere in a (top level, inside functions, under
`if TYPE_CHECKING:`): `from . import b`, `from .b import x`, `from ..b import x`,
`import citeflow.b`, `from citeflow.b import x`; importing a submodule also imports its parent
packages, so `from .langchain.agent import X` is an edge to `langchain/agent` and to
`langchain` (not to a package that contains a itself, which is already importing). Prints the
module and edge counts, each cycle (a strongly connected component of more than one module) and
each module that imports a name from a package containing it (BACK: a leaf importing its front
module back), and exits 1 when there is either.

    python3 scripts/py-module-cycles.py [PACKAGE_DIR ...]   (default: crates/py/python/citeflow)
    python3 scripts/py-module-cycles.py --self-test         (planted circle and leaf->front must fail)
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib
import subprocess
import sys
import tempfile
from typing import Optional

HERE = pathlib.Path(__file__).resolve().parent


def _cycles():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("module_cycles", HERE / "module-cycles.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.cycles


def module_name(pkg: pathlib.Path, f: pathlib.Path) -> str:
    parts = [pkg.name, *f.relative_to(pkg).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def graph_of(pkg: pathlib.Path, back: Optional[list[str]] = None) -> dict[str, list[str]]:
    """The import graph; ``back`` collects ``a -> package`` for a module that imports a name
    from a package that contains it (a leaf importing its front module)."""
    files = {module_name(pkg, f): f for f in sorted(pkg.rglob("*.py"))}
    graph: dict[str, list[str]] = {}
    for name, f in files.items():
        is_pkg = f.name == "__init__.py"
        here = name.split(".") if is_pkg else name.split(".")[:-1]
        ancestors = {".".join(name.split(".")[:i]) for i in range(1, len(name.split(".")))}
        targets: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
                if back is not None:
                    back.extend(f"{name} -> {a.name}" for a in node.names if a.name in ancestors)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets.add(mod)
                targets.update(f"{mod}.{a.name}" for a in node.names)
                if back is not None and mod in ancestors:
                    back.extend(f"{name} -> {mod}" for a in node.names if f"{mod}.{a.name}" not in files)
        deps: set[str] = set()
        for t in targets:
            parts = t.split(".")
            for i in range(1, len(parts) + 1):
                m = ".".join(parts[:i])
                if m in files and m != name and m not in ancestors:
                    deps.add(m)
        graph[name] = sorted(deps)
    return graph


def check(pkg: pathlib.Path) -> int:
    back: list[str] = []
    g = graph_of(pkg, back)
    cs = _cycles()(g)
    line = f"{pkg.name} (python): {len(g)} modules, {sum(map(len, g.values()))} edges"
    for c in cs:
        line += f"; CYCLE {' '.join(c)}"
    for b in sorted(set(back)):
        line += f"; BACK {b}"
    print(line)
    return 1 if cs or back else 0


def self_test() -> int:
    """A package with a circle through a subpackage must fail; the same without it must pass."""
    with tempfile.TemporaryDirectory() as tmp:
        pkg = pathlib.Path(tmp) / "planted"
        (pkg / "sub").mkdir(parents=True)
        (pkg / "__init__.py").write_text("from .a import A\n")
        (pkg / "a.py").write_text("A = 1\n")
        (pkg / "sub" / "__init__.py").write_text("")
        (pkg / "sub" / "b.py").write_text("def f():\n    from ..a import A\n    return A\n")
        ok = subprocess.run([sys.executable, __file__, str(pkg)], capture_output=True, text=True)
        (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub.b import f\nA = 1\n")
        bad = subprocess.run([sys.executable, __file__, str(pkg)], capture_output=True, text=True)
    if ok.returncode != 0 or "CYCLE" in ok.stdout:
        print(f"self-test: a package without a circle failed: {ok.stdout}{ok.stderr}")
        return 1
    if bad.returncode != 1 or "CYCLE planted.a planted.sub.b" not in bad.stdout:
        print(f"self-test: a planted circle passed: {bad.stdout}{bad.stderr}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        pkg = pathlib.Path(tmp) / "planted"
        (pkg / "sub").mkdir(parents=True)
        (pkg / "__init__.py").write_text("A = 1\n")
        (pkg / "sub" / "__init__.py").write_text("")
        (pkg / "sub" / "b.py").write_text("from .. import A\n")
        up = subprocess.run([sys.executable, __file__, str(pkg)], capture_output=True, text=True)
    if up.returncode != 1 or "BACK planted.sub.b -> planted" not in up.stdout:
        print(f"self-test: a leaf importing its front module passed: {up.stdout}{up.stderr}")
        return 1
    print(f"self-test: ok (planted circle found: {bad.stdout.strip()})")
    return 0


def main() -> int:
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    root = HERE.parent
    pkgs = [pathlib.Path(a) for a in args] or [root / "crates/py/python/citeflow"]
    return max(check(p) for p in pkgs)


if __name__ == "__main__":
    sys.exit(main())
