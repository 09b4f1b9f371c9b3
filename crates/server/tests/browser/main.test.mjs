// The README's main command, seen by a person: `scripts/run.sh` has started `citeflow serve`
// with no upstream (the real local model, SmolLM2-135M-Instruct in llama.cpp), the sample books
// ingested and the page served. Headless Chromium asks a question about a sample book there,
// watches the answer stream, and checks what the page shows against what the server says.
// Run by scripts/test-main.sh, which passes the server as CITEFLOW_MAIN_BASE.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";

import { launch, screenshots } from "./harness.mjs";

const base = process.env.CITEFLOW_MAIN_BASE;
let browser;

before(async () => {
  assert.ok(base, "CITEFLOW_MAIN_BASE names the citeflow serve started by scripts/run.sh");
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

test("the main command's page answers a question about a sample book with the local model, right and cited", async () => {
  const books = (await (await fetch(`${base}/v1/books`)).json()).data;
  const alice = books.find((b) => b.title.startsWith("Alice"));
  assert.ok(alice, `the sample books are in the index: ${JSON.stringify(books.map((b) => b.title))}`);
  assert.ok(books.some((b) => b.title.includes("草枕")), JSON.stringify(books.map((b) => b.title)));

  const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 }, deviceScaleFactor: 1 });
  const page = await ctx.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // A short answer keeps the test quick on a 2-core machine: cap the tokens the page asks for.
  await page.route("**/v1/chat/completions", (route) => {
    const body = JSON.parse(route.request().postData());
    route.continue({ postData: JSON.stringify({ ...body, max_tokens: 96 }) });
  });
  await page.goto(`${base}/`);
  await page.waitForFunction(() => document.documentElement.dataset.ready === "1");

  await page.locator("#mode-book").check();
  await page.locator("#book").selectOption(alice.key);
  await page.locator("#top-k").fill("3");
  await page.locator("#question").fill("What did the White Rabbit take out of its waistcoat-pocket?");
  await page.locator("#question").press("Enter");
  await page.waitForFunction(() => document.querySelectorAll(".answer").length > 0);
  const id = await page.locator(".answer").first().getAttribute("id");

  // While the model writes: text arrives before the answer is finished.
  await page.waitForFunction(
    (i) => {
      const card = document.getElementById(i);
      return card.querySelector(".text").textContent.trim().length > 0 || card.dataset.state;
    },
    id,
    { timeout: 180000 },
  );
  const midway = await page.evaluate((i) => document.getElementById(i).dataset.state ?? "streaming", id);

  await page.waitForFunction((i) => document.getElementById(i)?.dataset.state, id, { timeout: 300000 });
  const v = await page.evaluate((i) => {
    const card = document.getElementById(i);
    return {
      state: card.dataset.state,
      text: card.querySelector(".text").textContent,
      numbers: [...card.querySelectorAll(".text .cite a")].map((a) => Number(a.dataset.n)),
      unresolved: card.querySelectorAll(".text .unresolved").length,
      list: [...card.querySelectorAll(".src")].map((li) => ({
        n: Number(li.dataset.n),
        chapter: li.querySelector(".chapter")?.textContent ?? "",
        cfi: li.querySelector(".cfi")?.textContent ?? "",
      })),
      report: card.querySelector(".report").textContent,
      speed: card.querySelector(".speed").textContent,
    };
  }, id);
  const context = `midway: ${midway}; answer: ${JSON.stringify(v)}`;
  assert.equal(v.state, "done", context);
  assert.ok(v.text.trim().length > 0, context);
  // The local model cited the book (its prompt and grammar make it), and every number the
  // text shows is in the list, numbered by first appearance, each entry with chapter and CFI.
  assert.ok(v.numbers.length > 0, context);
  const firsts = [...new Set(v.numbers)];
  assert.deepEqual(firsts, firsts.map((_, i) => i + 1), context);
  assert.deepEqual(v.list.map((e) => e.n).sort((a, b) => a - b), firsts, context);
  for (const e of v.list) {
    assert.match(e.chapter, /^Chapter: /, context);
    assert.match(e.cfi, /^epubcfi\(\/6\/\d+/, context);
  }
  assert.match(v.report, /list verified/, context);
  // And the answer is right: it says what the book says (chapter 1: "took a watch out of its
  // waistcoat-pocket") and cites that chapter's passage (issue 21; the few-shot prompt puts each
  // label after its source's text, crates/llm/README.md).
  assert.match(v.text, /\bwatch\b/i, context);
  assert.ok(
    v.list.some((e) => e.chapter === "Chapter: Down The Rabbit-Hole" && v.numbers.includes(e.n)),
    context,
  );
  // The server's timing of the generation is on the page.
  assert.match(v.speed, /first token after .* · \d+\.\d tokens\/s/, context);

  await page.locator(".layout").screenshot({ path: join(screenshots, "local-model.png"), animations: "disabled" });

  // The first cited passage opens in its chapter of the sample book, marked.
  await page.locator(`#${id}-src-1 .open-book`).click();
  await page.waitForFunction(() => ["ready", "error"].includes(document.querySelector("#reader").dataset.state));
  const reader = await page.evaluate(() => {
    const d = document.querySelector("#reader");
    return {
      state: d.dataset.state,
      where: d.querySelector(".reader-where").textContent,
      marked: [...d.querySelectorAll(".reader-body mark")].map((m) => m.textContent).join(""),
    };
  });
  assert.equal(reader.state, "ready", JSON.stringify(reader));
  assert.ok(reader.where.includes(v.list[0].cfi), JSON.stringify(reader));
  assert.ok(reader.where.includes(v.list[0].chapter), JSON.stringify(reader));
  assert.ok(reader.marked.trim().length > 0, JSON.stringify(reader));
  await page.keyboard.press("Escape");
  assert.deepEqual(errors, []);

  // And in /metrics.
  const metrics = await (await fetch(`${base}/metrics`)).text();
  assert.match(metrics, /^citeflow_first_token_seconds_count\{[^}]*upstream="openai"[^}]*\} [1-9]/m);
  assert.match(metrics, /^citeflow_generation_tokens_per_second_count\{[^}]*\} [1-9]/m);
  await ctx.close();
});
