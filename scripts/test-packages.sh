#!/usr/bin/env bash
# The packages as a user receives them (issue 20 §5):
#   1. `cargo package` of every publishable crate (all but citeflow-py), each .crate listed: it
#      carries LICENSE-MIT, LICENSE-APACHE and README.md, its Cargo.toml names the repository
#      and has no path dependencies left;
#   2. the dependency policy, `cargo deny check licenses bans sources` with deny.toml (offline:
#      no advisory database);
#   3. the Python wheel built with `maturin build --release`, installed into a fresh virtualenv
#      (not the test venv) and imported there from outside the source tree.
# The npm tarball (`npm pack`, installed into an empty directory and imported under Node) is
# checked at the end of scripts/test-wasm.sh, which builds the npm package.
#
# Installs what is missing: cargo-deny (cargo install, kept in ~/.cargo/bin) and maturin (pinned
# as in crates/py/requirements-test.txt, in a small tools venv under the target dir). Safe to run
# twice; the wheel reuses the cargo cache of scripts/test-python.sh (same target dir, same flags).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

t0=$SECONDS
# shellcheck source=step.sh
source "$ROOT/scripts/step.sh"
fail() {
  echo "test-packages: $*" >&2
  exit 1
}

# name<TAB>version<TAB>publishable (publish = false gives an empty list) for every workspace crate.
cargo metadata --format-version 1 --no-deps --locked >"$work/metadata.json"
"$PYTHON" - "$work/metadata.json" >"$work/crates.tsv" <<'EOF'
import json, sys
meta = json.load(open(sys.argv[1]))
for p in meta["packages"]:
    print(p["name"], p["version"], "no" if p["publish"] == [] else "yes", sep="\t")
EOF
version="$(awk -F'\t' '$1 == "citeflow-core" { print $2 }' "$work/crates.tsv")"
[ -n "$version" ] || fail "no citeflow-core in cargo metadata"
mapfile -t publishable < <(awk -F'\t' '$3 == "yes" { print $1 }' "$work/crates.tsv")
awk -F'\t' '$1 == "citeflow-py" && $3 != "no" { exit 1 }' "$work/crates.tsv" ||
  fail "citeflow-py must stay publish = false"
echo "workspace version $version; publishable crates (${#publishable[@]}): ${publishable[*]}"

step "cargo package (every publishable crate, --no-verify)"
rm -rf "$TARGET_DIR/package"
# --allow-dirty: a developer's tree has uncommitted edits; CI's checkout is clean anyway.
cargo package --workspace --exclude citeflow-py --no-verify --locked --allow-dirty --quiet
for name in "${publishable[@]}"; do
  crate="$TARGET_DIR/package/$name-$version.crate"
  [ -f "$crate" ] || fail "$crate was not written"
  tar -tzf "$crate" >"$work/list"
  for f in LICENSE-MIT LICENSE-APACHE README.md Cargo.toml; do
    grep -qxF "$name-$version/$f" "$work/list" || fail "$name: no $f in $crate"
  done
  grep -qE "^$name-$version/src/(lib|main)\.rs\$" "$work/list" || fail "$name: no src/lib.rs or src/main.rs"
  # The files, not links to them: the licence texts are the root's, byte for byte.
  for f in LICENSE-MIT LICENSE-APACHE; do
    tar -xzOf "$crate" "$name-$version/$f" | cmp -s - "$f" || fail "$name: $f differs from ./$f"
  done
  tar -xzOf "$crate" "$name-$version/Cargo.toml" >"$work/Cargo.toml"
  grep -qx 'repository = "https://github.com/citeflow/citeflow"' "$work/Cargo.toml" ||
    fail "$name: the packaged Cargo.toml does not name the repository"
  grep -qx 'license = "MIT OR Apache-2.0"' "$work/Cargo.toml" || fail "$name: no license"
  ! grep -n '^path = "\.\.' "$work/Cargo.toml" || fail "$name: a path dependency is left in the package"
  printf '%-24s %4d files %8d bytes\n' "$name" "$(wc -l <"$work/list")" "$(wc -c <"$crate")"
done

step "cargo deny check licenses bans sources (deny.toml, offline)"
# shellcheck source=cargo-tools.sh
source "$ROOT/scripts/cargo-tools.sh"
ensure_cargo_deny
# cargo deny --offline reads every platform's and every feature's manifests: make sure they
# are all in the cargo cache (a no-op when they are).
cargo fetch --locked --quiet
cargo deny --offline --locked --all-features --color never \
  check --hide-inclusion-graph licenses bans sources >"$work/deny.log" 2>&1 || {
  cat "$work/deny.log"
  fail "cargo deny found a violation"
}
grep -qx 'bans ok, licenses ok, sources ok' "$work/deny.log" || {
  cat "$work/deny.log"
  fail "cargo deny did not report all three checks ok"
}
echo "bans ok, licenses ok, sources ok ($(grep -c '^warning\[duplicate\]' "$work/deny.log" || true) crates in two or more versions, a warning)"

step "Python wheel (maturin build --release)"
maturin_version="$(sed -n 's/^maturin==//p' crates/py/requirements-test.txt)"
[ -n "$maturin_version" ] || fail "no maturin pin in crates/py/requirements-test.txt"
tools="$TARGET_DIR/venv-pkg-tools"
if [ "$("$tools/bin/maturin" --version 2>/dev/null | awk '{ print $2 }')" != "$maturin_version" ]; then
  rm -rf "$tools"
  mkdir -p "$TARGET_DIR"
  "$PYTHON" -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check "maturin==$maturin_version"
fi
(cd crates/py && "$tools/bin/maturin" build --release --locked --quiet --out "$work/wheels")
wheels=("$work"/wheels/citeflow-"$version"-cp311-abi3-*.whl)
[ "${#wheels[@]}" -eq 1 ] && [ -f "${wheels[0]}" ] || fail "expected one abi3 wheel of citeflow $version, got: $(ls "$work/wheels")"
wheel="${wheels[0]}"
"$PYTHON" - "$wheel" "$version" <<'EOF'
import sys, zipfile
wheel, version = sys.argv[1], sys.argv[2]
names = set(zipfile.ZipFile(wheel).namelist())
info = f"citeflow-{version}.dist-info"
need = {f"{info}/licenses/LICENSE-MIT", f"{info}/licenses/LICENSE-APACHE", f"{info}/METADATA",
        "citeflow/__init__.py", "citeflow/py.typed", "citeflow/_citeflow.pyi", "citeflow/_citeflow.abi3.so"}
missing = need - names
assert not missing, f"the wheel lacks {sorted(missing)}"
meta = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
assert "Project-URL: Repository, https://github.com/citeflow/citeflow" in meta, meta[:2000]
assert "License: MIT OR Apache-2.0" in meta, meta[:2000]
# The README is the long description.
readme = open("crates/py/README.md", encoding="utf-8").read()
assert readme.strip().splitlines()[0] in meta, "the README is not the wheel's description"
EOF
echo "$(basename "$wheel"): $(wc -c <"$wheel") bytes"

step "the wheel in a fresh virtualenv"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps "$wheel"
# -I: no user site, no current directory on sys.path; run from an empty directory so that
# only the installed package can be imported.
mkdir "$work/empty"
(cd "$work/empty" && "$work/venv/bin/python" -I - "$version" "$work/venv" <<'EOF'
import importlib.metadata as md
import os, sys

import citeflow

version, venv = sys.argv[1], sys.argv[2]
where = os.path.realpath(citeflow.__file__)
assert where.startswith(os.path.realpath(venv) + os.sep), f"imported from {where}, not the fresh venv"
assert citeflow.__version__ == version, (citeflow.__version__, version)
assert md.version("citeflow") == version, md.version("citeflow")
out = citeflow.rewrite_str(
    "Paris [[source_7]] is in France [[source_3]], see [[source_7]].",
    [{"id": "source_7", "title": "Paris"}, {"id": "source_3", "title": "France"}],
)
assert out.text == "Paris [1] is in France [2], see [1].", out.text
assert [e.type for e in out.events].count("citation") == 3, out.events
licences = sorted(str(f) for f in md.files("citeflow") if "licenses" in str(f))
assert licences == [
    f"citeflow-{version}.dist-info/licenses/LICENSE-APACHE",
    f"citeflow-{version}.dist-info/licenses/LICENSE-MIT",
], licences
print(f"import citeflow {citeflow.__version__} from {where}: {out.text!r}")
EOF
)

step_done
echo "test-packages: ok (${#publishable[@]} crates, wheel, policy) in $((SECONDS - t0))s"
