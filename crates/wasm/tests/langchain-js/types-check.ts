// citeflow/langchain's types against LangChain.js's own (tsc --noEmit, strict): the middleware
// is accepted by createAgent, the stream adapter takes agent.stream's messages stream.
import { MemorySaver } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import type { Event } from "citeflow";
import { citeflowMiddleware, citeflowStream, threadOf } from "citeflow/langchain";
import { createAgent } from "langchain";

const model = new ChatOpenAI({ model: "m", apiKey: "x" });
const agent = createAgent({ model, tools: [], middleware: [citeflowMiddleware({ marker: "double_bracket" })], checkpointer: new MemorySaver() });

export async function run(): Promise<string> {
  const config = { configurable: { thread_id: "t" } };
  const stream = await agent.stream({ messages: [{ role: "user", content: "q" }] }, { ...config, streamMode: "messages" });
  let text = "";
  for await (const ev of citeflowStream(stream)) {
    const e: Event = ev;
    if (e.type === "text") text += e.text;
  }
  const result = await agent.invoke({ messages: [{ role: "user", content: "again" }] }, config);
  return text + threadOf(result.messages).numbering.length;
}
