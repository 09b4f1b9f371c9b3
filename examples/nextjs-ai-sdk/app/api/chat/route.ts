// The chat route: streamText over the model wrapped with citeflow's middleware. The page gets
// `[1] [2]` in the streamed text and one numbered source part per number, before the text
// that first shows it.
import { convertToModelMessages, streamText, wrapLanguageModel, type UIMessage } from "ai";
import { citeflow } from "citeflow/ai-sdk";

import { baseModel } from "@/lib/model";
import { sources } from "@/lib/sources";

export async function POST(req: Request) {
  const { messages, model }: { messages: UIMessage[]; model?: string } = await req.json();
  const result = streamText({
    model: wrapLanguageModel({ model: baseModel(model), middleware: citeflow({ sources }) }),
    messages: await convertToModelMessages(messages),
  });
  return result.toUIMessageStreamResponse({ sendSources: true });
}
