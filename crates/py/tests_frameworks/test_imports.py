"""``import citeflow`` imports none of the frameworks."""

from __future__ import annotations

import subprocess
import sys


def test_import_citeflow_imports_no_framework() -> None:
    code = (
        "import sys, citeflow, citeflow.rounds, citeflow.adapters, citeflow.context, citeflow.langchain\n"
        "import citeflow.langchain.chat_model\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain', 'langchain_core', 'langgraph', 'chainlit', 'llama_index')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_langchain_front_module_only_re_exports_its_modules_names() -> None:
    # issue 44 §5: citeflow.langchain re-exports each name from the module that holds it, and
    # only what a module needs is imported (EpubLoader needs langchain-core, not langgraph).
    code = (
        "import sys\n"
        "from citeflow.langchain import EpubLoader\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'langchain', 'langchain_core', 'langgraph'}))\n"
        "import importlib, citeflow.langchain as lc\n"
        "print(all(getattr(lc, n) is getattr(importlib.import_module(m), n) for n, m in lc._module_lookup.items()))\n"
        "print(sorted(lc.__all__) == sorted(lc._module_lookup))\n"
        "print(lc.CiteflowMiddleware.__module__, lc.messages_stream.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "['langchain_core']",
        "True",
        "True",
        "citeflow.langchain.agent citeflow.langchain.messages",
    ]
