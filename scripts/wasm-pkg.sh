# Sourced by scripts/test-wasm.sh and scripts/test-ai-sdk.sh: builds the npm package in
# crates/wasm/pkg (web + nodejs builds of the .wasm with books, the entry that needs no init(),
# and the integrations — citeflow/ai-sdk, citeflow/react, … — compiled from the TypeScript of
# crates/wasm/npm/src by its pinned tsc, strict) once, the .wasm shrunk by wasm-opt (below); a
# second call in the same run, or a run whose .wasm, npm sources and wasm-opt pin and flags have
# not changed, only checks. Expects `root` (the repository).

# ensure_wasm_bindgen (the wasm32 target and the pinned wasm-bindgen-cli) is shared with the
# scripts' early installs.
# shellcheck source=cargo-tools.sh
source "$(dirname "${BASH_SOURCE[0]}")/cargo-tools.sh"

# npm ci in DIR, unless DIR/node_modules already holds exactly what its lockfile says.
npm_ci_if_changed() {
  if [ -f "$1/node_modules/.package-lock.json" ] &&
    node -e '
      const [a, b] = process.argv.slice(1).map((f) => JSON.parse(require("fs").readFileSync(f, "utf8")).packages);
      delete a[""];
      const keys = (o) => Object.keys(o).sort().map((k) => k + "@" + (o[k].version ?? o[k].resolved)).join("\n");
      process.exit(keys(a) === keys(b) ? 0 : 1);
    ' "$1/package-lock.json" "$1/node_modules/.package-lock.json"; then
    echo "$1: node_modules matches package-lock.json"
  else
    (cd "$1" && npm ci --no-audit --no-fund)
  fi
}

# wasm-opt on the npm package's .wasm (issue 45, item 5): binaryen from npm, pinned in
# scripts/wasm-opt/package-lock.json and installed there by npm ci once (Debian's binaryen 108
# writes modules Node refuses). Plain -Oz shrinks the raw bytes by a tenth but grows the gzip
# (439,681 → 484,568 bytes, 2026-12-06); three of its passes do that (each alone after -O1:
# inlining-optimizing +58 KB gzip, reorder-functions +22 KB, local-cse +3 KB), so they are
# skipped. What is left takes 2.8% off the gzip (440,267 → 427,754 bytes, gzip -9 of
# citeflow_wasm_bg.wasm) at the same speed, in about 20-30 s. The module's features (bulk
# memory, sign-ext, …) are read from its target_features section. The server's vendored copy
# (scripts/test-install.sh) goes through the same pass (since 2026-12-06 evening).
wasm_opt_flags=(-Oz --skip-pass=inlining-optimizing --skip-pass=reorder-functions --skip-pass=local-cse)

ensure_wasm_opt() {
  npm_ci_if_changed "$root/scripts/wasm-opt"
  wasm_opt="$root/scripts/wasm-opt/node_modules/.bin/wasm-opt"
  "$wasm_opt" --version
}

# build_wasm_pkg: sets `wasm_target_dir` (cargo's target directory) too.
build_wasm_pkg() {
  local crate="$root/crates/wasm" pkg="$root/crates/wasm/pkg" wasm stamp f
  ensure_wasm_bindgen
  (cd "$root" && cargo build -p citeflow-wasm --features epub --target wasm32-unknown-unknown --profile wasm-release)
  wasm_target_dir="$(cd "$root" && cargo metadata --format-version 1 --no-deps \
    | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).target_directory))')"
  wasm="$wasm_target_dir/wasm32-unknown-unknown/wasm-release/citeflow_wasm.wasm"
  stamp="$( (cat "$wasm" "$crate/README.md" "$root/scripts/wasm-opt/package-lock.json"
    echo "${wasm_opt_flags[*]}"
    cd "$crate/npm" && find . -path ./node_modules -prune -o -type f -print0 | sort -z | xargs -0 cat) | sha256sum | cut -c1-16)"
  if [ -f "$pkg/.stamp" ] && [ "$(cat "$pkg/.stamp")" = "$stamp" ]; then
    echo "npm package in $pkg is up to date ($stamp)"
    return 0
  fi
  rm -rf "$pkg"
  mkdir -p "$pkg"
  for t in web nodejs; do
    wasm-bindgen --target "$t" --out-dir "$pkg/${t%js}" --remove-name-section --remove-producers-section "$wasm"
  done
  # Both targets' .wasm are the same bytes: optimised once, copied to node/.
  ensure_wasm_opt
  cmp "$pkg/web/citeflow_wasm_bg.wasm" "$pkg/node/citeflow_wasm_bg.wasm"
  local t0=$SECONDS
  "$wasm_opt" "${wasm_opt_flags[@]}" "$pkg/web/citeflow_wasm_bg.wasm" -o "$pkg/web/citeflow_wasm_bg.opt.wasm"
  echo "wasm-opt ${wasm_opt_flags[*]}: $(wc -c <"$pkg/web/citeflow_wasm_bg.wasm") → $(wc -c <"$pkg/web/citeflow_wasm_bg.opt.wasm") bytes in $((SECONDS - t0)) s"
  mv "$pkg/web/citeflow_wasm_bg.opt.wasm" "$pkg/web/citeflow_wasm_bg.wasm"
  cp "$pkg/web/citeflow_wasm_bg.wasm" "$pkg/node/citeflow_wasm_bg.wasm"
  # The published manifest: the package's own, without the build's devDependencies.
  node -e 'const fs = require("fs"); const p = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    delete p.devDependencies; fs.writeFileSync(process.argv[2], JSON.stringify(p, null, 2) + "\n");' \
    "$crate/npm/package.json" "$pkg/package.json"
  cp "$crate/npm/node-package.json" "$pkg/node/package.json"
  cp "$crate/README.md" "$pkg/README.md"
  cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$pkg/"
  node "$crate/npm/build-inline.mjs" "$pkg"
  # The integrations: src/*.ts → PKG/*.js + .d.ts (crates/wasm/npm/tsconfig.json reads the
  # types of "citeflow" from PKG/inline, written just above).
  npm_ci_if_changed "$crate/npm"
  (cd "$crate/npm" && ./node_modules/.bin/tsc -p tsconfig.json --outDir "$pkg")
  echo "$stamp" >"$pkg/.stamp"
}
