# Sourced by scripts/test-ai-sdk.sh and scripts/test-llm.sh: the Next.js example
# (examples/nextjs-ai-sdk) built once. `next_example_build` runs `npm ci` when its lockfile
# changed and `next build` unless `.next` was built from the same sources and the same npm
# package (the stamp of scripts/wasm-pkg.sh's build, which must have run: `build_wasm_pkg`).
# Needs `root` (the checkout) and wasm-pkg.sh's `npm_ci_if_changed`.

next_example="examples/nextjs-ai-sdk"

next_example_build() {
  export NEXT_TELEMETRY_DISABLED=1
  npm_ci_if_changed "$root/$next_example"
  local stamp
  stamp="$( (cd "$root/$next_example" && find app lib next.config.mjs package.json package-lock.json tsconfig.json -type f -print0 \
    | sort -z | xargs -0 cat; cat "$root/crates/wasm/pkg/.stamp") | sha256sum | cut -c1-16)"
  if [ -f "$root/$next_example/.next/BUILD_ID" ] && [ "$(cat "$root/$next_example/.build-stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$next_example: .next is up to date ($stamp)"
  else
    (cd "$root/$next_example" && ./node_modules/.bin/next build)
    echo "$stamp" >"$root/$next_example/.build-stamp"
  fi
}
