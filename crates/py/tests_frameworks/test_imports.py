"""``import citeflow`` imports none of the frameworks."""

from __future__ import annotations

import subprocess
import sys


def test_import_citeflow_imports_no_framework() -> None:
    code = (
        "import sys, citeflow, citeflow.rounds, citeflow.adapters, citeflow.context\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain', 'langchain_core', 'langgraph', 'chainlit', 'llama_index')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
