#!/usr/bin/env bash
# The LiteLLM proxy as a peer of citeflow serve (not a test; issue 37): installs a pinned
# `litellm[proxy]` into its own virtualenv ($CARGO_TARGET_DIR/venv-litellm, reused when it holds
# that version), then runs scripts/bench-server.sh with BENCH_LITELLM set, so that one run
# measures, with the same load client (crates/server/examples/bench.rs) and the same replaying
# upstream: the upstream alone, the pass-through proxy, citeflow serve (SQLite store) and the
# LiteLLM proxy (one worker, `drop_params: true`, every model passed to the upstream as
# `openai/<model>`). The `peer …` lines give LiteLLM against citeflow and the pass-through
# proxy of the same round: CPU per chunk (µs, from /proc of its processes), the share of the
# offered load it kept up with, memory per open stream.
#
#   bash scripts/bench-litellm.sh [STREAMS] [PACE_MS]
#   defaults: 100 20 (100 streams × 50 chunks/s, as issue 37 tried); BENCH_ROUNDS (default 1)
#   and the other BENCH_* variables of bench-server.sh apply.
#
# If LiteLLM cannot be installed (no network to PyPI, a version that does not resolve), it prints
# one `skipped: …` line and exits 0, so that scripts/bench.sh goes on. Safe to run twice.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# The newest release whose `proxy` extra resolves on PyPI from here on Python 3.11 (2026-11-28:
# 1.110.x needs `litellm-proxy`, 1.108.13-1.109.3 `litellm-proxy-extras` versions, 1.108.10-12
# `litellm-enterprise==0.1.79.post2`, none of them published).
LITELLM_VERSION="${LITELLM_VERSION:-1.108.7}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET_DIR/venv-litellm"

installed() {
    [ -x "$VENV/bin/litellm" ] && "$VENV/bin/python" -c '
import importlib.metadata as m, sys
sys.exit(m.version("litellm") != sys.argv[1])' "$LITELLM_VERSION" 2>/dev/null
}
if ! installed; then
    mkdir -p "$TARGET_DIR"
    log="$TARGET_DIR/venv-litellm-install.log"
    echo "installing litellm[proxy]==$LITELLM_VERSION into $VENV (log: $log)…" >&2
    if ! { [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"; } >"$log" 2>&1 \
        || ! "$VENV/bin/pip" install --quiet --disable-pip-version-check \
            "litellm[proxy]==$LITELLM_VERSION" >>"$log" 2>&1 \
        || ! installed; then
        echo "skipped: the LiteLLM peer row: pip install 'litellm[proxy]==$LITELLM_VERSION' failed ($(grep -m1 '^ERROR' "$log" || tail -n1 "$log"); log: $log)"
        exit 0
    fi
fi

BENCH_ROUNDS="${BENCH_ROUNDS:-1}" BENCH_LITELLM="$VENV" exec bash scripts/bench-server.sh "${1:-100}" "${2:-20}"
