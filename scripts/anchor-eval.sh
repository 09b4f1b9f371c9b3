#!/usr/bin/env bash
# Claim anchors on WiCE (issue 43), the documented command: `citeflow render --anchors` run as a
# user runs it, one process a claim, beside a BM25 top sentence and anchorcite 0.1.0's lexical
# tier in the same run; prints a Markdown table (scripts/anchor-eval.py says what each figure is).
#
#   bash scripts/anchor-eval.sh [SPLIT.jsonl] [--json FILE] [--per-claim FILE] [--reps 3]
#
# The split defaults to $CITEFLOW_SHARED_DIR/fixtures/wice/dev.jsonl (../shared beside the
# workspace). The venv target/venv-anchor-eval holds anchorcite==0.1.0 from PyPI and is reused
# by the next run; when pip cannot install it, anchorcite's row says skipped and the rest runs.
# The binary is $CITEFLOW_BIN, else target/release/citeflow, built when missing with the
# build scripts/run.sh makes (`--features local-model`: the first build compiles llama.cpp).
# Each step's time goes to stderr.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET_DIR/venv-anchor-eval"
PIN="anchorcite==0.1.0"
PY="$(command -v python3.11 || command -v python3)"

now() { date +%s.%N; }
took() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f} s')" "$1" "$(now)"; }

# 1. The venv with the pinned anchorcite (reused when it already has it).
t="$(now)"
skip=()
if "$VENV/bin/python" -c 'import anchorcite, sys; sys.exit(anchorcite.__version__ != "0.1.0")' 2>/dev/null; then
    echo "== venv: $VENV reused ($PIN): $(took "$t")" >&2
else
    if { [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV" >&2; } \
        && "$VENV/bin/pip" install --quiet --disable-pip-version-check "$PIN" >&2; then
        echo "== venv: $VENV created, $PIN installed: $(took "$t")" >&2
    else
        echo "== venv: pip could not install $PIN into $VENV: $(took "$t")" >&2
        skip=(--no-anchorcite "pip could not install $PIN into $VENV")
    fi
fi
PYTHON="$VENV/bin/python"
[ -x "$PYTHON" ] || PYTHON="$PY"

# 2. The binary (the build scripts/run.sh makes; cargo waits for the target dir's lock).
t="$(now)"
if [ -n "${CITEFLOW_BIN:-}" ]; then
    echo "== binary: CITEFLOW_BIN=$CITEFLOW_BIN" >&2
elif [ -x "$TARGET_DIR/release/citeflow" ]; then
    export CITEFLOW_BIN="$TARGET_DIR/release/citeflow"
    echo "== binary: $CITEFLOW_BIN (built before)" >&2
else
    echo "== binary: building (cargo build --release --locked -p citeflow-cli --features local-model)" >&2
    cargo build --release --locked -p citeflow-cli --features local-model >&2
    export CITEFLOW_BIN="$TARGET_DIR/release/citeflow"
    echo "== binary: built: $(took "$t")" >&2
fi

# 3. The evaluation.
t="$(now)"
echo "== evaluation: $PYTHON scripts/anchor-eval.py $*" >&2
"$PYTHON" scripts/anchor-eval.py ${skip[@]+"${skip[@]}"} "$@"
echo "== evaluation: $(took "$t")" >&2
