// citeflowTransform with a real multi-step streamText: the replaying upstream's scripted agent
// model (`agent-search`, OpenAI chat over HTTP) calls the search tool twice ("Seine river
// Paris", then "Paris museums"; one document is found by both), then streams an answer citing
// the [[id]] markers of the tool results. One numbering across the steps; the list grouped by
// round with its query.
import { test } from "node:test";
import assert from "node:assert/strict";

import { createOpenAI } from "@ai-sdk/openai";
import * as ai from "ai";
import { z } from "zod";
import { Sources, contextBlock, renderList } from "citeflow";
import { citeflowTransform } from "citeflow/ai-sdk";

const { stepCountIs, streamText, tool } = ai;

import { checkNumbered, collect, replayUrl, textOf } from "./support.mjs";

const docs = {
  seine: { id: "seine", title: "The Seine", url: "https://en.wikipedia.org/wiki/Seine", text: "The Seine flows through Paris." },
  paris: { id: "paris", title: "Paris", url: "https://en.wikipedia.org/wiki/Paris", text: "Paris is the capital of France." },
  louvre: { id: "louvre", title: "The Louvre", url: "https://en.wikipedia.org/wiki/Louvre", text: "The Louvre is a museum in Paris." },
};
const results = { "Seine river Paris": [docs.seine, docs.paris], "Paris museums": [docs.louvre, docs.paris] };

const search = tool({
  description: "Search the documents",
  inputSchema: z.object({ query: z.string() }),
  execute: async ({ query }) => {
    const found = results[query] ?? [];
    // The documents for citeflow, and the context the model reads ([[id]] before each).
    return { documents: found, context: contextBlock(Sources.fromArray(found), "double_bracket", 400) };
  },
});

test("agent_transform_one_numbering_across_steps: agent-search", async () => {
  let finished;
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  const result = streamText({
    model: openai.chat("agent-search"),
    prompt: "What is there to see in Paris?",
    tools: { search },
    stopWhen: stepCountIs(5),
    experimental_transform: citeflowTransform({ onFinish: (m) => (finished = m) }),
  });
  const parts = await collect(result.fullStream);
  assert.equal(parts.filter((p) => p.type === "error").length, 0, String(parts.find((p) => p.type === "error")?.error));
  assert.deepEqual(
    parts.filter((p) => p.type === "tool-call").map((p) => p.input.query),
    ["Seine river Paris", "Paris museums"],
  );
  const { text, sources } = checkNumbered(parts, "agent-search");
  assert.match(text, /\[1\].*\[2\].*\[3\].*\[2\]/s, text);
  assert.doesNotMatch(text, /\[\[|\[\?\]/, "every marker resolved");
  assert.deepEqual(
    sources.map((s) => [s.providerMetadata.citeflow.number, s.providerMetadata.citeflow.sourceId, s.providerMetadata.citeflow.round]),
    [
      [1, "seine", 1],
      [2, "paris", 1],
      [3, "louvre", 2],
    ],
  );
  // The document found in both rounds keeps one number and one source part.
  assert.equal(sources.filter((s) => s.providerMetadata.citeflow.sourceId === "paris").length, 1);
  assert.equal(await result.text, text.slice(text.length - (await result.text).length));

  // The final list, grouped by round with its query.
  assert.deepEqual(finished.rounds.map((r) => r.query), ["Seine river Paris", "Paris museums"]);
  assert.deepEqual(finished.sources.map((l) => [l.number, l.source.id, l.citations]), [
    [1, "seine", 1],
    [2, "paris", 2],
    [3, "louvre", 1],
  ]);
  const list = renderList(finished.sources, "markdown", finished.rounds);
  assert.match(list, /Round 1: Seine river Paris[\s\S]*1\. \[The Seine\][\s\S]*2\. \[Paris\][\s\S]*Round 2: Paris museums\W+3\. \[The Louvre\]/, list);
  console.log(`agent answer: ${JSON.stringify(textOf(parts))}\n${list}`);

  // The finish-step parts carry the list so far (the last one the whole list).
  const steps = parts.filter((p) => p.type === "finish-step");
  assert.equal(steps.length, 3);
  assert.deepEqual(steps.at(-1).providerMetadata.citeflow.sources.map((l) => l.number), [1, 2, 3]);
});

test("agent_transform_continues_session_numbering", async () => {
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  const numbering = [{ number: 1, key: "url:https://en.wikipedia.org/wiki/Louvre", source_id: "louvre" }];
  const result = streamText({
    model: openai.chat("agent-search"),
    prompt: "Again?",
    tools: { search },
    stopWhen: stepCountIs(5),
    experimental_transform: citeflowTransform({ numbering }),
  });
  const text = await result.text;
  // seine, paris, louvre (already [1] in the session), paris.
  assert.match(text, /\[2\].*\[3\].*\[1\].*\[3\]/s, text);
});

// The Agent class (ToolLoopAgent in AI SDK 6 and 7) takes the same transform.
test("agent_transform_with_the_agent_class: ToolLoopAgent", { skip: !ai.ToolLoopAgent && "no ToolLoopAgent in this ai" }, async () => {
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  const agent = new ai.ToolLoopAgent({
    model: openai.chat("agent-search"),
    tools: { search },
    stopWhen: stepCountIs(5),
  });
  // The transform goes with each call (agent.stream's experimental_transform).
  const result = await agent.stream({ prompt: "What is there to see in Paris?", experimental_transform: citeflowTransform() });
  const parts = await collect(result.fullStream);
  const { text, sources } = checkNumbered(parts, "ToolLoopAgent");
  assert.match(text, /\[1\].*\[2\].*\[3\].*\[2\]/s, text);
  assert.deepEqual(sources.map((s) => s.providerMetadata.citeflow.sourceId), ["seine", "paris", "louvre"]);
});

test("agent_transform_anchors_quote_the_tool_results: agent-search", async () => {
  let finished;
  const openai = createOpenAI({ baseURL: replayUrl, apiKey: "test" });
  const result = streamText({
    model: openai.chat("agent-search"),
    prompt: "What is there to see in Paris?",
    tools: { search },
    stopWhen: stepCountIs(5),
    experimental_transform: citeflowTransform({ anchors: true, onFinish: (m) => (finished = m) }),
  });
  const parts = await collect(result.fullStream);
  assert.equal(parts.filter((p) => p.type === "error").length, 0, String(parts.find((p) => p.type === "error")?.error));
  // The carriers: empty text-deltas (streamText copies a part's last metadata onto later deltas).
  const carried = parts.filter((p) => p.type === "text-delta" && p.text === "" && p.providerMetadata?.citeflow?.anchor).map((p) => p.providerMetadata.citeflow.anchor);
  assert.ok(carried.length >= 3, JSON.stringify(carried));
  assert.deepEqual(finished.anchors, carried);
  // Each document is one sentence: a citation's quote, when a sentence of it shares a term with
  // the claim, is its source's text, found in the tool result's document.
  for (const a of carried) {
    if (a.quote) assert.equal(a.quote.text, docs[a.source_id].text, JSON.stringify(a));
    else assert.equal(a.verdict, "unsupported", JSON.stringify(a));
    assert.ok(["supported", "weak", "unsupported"].includes(a.verdict));
  }
  assert.ok(carried.filter((a) => a.quote).length >= 2, JSON.stringify(carried));
  assert.deepEqual(new Set(carried.map((a) => a.source_id)), new Set(["seine", "paris", "louvre"]));
  console.log(`agent anchors: ${carried.map((a) => `${a.source_id} ${a.verdict} ${a.support}`).join(", ")}`);
});
