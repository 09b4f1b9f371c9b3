# Sourced by the scripts that need a tool built with `cargo install`, and by scripts/prefetch.sh,
# which builds cargo-deny at the lowest priority once the Rust steps of scripts/test.sh are done
# (a fresh machine builds wasm-bindgen-cli in about 215 s, cargo-deny in about as long).
#
#   ensure_wasm_bindgen   the wasm32 target, and wasm-bindgen-cli at the version of the
#                         wasm-bindgen crate in Cargo.lock
#   ensure_cargo_deny     cargo-deny at $CARGO_DENY_VERSION
#
# Each holds a lock (flock on $CARGO_HOME/<crate>.install.lock) while it checks and installs, so
# one tool is never installed twice at once: the second caller waits, then finds it in place.
# cargo install builds in a temporary directory of its own, never in the project's target
# directory (whose lock would make the project's own builds wait). Safe to run twice.

CARGO_DENY_VERSION="0.20.2"

_cargo_tools_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

_cargo_tool_lock() {
  local home="${CARGO_HOME:-$HOME/.cargo}"
  mkdir -p "$home"
  printf '%s/%s.install.lock' "$home" "$1"
}

ensure_wasm_bindgen() {
  (
    flock 9
    if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
      rustup target add wasm32-unknown-unknown
    fi
    local want have
    want="$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/version = |"/, ""); print; exit }' "$_cargo_tools_dir/Cargo.lock")"
    if [ -z "$want" ]; then
      echo "no wasm-bindgen in Cargo.lock" >&2
      exit 1
    fi
    have="$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)"
    if [ "$have" != "$want" ]; then
      echo "installing wasm-bindgen-cli $want (found: ${have:-none})"
      # Not --locked: the registry index lacks one of its pinned dependencies.
      env -u CARGO_TARGET_DIR cargo install wasm-bindgen-cli --version "$want" --force
    fi
  ) 9>"$(_cargo_tool_lock wasm-bindgen-cli)"
}

ensure_cargo_deny() {
  (
    flock 9
    local have
    have="$(cargo deny --version 2>/dev/null | awk '{ print $2 }' || true)"
    if [ "$have" != "$CARGO_DENY_VERSION" ]; then
      echo "installing cargo-deny $CARGO_DENY_VERSION (found: ${have:-none})"
      # --locked first; without it if the registry index lacks one of its pinned dependencies.
      env -u CARGO_TARGET_DIR cargo install cargo-deny --version "$CARGO_DENY_VERSION" --locked ||
        env -u CARGO_TARGET_DIR cargo install cargo-deny --version "$CARGO_DENY_VERSION"
    fi
  ) 9>"$(_cargo_tool_lock cargo-deny)"
}
