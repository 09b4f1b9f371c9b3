#!/usr/bin/env bash
# The test scripts' installs, done early, in the background of scripts/test.sh (at nice 19, so
# that their CPU work takes only what the project's builds leave):
#
#   prefetch.sh downloads   started before the Rust steps, so that the downloads of a fresh
#                           machine (about 340 Python packages into four virtualenvs, 270 npm
#                           ones) overlap the compiling instead of following it:
#     - Python: each test script's virtualenv, made and filled by the same `ensure_venv`
#       (scripts/venv.sh) the script calls later. It holds the virtualenv's lock while it
#       installs, so a script that comes early waits for it, then finds every pin satisfied.
#     - npm: the packages of every lockfile, into npm's cache only (`npm cache add`); the
#       scripts' `npm ci` then takes them from there. No project directory is touched.
#   prefetch.sh tools       started after the Rust steps: wasm-bindgen-cli, then cargo-deny,
#                           built by the same `ensure_wasm_bindgen` / `ensure_cargo_deny`
#                           (scripts/cargo-tools.sh, under their locks) that the test scripts
#                           call, in the CPU the test scripts leave idle (their browsers, servers
#                           and waits). scripts/test.sh runs the scripts that need no
#                           wasm-bindgen-cli first, so that it is built by the time one does.
#                           (Built beside the Rust steps, it was done only after the first script
#                           that needs it had waited about as long as it takes to build, and it
#                           slowed the Rust steps.)
#
# A failure here costs only the time it would have saved (the scripts install as before), so
# this script never fails: it prints what it could not do and exits 0. Prints its time.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
started=$SECONDS
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

case "${1:-}" in
downloads) ;;
tools)
    # shellcheck source=cargo-tools.sh
    source "$ROOT/scripts/cargo-tools.sh"
    if ensure_wasm_bindgen >"$tmp/wasm-bindgen.log" 2>&1; then
        echo "cargo: wasm-bindgen-cli ($((SECONDS - started)) s)"
    else
        echo "cargo: wasm-bindgen-cli failed (the scripts that need it will install it):"
        tail -n 5 "$tmp/wasm-bindgen.log"
    fi
    if ensure_cargo_deny >"$tmp/cargo-deny.log" 2>&1; then
        echo "cargo: cargo-deny $CARGO_DENY_VERSION ($((SECONDS - started)) s)"
    else
        echo "cargo: cargo-deny failed (test-packages.sh will install it):"
        tail -n 5 "$tmp/cargo-deny.log"
    fi
    exit 0
    ;;
*)
    echo "usage: prefetch.sh downloads|tools" >&2
    exit 0
    ;;
esac

# shellcheck source=venv.sh
source "$ROOT/scripts/venv.sh"

# The test scripts' virtualenvs, from the one table of them (scripts/venv.sh).
for name in $test_venv_names; do
    venv="$(test_venv_path "$name")"
    req="$(test_venv_requirements "$name")"
    if ensure_test_venv "$name" >"$tmp/pip.log" 2>&1; then
        echo "pip: $req into $venv ($((SECONDS - started)) s)"
    else
        echo "pip: $req into $venv failed (its test script will install it):"
        tail -n 5 "$tmp/pip.log"
    fi
done

# Every npm package of the project's lockfiles that installs on this platform (Linux, x64,
# glibc: the others' native builds are skipped, as npm ci skips them).
git ls-files -z -- '*package-lock.json' | xargs -0 node -e '
  const seen = new Set();
  const fits = (list, want) => !list || list.includes(want) || list.every((x) => x.startsWith("!") && x !== "!" + want);
  for (const file of process.argv.slice(1)) {
    const packages = JSON.parse(require("fs").readFileSync(file, "utf8")).packages ?? {};
    for (const [path, p] of Object.entries(packages)) {
      if (!path.includes("node_modules/") || p.link || !p.version) continue;
      if (!fits(p.os, process.platform) || !fits(p.cpu, process.arch) || !fits(p.libc, "glibc")) continue;
      // An alias ("x-v7": "npm:x@…") is keyed by its alias and named by its package.
      seen.add((p.name ?? path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length)) + "@" + p.version);
    }
  }
  console.log([...seen].sort().join("\n"));
' >"$tmp/npm.txt"
if xargs -n 50 npm cache add --no-audit --no-fund --loglevel=error <"$tmp/npm.txt" >"$tmp/npm.log" 2>&1; then
    echo "npm: $(wc -l <"$tmp/npm.txt") packages ($((SECONDS - started)) s)"
else
    echo "npm: some of $(wc -l <"$tmp/npm.txt") packages not fetched (npm ci will download them):"
    tail -n 5 "$tmp/npm.log"
fi
echo "prefetch.sh: done in $((SECONDS - started)) s"
exit 0
