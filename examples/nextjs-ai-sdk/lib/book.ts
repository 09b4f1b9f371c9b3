// A search tool over citeflow's sample book (Alice's Adventures in Wonderland, the EPUB that
// `citeflow serve` ships): the passages are cut by citeflow's own EPUB reader (`Book`), ranked by
// the words they share with the query, each with its chapter and CFI.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tool } from "ai";
import { z } from "zod";
import { Book, Sources, contextBlock, type BookPassage } from "citeflow";

let passages: BookPassage[] | undefined;

function book(): BookPassage[] {
  const file = process.env.CITEFLOW_EXAMPLE_BOOK ?? join(process.cwd(), "..", "..", "crates", "cli", "books", "alice.epub");
  passages ??= new Book(new Uint8Array(readFileSync(/*turbopackIgnore: true*/ file))).passages();
  return passages;
}

const words = (s: string) => new Set(s.toLowerCase().match(/\p{L}{3,}/gu) ?? []);

/** The best `k` passages for `query`; ties (and a query no passage matches) go to the book's opening. */
export function searchBook(query: string, k = 3) {
  const q = words(query);
  const scored = book().map((p, i) => {
    let score = 0;
    for (const w of words(p.text)) if (q.has(w)) score += 1;
    return { p, i, score };
  });
  scored.sort((a, b) => b.score - a.score || a.i - b.i);
  return scored.slice(0, k).map(({ p }) => ({
    id: p.id,
    title: p.title,
    text: p.text,
    locator: { chapter_title: p.chapter_title ?? undefined, cfi: p.cfi },
  }));
}

export const searchTool = tool({
  description: "Search the book's passages",
  inputSchema: z.object({ query: z.string() }),
  execute: async ({ query }) => {
    const documents = searchBook(query);
    // `documents` for citeflow (a round named by the query), `context` for the model: each
    // passage labelled with the [[id]] marker to cite it by.
    return { documents, context: contextBlock(Sources.fromArray(documents), "double_bracket", 600) };
  },
});
