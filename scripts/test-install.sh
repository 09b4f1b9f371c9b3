#!/usr/bin/env bash
# One binary with everything in it (issue 20 §2):
#   1. the WASM web build the chat page loads (crates/server/assets/wasm/citeflow_wasm.js and
#      citeflow_wasm_bg.wasm, vendored and compiled into the binary by include_bytes!) is
#      byte for byte what the source builds: citeflow-wasm for wasm32-unknown-unknown (profile
#      wasm-release, registry paths remapped so the bytes do not depend on CARGO_HOME), then
#      wasm-bindgen --target web of the version in Cargo.lock, then wasm-opt with the npm
#      package's pinned binaryen and flags (scripts/wasm-pkg.sh). CITEFLOW_BLESS=1 copies the
#      fresh build over the vendored files instead of failing (review and commit them);
#   2. `cargo install --path crates/cli --features local-model` (sharing the workspace's target
#      directory, so it is the release build that scripts/test-llm.sh and scripts/run.sh make,
#      which scripts/test.sh runs before this script; alone, this script makes it), the binary
#      with everything, the local model too, copied alone into an empty directory and run
#      from there with an empty environment (HOME and CITEFLOW_DATA_DIR in a temporary
#      directory, no CITEFLOW_* variable, cwd outside the source tree), against the replaying
#      upstream of the browser tests;
#   3. headless Chromium (Debian's chromium through npm playwright-core, the harness of
#      crates/server/tests/browser) opens its page, switches to browser rendering and checks
#      the rendered text, citation numbers and source list, and that the .wasm it loaded is
#      the vendored file.
# Installs what is missing (the wasm32 target, wasm-bindgen-cli, chromium, the test project's
# npm packages, cmake and libclang-dev). Prints the time of each part.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export CITEFLOW_SHARED_DIR="${CITEFLOW_SHARED_DIR:-$(cd "$root/.." && pwd)/shared}"
assets="crates/server/assets/wasm"
files=(citeflow_wasm.js citeflow_wasm_bg.wasm)

# shellcheck source=step.sh
source "$root/scripts/step.sh"
# shellcheck source=browser-env.sh
source "$root/scripts/browser-env.sh"
# shellcheck source=wasm-pkg.sh
source "$root/scripts/wasm-pkg.sh"

step "tools: wasm32 target, wasm-bindgen-cli, chromium, npm ci ($browser_tests)"
ensure_wasm_bindgen
ensure_browser
target_dir="$(cargo metadata --format-version 1 --no-deps \
  | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).target_directory))')"

work="$(mktemp -d)"
upstream_pid=""
serve_pid=""
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null || true
  [ -n "$upstream_pid" ] && kill "$upstream_pid" 2>/dev/null && wait "$upstream_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

step "the vendored WASM web build ($assets) is what the source builds"
# A target directory of its own: the remapping flag would otherwise rebuild the wasm-release
# artefacts scripts/test-wasm.sh keeps in the shared one.
embed_target="$target_dir/wasm-embed"
registry="${CARGO_HOME:-$HOME/.cargo}/registry/src"
env -u RUSTFLAGS CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="--remap-path-prefix=$registry=/cargo-registry" \
  cargo build --locked -p citeflow-wasm --target wasm32-unknown-unknown --profile wasm-release \
  --target-dir "$embed_target"
fresh="$work/wasm-web"
wasm-bindgen --target web --out-dir "$fresh" --remove-name-section --remove-producers-section \
  "$embed_target/wasm32-unknown-unknown/wasm-release/citeflow_wasm.wasm"
# The same wasm-opt pass as the npm package's (3% off the gzip at the same speed).
ensure_wasm_opt
"$wasm_opt" "${wasm_opt_flags[@]}" "$fresh/citeflow_wasm_bg.wasm" -o "$fresh/citeflow_wasm_bg.opt.wasm"
echo "wasm-opt ${wasm_opt_flags[*]}: $(wc -c <"$fresh/citeflow_wasm_bg.wasm") → $(wc -c <"$fresh/citeflow_wasm_bg.opt.wasm") bytes"
mv "$fresh/citeflow_wasm_bg.opt.wasm" "$fresh/citeflow_wasm_bg.wasm"
mkdir -p "$assets"
stale=0
for f in "${files[@]}"; do
  if cmp -s "$fresh/$f" "$assets/$f"; then
    continue
  fi
  if [ "${CITEFLOW_BLESS:-}" = 1 ]; then
    cp "$fresh/$f" "$assets/$f"
    echo "blessed $assets/$f"
  else
    echo "$assets/$f differs from what the source builds ($fresh/$f)" >&2
    stale=1
  fi
done
if [ "$stale" -ne 0 ]; then
  echo "the WASM embedded in citeflow is stale (built here with $(rustc -V) and wasm-bindgen $(wasm-bindgen --version | awk '{ print $2 }'); $assets/README.md names the toolchain of the vendored files): run CITEFLOW_BLESS=1 bash scripts/test-install.sh and commit $assets" >&2
  exit 1
fi
for f in "${files[@]}"; do
  printf '%s  %8d bytes  %s\n' "$(sha256sum "$assets/$f" | cut -c1-16)" "$(wc -c <"$assets/$f")" "$assets/$f (= fresh build)"
done

step "cargo install --path crates/cli --features local-model (target directory $target_dir)"
t0=$SECONDS
# shellcheck source=llama-build-deps.sh
source "$root/scripts/llama-build-deps.sh"
ensure_llama_build_deps
CARGO_TARGET_DIR="$target_dir" cargo install --locked --features local-model --path crates/cli --root "$work/root" 2>&1 \
  | grep -Ev '^\s*(Compiling|Downloaded|Downloading)' || true
[ -x "$work/root/bin/citeflow" ] || { echo "cargo install made no binary" >&2; exit 1; }
echo "installed in $((SECONDS - t0)) s: $(wc -c <"$work/root/bin/citeflow") bytes"

step "run the installed binary alone in an empty directory"
lonely="$work/empty"
mkdir -p "$lonely" "$work/home" "$work/data"
cp "$work/root/bin/citeflow" "$lonely/citeflow"
node "$browser_tests/upstream.mjs" >"$work/upstream.out" 2>&1 &
upstream_pid=$!
upstream="$(wait_for_line "$work/upstream.out" 'http://127\.0\.0\.1:[0-9]+/v1' 20 "$upstream_pid")"
(
  cd "$lonely"
  exec env -i PATH=/usr/bin:/bin HOME="$work/home" CITEFLOW_DATA_DIR="$work/data" CITEFLOW_LOG=warn \
    ./citeflow serve --listen 127.0.0.1:0 --upstream "$upstream" --store memory --no-sample-books
) >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
base="$(wait_for_line "$work/serve.out" 'http://127\.0\.0\.1:[0-9]+' 20 "$serve_pid")"
[ "$(readlink "/proc/$serve_pid/cwd")" = "$lonely" ] || { echo "citeflow does not run in $lonely" >&2; exit 1; }
echo "citeflow $base (cwd $lonely: $(ls "$lonely")), upstream $upstream"

step "headless Chromium: the page renders in the browser with the embedded WASM"
status=0
(cd "$browser_tests" && CITEFLOW_WEB_BASE="$base" CITEFLOW_WEB_UPSTREAM="$upstream" \
  CITEFLOW_WASM_ASSETS="$root/$assets" \
  node --test --test-concurrency=1 --test-reporter=spec install.test.mjs) || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- citeflow serve stderr" >&2
  tail -n 50 "$work/serve.err" >&2 || true
  exit "$status"
fi
step_done
