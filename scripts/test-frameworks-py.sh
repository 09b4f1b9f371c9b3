#!/usr/bin/env bash
# The Python framework integrations (issue 36): citeflow.langchain (CiteflowMiddleware with a
# real create_agent, messages_stream, the LangGraph transformer), citeflow.chainlit with the
# example app examples/chainlit_agent in headless Chromium, and citeflow.llamaindex
# (CitationQueryEngine, agent workflows), all against the replaying upstream
# (crates/server/replay: the scripted models agent-search and cite-sources, over real HTTP).
#
# Needs: python3 (3.11+) with venv, cargo, node. Installs into target/venv-frameworks
# (CITEFLOW_FRAMEWORKS_VENV names another) the exact versions of
# crates/py/requirements-frameworks.txt, and Debian's chromium when missing. Every server
# (replaying upstream, chainlit) is started by the tests on 127.0.0.1 and stopped by them; the
# trap ends whatever is left if the run is cut. Idempotent: a second run reuses the venv, the
# cargo build and the browser. Prints each step's time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
root="$ROOT"
PYTHON="${PYTHON:-python3}"
# shellcheck source=venv.sh
source "$ROOT/scripts/venv.sh"
VENV="$(test_venv_path frameworks)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export CITEFLOW_SHARED_DIR="${CITEFLOW_SHARED_DIR:-$(cd "$ROOT/.." && pwd)/shared}"

# shellcheck source=step.sh
source "$ROOT/scripts/step.sh"
# shellcheck source=debug-build.sh
source "$ROOT/scripts/debug-build.sh"

# The tests run in a process group of their own; if this script is cut, end it (servers too).
tests_pid=""
cleanup() {
    if [ -n "$tests_pid" ] && kill -0 "$tests_pid" 2>/dev/null; then
        kill -- "-$tests_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT INT TERM

step "pip install -r crates/py/requirements-frameworks.txt"
ensure_test_venv frameworks

# The replaying upstream (cargo test of the workspace has usually built it already).
step "the replaying upstream and citeflow (scripts/debug-build.sh)"
debug_build
export CITEFLOW_REPLAY_BIN="$TARGET_DIR/debug/examples/replay_upstream"

# `citeflow serve` as an agent's upstream (one test); built by the workspace tests already.
export CITEFLOW_CLI="${CITEFLOW_CLI:-$TARGET_DIR/debug/citeflow}"

# citeflow into the venv: the same maturin build as test-python.sh (same target dir, same
# profile), so whichever runs second only relinks.
step "maturin develop --release (citeflow-py)"
(
    cd crates/py
    export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH"
    maturin develop --release --locked --quiet
)

step "browser (Debian chromium, playwright-core)"
# Headless Chromium and playwright-core (shared with the other browser tests).
# shellcheck source=browser-env.sh
source scripts/browser-env.sh
ensure_browser >/dev/null

step "pytest tests_frameworks (LangChain, Chainlit in Chromium, LlamaIndex)"
mkdir -p target/frameworks-py
set +e
(
    cd crates/py
    exec setsid "$VENV/bin/python" -m pytest -W error -q -p no:cacheprovider --durations=5 tests_frameworks
) &
tests_pid=$!
wait "$tests_pid"
status=$?
set -e
[ "$status" -eq 0 ] || exit "$status"

step "mypy --strict (the whole package)"
# The cache under target/ makes a second run quick (the frameworks' own modules are large).
"$VENV/bin/python" -m mypy --strict --config-file crates/py/pyproject.toml \
    --cache-dir=target/frameworks-py/mypy-cache -p citeflow

echo "test-frameworks-py: ok (screenshots in target/frameworks-py/)"
step_done
