// citeflow/langchain: LangChain.js / LangGraph.js agents. `citeflowMiddleware()` for
// `createAgent` (tool results with documents become rounds, the citation instruction joins the
// system message, each answer is numbered in the thread's table kept in the agent state) and
// `citeflowStream()` for `agent.stream(input, { streamMode: "messages" })` (the text rewritten
// with the same numbers as it streams). No runtime import of LangChain: messages are read and
// copied structurally, the middleware is a plain object `createAgent` takes.
export { agentInstruction, citeflowMiddleware } from "./langchain/middleware.js";
export type { CiteflowAgentMiddleware, CiteflowMiddlewareOptions } from "./langchain/middleware.js";
export { CiteflowStream, citeflowStream } from "./langchain/stream.js";
export type { CiteflowStreamOptions } from "./langchain/stream.js";
export { threadOf } from "./langchain/session.js";
export type { AnswerRecord, RoundRecord, ThreadRecord } from "./langchain/session.js";
export { CITEFLOW_KEY, ROUND_KEY, THREAD_KEY } from "./langchain/messages.js";
export type { MessageLike } from "./langchain/messages.js";
