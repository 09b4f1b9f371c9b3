"""The package's extras (issue 44 §5): one per framework, each satisfied by the version the
framework tests pin (requirements-frameworks.txt), so ``pip install 'citeflow[langchain]'``
allows exactly what was tested."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PY = Path(__file__).resolve().parents[1]


def pins(name: str) -> dict[str, str]:
    out = {}
    for line in (PY / name).read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.startswith("#"):
            pkg, version = line.split("==", 1)
            out[pkg.strip().lower().replace("_", "-")] = version.strip()
    return out


def test_every_framework_has_an_extra_that_allows_the_tested_version() -> None:
    extras = tomllib.loads((PY / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert {"openai", "langchain", "langgraph", "chainlit", "llamaindex"} <= set(extras)
    tested = pins("requirements-frameworks.txt")
    checked = []
    for extra, reqs in extras.items():
        if extra == "test":
            continue
        for r in map(Requirement, reqs):
            version = tested[r.name.lower()]
            assert r.specifier.contains(version), (extra, str(r), version)
            checked.append((extra, r.name))
    assert ("langgraph", "langgraph") in checked and ("chainlit", "chainlit") in checked
