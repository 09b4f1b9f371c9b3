// citeflow/langchain with the real LangChain.js: `createAgent` (langchain) whose `ChatOpenAI`
// (@langchain/openai) talks over HTTP to the replaying upstream's scripted agent model
// (`agent-search-turns`: two searches, then an answer citing the `[[id]]` markers it was shown;
// from the second user turn on, two new searches), a MemorySaver checkpointer
// (@langchain/langgraph). scripts/test-ai-sdk.sh starts the upstream and sets CITEFLOW_REPLAY_URL.
import { test } from "node:test";
import assert from "node:assert/strict";

import { MemorySaver } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { renderList } from "citeflow";
import { CITEFLOW_KEY, citeflowMiddleware, citeflowStream } from "citeflow/langchain";
import { createAgent, tool } from "langchain";
import { z } from "zod";

const replayUrl = process.env.CITEFLOW_REPLAY_URL;
if (!replayUrl) throw new Error("CITEFLOW_REPLAY_URL is not set (scripts/test-ai-sdk.sh starts the replaying upstream)");

// The documents of crates/py/tests_frameworks/conftest.py, and what each query finds.
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

const searchWeb = tool(
  async ({ query }) => {
    const found = (RESULTS[query] ?? []).map((id) => ({ id, ...PAGES[id] }));
    return [found.map((d) => d.text).join("\n"), found];
  },
  {
    name: "search_web",
    description: "Search the web about Paris.",
    schema: z.object({ query: z.string() }),
    responseFormat: "content_and_artifact",
  },
);

/**
 * The scripted model names every completion `chatcmpl-agent`; an API gives each its own id, and
 * LangGraph's messages reducer merges messages of one id. This fetch gives each response of the
 * upstream its own id (per line of the body, nothing else changed).
 */
let responses = 0;
/** The request bodies the upstream received, in order. */
const bodies = [];
async function uniqueIds(url, init) {
  bodies.push(JSON.parse(init.body));
  const res = await fetch(url, init);
  const n = ++responses;
  let rest = "";
  const dec = new TextDecoder();
  const enc = new TextEncoder();
  const fix = (s) => s.replaceAll('"id":"chatcmpl-agent"', `"id":"chatcmpl-agent-${n}"`);
  const body = res.body.pipeThrough(
    new TransformStream({
      transform(chunk, c) {
        const text = rest + dec.decode(chunk, { stream: true });
        const cut = text.lastIndexOf("\n") + 1;
        rest = text.slice(cut);
        if (cut) c.enqueue(enc.encode(fix(text.slice(0, cut))));
      },
      flush(c) {
        if (rest) c.enqueue(enc.encode(fix(rest)));
      },
    }),
  );
  return new Response(body, { status: res.status, headers: res.headers });
}

function agent(streaming = true) {
  const model = new ChatOpenAI({
    model: "agent-search-turns",
    apiKey: "test",
    streaming,
    maxRetries: 0,
    configuration: { baseURL: replayUrl, fetch: uniqueIds },
  });
  return createAgent({ model, tools: [searchWeb], middleware: [citeflowMiddleware()], checkpointer: new MemorySaver() });
}

const config = (thread) => ({ configurable: { thread_id: thread } });
const textOf = (events) => events.filter((e) => e.type === "text").map((e) => e.text).join("");
const newSources = (events) => events.filter((e) => e.type === "source" && e.is_new).map((e) => [e.number, e.source.id, e.round]);
const squash = (s) => s.replace(/\s+/g, " ").trim();

const FIRST =
  "The Seine flows through the heart of Paris [1], and its banks are lined with landmarks [2]. " +
  "The city's museums hold vast collections [2], and they draw visitors from everywhere [3].";
const FIRST_RAW =
  "The Seine flows through the heart of Paris [[seine]], and its banks are lined with landmarks [[louvre]]. " +
  "The city's museums hold vast collections [[louvre]], and they draw visitors from everywhere [[orsay]].";
const SECOND =
  "The Seine flows through the heart of Paris [4], and its banks are lined with landmarks [1]. " +
  "The city's museums hold vast collections [5], and they draw visitors from everywhere [6].";

async function streamed(graph, thread, question) {
  const stream = await graph.stream({ messages: [{ role: "user", content: question }] }, { ...config(thread), streamMode: "messages" });
  const cs = citeflowStream(stream);
  const events = [];
  for await (const ev of cs) events.push(ev);
  return { events, cs };
}

test("langchain_stream_numbers_two_rounds_and_a_second_turn_continues_them", async () => {
  const graph = agent();
  const { events, cs } = await streamed(graph, "t1", "Tell me about Paris");
  assert.equal(textOf(events), FIRST);
  // Streamed: many text events, each number's source before the text that shows it.
  assert.ok(events.filter((e) => e.type === "text").length > 10, "the text streams in many events");
  let shown = "";
  for (const e of events) {
    if (e.type === "text") shown += e.text;
    if (e.type === "source") assert.ok(!shown.includes(`[${e.number}]`), `[${e.number}]'s source came after its text`);
  }
  // The numbering continues across the two tool rounds: round 2's document gets [3].
  assert.deepEqual(newSources(events), [[1, "seine", 1], [2, "louvre", 1], [3, "orsay", 2]]);
  assert.deepEqual(events.filter((e) => e.type === "citation").map((e) => e.number), [1, 2, 2, 3]);
  const done = events.at(-1);
  assert.equal(done.type, "done");
  assert.equal(done.report.verified, true, JSON.stringify(done.report));
  assert.deepEqual(done.sources.map((l) => [l.number, l.source.id, l.citations]), [[1, "seine", 1], [2, "louvre", 2], [3, "orsay", 1]]);
  assert.deepEqual(cs.rounds.map((r) => r.query), ["Seine river Paris", "Paris museums"]);
  // The list mapping numbers to the tool's documents, grouped by round.
  assert.equal(
    squash(renderList(done.sources, "markdown", cs.rounds)),
    "**Round 1: Seine river Paris** 1. [Seine](https://example.org/seine) 2. [Louvre](https://example.org/louvre) " +
      "**Round 2: Paris museums** 3. [Musée d'Orsay](https://example.org/orsay)",
  );

  // The agent state: the model read each passage under its marker; the final message is
  // numbered as the stream showed it, the answer as written and the numbering kept with it.
  const state = (await graph.getState(config("t1"))).values;
  const tools = state.messages.filter((m) => m._getType() === "tool");
  assert.equal(tools.length, 2);
  assert.ok(tools[0].content.startsWith("[[seine]] Seine: The Seine flows through Paris."), tools[0].content);
  assert.deepEqual(tools[1].additional_kwargs.citeflow_round.sources.map((s) => s.id), ["louvre", "orsay"]);
  const final = state.messages.at(-1);
  assert.equal(final.content, FIRST);
  const record = final.additional_kwargs[CITEFLOW_KEY];
  assert.equal(record.raw, FIRST_RAW);
  assert.deepEqual(record.numbering, cs.numbering);
  assert.deepEqual(record.sources.map((l) => [l.number, l.source.id]), [[1, "seine"], [2, "louvre"], [3, "orsay"]]);
  assert.equal(state.messages.filter((m) => m._getType() === "ai").length, 3);

  // Second turn on the same thread, streamed without passing the thread: numbers continue
  // (the Seine keeps [1]), new documents get 4, 5, 6.
  const second = await streamed(graph, "t1", "What else should I see?");
  assert.equal(textOf(second.events), SECOND);
  assert.deepEqual(newSources(second.events), [[4, "eiffel", 3], [5, "bridges", 1], [6, "pont-neuf", 4]]);
  assert.deepEqual(second.cs.rounds.map((r) => r.query), ["Seine river Paris", "Paris museums", "Eiffel Tower", "Paris bridges"]);
  const after = (await graph.getState(config("t1"))).values.messages.at(-1);
  assert.equal(after.content, SECOND);
  assert.deepEqual(after.additional_kwargs[CITEFLOW_KEY].numbering, second.cs.numbering);
});

test("langchain_invoke_returns_the_numbered_final_message_and_the_thread_continues", async () => {
  const graph = agent(false);
  const from = bodies.length;
  const first = await graph.invoke({ messages: [{ role: "user", content: "Tell me about Paris" }] }, config("i1"));
  const final = first.messages.at(-1);
  assert.equal(final.content, FIRST);
  const record = final.additional_kwargs[CITEFLOW_KEY];
  assert.equal(record.raw, FIRST_RAW);
  assert.deepEqual(record.sources.map((l) => [l.number, l.source.id, l.round]), [[1, "seine", 1], [2, "louvre", 1], [3, "orsay", 2]]);
  assert.deepEqual(record.rounds.map((r) => r.query), ["Seine river Paris", "Paris museums"]);
  assert.equal(
    squash(renderList(record.sources, "text", record.rounds)).includes("Musée d'Orsay"),
    true,
  );
  const second = await graph.invoke({ messages: [{ role: "user", content: "What else should I see?" }] }, config("i1"));
  assert.equal(second.messages.at(-1).content, SECOND);
  assert.deepEqual(
    second.messages.at(-1).additional_kwargs[CITEFLOW_KEY].sources.map((l) => [l.number, l.source.id]),
    [[1, "seine"], [4, "eiffel"], [5, "bridges"], [6, "pont-neuf"]],
  );
  // Every model call got the citation instruction in its system message; the second turn's
  // calls show the model its earlier answer as it wrote it (markers, not numbers).
  const calls = bodies.slice(from);
  assert.equal(calls.length, 6);
  for (const b of calls) {
    const system = b.messages.find((m) => m.role === "system");
    assert.match(system?.content ?? "", /for example \[\[source_1\]\]\. After each sentence that uses a source, write that source's marker exactly as shown; cite several sources as \[\[source_1\]\]\[\[source_2\]\]/);
  }
  const earlier = calls[3].messages.filter((m) => m.role === "assistant" && typeof m.content === "string" && m.content);
  assert.deepEqual(earlier.map((m) => m.content), [FIRST_RAW]);
  const state = (await graph.getState(config("i1"))).values;
  const answers = state.messages.filter((m) => m._getType() === "ai" && m.additional_kwargs[CITEFLOW_KEY]);
  assert.deepEqual(answers.map((m) => m.content), [FIRST, SECOND]);
});
