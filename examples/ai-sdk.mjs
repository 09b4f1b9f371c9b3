// The npm `openai` client and the Vercel AI SDK against `citeflow serve`.
//
//   cd examples && npm install && CITEFLOW_URL=http://127.0.0.1:8080 CITEFLOW_KEY=sk-mine node ai-sdk.mjs
//
// 1. `openai`: Chat Completions with citeflow's `sources`, numbers and `delta.annotations`.
// 2. The AI SDK UI message stream, as `useChat` reads it: the transport `useChat` uses
//    (DefaultChatTransport) pointed at the proxy's responses route with
//    `citeflow: {protocol: "ai-sdk"}`, read into message parts by readUIMessageStream: one
//    `source-url` part per number, sent before the text that shows it. In a React app the same
//    transport goes to `useChat({ transport })`.
// 3. `@ai-sdk/openai`: streamText over the responses route; the numbered text and its sources.
import { createOpenAI } from "@ai-sdk/openai";
import { DefaultChatTransport, readUIMessageStream, streamText } from "ai";
import OpenAI from "openai";

const URL = process.env.CITEFLOW_URL ?? "http://127.0.0.1:8080";
const KEY = process.env.CITEFLOW_KEY ?? "sk-mine";
const CHAT = process.env.CITEFLOW_MODEL_CHAT ?? "gpt-4.1-mini";
const RESPONSES = process.env.CITEFLOW_MODEL_RESPONSES ?? "gpt-5-mini";

// 1. The openai client: only baseURL changes.
const client = new OpenAI({ baseURL: `${URL}/v1`, apiKey: KEY });
const stream = await client.chat.completions.create({
  model: CHAT,
  messages: [{ role: "user", content: "Tell me about Paris." }],
  stream: true,
  sources: [
    { id: "source_3", title: "The Seine", url: "https://en.wikipedia.org/wiki/Seine" },
    { id: "source_7", title: "Paris", url: "https://en.wikipedia.org/wiki/Paris" },
  ],
});
let text = "";
for await (const chunk of stream) {
  const delta = chunk.choices[0]?.delta;
  text += delta?.content ?? "";
  for (const a of delta?.annotations ?? []) {
    const { start_index, end_index, url } = a.url_citation;
    console.log(`  annotation ${[...text].slice(start_index, end_index).join("")} -> ${url}`);
  }
  for (const e of chunk.citeflow?.events ?? []) {
    if (e.type === "done") for (const s of e.sources) console.log(`  [${s.number}] ${s.source.title}`);
  }
}
console.log("chat:", text);

// 2. The useChat transport and the UI message stream.
const transport = new DefaultChatTransport({
  api: `${URL}/v1/responses`,
  headers: { authorization: `Bearer ${KEY}` },
  prepareSendMessagesRequest: ({ messages }) => ({
    body: {
      model: RESPONSES,
      input: messages.at(-1).parts.map((p) => p.text ?? "").join(""),
      tools: [{ type: "web_search" }],
      citeflow: { protocol: "ai-sdk" },
    },
  }),
});
const chunks = await transport.sendMessages({
  chatId: "example",
  messageId: undefined,
  trigger: "submit-message",
  messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "Tech news today?" }] }],
  abortSignal: undefined,
});
let message;
for await (message of readUIMessageStream({ stream: chunks })) {
  // message.parts grows as the stream arrives: what useChat renders.
}
for (const p of message.parts) {
  if (p.type === "source-url") console.log(`  source-url ${p.sourceId}: ${p.title} ${p.url}`);
}
const answer = message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
console.log("ui message text:", answer.slice(0, 300), "…");

// 3. streamText with the AI SDK's OpenAI provider, on the responses route.
const provider = createOpenAI({ baseURL: `${URL}/v1`, apiKey: KEY });
const result = streamText({ model: provider.responses(RESPONSES), prompt: "Tech news today?" });
console.log("streamText:", (await result.text).slice(0, 300), "…");
for (const s of await result.sources) console.log(`  source ${s.url}`);
