// Same parts from two builds of the middleware (not a test; the A/B check behind a speed change,
// as scripts/bench/cli_same_bytes.py is for the CLI):
//
//   CITEFLOW_REPLAY_URL=unused node same-parts.mjs PKG_A PKG_B   (each a built crates/wasm/pkg directory;
//   support.mjs asks for the replaying upstream's URL, which this script never calls)
//
// Every recorded stream an AI SDK provider package reads (the .chunks.txt recordings of
// OpenAI Chat and Responses, Azure, xAI, Anthropic, Perplexity) and the SmolLM2 .sse chat
// streams, under four option sets (none; sources and a caller's numbering;
// providerCitations: false; anchors without dedupe), with raw chunks on and off, and
// doGenerate: the stream's parts and the onFinish metadata of B must equal A's. Fails at the
// first difference, naming the recording, the option set and the raw-chunk flag.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { wrapLanguageModel } from "ai";
import { streamsDir } from "./support.mjs";
const [A, B] = process.argv.slice(2);
if (!A || !B) throw new Error("usage: node same-parts.mjs PKG_A PKG_B");
const load = async (dir) => (await import(pathToFileURL(resolve(dir, "ai-sdk.js")).href)).citeflow;
const mA = await load(A);
const mB = await load(B);
const prompt = [{ role: "user", content: [{ type: "text", text: "x" }] }];
const apiOf = (f) => f.startsWith("anthropic") ? "anthropic" : (f.startsWith("perplexity") || f === "openai-text.chunks.txt" || f.endsWith(".sse")) ? "chat" : "responses";
const files = readdirSync(streamsDir).filter((f) => f.endsWith(".sse") || (f.endsWith(".chunks.txt") && !/^(amazon|cohere|google)/.test(f)));
function bodyOf(f) {
  const t = readFileSync(join(streamsDir, f), "utf8");
  if (f.endsWith(".sse")) return new TextEncoder().encode(t);
  return new TextEncoder().encode(t.split("\n").filter((l) => l.trim()).map((l) => `data: ${l}\n\n`).join("") + "data: [DONE]\n\n");
}
function model(api, body) {
  const fetch = async () => new Response(body, { headers: { "content-type": "text/event-stream" } });
  if (api === "anthropic") return createAnthropic({ baseURL: "http://bench.invalid/v1", apiKey: "x", fetch })("m");
  const openai = createOpenAI({ baseURL: "http://bench.invalid/v1", apiKey: "x", fetch });
  return api === "responses" ? openai.responses("m") : openai.chat("m");
}
const sources = [3, 7, 12, 15, 21].map((k) => ({ id: `source_${k}`, title: `Source ${k}`, url: `https://example.com/${k}`, text: `Paris is the capital of France. Source ${k} says the Seine flows through it.` }));
const optionSets = [
  () => ({}),
  () => ({ sources, numbering: [{ number: 1, key: "https://example.com/7" }] }),
  () => ({ sources, providerCitations: false }),
  () => ({ sources, anchors: true, settings: { dedupe: false } }),
];
const clean = (x) => JSON.parse(JSON.stringify(x, (k, v) => (v instanceof Error ? { error: v.name, code: v.code, message: v.message } : v)));
async function run(mw, f, opts, raw) {
  let fin = null;
  const m = mw({ ...opts, instruct: false, onFinish: (meta) => (fin = meta) });
  const { stream } = await wrapLanguageModel({ model: model(apiOf(f), bodyOf(f)), middleware: m }).doStream({ prompt, includeRawChunks: raw });
  const parts = [];
  try { for await (const p of stream) parts.push(p); } catch (e) { parts.push({ thrown: String(e) }); }
  return clean({ parts, fin });
}
let runs = 0, withText = 0, thrownGen = 0;
for (const f of files) {
  for (const [i, o] of optionSets.entries()) for (const raw of [false, true]) {
    const a = await run(mA, f, o(), raw);
    const b = await run(mB, f, o(), raw);
    assert.deepEqual(b, a, `${f} options ${i} raw ${raw}`);
    runs++; if (a.parts.some((p) => p.type === "text-delta")) withText++;
  }
  const gen = async (mw) => { try { return clean(await wrapLanguageModel({ model: model(apiOf(f), bodyOf(f)), middleware: mw({ instruct: false }) }).doGenerate({ prompt })); } catch (e) { return { thrown: String(e).slice(0, 300) }; } };
  const ga = await gen(mA);
  const gb = await gen(mB);
  assert.deepEqual(gb, ga, `${f} doGenerate`); runs++; if (ga.thrown) thrownGen++;
}
console.log(`identical: ${runs} runs over ${files.length} recordings (${withText} streamed runs with text; doGenerate threw the same on ${thrownGen})`);
