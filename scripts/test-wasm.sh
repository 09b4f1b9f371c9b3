#!/usr/bin/env bash
# Builds the citeflow-wasm npm package (crates/wasm/pkg: web + nodejs builds, .d.ts included)
# and runs its tests:
#   1. the shared golden vectors and the API tests under Node (node:test, through the package),
#      snapshots exchanged with the Rust CLI (`citeflow render --snapshot-in/--snapshot-out`),
#      and every recorded provider stream in $CITEFLOW_SHARED_DIR/fixtures/streams through
#      ProviderStream, compared with `citeflow render --input jsonl --output jsonl`,
#   2. wasm-bindgen-test under Node (plus the crate's host unit tests),
#   3. one test in headless Chromium loading the web build from a local static server,
#   and type-checks a TypeScript file against the package's .d.ts files.
# Then prints the .wasm sizes (raw and gzip, both after wasm-opt) and fails above the gzip budgets (300 KiB for the
# rewriter alone, built without the `epub` feature, as the server vendors it; 450 KiB for the npm
# package's .wasm, which has books too: `--features epub`, Book/parseCfi/compareCfi with the zip
# inflater and XML parser; raised from 200 and 340 KiB by claim anchors, issue 43, and the typed
# provider readers, issue 45: crates/wasm/README.md#size),
# and packs the npm package (npm pack), installs the tarball into an empty directory and imports it under Node.
#
# Installs what is missing: Debian's chromium (apt-get), wasm-bindgen-cli of the same version as
# the wasm-bindgen crate in Cargo.lock (cargo install), and the test harness's npm packages
# (npm ci in crates/wasm/tests/js: playwright-core, typescript, and a link to the built package).
# Safe to run twice; needs Rust with the wasm32-unknown-unknown target, Node 20 and npm.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
crate="crates/wasm"
pkg="$crate/pkg"
harness="$crate/tests/js"
# Claim anchors (issue 43) cost 38.0 KiB gzip alone, 33.0 KiB beside books; the typed provider
# readers (issue 45) 51.4 KiB alone, 53.1 KiB beside books (crates/wasm/README.md#size).
# The npm package's .wasm is measured as shipped, after scripts/wasm-pkg.sh's wasm-opt pass
# (-12.5 KB gzip, 2.8%, on 2026-12-06); the rewriter alone after the same pass, which is what
# the server vendors (scripts/test-install.sh; since 2026-12-06 evening, -9.7 KB gzip, 3.1%:
# the core's speed work of that day had grown it 2.3 KB, over the budget before the pass).
# A faster core does not fit either budget
# (issue 45, item 2; docs/benchmarks.md): opt-level "s" for citeflow-core makes the WASM calls
# about 0.7x the time for +36 KB gzip beside books (464,061 bytes after wasm-opt) and +31 KB
# alone (328,605 before wasm-opt); opt-level 2 or 3 about 0.55-0.6x for +112-115 KB.
budget_gzip_bytes=$((300 * 1024))
budget_book_gzip_bytes=$((450 * 1024))
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

# shellcheck source=step.sh
source "$root/scripts/step.sh"
# shellcheck source=debug-build.sh
source "$root/scripts/debug-build.sh"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

step "tools"
if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi
if [ ! -x /usr/bin/chromium ]; then
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi
. "$root/scripts/wasm-pkg.sh"
ensure_wasm_bindgen
echo "wasm-bindgen $(wasm-bindgen --version | awk '{ print $2 }'), node $(node --version), $(/usr/bin/chromium --version 2>/dev/null | head -n1)"

step "build (profile wasm-release): the rewriter alone (for its budget), then the npm package with books [${SECONDS}s]"
cargo build -p citeflow-wasm --target wasm32-unknown-unknown --profile wasm-release
target_dir="$(cargo metadata --format-version 1 --no-deps \
  | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).target_directory))')"
wasm="$target_dir/wasm32-unknown-unknown/wasm-release/citeflow_wasm.wasm"
core_only="$target_dir/wasm-core-only"
rm -rf "$core_only"
wasm-bindgen --target web --out-dir "$core_only" --remove-name-section --remove-producers-section "$wasm"
# The npm package (scripts/wasm-pkg.sh: shared with scripts/test-ai-sdk.sh, built once).
build_wasm_pkg

step "build the CLI (snapshot interop and recorded stream tests)"
debug_build
export CITEFLOW_CLI="$target_dir/debug/citeflow"

step "npm packages of the test harness"
(cd "$harness" && npm ci --no-audit --no-fund)

step "node:test: golden vectors, API, snapshots and recorded provider streams with the CLI, headless Chromium"
(cd "$harness" && node --test --test-reporter=spec \
  vectors.test.mjs api.test.mjs snapshot-cli.test.mjs streams.test.mjs browser.test.mjs book.test.mjs)

step "TypeScript: the package's .d.ts files type the API (tsc --noEmit)"
(cd "$harness" && ./node_modules/.bin/tsc -p tsconfig.json)

step "cargo test (host unit tests)"
cargo test -p citeflow-wasm --features epub

step "wasm-bindgen-test under Node"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test -p citeflow-wasm --target wasm32-unknown-unknown

step "size"
size_check() { # what file budget
  local raw gz
  raw=$(wc -c <"$2")
  gz=$(gzip -9 -c "$2" | wc -c)
  awk -v what="$1" -v raw="$raw" -v gz="$gz" -v budget="$3" 'BEGIN {
    printf "%s: %d bytes raw (%.1f KiB), %d bytes gzip -9 (%.1f KiB); budget %d KiB gzip\n",
      what, raw, raw / 1024, gz, gz / 1024, budget / 1024 }'
  if [ "$gz" -gt "$3" ]; then
    echo "$1 is over the gzip budget" >&2
    exit 1
  fi
}
# The rewriter alone as the server vendors it: wasm-bindgen's output through the same wasm-opt
# pass as the npm package's (scripts/test-install.sh checks the vendored copy is this).
ensure_wasm_opt
"$wasm_opt" "${wasm_opt_flags[@]}" "$core_only/citeflow_wasm_bg.wasm" -o "$core_only/citeflow_wasm_bg.opt.wasm"
echo "rewriter alone before wasm-opt: $(wc -c <"$core_only/citeflow_wasm_bg.wasm") bytes raw, $(gzip -9 -c "$core_only/citeflow_wasm_bg.wasm" | wc -c) gzip -9"
size_check "citeflow_wasm_bg.wasm without books (after wasm-opt, as the server vendors it)" \
  "$core_only/citeflow_wasm_bg.opt.wasm" "$budget_gzip_bytes"
size_check "citeflow_wasm_bg.wasm of the npm package (books included)" "$pkg/web/citeflow_wasm_bg.wasm" \
  "$budget_book_gzip_bytes"

# The npm package as a user receives it (issue 20 §5; the crates and the wheel are checked in
# scripts/test-packages.sh): `npm pack`, the tarball's file list, then `npm install <tarball>`
# into an empty directory and an import under Node from there.
step "npm pack: the tarball installed into an empty directory and imported under Node"
packdir="$(mktemp -d)"
trap 'rm -rf "$packdir"' EXIT
version="$(node -p 'require("./'"$crate"'/npm/package.json").version')"
workspace_version="$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)"
if [ "$version" != "$workspace_version" ]; then
  echo "npm package version $version is not the workspace version $workspace_version" >&2
  exit 1
fi
(cd "$pkg" && npm pack --silent --pack-destination "$packdir" >/dev/null)
tarball="$packdir/citeflow-$version.tgz"
tar -tzf "$tarball" | sort >"$packdir/list"
for f in package.json README.md LICENSE-MIT LICENSE-APACHE node/package.json node/citeflow_wasm.js \
  node/citeflow_wasm.d.ts node/citeflow_wasm_bg.wasm web/citeflow_wasm.js web/citeflow_wasm.d.ts \
  web/citeflow_wasm_bg.wasm inline/citeflow.js inline/citeflow.d.ts inline/citeflow_wasm_bg.js ai-sdk.js ai-sdk.d.ts \
  react.js react.d.ts langchain.js langchain.d.ts; do
  grep -qxF "package/$f" "$packdir/list" || { echo "the tarball has no $f" >&2; exit 1; }
done
for f in LICENSE-MIT LICENSE-APACHE; do
  tar -xzOf "$tarball" "package/$f" | cmp -s - "$f" || { echo "the tarball's $f differs from ./$f" >&2; exit 1; }
done
mkdir "$packdir/app"
# The package has no dependencies: nothing is fetched.
(cd "$packdir/app" && npm install --silent --no-audit --no-fund --offline "$tarball")
cat >"$packdir/app/check.mjs" <<'EOF'
import assert from "node:assert/strict";
import { readFileSync, realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Sources, rewrite } from "citeflow";

const [version, app] = process.argv.slice(2);
const where = realpathSync(fileURLToPath(import.meta.resolve("citeflow")));
// ESM imports get the entry that instantiates the WebAssembly at import (no init()).
assert.equal(where, realpathSync(app) + "/node_modules/citeflow/inline/citeflow.js");
const installed = JSON.parse(readFileSync(`${app}/node_modules/citeflow/package.json`, "utf8"));
assert.equal(installed.version, version);
const r = rewrite(
  "Paris [[source_7]] is in France [[source_3]], see [[source_7]].",
  Sources.fromArray([{ id: "source_7", title: "Paris" }, { id: "source_3", title: "France" }]),
);
assert.equal(r.text, "Paris [1] is in France [2], see [1].");
assert.equal(r.events.filter((e) => e.type === "citation").length, 3);
// The integrations' entries (compiled from crates/wasm/npm/src by tsc) resolve through the
// exports map and load without their frameworks installed.
const ai = await import("citeflow/ai-sdk");
const react = await import("citeflow/react");
const lc = await import("citeflow/langchain");
assert.deepEqual([typeof ai.citeflow, typeof ai.citeflowTransform, typeof ai.citeflowDataParts], ["function", "function", "function"]);
assert.equal(react.citeflowMessage({ parts: [{ type: "text", text: "x" }] }).segments[0].text, "x");
assert.deepEqual([typeof lc.citeflowMiddleware, typeof lc.citeflowStream], ["function", "function"]);
console.log(`import "citeflow" ${installed.version} from ${where}: ${JSON.stringify(r.text)}`);
EOF
(cd "$packdir/app" && node check.mjs "$version" "$packdir/app")
echo "$(basename "$tarball"): $(wc -c <"$tarball") bytes, $(wc -l <"$packdir/list") files"
step_done
