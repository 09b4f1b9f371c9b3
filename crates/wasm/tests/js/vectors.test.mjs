// The shared golden vectors (tests/vectors/*.json at the repository root) through the built
// Node package: the events must equal the core's serde JSON exactly.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

import { Rewriter, Sources, rewrite } from "citeflow";

const here = dirname(fileURLToPath(import.meta.url));
const vectorsDir = join(here, "..", "..", "..", "..", "tests", "vectors");

// The vectors hold the serde JSON of core `Settings` (snake_case keys); the JS API takes the
// same values under camelCase keys.
const camel = (k) => k.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
const jsSettings = (s) => Object.fromEntries(Object.entries(s).map(([k, v]) => [camel(k), v]));

// Adjacent text events merged, as the vectors store them.
function push(events, e) {
  assert.equal(typeof e, "object");
  if (e.type === "text") {
    assert.notEqual(e.text, "", "empty text event");
    const last = events[events.length - 1];
    if (last && last.type === "text") {
      last.text += e.text;
      return;
    }
  }
  events.push(e);
}

function runFeed(c, chunks) {
  const rw = new Rewriter(Sources.fromArray(c.sources), { settings: jsSettings(c.settings) });
  const events = [];
  for (const chunk of chunks) for (const e of rw.feed(chunk)) push(events, e);
  for (const e of rw.finish()) push(events, e);
  assert.equal(rw.pollEvent(), undefined);
  return events;
}

function runPoll(c, chunks) {
  const rw = new Rewriter(Sources.fromArray(c.sources), { settings: jsSettings(c.settings) });
  const events = [];
  const drain = () => {
    for (let e = rw.pollEvent(); e !== undefined; e = rw.pollEvent()) push(events, e);
  };
  for (const chunk of chunks) {
    rw.write(chunk);
    drain();
  }
  rw.end();
  drain();
  return events;
}

const textOf = (events) => events.filter((e) => e.type === "text").map((e) => e.text).join("");

const files = readdirSync(vectorsDir).filter((f) => f.endsWith(".json")).sort();
assert.ok(files.length >= 5, `expected golden vectors in ${vectorsDir}`);
let total = 0;

for (const file of files) {
  const doc = JSON.parse(readFileSync(join(vectorsDir, file), "utf8"));
  for (const c of doc.cases) {
    total += 1;
    test(`${file}: ${c.name}`, () => {
      const where = `${file}: ${c.name}`;
      // As recorded: string chunks, feed/finish.
      const events = runFeed(c, c.chunks);
      assert.deepStrictEqual(events, c.expected_events, where);
      assert.equal(textOf(events), c.expected_text, where);
      // write/end/pollEvent gives the same.
      assert.deepStrictEqual(runPoll(c, c.chunks), c.expected_events, `${where} (pollEvent)`);
      // The same bytes as Uint8Array chunks, one byte each (UTF-8 characters cut apart).
      const bytes = new TextEncoder().encode(c.chunks.join(""));
      const byteChunks = Array.from(bytes, (b) => Uint8Array.of(b));
      assert.deepStrictEqual(runFeed(c, byteChunks), c.expected_events, `${where} (1-byte chunks)`);
      // One string chunk per character.
      const chars = Array.from(c.chunks.join(""));
      assert.deepStrictEqual(runFeed(c, chars), c.expected_events, `${where} (1-char chunks)`);
      // The one-shot function.
      const once = rewrite(c.chunks.join(""), Sources.fromArray(c.sources), {
        settings: jsSettings(c.settings),
      });
      assert.equal(once.text, c.expected_text, `${where} (rewrite)`);
      assert.deepStrictEqual(once.events, c.expected_events, `${where} (rewrite)`);
    });
  }
}

test("every vector file was read", () => {
  assert.ok(total >= 20, `only ${total} vectors`);
});
