// Snapshots cross runtimes: one taken in JS continues in the Rust CLI (`citeflow render
// --snapshot-in`), and one taken by the CLI (`--snapshot-out`) continues in JS, with the same
// events. scripts/test-wasm.sh builds the CLI and sets CITEFLOW_CLI; without it the test is
// skipped with a notice.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Rewriter, Sources } from "citeflow";

const cli = process.env.CITEFLOW_CLI;
const skip = cli ? false : "CITEFLOW_CLI is not set (scripts/test-wasm.sh sets it)";
if (skip) console.log(`notice: skipping the CLI snapshot tests: ${skip}`);

const sources = [
  { id: "source_7", title: "Paris", url: "https://en.wikipedia.org/wiki/Paris" },
  { id: "source_3", title: "France" },
];
const head = "Paris is the capital [[sou";
const tail = "rce_7]] of 【source_3】 and [[source_7]].";

function merged(events) {
  const out = [];
  for (const e of events) {
    const last = out[out.length - 1];
    if (e.type === "text" && last?.type === "text") last.text += e.text;
    else out.push({ ...e });
  }
  return out;
}

function render(args, input) {
  assert.ok(existsSync(cli), `no CLI at ${cli}`);
  const r = spawnSync(cli, ["render", ...args], { input, encoding: "utf8" });
  assert.equal(r.status, 0, `citeflow render ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
}

const jsonl = (out) =>
  out
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));

test("snapshot_taken_in_js_continues_in_the_cli", { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), "citeflow-wasm-"));
  try {
    const rw = new Rewriter(Sources.fromArray(sources), { settings: { style: "full_width" } });
    rw.feed(head);
    const file = join(dir, "snap.json");
    writeFileSync(file, rw.snapshot());
    const fromCli = jsonl(render(["--snapshot-in", file, "--output", "jsonl"], tail));
    const inJs = Rewriter.restore(rw.snapshot());
    const fromJs = [...inJs.feed(tail), ...inJs.finish()];
    assert.deepStrictEqual(merged(fromCli), merged(fromJs));
    assert.equal(fromJs.at(-1).type, "done");
    assert.deepStrictEqual(fromJs.at(-1).report.numbers_in_body, [1, 2]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("snapshot_taken_by_the_cli_continues_in_js", { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), "citeflow-wasm-"));
  try {
    const srcFile = join(dir, "sources.json");
    const snapFile = join(dir, "snap.json");
    writeFileSync(srcFile, JSON.stringify(sources));
    const before = jsonl(
      render(["--sources", srcFile, "--style", "footnote", "--output", "jsonl", "--snapshot-out", snapFile], head),
    );
    const snap = readFileSync(snapFile, "utf8");
    const rw = Rewriter.restore(snap);
    assert.equal(rw.settings().style, "footnote");
    const after = [...rw.feed(tail), ...rw.finish()];
    const text = [...before, ...after].filter((e) => e.type === "text").map((e) => e.text).join("");
    assert.equal(text, "Paris is the capital [^1] of [^2] and [^1].");
    const fromCli = jsonl(render(["--snapshot-in", snapFile, "--output", "jsonl"], tail));
    assert.deepStrictEqual(merged(after), merged(fromCli));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
