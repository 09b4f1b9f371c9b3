// The official npm clients against `citeflow serve` fed by the replaying upstream: `openai`
// (chat and responses, streaming and not) and the AI SDK (`ai`: the transport `useChat` uses,
// read into message parts with readUIMessageStream; `@ai-sdk/openai`: streamText over the
// responses route). Run by scripts/test-clients.sh with CITEFLOW_PROXY, CITEFLOW_KEY and
// CITEFLOW_SHARED_DIR set. Every check asserts content: the numbered text, the sources, and
// annotations whose offsets slice the cited number.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { createOpenAI } from "@ai-sdk/openai";
import { DefaultChatTransport, readUIMessageStream, streamText } from "ai";
import OpenAI from "openai";

const PROXY = process.env.CITEFLOW_PROXY;
const KEY = process.env.CITEFLOW_KEY ?? "sk-citeflow-test";
const SHARED = process.env.CITEFLOW_SHARED_DIR;
assert.ok(PROXY && SHARED, "CITEFLOW_PROXY and CITEFLOW_SHARED_DIR must be set");

// The recorded OpenAI web-search answer: 12 url_citation annotations over 7 distinct pages.
const RESPONSES = "openai-web-search-tool.1.chunks.txt";
// A local model's chat stream citing [1]..[4] of five sources by rank.
const CHAT = "smollm2-17.sse";

const client = new OpenAI({ baseURL: `${PROXY}/v1`, apiKey: KEY, maxRetries: 0 });

/** The numbers `[n]` of a text, in order. */
const numbers = (text) => [...text.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1]));
/** Characters (code points) start..end of a text: the API's offsets count characters. */
const slice = (text, start, end) => [...text].slice(start, end).join("");
/** 1..n */
const upTo = (n) => Array.from({ length: n }, (_, i) => i + 1);

function checkAnnotations(text, annotations, count) {
  assert.equal(annotations.length, count, JSON.stringify(annotations));
  for (const a of annotations) {
    assert.equal(a.type, "url_citation");
    assert.match(slice(text, a.start_index, a.end_index), /^\[\d+\]$/, JSON.stringify(a));
    assert.match(a.url, /^https:\/\//);
  }
  // Dense numbering: every number 1..k is shown, nothing else.
  assert.deepEqual([...new Set(numbers(text))].sort((a, b) => a - b), upTo(7));
}

function manifest(file) {
  const lines = readFileSync(join(SHARED, "fixtures/streams/smollm2-manifest.jsonl"), "utf8");
  return lines
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .find((e) => e.file === file);
}

test("openai: chat completions stream, markers numbered, sources in citeflow's done event", async () => {
  const entry = manifest(CHAT);
  const sources = entry.source_ids.map((id) => ({ id, title: `Source ${id}`, url: `https://example.org/${id}` }));
  const stream = await client.chat.completions.create({
    model: CHAT,
    messages: [{ role: "user", content: "Tell me about Paris." }],
    stream: true,
    // citeflow's request extensions, sent as they are by the client
    sources,
    citeflow: { marker: "rank", inject_prompt: false },
  });
  let text = "";
  let done;
  const annotations = [];
  const cites = [];
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    annotations.push(...(chunk.choices[0]?.delta?.annotations ?? []));
    for (const e of chunk.citeflow?.events ?? []) {
      if (e.type === "done") done = e;
      if (e.type === "citation") cites.push(e);
    }
  }
  // citeflow's citations as standard delta.annotations, offsets in characters of the content.
  assert.equal(annotations.length, cites.length);
  assert.ok(cites.length > 0);
  annotations.forEach((a, i) => {
    assert.equal(a.type, "url_citation");
    const { start_index, end_index, url } = a.url_citation;
    assert.equal(slice(text, start_index, end_index), `[${cites[i].number}]`);
    assert.equal(url, `https://example.org/${cites[i].source_id}`);
  });
  assert.ok(done, "a done event");
  assert.ok(done.sources.length > 0, JSON.stringify(done));
  assert.deepEqual([...new Set(numbers(text))].sort((a, b) => a - b), upTo(done.sources.length));
  for (const s of done.sources) assert.equal(s.source.url, `https://example.org/${s.source.id}`);
});

let streamed; // the numbered text of the streamed responses answer

test("openai: responses stream, typed annotation events slice their [n]", async () => {
  const stream = await client.responses.create({ model: RESPONSES, input: "Tech news today?", stream: true });
  let text = "";
  const annotations = [];
  const seq = [];
  let doneText;
  let completed;
  for await (const ev of stream) {
    seq.push(ev.sequence_number);
    if (ev.type === "response.output_text.delta") text += ev.delta;
    else if (ev.type === "response.output_text.annotation.added") annotations.push(ev.annotation);
    else if (ev.type === "response.output_text.done") doneText = ev.text;
    else if (ev.type === "response.completed") completed = ev.response;
  }
  assert.deepEqual(seq, upTo(seq.length).map((n) => n - 1));
  assert.equal(doneText, text);
  assert.equal(completed.output_text ?? completed.output.find((o) => o.type === "message").content[0].text, text);
  checkAnnotations(text, annotations, 12);
  streamed = text;
});

test("openai: responses, not streaming: the same text and annotations", async () => {
  const r = await client.responses.create({ model: RESPONSES, input: "Tech news today?" });
  assert.equal(r.output_text, streamed);
  const msg = r.output.find((o) => o.type === "message");
  checkAnnotations(r.output_text, msg.content[0].annotations, 12);
});

test("ai: the useChat transport reads the UI message stream into parts, each source before its number", async () => {
  const transport = new DefaultChatTransport({
    api: `${PROXY}/v1/responses`,
    headers: { authorization: `Bearer ${KEY}` },
    prepareSendMessagesRequest: ({ messages }) => ({
      body: {
        model: RESPONSES,
        input: messages.at(-1).parts.map((p) => p.text).join(""),
        citeflow: { protocol: "ai-sdk" },
      },
    }),
  });
  const chunks = await transport.sendMessages({
    chatId: "chat-1",
    messageId: undefined,
    trigger: "submit-message",
    messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "Tech news today?" }] }],
    abortSignal: undefined,
  });
  // Every snapshot: a number in the text has its source part already.
  let last;
  for await (const message of readUIMessageStream({ stream: chunks, terminateOnError: true })) {
    const shown = new Set(message.parts.filter((p) => p.type === "source-url").map((p) => Number(p.sourceId)));
    const text = message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
    for (const n of numbers(text)) assert.ok(shown.has(n), `[${n}] shown before its source`);
    last = message;
  }
  assert.equal(last.role, "assistant");
  const text = last.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
  assert.equal(text, streamed);
  const sources = last.parts.filter((p) => p.type === "source-url");
  assert.deepEqual(sources.map((p) => p.sourceId), upTo(7).map(String), "one part per number, in order");
  for (const s of sources) {
    assert.match(s.url, /^https:\/\//);
    assert.equal(s.providerMetadata.citeflow.number, Number(s.sourceId));
  }
  const data = last.parts.filter((p) => p.type === "data-citeflow").flatMap((p) => p.data.events);
  const done = data.find((e) => e.type === "done");
  assert.ok(done, "citeflow's done event as a data part");
  assert.deepEqual(done.sources.map((s) => s.number), upTo(7));
});

test("ai: the useChat transport on chat completions (citeflow.protocol ai-sdk) gives the numbered text and its sources", async () => {
  const sources = [
    { id: "source_3", title: "The Seine", url: "https://en.wikipedia.org/wiki/Seine" },
    { id: "source_7", title: "Paris", url: "https://en.wikipedia.org/wiki/Paris" },
  ];
  const transport = new DefaultChatTransport({
    api: `${PROXY}/v1/chat/completions`,
    headers: { authorization: `Bearer ${KEY}` },
    prepareSendMessagesRequest: ({ messages }) => ({
      body: {
        model: "chat-demo",
        messages: messages.map((m) => ({ role: m.role, content: m.parts.map((p) => p.text ?? "").join("") })),
        sources,
        citeflow: { protocol: "ai-sdk" },
      },
    }),
  });
  const chunks = await transport.sendMessages({
    chatId: "chat-2",
    messageId: undefined,
    trigger: "submit-message",
    messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "Tell me about Paris." }] }],
    abortSignal: undefined,
  });
  let last;
  for await (const message of readUIMessageStream({ stream: chunks, terminateOnError: true })) {
    const shown = new Set(message.parts.filter((p) => p.type === "source-url").map((p) => Number(p.sourceId)));
    const text = message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
    for (const n of numbers(text)) assert.ok(shown.has(n), `[${n}] shown before its source`);
    last = message;
  }
  const text = last.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
  assert.equal(text, "Paris is the capital of France [1]. The Seine flows through it [2] and its museums draw millions [1].");
  const got = last.parts.filter((p) => p.type === "source-url").map((p) => [p.sourceId, p.title, p.url]);
  assert.deepEqual(got, [
    ["1", "Paris", "https://en.wikipedia.org/wiki/Paris"],
    ["2", "The Seine", "https://en.wikipedia.org/wiki/Seine"],
  ]);
});

test("@ai-sdk/openai: streamText over the responses route gives the numbered text and its sources", async () => {
  const provider = createOpenAI({ baseURL: `${PROXY}/v1`, apiKey: KEY });
  const result = streamText({ model: provider.responses(RESPONSES), prompt: "Tech news today?" });
  const text = await result.text;
  assert.equal(text, streamed);
  const sources = await result.sources;
  // One source per annotation, as the provider reports them.
  assert.equal(sources.length, 12, JSON.stringify(sources));
  const urls = new Set(sources.map((s) => s.url));
  assert.equal(urls.size, 7);
  for (const u of urls) assert.match(u, /^https:\/\//);
});
