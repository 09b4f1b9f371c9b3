// Benchmark (scripts/bench.sh): citeflow/openai-agents per streamed text chunk against a bare loop
// over the same @openai/agents run, and citeflow/mastra's output processor against the same Mastra
// tool loop without it (goal: at most 1.5x each). The model is the replaying upstream's
// scripted agent on the Responses API (CITEFLOW_REPLAY_URL): two search tool rounds, then an
// answer in 7-character deltas. The bare loop iterates the run's events and reads each
// `output_text_delta`, as an app without citeflow does; the adapter run iterates citeflowStream's
// events for the same run. CPU time of this process (process.cpuUsage) per text chunk of the
// bare loop, best of N runs taken alternately.
//
//   CITEFLOW_REPLAY_URL=http://127.0.0.1:PORT/v1 node bench.mjs [N]
import { Agent, OpenAIResponsesModel, run, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { z } from "zod";

import { createOpenAI } from "@ai-sdk/openai";
import { Agent as MastraAgent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { Sources, contextBlock } from "citeflow";
import { citeflowProcessor } from "citeflow/mastra";
import { citeDocuments, citeflowStream } from "citeflow/openai-agents";

const replayUrl = process.env.CITEFLOW_REPLAY_URL;
if (!replayUrl) throw new Error("CITEFLOW_REPLAY_URL is not set");
const repeat = Number(process.argv[2] ?? 15);
setTracingDisabled(true);

const PAGES = {
  seine: { title: "Seine", url: "https://example.org/seine", text: "The Seine flows through Paris." },
  louvre: { title: "Louvre", url: "https://example.org/louvre", text: "The Louvre is the largest museum." },
  bridges: { title: "Bridges of Paris", url: "https://example.org/bridges", text: "Thirty-seven bridges cross the Seine." },
  orsay: { title: "Musée d'Orsay", url: "https://example.org/orsay", text: "The Orsay holds Impressionist art." },
};
const RESULTS = { "Seine river Paris": ["seine", "louvre", "bridges"], "Paris museums": ["louvre", "orsay"] };
const search = tool({
  name: "search",
  description: "Searches the pages.",
  parameters: z.object({ query: z.string() }),
  execute: async ({ query }) => citeDocuments((RESULTS[query] ?? []).map((id) => ({ id, ...PAGES[id] }))),
});
const agent = new Agent({
  name: "researcher",
  instructions: "Cite the [[id]] markers.",
  model: new OpenAIResponsesModel(new OpenAI({ baseURL: replayUrl, apiKey: "test" }), "agent-search"),
  tools: [search],
});

async function bare() {
  let n = 0;
  for await (const ev of await run(agent, "Tell me about Paris", { stream: true })) {
    if (ev.type === "raw_model_stream_event" && ev.data.type === "output_text_delta" && ev.data.delta) n++;
  }
  return n;
}

async function adapted() {
  let n = 0;
  for await (const ev of citeflowStream(await run(agent, "Tell me about Paris", { stream: true }))) if (ev.type === "text") n++;
  return n;
}

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** Best CPU seconds per chunk of `bare` (which returns the chunk count) and `adapted`, alternately. */
async function best(bareRun, adaptedRun) {
  await bareRun();
  await adaptedRun();
  let a = Infinity;
  let b = Infinity;
  for (let i = 0; i < repeat; i++) {
    let t = cpu();
    const chunks = Math.max(await bareRun(), 1);
    a = Math.min(a, (cpu() - t) / chunks);
    t = cpu();
    await adaptedRun();
    b = Math.min(b, (cpu() - t) / chunks);
  }
  return [a, b];
}

const line = (what, [a, b]) =>
  console.log(`${what}: ${(b / a).toFixed(2)}× (adapter ${(b * 1e6).toFixed(1)} µs/chunk, bare loop ${(a * 1e6).toFixed(1)} µs/chunk, best of ${repeat}, CPU time)`);

line("OpenAI Agents SDK run (stream), citeflowStream against the bare loop", await best(bare, adapted));

// Mastra: the same tool loop (chat API), with and without the output processor.
const mastraSearch = createTool({
  id: "search",
  description: "Searches the pages.",
  inputSchema: z.object({ query: z.string() }),
  execute: async ({ query }) => {
    const documents = (RESULTS[query] ?? []).map((id) => ({ id, ...PAGES[id] }));
    return { documents, context: contextBlock(Sources.fromArray(documents), "double_bracket", 600) };
  },
});
const chat = createOpenAI({ baseURL: replayUrl, apiKey: "test" }).chat("agent-search");
const mastra = (outputProcessors) =>
  new MastraAgent({ id: "bench", name: "bench", instructions: "Cite the [[id]] markers.", model: chat, tools: { search: mastraSearch }, outputProcessors });
const plain = mastra([]);
const processed = mastra([citeflowProcessor()]);
const loop = async (agent) => {
  let n = 0;
  const out = await agent.stream("Tell me about Paris", { maxSteps: 5 });
  for await (const t of out.textStream) if (t) n++;
  return n;
};
line("Mastra tool loop (stream), citeflowProcessor against the same loop without it", await best(() => loop(plain), () => loop(processed)));
