// The AI SDK middleware (citeflow/ai-sdk) inside a Mastra agent: @mastra/core (pinned in
// package.json) takes an AI SDK model, so `wrapLanguageModel({ model, middleware: citeflow(...) })`
// is its model, and Mastra's `stream` / `generate` give the numbered answer. The model is the
// replaying upstream's `chat-demo` over HTTP (@ai-sdk/openai, chat API): "Paris is the capital of
// France [[source_7]]. The Seine flows through it [[source_3]] and its museums draw millions
// [[source_7]]." Runs on Node 22 (Mastra needs ≥ 22.13).
import assert from "node:assert/strict";
import { test } from "node:test";

import { createOpenAI } from "@ai-sdk/openai";
import { Agent } from "@mastra/core/agent";
import { wrapLanguageModel } from "ai";

import { createTool } from "@mastra/core/tools";
import { Sources, contextBlock, renderList } from "citeflow";
import { citeflow } from "citeflow/ai-sdk";
import { citeflowProcessor } from "citeflow/mastra";
import { z } from "zod";

const replayUrl = process.env.CITEFLOW_REPLAY_URL;
if (!replayUrl) throw new Error("CITEFLOW_REPLAY_URL is not set (scripts/test-agents-js.sh starts the replaying upstream)");

const SOURCES = [
  { id: "source_3", title: "The Seine", url: "https://example.org/seine", text: "The Seine flows through Paris." },
  { id: "source_7", title: "Paris", url: "https://example.org/paris", text: "Paris is the capital of France; its museums draw millions." },
];
const ANSWER = "Paris is the capital of France [1]. The Seine flows through it [2] and its museums draw millions [1].";

function agent(onFinish) {
  const provider = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  const model = wrapLanguageModel({ model: provider.chat("chat-demo"), middleware: citeflow({ sources: SOURCES, onFinish }) });
  return new Agent({ id: "paris", name: "paris", instructions: "Answer from the sources.", model });
}

test("a Mastra agent's streamed answer carries the middleware's numbers and source parts", async () => {
  let finished;
  const out = await agent((m) => (finished = m)).stream("Tell me about Paris.");
  let text = "";
  for await (const t of out.textStream) text += t;
  assert.equal(text, ANSWER);
  const sources = await out.sources;
  // Mastra's chunks carry the AI SDK source part as their payload: one per number, in order.
  assert.deepEqual(
    sources.map((s) => [s.type, s.payload.url, s.payload.title, s.payload.providerMetadata.citeflow]),
    [
      ["source", "https://example.org/paris", "Paris", { number: 1, sourceId: "source_7", round: 1 }],
      ["source", "https://example.org/seine", "The Seine", { number: 2, sourceId: "source_3", round: 1 }],
    ],
  );
  assert.deepEqual(finished.sources.map((s) => [s.number, s.source.id]), [[1, "source_7"], [2, "source_3"]]);
});

test("a Mastra agent's generate() gives the numbered text", async () => {
  const result = await agent().generate("Tell me about Paris.");
  assert.equal(result.text, ANSWER);
});

const pages = { "Seine river Paris": SOURCES, "Paris museums": [...SOURCES].reverse() };
const search = createTool({
  id: "search",
  description: "Searches the pages.",
  inputSchema: z.object({ query: z.string() }),
  execute: async ({ query }) => {
    const documents = pages[query] ?? [];
    return { documents, context: contextBlock(Sources.fromArray(documents), "double_bracket", 600) };
  },
});

// A Mastra tool loop calls the model once per step, and the middleware numbers each call on its
// own: the last call's markers name documents of tool results it was not given, so they show
// `[?]`. This pins the measured reason the middleware alone is not enough for tool-calling
// Mastra agents; citeflowProcessor (below) is the adapter that is.
test("in a Mastra tool loop the middleware alone cannot number the tool results' documents", async () => {
  const provider = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  const model = wrapLanguageModel({ model: provider.chat("agent-search"), middleware: citeflow({}) });
  const a = new Agent({ id: "loop", name: "loop", instructions: "Answer from the search results.", model, tools: { search } });
  const out = await a.stream("Tell me about Paris.", { maxSteps: 5 });
  let text = "";
  for await (const t of out.textStream) text += t;
  assert.equal(
    text,
    "The Seine flows through the heart of Paris [?], and its banks are lined with landmarks [?]. " +
      "The city's museums hold vast collections [?], and they draw visitors from everywhere [?].",
  );
});

// citeflow/mastra: the output processor makes each tool result a round and rewrites the text
// chunks with one numbering across the steps; stream and generate.
test("citeflowProcessor numbers a Mastra tool loop's answer across its tool rounds", async () => {
  const provider = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  let finished;
  const a = new Agent({
    id: "researcher",
    name: "researcher",
    instructions: "Answer from the search results; cite each by its [[id]] marker.",
    model: provider.chat("agent-search"),
    tools: { search },
    outputProcessors: [citeflowProcessor({ onFinish: (f) => (finished = f) })],
  });
  const expected =
    "The Seine flows through the heart of Paris [1], and its banks are lined with landmarks [2]. " +
    "The city's museums hold vast collections [2], and they draw visitors from everywhere [1].";
  const out = await a.stream("Tell me about Paris.", { maxSteps: 5 });
  const deltas = [];
  for await (const t of out.textStream) deltas.push(t);
  assert.equal(deltas.join(""), expected);
  // The model's deltas cut every marker; no chunk shows a half marker.
  assert.ok(!deltas.some((d) => d.includes("[[") || d.includes("]]")), JSON.stringify(deltas));
  assert.equal(await out.text, expected);
  assert.deepEqual(finished.sources.map((s) => [s.number, s.source.id, s.source.title]), [[1, "source_3", "The Seine"], [2, "source_7", "Paris"]]);
  assert.equal(
    renderList(finished.sources, "markdown", finished.rounds),
    "**Round 1: Seine river Paris**\n\n1. [The Seine](https://example.org/seine)\n2. [Paris](https://example.org/paris)\n\n",
  );
  const generated = await a.generate("Tell me about Paris.", { maxSteps: 5 });
  assert.equal(generated.text, expected);
});
