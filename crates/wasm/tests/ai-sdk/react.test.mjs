// citeflow/react's useCiteflow over UIMessages: one read from the middleware's UI message stream
// (the real AI SDK's readUIMessageStream, over HTTP from the replaying upstream), and one shaped
// as the proxy's AI SDK stream sends it (source parts numbered in order, chapter and CFI).
import { test } from "node:test";
import assert from "node:assert/strict";

import { createOpenAI } from "@ai-sdk/openai";
import { readUIMessageStream, streamText, wrapLanguageModel } from "ai";
import { citeflow } from "citeflow/ai-sdk";
import { citeflowMessage, useCiteflow } from "citeflow/react";

import { replayUrl } from "./support.mjs";

test("use_citeflow_segments_a_streamed_ui_message", async () => {
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  const sources = [
    { id: "source_3", title: "The Seine", url: "https://en.wikipedia.org/wiki/Seine" },
    { id: "source_7", title: "Paris", url: "https://en.wikipedia.org/wiki/Paris" },
  ];
  const result = streamText({
    model: wrapLanguageModel({ model: openai.chat("chat-demo"), middleware: citeflow({ sources }) }),
    prompt: "Paris?",
  });
  let seen = 0;
  let message;
  for await (message of readUIMessageStream({ stream: result.toUIMessageStream({ sendSources: true }) })) {
    // Every state a page renders: each citation shown has its source.
    for (const s of useCiteflow(message).segments) {
      if (s.type !== "citation") continue;
      assert.ok(s.source.url);
      seen += 1;
    }
  }
  assert.ok(seen > 0);
  const { segments, sources: listed, byNumber } = useCiteflow(message);
  assert.deepEqual(
    segments.map((s) => (s.type === "text" ? s.text : `<${s.number}:${s.source.id}>`)).join(""),
    "Paris is the capital of France <1:source_7>. The Seine flows through it <2:source_3> and its museums draw millions <1:source_7>.",
  );
  assert.deepEqual(listed.map((s) => [s.number, s.title]), [[1, "Paris"], [2, "The Seine"]]);
  assert.equal(byNumber[2].url, "https://en.wikipedia.org/wiki/Seine");
});

test("use_citeflow_reads_the_proxy_stream_parts", () => {
  // As crates/server's AI SDK protocol sends them: sourceId is the number, metadata has chapter and cfi.
  const message = {
    parts: [
      { type: "source-document", sourceId: "1", mediaType: "text/plain", title: "Alice — Chapter I",
        providerMetadata: { citeflow: { number: 1, id: "alice#p3", chapter: "Chapter I", cfi: "epubcfi(/6/4!/4/2,/1:0,/1:9)" } } },
      { type: "text", text: "She fell [1] and fell 【1】; unknown [7]." },
    ],
  };
  const { segments, sources } = citeflowMessage(message);
  assert.deepEqual(sources, [{ number: 1, id: "alice#p3", key: "1", title: "Alice — Chapter I", chapterTitle: "Chapter I", cfi: "epubcfi(/6/4!/4/2,/1:0,/1:9)" }]);
  assert.deepEqual(segments.map((s) => s.type), ["text", "citation", "text", "citation", "text"]);
  assert.equal(segments.at(-1).text, "; unknown [7].");
});

test("use_citeflow_anchor_of_reads_the_proxy_anchor_parts", () => {
  // As crates/server's AI SDK protocol sends claim anchors: a data-citeflow-anchor part per
  // anchor, its data the core's anchor event.
  const anchor = (k, text, verdict, cfi) => ({
    type: "data-citeflow-anchor",
    id: `anchor-1-${k}`,
    data: { type: "anchor", number: 1, source_id: "alice#p3", claim: { byte_start: k * 20, byte_end: k * 20 + 12, char_start: k * 20, char_end: k * 20 + 12, utf16_start: k * 20, utf16_end: k * 20 + 12 },
      quote: { text, origin: "source", cfi }, support: verdict === "supported" ? 0.9 : 0.1, verdict },
  });
  const message = {
    parts: [
      { type: "source-document", sourceId: "1", mediaType: "text/plain", title: "Alice", providerMetadata: { citeflow: { number: 1, id: "alice#p3" } } },
      { type: "text", text: "She fell [1]. It was deep [1]." },
      anchor(0, "Down, down, down.", "supported", "epubcfi(/6/8!/4/2/10,/1:0,/1:17)"),
      anchor(1, "Would the fall never come to an end?", "unsupported"),
    ],
  };
  const { anchorOf, segments, sources, anchors } = citeflowMessage(message);
  assert.equal(anchors.length, 2);
  assert.equal(anchorOf(1).quote.text, "Down, down, down.");
  assert.equal(anchorOf(1).quote.cfi, "epubcfi(/6/8!/4/2/10,/1:0,/1:17)");
  assert.equal(anchorOf(1, 1).verdict, "unsupported");
  assert.equal(anchorOf(2), undefined);
  assert.deepEqual(segments.filter((s) => s.type === "citation").map((s) => s.anchor.verdict), ["supported", "unsupported"]);
  assert.equal(sources[0].anchors.length, 2);
});
