// `citeflowMiddleware()`: an agent middleware for LangChain.js `createAgent` (the shape of
// Python's `CiteflowMiddleware`): a tool result with documents becomes a round (the model reads
// each passage under its marker), the citation instruction joins the system message, and each
// answer is numbered in the thread's table, kept in the agent state's messages.
import { Sources, contextBlock } from "citeflow";
import type { PromptMarker, Settings } from "citeflow";

import { queryOf } from "../shared/sources.js";
import { CITEFLOW_KEY, ROUND_KEY, THREAD_KEY, copyMessage, kindOf, recordOf, textOf, toolDocuments, withText } from "./messages.js";
import type { MessageLike } from "./messages.js";
import { answerSettings, numberAnswer, threadOf } from "./session.js";
import type { AnswerRecord } from "./session.js";

export interface CiteflowMiddlewareOptions {
  /** The marker the model is asked to write (an id marker, so that one number holds across rounds). Default: `"double_bracket"`. */
  marker?: PromptMarker;
  /** The core's settings the answer is rendered with (`style`: `"brackets"` → `[1]`, `"full_width"` → `【1】`, …). */
  settings?: Settings;
  /** Each passage in a tool result the model reads is cut to this many characters. Default: 1000. */
  maxCharsPerSource?: number;
}

/** The hooks of a LangChain.js agent middleware (structurally what `createMiddleware` returns). */
export interface CiteflowAgentMiddleware {
  readonly name: string;
  wrapToolCall: (request: any, handler: (request: any) => any) => Promise<any>;
  wrapModelCall: (request: any, handler: (request: any) => any) => Promise<any>;
}

/**
 * The citation instruction for an agent whose tools return sources under markers (the words of
 * Python's `agent_instruction`).
 */
export function agentInstruction(marker: PromptMarker = "double_bracket"): string {
  const block = (ids: string[]) => {
    const s = Sources.fromArray(ids.map((id) => ({ id })));
    try {
      return contextBlock(s, marker, 1000);
    } finally {
      s.free();
    }
  };
  const one = block(["source_1"]).split(" ", 1)[0];
  const two = block(["source_1", "source_2"]).split("\n")[1]?.split(" ", 1)[0] ?? "";
  return (
    "Search results show each source after its marker, for example " +
    `${one}. After each sentence that uses a source, write that source's marker exactly as ` +
    `shown; cite several sources as ${one}${two}. Do not invent markers.`
  );
}

/** An answer numbered by this middleware as the model wrote it (for the model's next call). */
function asWritten(m: unknown): unknown {
  if (kindOf(m) !== "ai") return m;
  const msg = m as MessageLike;
  const record = recordOf(msg, CITEFLOW_KEY);
  if (!record || !("raw" in record)) return m;
  const { [CITEFLOW_KEY]: _r, ...kwargs } = msg.additional_kwargs ?? {};
  return copyMessage(msg, { content: record.raw as MessageLike["content"], additional_kwargs: kwargs });
}

/**
 * The agent middleware: `createAgent({ model, tools, middleware: [citeflowMiddleware()] })`.
 *
 * - `wrapToolCall`: a tool result holding documents (a `responseFormat: "content_and_artifact"`
 *   tool's artifact of `Document`s or `{ id, title?, url?, text? }`, or content that is a JSON
 *   list of them) becomes a round named by the call's `query`: the content the model reads
 *   shows each passage under its marker; the round (`citeflow_round`) and the thread before it
 *   (`citeflow_thread`) travel in the `ToolMessage`'s `additional_kwargs`.
 * - `wrapModelCall`: adds the citation instruction to the system message, shows the model its
 *   earlier answers as it wrote them, and numbers its answer: the `AIMessage`'s content gets
 *   the numbers (`[1]`), its `additional_kwargs.citeflow` the answer as written (`raw`), the
 *   cited sources and the thread's numbering after it, so `invoke` returns a numbered final
 *   message and the next turn of a checkpointed thread continues the numbers.
 */
export function citeflowMiddleware(options: CiteflowMiddlewareOptions = {}): CiteflowAgentMiddleware {
  const marker = options.marker ?? "double_bracket";
  const maxChars = options.maxCharsPerSource ?? 1000;
  const settings = answerSettings(marker, options.settings);
  const instruction = agentInstruction(marker);
  return {
    // createAgent checks the brand createMiddleware puts on its middleware.
    [Symbol.for("AgentMiddleware")]: true,
    name: "CiteflowMiddleware",
    async wrapToolCall(request, handler) {
      const result = await handler(request);
      if (kindOf(result) !== "tool" || recordOf(result, ROUND_KEY)) return result;
      const docs = toolDocuments(result as MessageLike);
      if (!docs) return result;
      const thread = threadOf(request.state?.messages ?? []);
      const sources = Sources.fromArray(docs);
      let content: string;
      try {
        content = contextBlock(sources, marker, maxChars);
      } finally {
        sources.free();
      }
      const msg = result as MessageLike;
      return copyMessage(msg, {
        content,
        additional_kwargs: {
          ...(msg.additional_kwargs ?? {}),
          [ROUND_KEY]: { query: queryOf(request.toolCall?.args ?? null), sources: docs },
          [THREAD_KEY]: thread,
        },
      });
    },
    async wrapModelCall(request, handler) {
      const system = request.systemMessage;
      const response = await handler({
        ...request,
        systemMessage: system && typeof system.concat === "function" ? system.concat(instruction) : instruction,
        messages: (request.messages ?? []).map(asWritten),
      });
      if (kindOf(response) !== "ai") return response;
      const answer = response as MessageLike;
      const text = textOf(answer.content);
      if (!text || recordOf(answer, CITEFLOW_KEY)) return response;
      const { record } = numberAnswer(answer.content, text, threadOf(request.state?.messages ?? []), settings);
      return copyMessage(answer, {
        content: withText(answer.content, record.text),
        additional_kwargs: { ...(answer.additional_kwargs ?? {}), [CITEFLOW_KEY]: record satisfies AnswerRecord },
      });
    },
  } as CiteflowAgentMiddleware;
}
