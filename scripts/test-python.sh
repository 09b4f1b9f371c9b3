#!/usr/bin/env bash
# The Python package (crates/py): builds citeflow-py into a virtualenv with maturin, then runs
# pytest with warnings as errors (golden vectors, hypothesis chunk invariance, recorded streams,
# the OpenAI and LangChain adapters with the real packages, snapshot interop with the Rust CLI)
# and mypy.stubtest on the native module.
#
# Needs: python3 (3.11+) with the venv module, cargo. Installs everything else into
# target/venv-py (CITEFLOW_PY_VENV names another). Idempotent: a second run reuses the venv and
# the cargo cache.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
# shellcheck source=venv.sh
source "$ROOT/scripts/venv.sh"
VENV="$(test_venv_path py)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
# shellcheck source=step.sh
source "$ROOT/scripts/step.sh"
# shellcheck source=debug-build.sh
source "$ROOT/scripts/debug-build.sh"

step "virtualenv $VENV: pip install -r crates/py/requirements-test.txt"
# Exact versions (maturin, pytest, hypothesis, mypy, openai, anthropic, langchain-core and their
# dependencies) so that a run today and a run next month test the same thing.
ensure_test_venv py

# The snapshot interop test runs the Rust CLI on a snapshot taken in Python.
step "citeflow (scripts/debug-build.sh)"
debug_build
export CITEFLOW_CLI="$TARGET_DIR/debug/citeflow"

# maturin develop installs into the active virtualenv.
step "maturin develop --release (citeflow-py)"
(
    cd crates/py
    export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH"
    maturin develop --release --locked --quiet
)

step "pytest crates/py/tests"
(cd crates/py && "$VENV/bin/python" -m pytest -W error -q -p no:cacheprovider tests)

step "mypy.stubtest, mypy --strict"
# stubtest imports the installed module; run it outside the source tree.
(cd "$VENV" && "$VENV/bin/python" -m mypy.stubtest citeflow._citeflow)
# The package type-checks strictly against the stub: every module whose imports this venv has
# (the agent middleware and Chainlit need the frameworks' venv: scripts/test-frameworks-py.sh
# checks the whole package). Modules they import are read, not reported (--follow-imports=silent).
mypy_start=$(date +%s)
"$VENV/bin/python" -m mypy --strict --no-incremental --cache-dir=/dev/null --follow-imports=silent \
    --config-file crates/py/pyproject.toml \
    crates/py/python/citeflow/__init__.py crates/py/python/citeflow/_event.py \
    crates/py/python/citeflow/adapters.py crates/py/python/citeflow/epub.py \
    crates/py/python/citeflow/context.py crates/py/python/citeflow/rounds.py \
    crates/py/python/citeflow/llamaindex.py crates/py/python/citeflow/langchain/__init__.py \
    crates/py/python/citeflow/langchain/chat_model.py crates/py/python/citeflow/langchain/messages.py \
    crates/py/python/citeflow/langchain/documents.py
echo "mypy --strict: $(( $(date +%s) - mypy_start )) s"

step "no import circle in the Python package (scripts/py-module-cycles.py, and its self-test)"
# scripts/test.sh runs module-cycles.py, which runs the check itself; here the checker's
# self-test: a planted circle must fail.
"$VENV/bin/python" scripts/py-module-cycles.py
"$VENV/bin/python" scripts/py-module-cycles.py --self-test

echo "test-python: ok"
step_done
