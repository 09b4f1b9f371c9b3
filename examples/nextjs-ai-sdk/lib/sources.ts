// The sources the chat route gives the model (a RAG app would retrieve them per question).
import type { Source } from "citeflow";

export const sources: Source[] = [
  { id: "source_3", title: "The Seine — Wikipedia", url: "https://en.wikipedia.org/wiki/Seine", text: "The Seine flows through Paris." },
  { id: "source_7", title: "Paris — Wikipedia", url: "https://en.wikipedia.org/wiki/Paris", text: "Paris is the capital and largest city of France." },
];
