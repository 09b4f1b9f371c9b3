#!/usr/bin/env bash
# The README's main command, tested as a person would use it: runs `scripts/run.sh` (which
# builds citeflow with the local model and starts `citeflow serve` with no upstream: the real
# SmolLM2 model in llama.cpp, the sample books, the web page) on a free loopback port, then
# headless Chromium asks a question about a sample book on the page
# (crates/server/tests/browser/main.test.mjs) and saves target/screenshots/local-model.png (CITEFLOW_BLESS=1: docs/screenshots/).
# The same release binary is also run against an HTTPS upstream (crates/cli/tests/tls/https_upstream.py:
# a certificate authority made with `openssl`, a TLS server on 127.0.0.1, serve and ask; needs nm).
#
# The data dir is kept in the target directory (main-command-data), so a second run reuses the
# model, the book index and the database; the model is seeded from target/models (where
# scripts/test-llm.sh fetches it) when that has it. Installs what is missing (chromium, a CJK
# font, npm packages; run.sh installs cmake and libclang-dev). Safe to run twice.
#
# run.sh's release build of citeflow with local-model reuses the llama.cpp that
# scripts/test-llm.sh compiled (the same profile and features; test.sh runs that script first).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export CITEFLOW_SHARED_DIR="${CITEFLOW_SHARED_DIR:-$(cd "$root/.." && pwd)/shared}"
# shellcheck source=step.sh
source "$root/scripts/step.sh"
# shellcheck source=browser-env.sh
source "$root/scripts/browser-env.sh"

step "tools: chromium, a CJK font, npm ci"
ensure_browser

target_dir="$(cargo metadata --format-version 1 --no-deps \
  | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).target_directory))')"
data="$target_dir/main-command-data"
mkdir -p "$data/models"
model="SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$data/models/$model" ] && [ -f "$target_dir/models/$model" ]; then
  ln "$target_dir/models/$model" "$data/models/$model" 2>/dev/null \
    || cp "$target_dir/models/$model" "$data/models/$model"
fi

step "scripts/run.sh (the main command) on a free loopback port"
work="$(mktemp -d)"
run_pid=""
cleanup() {
  if [ -n "$run_pid" ]; then
    kill "$run_pid" 2>/dev/null || true
    wait "$run_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
CITEFLOW_LISTEN=127.0.0.1:0 CITEFLOW_DATA_DIR="$data" CITEFLOW_LOG=warn \
  bash scripts/run.sh >"$work/run.out" 2>"$work/run.err" &
run_pid=$!
# The first run builds llama.cpp in release mode: allow it time.
if ! base="$(wait_for_line "$work/run.out" 'http://127\.0\.0\.1:[0-9]+' 3600 "$run_pid")"; then
  echo "--- run.sh stderr" >&2
  tail -n 60 "$work/run.err" >&2 || true
  exit 1
fi
grep '^citeflow:' "$work/run.err" || true
echo "the main command's page: $base"

step "the main command's anchors demo prints each claim's quote and flags the unsupported one"
for want in \
  '    "It is navigable by ocean-going vessels as far as Rouen." (supported 0.88)' \
  '    "The Seine is a 777-kilometre-long river in northern France." (unsupported 0.07)' \
  '    "代表作に『吾輩は猫である』『坊っちゃん』『こゝろ』などがある。" (supported 1.00)'; do
  grep -qxF -- "$want" "$work/run.out" || { echo "run.sh's output lacks: $want" >&2; cat "$work/run.out" >&2; exit 1; }
done

step "claim anchors on WiCE dev, the release binary as a user runs it (floors: hit@1 0.70, AUROC 0.80)"
CITEFLOW_BIN="$target_dir/release/citeflow" python3 scripts/anchor-eval.py --quick 349

step "the release binary over HTTPS: serve and ask against a TLS upstream (ring, SSL_CERT_FILE), an untrusted certificate refused"
tls_missing=()
command -v openssl >/dev/null || tls_missing+=(openssl)
command -v nm >/dev/null || tls_missing+=(binutils)
if [ "${#tls_missing[@]}" -gt 0 ]; then
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${tls_missing[@]}"
fi
python3 crates/cli/tests/tls/https_upstream.py "$target_dir/release/citeflow"

step "browser test of the main command (headless Chromium, the real model)"
status=0
(cd "$browser_tests" && CITEFLOW_MAIN_BASE="$base" \
  node --test --test-concurrency=1 --test-reporter=spec main.test.mjs) || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- run.sh stderr" >&2
  tail -n 60 "$work/run.err" >&2 || true
  exit "$status"
fi
shots="${CARGO_TARGET_DIR:-target}/screenshots"
[ -z "${CITEFLOW_BLESS:-}" ] || shots=docs/screenshots
ls -l "$shots"/local-model.png
step_done
