// citeflow/ai-sdk's middleware with the real AI SDK (the `ai` package installed here) and the
// real provider packages (@ai-sdk/anthropic, @ai-sdk/openai: Responses and chat), pointed by
// baseURL at the replaying upstream that serves the shared recordings over HTTP.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";

import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, readUIMessageStream, streamText, wrapLanguageModel } from "ai";
import fc from "fast-check";
import { ProviderStream, Sources } from "citeflow";
import { citeflow, citeflowDataParts } from "citeflow/ai-sdk";
import { citeflowMessage } from "citeflow/react";

import {
  checkNumbered,
  citedName,
  citedOf,
  collect,
  numbersIn,
  payloads,
  recordingFetch,
  recordings,
  recut,
  recuttingFetch,
  streamsDir,
  replayUrl,
  textOf,
} from "./support.mjs";

// Known-pending (reported, not weakened): an index-only file citation moved past the text at its
// index is bound late; see `pending` in support.mjs.
const INDEX_ONLY = "known-pending: an OpenAI file_citation (an index, no span) arriving after the text at its index was shown is bound late";

function model(api, file, fetch) {
  if (api === "anthropic") return createAnthropic({ baseURL: replayUrl, apiKey: "test", fetch })(file);
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test", fetch });
  return api === "responses" ? openai.responses(file) : openai.chat(file);
}

const prompt = [{ role: "user", content: [{ type: "text", text: "Tech news today?" }] }];

/** The wrapped model's own stream (what streamText reads), as parts. */
async function modelParts(m, middleware = citeflow()) {
  const wrapped = wrapLanguageModel({ model: m, middleware });
  const { stream } = await wrapped.doStream({ prompt });
  return collect(stream);
}

for (const rec of recordings) {
  const name = `middleware_numbers_provider_citations: ${rec.file}`;
  test(name, async () => {
    const parts = await modelParts(model(rec.api, rec.file));
    assert.equal(parts.filter((p) => p.type === "error").length, 0, JSON.stringify(parts.find((p) => p.type === "error")));
    assert.equal(parts.filter((p) => p.type === "raw").length, 0, "raw parts removed when the caller did not ask");
    const { text, sources } = checkNumbered(parts, rec.file);

    // Exactly the sources the provider cited, once each.
    if (rec.api !== "chat") {
      const cited = citedOf(rec.file);
      assert.deepEqual(new Set(sources.map(citedName)), cited, `${rec.file}: the numbered sources are not the cited ones`);
    }
    // The AI SDK alone: source parts without numbers (one per citation, or per search result).
    const plain = await collect((await model(rec.api, rec.file).doStream({ prompt })).stream);
    const plainSources = plain.filter((p) => p.type === "source");
    assert.ok(!plainSources.some((p) => p.providerMetadata?.citeflow), "the plain model has no citeflow metadata");
    assert.equal(numbersIn(textOf(plain)).filter((n) => rec.api !== "chat").length, 0, `${rec.file}: the AI SDK's text has [n] already`);
    // The words are the provider's, numbers added (OpenAI's link spans and index glyph spaces are
    // replaced by their number, so only the other providers compare word for word).
    if (rec.api !== "responses") {
      const strip = (t) => t.replace(/ ?\[\d+\]/g, "");
      assert.equal(strip(text), strip(textOf(plain)), `${rec.file}: the text is not the provider's`);
    }

    const finish = parts.find((p) => p.type === "finish");
    const meta = finish.providerMetadata.citeflow;
    assert.deepEqual(meta.sources.map((l) => l.number), sources.map((s) => s.providerMetadata.citeflow.number));
    assert.equal(meta.report.verified, true, JSON.stringify(meta.report));
    console.log(`${rec.file}: ${sources.length} numbered sources (the AI SDK alone: ${plainSources.length} source parts); ${JSON.stringify(text.slice(0, 160))}`);
  });
}

// The fast path (ai-sdk/text-chunk.ts: a raw chunk of answer text alone given to the core as its
// text) reads every recording as the core reads each chunk whole: the same text, the same
// numbered sources and the same final text.
for (const rec of recordings) {
  test(`middleware_text_chunks_read_as_the_core_reads_them_whole: ${rec.file}`, async () => {
    const parts = await modelParts(model(rec.api, rec.file));
    // The middleware's sources when none are given: an empty first round.
    const ps = new ProviderStream(Sources.fromArray([]));
    const events = [];
    for (const e of payloads(rec.file)) events.push(...ps.feedEvent(JSON.stringify(e)));
    events.push(...ps.finish());
    const done = events.at(-1);
    assert.equal(done.type, "done");
    const coreText = events.filter((e) => e.type === "text").map((e) => e.text).join("");
    assert.equal(textOf(parts), coreText, `${rec.file}: the text is not the core's`);
    const meta = parts.find((p) => p.type === "finish").providerMetadata.citeflow;
    assert.deepEqual(meta.sources, JSON.parse(JSON.stringify(done.sources)), `${rec.file}: the sources are not the core's`);
    assert.equal(meta.text ?? null, done.text ?? null, `${rec.file}: the final text is not the core's`);
  });
}

// The fast path sees every chunk, the first one too (fed whole: the dialect is detected from it),
// so that the next chunk of text alone goes as text: Perplexity's first chunk lists its
// citations, which the core reads, and every later chunk repeats the same lists (issue 45, item 2:
// before, the second chunk went whole as well). The middleware's calls into the core, in order.
for (const file of ["perplexity-citations.chunks.txt", "perplexity-text.chunks.txt"]) {
  test(`middleware_text_chunks_from_the_second_chunk: ${file}`, async () => {
    const P = ProviderStream.prototype;
    const orig = { feedEventLean: P.feedEventLean, feedTextLean: P.feedTextLean };
    const calls = [];
    for (const [name, f] of Object.entries(orig)) {
      P[name] = function (arg) {
        calls.push(name === "feedTextLean" ? `text ${JSON.stringify(arg)}` : "event");
        return f.call(this, arg);
      };
    }
    let parts;
    try {
      parts = await modelParts(model("chat", file));
    } finally {
      Object.assign(P, orig);
    }
    const texts = payloads(file).map((e) => e.choices[0].delta.content);
    assert.deepEqual(calls, ["event", ...texts.slice(1).map((t) => `text ${JSON.stringify(t)}`)]);
    assert.equal(parts.filter((p) => p.type === "error").length, 0);
    checkNumbered(parts, file);
  });
}

// The fields the middleware gives the core once the dialect is known (ai-sdk/core-fields.ts:
// only those the dialect's reader reads) give, chunk by chunk, the events the whole chunk gives,
// on every recorded stream.
test("middleware_core_fields_read_as_the_whole_chunk: every recording", async () => {
  // Not among the package's exports: the module beside the package's entry (inline/citeflow.js).
  const { coreFields } = await import(new URL("../ai-sdk/core-fields.js", import.meta.resolve("citeflow")).href);
  const files = readdirSync(streamsDir).filter((f) => f.endsWith(".chunks.txt"));
  let slimmer = 0;
  for (const file of files) {
    const whole = new ProviderStream(Sources.fromArray([]));
    const slim = new ProviderStream(Sources.fromArray([]));
    for (const [i, e] of payloads(file).entries()) {
      const json = JSON.stringify(e);
      const cut = JSON.stringify(coreFields(whole.dialect ?? null, e));
      if (cut.length < json.length) slimmer++;
      const a = (() => { try { return whole.feedEvent(json); } catch (err) { return { error: err.code ?? String(err) }; } })();
      const b = (() => { try { return slim.feedEvent(cut); } catch (err) { return { error: err.code ?? String(err) }; } })();
      assert.deepEqual(b, a, `${file}: chunk ${i + 1}`);
      if (a.error) break;
    }
    const end = (ps) => { try { return ps.finish(); } catch (err) { return { error: err.code ?? String(err) }; } };
    assert.deepEqual(end(slim), end(whole), `${file}: finish`);
    whole.free();
    slim.free();
  }
  // Anthropic's search results and the Responses lifecycle events go without their other fields.
  assert.ok(slimmer > 50, `only ${slimmer} chunks were cut`);
});

// The provider's citation events dropped by the AI SDK alone are kept (Perplexity's [n] tied to
// its `citations`; the Responses API's file citations).
test("middleware_keeps_citations_the_ai_sdk_drops: perplexity ranks and file citations", async () => {
  const plain = await collect((await model("chat", "perplexity-citations.chunks.txt").doStream({ prompt })).stream);
  assert.equal(plain.filter((p) => p.type === "source").length, 0, "the AI SDK alone gives Perplexity no source parts");
  const parts = await modelParts(model("chat", "perplexity-citations.chunks.txt"));
  const sources = parts.filter((p) => p.type === "source");
  assert.deepEqual(
    sources.map((s) => s.url),
    ["https://en.wikipedia.org/wiki/San_Francisco", "https://fred.stlouisfed.org/graph/?g=4K5j"],
  );
  assert.match(textOf(parts), /\*\*\[1\]\[2\]/);
});

// Property: re-cut text deltas and provider citation events moved later within their part give
// the same text and the same parts.
for (const rec of recordings) {
  test(`prop_recut_and_moved_citations_same_parts: ${rec.file}`, { todo: rec.pending?.includes("prop-index") ? INDEX_ONLY : undefined }, async () => {
    const events = payloads(rec.file);
    const want = await modelParts(model(rec.api, rec.file));
    const wantText = textOf(want);
    const wantSources = want.filter((p) => p.type === "source");
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 3 }), move: fc.nat(6) }), {
          minLength: events.length,
          maxLength: events.length,
        }),
        async (plans) => {
          const parts = await modelParts(model(rec.api, rec.file, recuttingFetch((ev) => recut(ev, (i) => plans[i] ?? { cuts: [], move: 0 }))));
          assert.equal(textOf(parts), wantText);
          assert.deepEqual(parts.filter((p) => p.type === "source"), wantSources);
        },
      ),
      // endOnFailure: a failure is reported as found (no shrinking over HTTP).
      { numRuns: Number(process.env.CITEFLOW_PROP_RUNS ?? 12), seed: Number(process.env.CITEFLOW_PROP_SEED ?? 35), endOnFailure: true },
    );
  });
}

// Where the streamed text may differ (an index-only citation bound late), the answer itself may
// not: the final text (the finish part's, else the streamed one) and the source parts are the same.
for (const rec of recordings.filter((r) => r.pending?.includes("prop-index"))) {
  test(`prop_recut_and_moved_citations_same_final_text: ${rec.file}`, async () => {
    const events = payloads(rec.file);
    const finalText = (parts) => parts.find((p) => p.type === "finish").providerMetadata.citeflow.text ?? textOf(parts);
    const want = await modelParts(model(rec.api, rec.file));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 3 }), move: fc.nat(6) }), {
          minLength: events.length,
          maxLength: events.length,
        }),
        async (plans) => {
          const parts = await modelParts(model(rec.api, rec.file, recuttingFetch((ev) => recut(ev, (i) => plans[i] ?? { cuts: [], move: 0 }))));
          assert.equal(finalText(parts), finalText(want));
          assert.deepEqual(parts.filter((p) => p.type === "source"), want.filter((p) => p.type === "source"));
        },
      ),
      { numRuns: Number(process.env.CITEFLOW_PROP_RUNS ?? 12), seed: Number(process.env.CITEFLOW_PROP_SEED ?? 35), endOnFailure: true },
    );
  });
}

// The model writes [[source_k]] markers (OpenAI-compatible chat), the app gives the sources.
test("middleware_model_written_markers_with_sources: chat-demo", async () => {
  const bodies = [];
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test", fetch: recordingFetch(bodies) });
  const sources = [
    { id: "source_3", title: "The Seine", url: "https://en.wikipedia.org/wiki/Seine" },
    { id: "source_7", title: "Paris", url: "https://en.wikipedia.org/wiki/Paris" },
  ];
  const result = streamText({
    model: wrapLanguageModel({ model: openai.chat("chat-demo"), middleware: citeflow({ sources }) }),
    prompt: "Tell me about Paris.",
  });
  const parts = await collect(result.fullStream);
  const { text } = checkNumbered(parts, "chat-demo");
  assert.equal(text, "Paris is the capital of France [1]. The Seine flows through it [2] and its museums draw millions [1].");
  assert.deepEqual(
    parts.filter((p) => p.type === "source").map((s) => [s.id, s.url, s.title, s.providerMetadata.citeflow.sourceId]),
    [
      ["https://en.wikipedia.org/wiki/Paris", "https://en.wikipedia.org/wiki/Paris", "Paris", "source_7"],
      ["https://en.wikipedia.org/wiki/Seine", "https://en.wikipedia.org/wiki/Seine", "The Seine", "source_3"],
    ].map(([, url, title, id]) => [parts.find((p) => p.type === "source" && p.url === url).id, url, title, id]),
  );
  assert.equal(await result.text, text);
  assert.deepEqual((await result.sources).map((s) => s.providerMetadata.citeflow.number), [1, 2]);
  // instruct (on with sources): the instruction and the context block reached the model.
  const system = bodies[0].messages.find((m) => m.role === "system").content;
  assert.match(system, /\[\[source_3\]\]/);
  assert.match(system, /\[\[source_7\]\]/);
  assert.ok(!bodies[0].stream_options?.include_raw_chunks, "includeRawChunks is not a wire option");

  // The UI message stream (useChat): numbered source-url parts with their metadata.
  const ui = await collect(result.toUIMessageStream({ sendSources: true }));
  const uiSources = ui.filter((c) => c.type === "source-url");
  assert.deepEqual(uiSources.map((s) => s.url), ["https://en.wikipedia.org/wiki/Paris", "https://en.wikipedia.org/wiki/Seine"]);
  assert.equal(uiSources[0].providerMetadata?.citeflow?.number, 1);
});

test("middleware_instruct_off_and_raw_kept_when_asked", async () => {
  const bodies = [];
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test", fetch: recordingFetch(bodies) });
  const wrapped = wrapLanguageModel({
    model: openai.chat("chat-demo"),
    middleware: citeflow({ sources: [{ id: "source_7", title: "Paris" }, { id: "source_3", title: "Seine" }], instruct: false }),
  });
  const { stream } = await wrapped.doStream({ prompt, includeRawChunks: true });
  const parts = await collect(stream);
  assert.ok(parts.filter((p) => p.type === "raw").length >= 4, "raw parts kept when the caller asked");
  assert.equal(bodies[0].messages.filter((m) => m.role === "system").length, 0);
  const docs = parts.filter((p) => p.type === "source");
  assert.deepEqual(docs.map((d) => [d.sourceType, d.title]), [["document", "Paris"], ["document", "Seine"]]);
});

test("middleware_generate_text: the same numbers through generateText", async () => {
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  const sources = [{ id: "source_3", title: "The Seine" }, { id: "source_7", title: "Paris" }];
  const r = await generateText({
    model: wrapLanguageModel({ model: openai.chat("chat-demo"), middleware: citeflow({ sources }) }),
    prompt: "Tell me about Paris.",
  });
  assert.equal(r.text, "Paris is the capital of France [1]. The Seine flows through it [2] and its museums draw millions [1].");
  assert.deepEqual(r.sources.map((s) => s.title), ["Paris", "The Seine"]);
  assert.deepEqual(r.providerMetadata.citeflow.sources.map((l) => [l.number, l.source.id, l.citations]), [
    [1, "source_7", 2],
    [2, "source_3", 1],
  ]);
});

// generateText beside streamText (issue 46 item 1): for each recording with provider
// citations, the same answer, numbers and numbered sources either way.
for (const rec of recordings) {
  test(`middleware_generate_text_equals_stream_text: ${rec.file}`, async () => {
    const tools = rec.api === "anthropic" ? { web_search: createAnthropic({ baseURL: replayUrl, apiKey: "test" }).tools.webSearch_20250305() } : undefined;
    const wrapped = () => wrapLanguageModel({ model: model(rec.api, rec.file), middleware: citeflow() });
    const streamed = streamText({ model: wrapped(), prompt: "Tech news today?", tools });
    const streamedText = await streamed.text;
    const streamedSources = await streamed.sources;
    const streamedMeta = (await streamed.providerMetadata)?.citeflow;
    const r = await generateText({ model: wrapped(), prompt: "Tech news today?", tools });
    assert.ok(numbersIn(r.text).length > 0, `${rec.file}: no [n] in generateText's text: ${r.text.slice(0, 300)}`);
    assert.equal(r.text, streamedText, `${rec.file}: generateText's text is not streamText's`);
    const numbered = (list) => list.map((s) => [s.providerMetadata.citeflow.number, s.providerMetadata.citeflow.sourceId, s.url ?? s.title]);
    assert.deepEqual(numbered(r.sources), numbered(streamedSources));
    // Every number the text shows has its source, numbered 1..n in order.
    assert.deepEqual(r.sources.map((s) => s.providerMetadata.citeflow.number), r.sources.map((_, i) => i + 1));
    assert.deepEqual([...new Set(numbersIn(r.text))].sort((a, b) => a - b), r.sources.map((_, i) => i + 1).filter((n) => numbersIn(r.text).includes(n)));
    const meta = r.providerMetadata.citeflow;
    assert.deepEqual(meta.sources.map((l) => [l.number, l.source.id, l.citations]), streamedMeta.sources.map((l) => [l.number, l.source.id, l.citations]));
    assert.equal(meta.report.verified, true, JSON.stringify(meta.report));
    if (meta.text != null) assert.equal(meta.text, streamedMeta.text);
  });
}

test("middleware_session_numbering_continues", async () => {
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  const sources = [{ id: "source_3", title: "The Seine" }, { id: "source_7", title: "Paris" }];
  const numbering = [{ number: 1, key: "id:source_3", source_id: "source_3" }];
  const result = streamText({
    model: wrapLanguageModel({ model: openai.chat("chat-demo"), middleware: citeflow({ sources, numbering, instruct: false }) }),
    prompt: "Again.",
  });
  const text = await result.text;
  assert.equal(text, "Paris is the capital of France [2]. The Seine flows through it [1] and its museums draw millions [2].");
});

// Anthropic through streamText (its server web_search tool declared, as an app does).
test("middleware_with_stream_text: anthropic web search", async () => {
  const anthropic = createAnthropic({ baseURL: replayUrl, apiKey: "test" });
  const result = streamText({
    model: wrapLanguageModel({ model: anthropic("anthropic-web-search-tool.1.chunks.txt"), middleware: citeflow() }),
    prompt: "Tech news today?",
    tools: { web_search: anthropic.tools.webSearch_20250305() },
  });
  const parts = await collect(result.fullStream);
  assert.equal(parts.filter((p) => p.type === "error").length, 0, JSON.stringify(parts.find((p) => p.type === "error")?.error?.message));
  const { sources } = checkNumbered(parts, "anthropic via streamText");
  assert.deepEqual((await result.sources).map((s) => s.id), sources.map((s) => s.id));
});

test("middleware_provider_citations_off_rewrites_text_deltas_only", async () => {
  const bodies = [];
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test", fetch: recordingFetch(bodies) });
  const sources = [{ id: "source_3", title: "The Seine" }, { id: "source_7", title: "Paris" }];
  const wrapped = wrapLanguageModel({ model: openai.chat("chat-demo"), middleware: citeflow({ sources, providerCitations: false }) });
  const parts = await collect((await wrapped.doStream({ prompt })).stream);
  const { text } = checkNumbered(parts, "chat-demo, providerCitations: false");
  assert.equal(text, "Paris is the capital of France [1]. The Seine flows through it [2] and its museums draw millions [1].");
  assert.equal(parts.filter((p) => p.type === "raw").length, 0);
  // Perplexity's citations live in the raw chunks: with them off, its [n] stay as the model wrote them.
  const pplx = await collect((await wrapLanguageModel({ model: model("chat", "perplexity-text.chunks.txt"), middleware: citeflow({ providerCitations: false }) }).doStream({ prompt })).stream);
  assert.equal(pplx.filter((p) => p.type === "source").length, 0);
});

// An OpenAI annotation spanning a link the text shows: the number is in the streamed text (the
// core holds the link until its citation, issue 39), or, bound late, in the finish part's text.
test("middleware_finish_carries_the_late_bound_text: azure-web-search-preview-tool.1", async () => {
  const parts = await modelParts(model("responses", "azure-web-search-preview-tool.1.chunks.txt"));
  const meta = parts.find((p) => p.type === "finish").providerMetadata.citeflow;
  assert.deepEqual(meta.sources.map((l) => l.number), [1]);
  const sources = parts.filter((p) => p.type === "source");
  assert.equal(sources.length, 1, "one source part for the number");
  assert.match(sources[0].url, /straitstimes/);
  if (meta.text !== undefined) assert.match(meta.text, /\[1\]/);
  else assert.match(textOf(parts), /\[1\]/);
});

// Claim anchors (issue 43): the sources have text; each citation's supporting sentence, score
// and verdict arrive as an empty text-delta as soon as its sentence closes, and at finish.
const ANCHORED = [
  {
    id: "source_3",
    title: "The Seine",
    url: "https://en.wikipedia.org/wiki/Seine",
    text: "The Seine is a 777 km long river in northern France. The Seine flows through the heart of Paris. Its drainage basin covers most of northern France.",
  },
  {
    id: "source_7",
    title: "Paris",
    url: "https://en.wikipedia.org/wiki/Paris",
    text: "Paris is the capital and largest city of France. The city has a population of about two million. Its museums, such as the Louvre, draw millions of visitors each year.",
  },
];
const CHAT_DEMO_TEXT = "Paris is the capital of France [1]. The Seine flows through it [2] and its museums draw millions [1].";

/** What a test checks of an anchor: number, source, quote, verdict. */
const brief = (a) => [a.number, a.source_id, a.quote?.text ?? null, a.verdict];

test("middleware_anchors_quote_each_citation: chat-demo", async () => {
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  const result = streamText({
    model: wrapLanguageModel({ model: openai.chat("chat-demo"), middleware: citeflow({ sources: ANCHORED, anchors: true }) }),
    prompt: "Tell me about Paris.",
  });
  const parts = await collect(result.fullStream);
  assert.equal(parts.filter((p) => p.type === "error").length, 0, JSON.stringify(parts.find((p) => p.type === "error")));
  const { text } = checkNumbered(parts, "chat-demo, anchors");
  assert.equal(text, CHAT_DEMO_TEXT, "anchors add no text");

  // As each anchor arrives: an empty text-delta carrying it, after the text of its sentence
  // (streamText repeats a text part's last metadata on its later deltas: those are copies).
  const carriers = parts.map((p, i) => [p, i]).filter(([p]) => p.type === "text-delta" && p.text === "" && p.providerMetadata?.citeflow?.anchor);
  assert.equal(carriers.length, 3);
  const [first, firstAt] = carriers[0];
  assert.deepEqual(brief(first.providerMetadata.citeflow.anchor), [1, "source_7", "Paris is the capital and largest city of France.", "supported"]);
  const before = textOf(parts.slice(0, firstAt));
  assert.ok(before.startsWith("Paris is the capital of France [1]."), before);
  assert.ok(!before.includes("millions"), `the first anchor waits for its sentence only, not the answer: ${JSON.stringify(before)}`);
  const a = first.providerMetadata.citeflow.anchor;
  assert.equal(text.slice(a.claim.utf16_start, a.claim.utf16_end), "Paris is the capital of France [1].");
  assert.equal(ANCHORED[1].text.slice(a.quote.utf16_start, a.quote.utf16_end), a.quote.text);
  assert.ok(a.support >= 0.5, String(a.support));

  // At finish (streamText: the finish-step part): every anchor, and each source's own.
  const meta = parts.find((p) => p.type === "finish-step").providerMetadata.citeflow;
  assert.deepEqual(meta.anchors.map(brief), [
    [1, "source_7", "Paris is the capital and largest city of France.", "supported"],
    [2, "source_3", "The Seine flows through the heart of Paris.", meta.anchors[1].verdict],
    [1, "source_7", "Its museums, such as the Louvre, draw millions of visitors each year.", meta.anchors[2].verdict],
  ]);
  assert.deepEqual(meta.anchors, carriers.map(([p]) => p.providerMetadata.citeflow.anchor));
  const paris = meta.sources.find((l) => l.source.id === "source_7");
  assert.deepEqual(paris.anchors.map(brief), [meta.anchors[0], meta.anchors[2]].map(brief));
  assert.equal((await result.providerMetadata).citeflow.anchors[0].quote.text, "Paris is the capital and largest city of France.");

  // The UI message stream: one data-citeflow-anchor part per anchor (citeflowDataParts), which
  // the message keeps, and useCiteflow's anchorOf(n).
  const ui = await collect(result.toUIMessageStream({ sendSources: true }).pipeThrough(citeflowDataParts()));
  const dataParts = ui.filter((c) => c.type === "data-citeflow-anchor");
  assert.deepEqual(dataParts.map((c) => brief(c.data)), meta.anchors.map(brief));
  assert.equal(ui.filter((c) => c.type === "text-delta" && c.delta === "").length, 0, "the carriers are replaced");
  assert.equal(ui.filter((c) => c.providerMetadata?.citeflow?.anchor).length, 0, "no copies left on later deltas");
  let message;
  for await (message of readUIMessageStream({ stream: result.toUIMessageStream({ sendSources: true }).pipeThrough(citeflowDataParts()) }));
  const cm = citeflowMessage(message);
  assert.equal(cm.anchorOf(1).quote.text, "Paris is the capital and largest city of France.");
  assert.equal(cm.anchorOf(1).verdict, "supported");
  assert.equal(cm.anchorOf(1, 1).quote.text, "Its museums, such as the Louvre, draw millions of visitors each year.");
  assert.equal(cm.anchorOf(2).quote.text, "The Seine flows through the heart of Paris.");
  const cites = cm.segments.filter((s) => s.type === "citation");
  assert.deepEqual(cites.map((s) => s.anchor?.quote?.text), [
    "Paris is the capital and largest city of France.",
    "The Seine flows through the heart of Paris.",
    "Its museums, such as the Louvre, draw millions of visitors each year.",
  ]);
  console.log(`anchors: ${meta.anchors.map((x) => `[${x.number}] ${x.verdict} ${x.support}`).join(", ")}`);
});

test("middleware_anchors_through_generate_text_and_text_deltas_only", async () => {
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  for (const providerCitations of [true, false]) {
    const r = await generateText({
      model: wrapLanguageModel({ model: openai.chat("chat-demo"), middleware: citeflow({ sources: ANCHORED, anchors: true, providerCitations }) }),
      prompt: "Tell me about Paris.",
    });
    assert.equal(r.text, CHAT_DEMO_TEXT);
    assert.deepEqual(r.providerMetadata.citeflow.anchors.map((x) => [x.number, x.quote?.text]), [
      [1, "Paris is the capital and largest city of France."],
      [2, "The Seine flows through the heart of Paris."],
      [1, "Its museums, such as the Louvre, draw millions of visitors each year."],
    ]);
  }
  // Off by default: no carrier parts, no anchors at finish.
  const plain = await collect((await wrapLanguageModel({ model: openai.chat("chat-demo"), middleware: citeflow({ sources: ANCHORED }) }).doStream({ prompt })).stream);
  assert.equal(plain.filter((p) => p.type === "text-delta" && p.delta === "").length, 0);
  assert.equal(plain.find((p) => p.type === "finish").providerMetadata.citeflow.anchors, undefined);
});
