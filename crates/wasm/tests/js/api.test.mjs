// The JS API of the Node build: sessions in rounds, numbering per answer and per session,
// snapshot/restore, external numbers, source lists, settings and errors.
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  Rewriter,
  Sources,
  citationInstruction,
  contextBlock,
  defaultSettings,
  promptSettings,
  renderList,
  rewrite,
} from "citeflow";

const paris = { id: "source_7", title: "Paris", url: "https://en.wikipedia.org/wiki/Paris" };
const france = { id: "source_3", title: "France" };

function collect(rw, chunks) {
  const events = [];
  for (const c of chunks) events.push(...rw.feed(c));
  events.push(...rw.finish());
  return events;
}
const textOf = (events) => events.filter((e) => e.type === "text").map((e) => e.text).join("");

function throwsCode(fn, name, code) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof Error, "an Error");
    assert.equal(e.name, name, e.message);
    assert.equal(e.code, code, e.message);
    return true;
  });
}

test("marker_split_across_chunks_is_held_back", () => {
  const rw = new Rewriter(Sources.fromArray([paris, france]));
  const first = rw.feed("Paris is the capital [[sou");
  assert.deepStrictEqual(first, [{ type: "text", text: "Paris is the capital " }]);
  assert.ok(rw.heldBytes > 0);
  const second = rw.feed("rce_7]].");
  assert.deepStrictEqual(
    second.map((e) => e.type),
    ["source", "citation", "text"],
  );
  assert.equal(second[0].is_new, true);
  assert.deepStrictEqual(second[0].source, paris);
  const done = rw.finish().at(-1);
  assert.equal(done.type, "done");
  assert.equal(done.report.verified, true);
  assert.ok(rw.isEnded);
});

test("utf8_character_cut_between_byte_chunks_is_held", () => {
  const bytes = new TextEncoder().encode("日本 [[source_3]]");
  const rw = new Rewriter(Sources.fromArray([france]), { settings: { style: "full_width" } });
  const events = collect(rw, [bytes.subarray(0, 1), bytes.subarray(1, 4), bytes.subarray(4)]);
  assert.equal(textOf(events), "日本 【1】");
});

test("numbering_per_answer_restarts_and_per_session_continues", () => {
  const session = new Sources();
  assert.equal(session.appendRound([france], "capital of france"), 1);
  const a1 = new Rewriter(session);
  assert.equal(textOf(collect(a1, ["x [[source_3]]"])), "x [1]");
  const saved = a1.numbering();
  assert.deepStrictEqual(saved, [{ number: 1, key: "id:source_3", source_id: "source_3" }]);

  assert.equal(session.appendRound([paris, france], "paris"), 2);
  assert.equal(session.length, 2);
  assert.equal(session.roundOf("source_7"), 2);
  assert.deepStrictEqual(session.rounds()[1], {
    number: 2,
    query: "paris",
    source_ids: ["source_7", "source_3"],
  });
  assert.deepStrictEqual(session.byRank(2), paris);
  assert.equal(session.get("nope"), undefined);

  // Per answer: a fresh table.
  const perAnswer = collect(new Rewriter(session), ["[[source_7]] [[source_3]]"]);
  assert.equal(textOf(perAnswer), "[1] [2]");
  // Per session: continue the saved table.
  const a2 = new Rewriter(session, { numbering: saved });
  const events = collect(a2, ["[[source_7]] [[source_3]]"]);
  assert.equal(textOf(events), "[2] [1]");
  const sourceEvents = events.filter((e) => e.type === "source");
  assert.deepStrictEqual(
    sourceEvents.map((e) => [e.number, e.is_new, e.round]),
    [
      [2, true, 2],
      [1, false, 1],
    ],
  );
  assert.equal(a2.numbering().length, 2);
});

test("snapshot_restores_mid_marker", () => {
  const rw = new Rewriter(Sources.fromArray([paris]), { settings: { style: "footnote" } });
  const before = rw.feed("Paris [[sour");
  const snap = rw.snapshot();
  assert.equal(typeof snap, "string");
  assert.equal(JSON.parse(snap).version, 1);
  const restored = Rewriter.restore(snap);
  const after = collect(restored, ["ce_7]] end"]);
  assert.equal(textOf([...before, ...after]), "Paris [^1] end");
  assert.equal(restored.settings().style, "footnote");
  throwsCode(() => Rewriter.restore("{}"), "RestoreError", "invalid_snapshot");
  const bad = JSON.parse(snap);
  bad.version = 99;
  throwsCode(() => Rewriter.restore(JSON.stringify(bad)), "RestoreError", "version");
});

test("external_numbers_wait_for_provide_number", () => {
  const rw = new Rewriter(Sources.fromArray([paris]), { settings: { numberSource: "external" } });
  const events = rw.feed("a [[source_7]] b");
  assert.deepStrictEqual(events.at(-1), {
    type: "number_needed",
    key: "url:https://en.wikipedia.org/wiki/Paris",
    source_id: "source_7",
  });
  assert.ok(rw.isAwaitingNumber);
  throwsCode(() => rw.provideNumber("other", 4), "RewriteError", "not_awaiting");
  rw.provideNumber("url:https://en.wikipedia.org/wiki/Paris", 4);
  const rest = [];
  for (let e = rw.pollEvent(); e; e = rw.pollEvent()) rest.push(e);
  rest.push(...rw.finish());
  assert.equal(textOf([...events, ...rest]), "a [4] b");
});

test("write_seq_and_write_at_skip_retransmitted_input", () => {
  const rw = new Rewriter(Sources.fromArray([paris]));
  assert.equal(rw.writeSeq(0, "ab"), "new");
  assert.equal(rw.writeSeq(0, "ab"), "duplicate");
  throwsCode(() => rw.writeSeq(5, "x"), "RewriteError", "gap");
  assert.equal(rw.nextSeq, 1);
  assert.equal(rw.inputBytes, 2);
  assert.equal(rw.writeAt(1, "bc"), "new");
  assert.equal(rw.writeAt(0, "abc"), "duplicate");
  throwsCode(() => rw.writeAt(-1, "x"), "RangeError", "invalid_number");
  assert.equal(textOf(rw.finish()), "abc");
});

test("errors_have_name_and_code", () => {
  const s = Sources.fromArray([paris]);
  throwsCode(() => new Rewriter(s, { settings: { style: "bold" } }), "SettingsError", "unknown_name");
  throwsCode(() => new Rewriter(s, { settings: { max_pending_bytes: 32 } }), "SettingsError", "invalid_settings");
  throwsCode(() => new Rewriter(s, { settings: { maxPendingBytes: 2 } }), "SettingsError", "pending_cap_too_small");
  throwsCode(() => new Rewriter(s, { settings: { idShape: "nope" } }), "SettingsError", "invalid_id_pattern");
  throwsCode(
    () => new Rewriter(s, { numbering: [{ number: 0, key: "k", source_id: "a" }] }),
    "NumberingError",
    "zero",
  );
  throwsCode(() => Sources.fromArray([paris, paris]), "SourceError", "duplicate_id");
  throwsCode(() => Sources.fromArray([{ id: " " }]), "SourceError", "empty_id");
  throwsCode(() => Sources.fromArray([{ title: 3 }]), "SourceError", "invalid_sources");
  const src = new Sources();
  throwsCode(() => src.appendRound([paris, paris]), "SourceError", "duplicate_id");
  assert.equal(src.length, 0, "nothing registered on error");

  const rw = new Rewriter(s, { settings: { invalidUtf8: "error" } });
  throwsCode(() => rw.write(42), "TypeError", "invalid_chunk");
  assert.deepStrictEqual(rw.feed("ok "), [{ type: "text", text: "ok " }]);
  throwsCode(() => rw.write(Uint8Array.of(0x61, 0xff)), "RewriteError", "invalid_utf8");
  assert.deepStrictEqual(rw.pollEvent(), { type: "text", text: "a" }, "text before the error stays");
  throwsCode(() => rw.write("more"), "RewriteError", "failed");

  const ended = new Rewriter(s);
  ended.finish();
  throwsCode(() => ended.write("x"), "RewriteError", "ended");
  throwsCode(() => ended.end(), "RewriteError", "ended");
  ended.close();
  assert.ok(ended.isClosed);
  throwsCode(() => ended.numbering(), "RewriteError", "closed");
});

test("settings_are_camel_case_and_read_back", () => {
  const d = defaultSettings();
  assert.deepStrictEqual(d, {
    syntaxes: ["double_bracket", "cite_colon", "cite_tag", "single_bracket", "openai_cite", "assistants_cite"],
    idShape: { prefix: "source_", body: "digits" },
    rank: "off",
    unknown: "mark",
    style: "brackets",
    maxPendingBytes: 64,
    invalidUtf8: "replace",
    numberSource: "local",
    dedupe: true,
    skipCode: true,
    anchors: false,
    maxAnchorSourceBytes: 1048576,
  });
  const rw = new Rewriter(new Sources(), { settings: { ...d, style: { template: "<{n}>" }, rank: "keep" } });
  assert.deepStrictEqual(rw.settings(), { ...d, style: { template: "<{n}>" }, rank: "keep" });
  assert.equal(promptSettings("rank").rank, "renumber");
  assert.equal(promptSettings("rank", { rank: "keep" }).rank, "keep");
});

test("source_lists_render_by_round", () => {
  const s = new Sources();
  s.appendRound([france], "q one");
  s.appendRound([paris], "q two");
  const rw = new Rewriter(s);
  const done = collect(rw, ["[[source_7]] and [[source_3]]"]).at(-1);
  assert.equal(
    renderList(done.sources, "markdown", s.rounds()),
    "**Round 1: q one**\n\n2. France\n\n**Round 2: q two**\n\n1. [Paris](https://en.wikipedia.org/wiki/Paris)\n\n",
  );
  assert.equal(renderList(done.sources, "text"), "[1] Paris <https://en.wikipedia.org/wiki/Paris>\n[2] France\n");
  assert.deepStrictEqual(JSON.parse(renderList(rw.listedSources(), "json")), done.sources);
  throwsCode(() => renderList(done.sources, "pdf"), "SettingsError", "unknown_name");
});

test("prompt_text_comes_from_the_core", () => {
  const s = Sources.fromArray([{ ...paris, text: "Paris is\nthe capital." }, france]);
  assert.equal(
    contextBlock(s, "double_bracket", 100),
    "[[source_7]] Paris: Paris is the capital.\n[[source_3]] France\n",
  );
  assert.match(citationInstruction(s, "rank_full_width"), /【1】【2】/);
  throwsCode(() => contextBlock(s, "nope", 10), "SettingsError", "unknown_name");
});

test("rewrite_returns_text_events_and_numbering", () => {
  const r = rewrite("A [[source_3]] [[source_99]]", Sources.fromArray([france]), {
    settings: { unknown: "drop" },
  });
  assert.equal(r.text, "A [1] ");
  assert.deepStrictEqual(r.numbering, [{ number: 1, key: "id:source_3", source_id: "source_3" }]);
  const unresolved = r.events.find((e) => e.type === "unresolved");
  assert.deepStrictEqual(unresolved, {
    type: "unresolved",
    raw: "[[source_99]]",
    reference: "source_99",
    reason: "unknown_id",
    byte_offset: 6,
    input_byte_offset: 15,
  });
});

// Claim anchors (issue 43): an `anchor` event per citation as soon as its sentence closes, with
// the source's supporting sentence, its offsets as JS string indexes, a score and a verdict.
test("anchors_quote_the_supporting_sentence_when_the_sentence_closes", () => {
  const seine = {
    id: "source_1",
    title: "Seine",
    // Non-ASCII before the quote: UTF-16 indexes differ from UTF-8 bytes and code points.
    text: "The Seine 🌊 is a river in Île-de-France. The Seine flows through Paris and into the English Channel. Its length is 777 km.",
  };
  const moon = { id: "source_2", title: "Moon", text: "The Moon orbits the Earth. It has no atmosphere to speak of." };
  const rw = new Rewriter(Sources.fromArray([seine, moon]), { settings: { anchors: true } });
  // The first sentence is not closed yet: no anchor.
  let events = rw.feed("The Seine flows through Paris [[source_1]]");
  assert.equal(events.filter((e) => e.type === "anchor").length, 0);
  // Its end: the anchor comes now, not at the answer's end.
  events = rw.feed(". The Seine is 777 km long [[source_1]]. Bananas are blue [[source_2]]");
  const [a1, more] = events.filter((e) => e.type === "anchor");
  assert.ok(a1 && more, JSON.stringify(events));
  assert.deepStrictEqual([a1.number, a1.source_id, a1.verdict], [1, "source_1", "supported"]);
  assert.equal(a1.quote.text, "The Seine flows through Paris and into the English Channel.");
  assert.equal(seine.text.slice(a1.quote.utf16_start, a1.quote.utf16_end), a1.quote.text);
  assert.ok(a1.quote.utf16_start < a1.quote.byte_start, "UTF-16 offsets, not bytes");
  assert.equal(a1.quote.origin, "source");
  assert.ok(a1.support >= 0.5 && a1.support <= 1, String(a1.support));
  // The same number's second citation: a quote of its own (its score is the core's to tune).
  // (the core may widen a quote to the adjacent sentence that adds claim terms).
  assert.equal(more.number, 1);
  assert.match(more.quote.text, /Its length is 777 km\.$/);
  assert.equal(seine.text.slice(more.quote.utf16_start, more.quote.utf16_end), more.quote.text);
  assert.ok(["supported", "weak", "unsupported"].includes(more.verdict));
  events = [...events, ...rw.finish()];
  const a2 = events.find((e) => e.type === "anchor" && e.number === 2);
  assert.ok(a2, "the last sentence closes at the end");
  assert.deepStrictEqual([a2.quote, a2.verdict], [null, "unsupported"]);
  // The claim is the answer's sentence, by JS string index.
  const whole = "The Seine flows through Paris [1]. The Seine is 777 km long [1]. Bananas are blue [2].";
  assert.equal(whole.slice(a1.claim.utf16_start, a1.claim.utf16_end), "The Seine flows through Paris [1].");
  const done = events.at(-1);
  const { type: _t, ...record } = a1;
  assert.deepStrictEqual(done.sources.find((l) => l.number === 1).anchors[0], record);
  // Off by default; a bad cap is a SettingsError.
  assert.equal(rewrite("Paris [[source_1]].", Sources.fromArray([seine])).events.filter((e) => e.type === "anchor").length, 0);
  throwsCode(() => new Rewriter(new Sources(), { settings: { maxAnchorSourceBytes: 10 } }), "SettingsError", "anchor_source_cap");
});
