// citeflow/openai-agents with the real OpenAI Agents SDK for JavaScript (@openai/agents, pinned
// in package.json) over HTTP: the model is the replaying upstream's scripted agent model on the
// Responses API (`agent-search-turns`; scripts/test-agents-js.sh starts it and sets
// CITEFLOW_REPLAY_URL). It searches twice ("Seine river Paris", "Paris museums"; in a second
// user turn "Eiffel Tower", "Paris bridges") and answers citing the first two markers of each
// tool output; with the hosted web search tool it ends with a sentence carrying two
// url_citation annotations.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Agent, OpenAIResponsesModel, run, setTracingDisabled, tool, webSearchTool } from "@openai/agents";
import OpenAI from "openai";
import { z } from "zod";

import { citeDocuments, citeOutput, citeflowStream } from "citeflow/openai-agents";

const replayUrl = process.env.CITEFLOW_REPLAY_URL;
if (!replayUrl) throw new Error("CITEFLOW_REPLAY_URL is not set (scripts/test-agents-js.sh starts the replaying upstream)");
setTracingDisabled(true);

// The pages of crates/py/tests_frameworks/conftest.py, by query.
const PAGES = {
  seine: { title: "Seine", url: "https://example.org/seine", text: "The Seine flows through Paris." },
  louvre: { title: "Louvre", url: "https://example.org/louvre", text: "The Louvre is the largest museum." },
  bridges: { title: "Bridges of Paris", url: "https://example.org/bridges", text: "Thirty-seven bridges cross the Seine." },
  orsay: { title: "Musée d'Orsay", url: "https://example.org/orsay", text: "The Orsay holds Impressionist art." },
  eiffel: { title: "Eiffel Tower", url: "https://example.org/eiffel", text: "The tower was built in 1889." },
  "pont-neuf": { title: "Pont Neuf", url: "https://example.org/pont-neuf", text: "The oldest standing bridge." },
};
const RESULTS = {
  "Seine river Paris": ["seine", "louvre", "bridges"],
  "Paris museums": ["louvre", "orsay"],
  "Eiffel Tower": ["eiffel", "seine"],
  "Paris bridges": ["bridges", "pont-neuf"],
};
const hits = (q) => (RESULTS[q] ?? []).map((id) => ({ id, ...PAGES[id] }));

const INSTRUCTIONS =
  "Search results show each source after its marker, for example [[source_1]]. After each sentence that uses a source, write that source's marker exactly as shown.";
const FIRST =
  "The Seine flows through the heart of Paris [1], and its banks are lined with landmarks [2]. " +
  "The city's museums hold vast collections [2], and they draw visitors from everywhere [3].";
const SECOND =
  "The Seine flows through the heart of Paris [4], and its banks are lined with landmarks [1]. " +
  "The city's museums hold vast collections [5], and they draw visitors from everywhere [6].";
const FIRST_LIST = [
  [1, "seine", "Seine"],
  [2, "louvre", "Louvre"],
  [3, "orsay", "Musée d'Orsay"],
];
// In number order: the first turn's document cited again keeps its number.
const SECOND_LIST = [
  [1, "seine", "Seine"],
  [4, "eiffel", "Eiffel Tower"],
  [5, "bridges", "Bridges of Paris"],
  [6, "pont-neuf", "Pont Neuf"],
];
const listed = (sources) => sources.map((s) => [s.number, s.source.id, s.source.title]);
const textOf = (events) => events.filter((e) => e.type === "text").map((e) => e.text).join("");

function agent(extraTools = []) {
  const client = new OpenAI({ baseURL: replayUrl, apiKey: "test" });
  const search = tool({
    name: "search",
    description: "Searches the pages.",
    parameters: z.object({ query: z.string() }),
    execute: async ({ query }) => citeDocuments(hits(query)),
  });
  return new Agent({
    name: "researcher",
    instructions: INSTRUCTIONS,
    model: new OpenAIResponsesModel(client, "agent-search-turns"),
    tools: [search, ...extraTools],
  });
}

test("run's finalOutput is numbered and a streamed second turn continues the numbering", async () => {
  const a = agent();
  const result = await run(a, "What is in Paris?");
  assert.ok(result.finalOutput.startsWith("The Seine flows through the heart of Paris [[seine]]"), result.finalOutput);
  const answer = citeOutput(result);
  assert.equal(answer.text, FIRST);
  assert.equal(answer.raw, result.finalOutput);
  assert.deepEqual(listed(answer.sources), FIRST_LIST);
  assert.deepEqual(
    answer.sources.map((s) => s.source.url),
    ["https://example.org/seine", "https://example.org/louvre", "https://example.org/orsay"],
  );
  assert.equal(
    answer.renderSources("markdown"),
    "**Round 1: Seine river Paris**\n\n1. [Seine](https://example.org/seine)\n2. [Louvre](https://example.org/louvre)\n\n" +
      "**Round 2: Paris museums**\n\n3. [Musée d'Orsay](https://example.org/orsay)\n\n",
  );

  const turn = [...result.history, { role: "user", content: "And what else?" }];
  const stream = citeflowStream(await run(a, turn, { stream: true }), { session: answer.session });
  const events = [];
  for await (const e of stream) events.push(e);
  assert.equal(textOf(events), SECOND);
  const done = events.at(-1);
  assert.equal(done.type, "done");
  assert.deepEqual(listed(done.sources), SECOND_LIST);
  assert.deepEqual(
    events.filter((e) => e.type === "source").map((e) => [e.number, e.source.id]),
    [[4, "eiffel"], [1, "seine"], [5, "bridges"], [6, "pont-neuf"]],
  );
  assert.deepEqual(
    stream.session.rounds.map((r) => [r.query, r.sources.map((s) => s.id)]),
    [
      ["Seine river Paris", ["seine", "louvre", "bridges"]],
      ["Paris museums", ["louvre", "orsay"]],
      ["Eiffel Tower", ["eiffel", "seine"]],
      ["Paris bridges", ["bridges", "pont-neuf"]],
    ],
  );
});

test("a streamed run numbers its text deltas across two tool rounds", async () => {
  const events = [];
  for await (const e of citeflowStream(await run(agent(), "What is in Paris?", { stream: true }))) events.push(e);
  const texts = events.filter((e) => e.type === "text").map((e) => e.text);
  assert.equal(texts.join(""), FIRST);
  // The model's deltas cut every marker; no text event shows a half marker.
  assert.ok(texts.length > 10, `${texts.length} text events`);
  assert.ok(!texts.some((t) => t.includes("[[") || t.includes("]]")), JSON.stringify(texts));
  assert.deepEqual(listed(events.at(-1).sources), FIRST_LIST);
});

test("url_citation annotations join the numbering of the tool rounds", async () => {
  const a = agent([webSearchTool()]);
  const web = " The Seine is 777 kilometres long.";
  const expected = [
    [1, "seine", "https://example.org/seine"],
    [2, "louvre", "https://example.org/louvre"],
    [3, "orsay", "https://example.org/orsay"],
    [4, "https://en.wikipedia.org/wiki/Seine", "https://en.wikipedia.org/wiki/Seine"],
  ];
  const events = [];
  for await (const e of citeflowStream(await run(a, "What is in Paris?", { stream: true }))) events.push(e);
  // The annotations come after their text was shown: the done event's text has their numbers.
  assert.equal(textOf(events), FIRST + web);
  const done = events.at(-1);
  assert.equal(done.text, FIRST + web.replace(/\.$/, ".[1][4]"));
  assert.deepEqual(done.sources.map((s) => [s.number, s.source.id, s.source.url]), expected);

  const answer = citeOutput(await run(a, "What is in Paris?"));
  assert.equal(answer.text, FIRST + web.replace(/\.$/, ".[1][4]"));
  assert.deepEqual(answer.sources.map((s) => [s.number, s.source.id, s.source.url]), expected);
});
