// The recorded provider streams ($CITEFLOW_SHARED_DIR/fixtures/streams/*.chunks.txt, default
// ../shared beside the checkout) through the package's ProviderStream: the events must be
// exactly the JSON that `citeflow render --input jsonl --output jsonl` prints for the same
// file, whether the bytes come whole, cut every 7 bytes, or one parsed event at a time.
// scripts/test-wasm.sh builds the CLI and sets CITEFLOW_CLI.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { ProviderStream, Sources } from "citeflow";

const here = dirname(fileURLToPath(import.meta.url));
const workspace = resolve(here, "..", "..", "..", "..");
const shared = process.env.CITEFLOW_SHARED_DIR ?? join(workspace, "..", "shared");
const streamsDir = join(shared, "fixtures", "streams");
const cli = process.env.CITEFLOW_CLI;

function recordings() {
  if (!existsSync(streamsDir) || !statSync(streamsDir).isDirectory()) {
    throw new Error(`recorded streams directory ${streamsDir} is missing (set CITEFLOW_SHARED_DIR)`);
  }
  const files = readdirSync(streamsDir).filter((f) => f.endsWith(".chunks.txt")).sort();
  assert.ok(files.length >= 17, `expected the 17 provider recordings in ${streamsDir}, found ${files.length}`);
  return files;
}

function cliEvents(data) {
  assert.ok(cli, "CITEFLOW_CLI is not set (scripts/test-wasm.sh builds the CLI and sets it)");
  assert.ok(existsSync(cli), `no CLI at ${cli}`);
  const r = spawnSync(cli, ["render", "--input", "jsonl", "--output", "jsonl"], { input: data, encoding: "utf8" });
  assert.equal(r.status, 0, `citeflow render failed: ${r.stderr}`);
  return r.stdout
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));
}

function run(feed) {
  const ps = new ProviderStream(new Sources());
  const events = [];
  feed(ps, events);
  events.push(...ps.finish());
  assert.equal(ps.pollEvent(), undefined);
  return { events, dialect: ps.dialect };
}

for (const file of recordings()) {
  test(`recording_gives_the_cli_events: ${file}`, () => {
    const data = readFileSync(join(streamsDir, file));
    const want = cliEvents(data);
    assert.equal(want.at(-1).type, "done", file);

    const whole = run((ps, out) => out.push(...ps.feedBytes(new Uint8Array(data))));
    assert.deepStrictEqual(whole.events, want, `${file}: whole file`);
    assert.ok(whole.dialect, `${file}: no dialect detected`);

    const cut = run((ps, out) => {
      for (let i = 0; i < data.length; i += 7) out.push(...ps.feedBytes(new Uint8Array(data.subarray(i, i + 7))));
    });
    assert.deepStrictEqual(cut.events, want, `${file}: 7-byte pieces`);

    const lines = data.toString("utf8").split("\n").filter((l) => l.trim() !== "");
    const parsed = run((ps, out) => {
      for (const line of lines) out.push(...ps.feedEvent(JSON.parse(line)));
    });
    assert.deepStrictEqual(parsed.events, want, `${file}: one parsed event at a time`);
  });
}

/** Events with consecutive `text` events joined (the compact calls join what one call released). */
function joinText(events) {
  const out = [];
  for (const e of events) {
    const last = out.at(-1);
    if (e.type === "text" && last?.type === "text") out[out.length - 1] = { type: "text", text: last.text + e.text };
    else out.push(e);
  }
  return out;
}

for (const file of recordings()) {
  test(`feed_text_and_compact_calls_give_the_cli_events: ${file}`, () => {
    const data = readFileSync(join(streamsDir, file));
    const want = cliEvents(data);
    const lines = data.toString("utf8").split("\n").filter((l) => l.trim() !== "");
    // Anthropic text deltas (text alone) given as their text: the same events, one for one.
    const text = run((ps, out) => {
      for (const line of lines) {
        const e = JSON.parse(line);
        const t = ps.dialect === "anthropic" && e.type === "content_block_delta" && e.delta?.type === "text_delta" ? e.delta.text : null;
        out.push(...(t !== null ? ps.feedText(t) : ps.feedEvent(line)));
      }
    });
    assert.deepStrictEqual(text.events, want, `${file}: text deltas through feedText`);
    // Compact: text released alone comes back as one string; events as JSON text or UTF-8 bytes.
    const utf8 = new TextEncoder();
    const compact = run((ps, out) => {
      lines.forEach((line, i) => {
        const r = i % 2 ? ps.feedEventCompact(utf8.encode(line)) : ps.feedEventCompact(line);
        if (typeof r === "string") {
          if (r) out.push({ type: "text", text: r });
        } else {
          out.push(...r);
        }
      });
    });
    assert.deepStrictEqual(joinText(compact.events), joinText(want), `${file}: compact calls`);
    // Lean: `false` for nothing released, `true` for exactly the text given (Anthropic text
    // deltas given as their text), else as the compact calls.
    const lean = run((ps, out) => {
      lines.forEach((line, i) => {
        const e = JSON.parse(line);
        const t = ps.dialect === "anthropic" && e.type === "content_block_delta" && e.delta?.type === "text_delta" ? e.delta.text : null;
        const r = t !== null ? ps.feedTextLean(t) : ps.feedEventLean(i % 2 ? utf8.encode(line) : line);
        if (r === true) {
          assert.notEqual(t, null, `${file}: true only for text given`);
          out.push({ type: "text", text: t });
        } else if (typeof r === "string") {
          assert.notEqual(r, "", `${file}: nothing released is false, not ""`);
          out.push({ type: "text", text: r });
        } else if (r !== false) {
          assert.ok(r.length > 0, `${file}: nothing released is false, not []`);
          out.push(...r);
        }
      });
    });
    assert.deepStrictEqual(joinText(lean.events), joinText(want), `${file}: lean calls`);
    // finishCompact: the same last events, the `done` event without its `uncited` list.
    const ps = new ProviderStream(new Sources());
    for (const line of lines) ps.feedEvent(line);
    const last = ps.finishCompact();
    const wantLast = want.slice(want.length - last.length).map((e) => {
      if (e.type !== "done") return e;
      const { uncited: _u, ...rest } = e;
      return rest;
    });
    assert.deepStrictEqual(last, wantLast, `${file}: finishCompact`);
    assert.equal(last.at(-1).type, "done", `${file}: finishCompact ends with done`);
    // keyOf: one entry of the numbering table.
    const table = ps.numbering();
    for (const e of table) assert.equal(ps.keyOf(e.number), e.key, `${file}: keyOf(${e.number})`);
    assert.equal(ps.keyOf(table.length + 1), undefined, `${file}: keyOf of a number not handed out`);
  });
}

test("feed_text_counts_as_an_event_and_compact_bytes_must_be_utf8", () => {
  const ps = new ProviderStream(new Sources(), { dialect: "anthropic" });
  assert.deepStrictEqual(ps.feedText(""), []);
  assert.equal(ps.feedTextCompact(""), "");
  assert.deepStrictEqual(ps.feedText("Hello"), [{ type: "text", text: "Hello" }]);
  assert.equal(ps.feedTextCompact(" world"), " world");
  const lean = new ProviderStream(new Sources(), { dialect: "anthropic" });
  assert.equal(lean.feedTextLean(""), false);
  assert.equal(lean.feedTextLean("Hello"), true);
  assert.equal(lean.feedEventLean(JSON.stringify({ type: "ping" })), false);
  assert.equal(lean.feedEventLean(JSON.stringify({ type: "content_block_delta", delta: { type: "text_delta", text: " world" } })), " world");
  // The fifth event: its line in the error counts the text given alone.
  assert.throws(
    () => ps.feedEventCompact("{not json"),
    (e) => e.name === "ProviderError" && e.code === "invalid_json" && /line 5/.test(e.message),
  );
  assert.throws(() => ps.feedTextCompact("more"), (e) => e.name === "RewriteError" && e.code === "failed");

  const bytes = new ProviderStream(new Sources(), { dialect: "anthropic" });
  assert.throws(
    () => bytes.feedEventCompact(new Uint8Array([0x7b, 0xff, 0x7d])),
    (e) => e.name === "ProviderError" && e.code === "invalid_utf8" && /line 1/.test(e.message),
  );
});

test("provider_stream_errors_name_the_line_and_family", () => {
  const ps = new ProviderStream(new Sources());
  assert.throws(
    () => ps.feedEvent({ hello: "world" }),
    (e) => e.name === "ProviderError" && e.code === "unknown_dialect" && /line 1/.test(e.message),
  );
  assert.throws(() => ps.feedEvent({ hello: "again" }), (e) => e.name === "RewriteError" && e.code === "failed");

  const bad = new ProviderStream(new Sources());
  assert.throws(() => bad.feedEvent("{not json"), (e) => e.name === "ProviderError" && e.code === "invalid_json");

  assert.throws(
    () => new ProviderStream(new Sources(), { dialect: "nope" }),
    (e) => e.name === "SettingsError" && e.code === "unknown_name",
  );
});

test("provider_citation_offsets_slice_the_same_text_in_every_unit", () => {
  // Cohere binds late: the citation carries its span in bytes, code points and UTF-16 units.
  const ps = new ProviderStream(new Sources(), { dialect: "cohere" });
  const events = [
    ...ps.feedEvent({ type: "content-start", index: 0, delta: { message: { content: { type: "text", text: "" } } } }),
    ...ps.feedEvent({ type: "content-delta", index: 0, delta: { message: { content: { text: "Le ciel 😀 est bleu." } } } }),
    ...ps.feedEvent({
      type: "citation-start",
      index: 0,
      delta: {
        message: {
          citations: { start: 14, end: 18, text: "bleu", sources: [{ type: "document", id: "doc:0", document: { title: "Ciel" } }] },
        },
      },
    }),
    ...ps.finish(),
  ];
  const text = events.filter((e) => e.type === "text").map((e) => e.text).join("");
  const c = events.find((e) => e.type === "citation");
  assert.equal(c.provider.late, true);
  assert.equal(c.provider.quote, "bleu");
  const { start, end } = c.provider.span;
  assert.equal(text.slice(start.utf16, end.utf16), "bleu");
  assert.equal(Array.from(text).slice(start.chars, end.chars).join(""), "bleu");
  const bytes = new TextEncoder().encode(text);
  assert.equal(new TextDecoder().decode(bytes.subarray(start.bytes, end.bytes)), "bleu");
  assert.equal(events.at(-1).text, "Le ciel 😀 est bleu[1].");
});
