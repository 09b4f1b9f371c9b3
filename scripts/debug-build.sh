# Sourced by the test scripts that run the debug `citeflow` binary, the replaying upstream or
# another example of the workspace (target/debug/citeflow, target/debug/examples/replay_upstream,
# target/debug/examples/epubjs_cfis).
#
# debug_build builds them as the workspace's `cargo test` builds them (scripts/test.sh runs it
# before these scripts): one debug build, one set of dependency features. A script's own
# `cargo build -p citeflow-cli` or `-p citeflow-replay --example replay_upstream` resolved the
# features of that package's dependencies alone, which differ from the workspace's, so it
# compiled 60-odd crates again and replaced the binary. After scripts/test.sh's `cargo test`
# this compiles nothing; in a script run alone it builds what that `cargo test` would.
# Prints cargo's output only when the build fails.

debug_build() {
  local root log
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  log="$(mktemp)"
  if ! (cd "$root" && cargo test --locked --no-run) >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

# The executable of PACKAGE's test target TARGET in that same build (for scripts that run one
# package's tests with arguments of their own: `cargo test -p PACKAGE` would resolve its
# features alone and compile again). Run it from the package's directory, as cargo does.
#
#   exe="$(debug_test_exe citeflow-store-redis tests)"
debug_test_exe() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  (cd "$root" && cargo test --locked --no-run --message-format=json 2>/dev/null) |
    python3 -c '
import json, sys
pkg, target = sys.argv[1], sys.argv[2]
found = []
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    pid = m["package_id"]
    if "#" in pid:  # path+file:///…/dir#name@version, or …/name#version
        where, frag = pid.split("#", 1)
        name = frag.split("@")[0] if "@" in frag else where.rstrip("/").rsplit("/", 1)[-1]
    else:  # name version (source)
        name = pid.split(" ")[0]
    if name == pkg and m["target"]["name"] == target and m["profile"]["test"]:
        found.append(m["executable"])
if len(found) != 1:
    sys.exit(f"{pkg}: {len(found)} test executables named {target} in the workspace build")
print(found[0])
' "$1" "$2"
}
