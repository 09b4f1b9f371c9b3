// The agent route: a search tool over the sample book's passages, several steps, one numbering
// across them (citeflowTransform): each search is a round named by its query.
import { convertToModelMessages, stepCountIs, streamText, type UIMessage } from "ai";
import { citeflowTransform } from "citeflow/ai-sdk";

import { searchTool } from "@/lib/book";
import { baseModel } from "@/lib/model";

export async function POST(req: Request) {
  const { messages, model }: { messages: UIMessage[]; model?: string } = await req.json();
  const result = streamText({
    model: baseModel(model),
    system: "Answer from the book. Search it first. Cite each passage by its [[id]] marker.",
    messages: await convertToModelMessages(messages),
    tools: { search: searchTool },
    stopWhen: stepCountIs(5),
    experimental_transform: citeflowTransform(),
  });
  return result.toUIMessageStreamResponse({ sendSources: true });
}
