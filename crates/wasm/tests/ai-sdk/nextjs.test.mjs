// The Next.js example (examples/nextjs-ai-sdk) in headless Chromium: scripts/test-ai-sdk.sh
// builds it once, starts `next start` against the replaying upstream and sets CITEFLOW_NEXT_URL.
// useChat shows [n] while the answer streams, each linked to the right source; the agent route's
// book passages are listed with chapter and CFI; the Edge route renders with no init().
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

import { chromium } from "playwright-core";

import { workspace } from "./support.mjs";

const url = process.env.CITEFLOW_NEXT_URL;
const shots = process.env.CITEFLOW_SHOTS_DIR ?? join(workspace, "target", "ai-sdk");
let browser;

before(async () => {
  assert.ok(url, "CITEFLOW_NEXT_URL is not set (scripts/test-ai-sdk.sh starts the example)");
  mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.CITEFLOW_CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
});
after(async () => browser?.close());

/** What the page shows: status, text, each citation's number and link, each listed source. */
function snapshot() {
  const answer = [...document.querySelectorAll(".answer")].at(-1);
  return {
    status: document.querySelector(".status")?.dataset.status,
    text: answer?.querySelector(".answer-text")?.textContent ?? "",
    cites: [...(answer?.querySelectorAll("a.cite") ?? [])].map((a) => {
      const target = document.querySelector(a.getAttribute("href"));
      return { n: a.textContent, href: a.getAttribute("href"), visible: a.getBoundingClientRect().width > 0, target: target?.textContent ?? null };
    }),
    listed: [...(answer?.querySelectorAll(".sources li") ?? [])].map((li) => ({ n: li.value, id: li.dataset.sourceId, text: li.textContent })),
  };
}
const view = (page) => page.evaluate(`(${snapshot})()`);

/** Records a snapshot at every change of the page (what a reader saw while it streamed). */
const record = (page) =>
  page.evaluate(`(() => {
    window.__snaps = [];
    const snap = ${snapshot};
    new MutationObserver(() => window.__snaps.push(snap())).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  })()`);

async function chatWhileStreaming(base, shot) {
  const page = await browser.newPage({ viewport: { width: 900, height: 700 } });
  await page.goto(`${base}/?model=chat-demo-slow`);
  await page.waitForSelector("button[type=submit]:not([disabled])");
  await record(page);
  await page.click("button[type=submit]");
  await page.waitForSelector('a.cite[href="#source-1"]', { timeout: 15000 });
  await page.screenshot({ path: join(shots, `${shot}-streaming.png`) });
  await page.waitForFunction(() => document.querySelector(".status")?.dataset.status === "ready", null, { timeout: 15000 });
  const end = await view(page);
  await page.screenshot({ path: join(shots, `${shot}.png`) });
  // While it streamed: a state with [1] shown, linked to Paris, before the answer was complete.
  const snaps = await page.evaluate(() => window.__snaps);
  const mid = snaps.find((v) => v.cites.length > 0);
  assert.ok(mid, "no [n] was ever shown");
  assert.equal(mid.status, "streaming", JSON.stringify(mid));
  assert.notEqual(mid.text, end.text, "the first [n] appeared only with the whole answer");
  assert.equal(mid.cites[0].n, "[1]");
  assert.equal(mid.cites[0].href, "#source-1");
  assert.ok(mid.cites[0].visible);
  assert.match(mid.cites[0].target, /Paris — Wikipedia/);
  const states = new Set(snaps.filter((v) => v.status === "streaming").map((v) => v.text));
  console.log(`${states.size} texts shown while streaming, the first with [1]: ${JSON.stringify(mid.text)}`);
  assert.equal(end.text, "Paris is the capital of France [1]. The Seine flows through it [2] and its museums draw millions [1].");
  assert.deepEqual(end.cites.map((c) => [c.n, c.href]), [["[1]", "#source-1"], ["[2]", "#source-2"], ["[1]", "#source-1"]]);
  assert.match(end.cites[1].target, /The Seine — Wikipedia/);
  assert.deepEqual(end.listed.map((l) => [l.n, l.id]), [[1, "source_7"], [2, "source_3"]]);
  await page.close();
}

test("nextjs_use_chat_shows_numbers_while_streaming: chat route, middleware", () => chatWhileStreaming(url, "nextjs-chat"));

// The example's default upstream: `citeflow serve` (here in front of the replay), which passes the
// markers through (`render: "client"`) for the middleware to number.
test("nextjs_use_chat_via_citeflow_serve", { skip: !process.env.CITEFLOW_NEXT_VIA_SERVE_URL && "CITEFLOW_NEXT_VIA_SERVE_URL not set" }, () =>
  chatWhileStreaming(process.env.CITEFLOW_NEXT_VIA_SERVE_URL, "nextjs-chat-via-serve"));

test("nextjs_agent_route_lists_book_passages_with_chapter_and_cfi", async () => {
  // The replay's reading model (agent-book) searches the book for the page's question and
  // answers with the found passages' own sentences that share the most words with it.
  const page = await browser.newPage({ viewport: { width: 900, height: 900 } });
  await page.goto(`${url}/?agent&model=agent-book`);
  assert.equal(await page.inputValue("input"), "Who does Alice follow down the rabbit hole?");
  await page.click("button[type=submit]");
  await page.waitForFunction(() => document.querySelector(".status")?.dataset.status === "ready" && document.querySelector("a.cite"), null, { timeout: 20000 });
  const end = await view(page);
  await page.screenshot({ path: join(shots, "nextjs-agent.png"), fullPage: true });
  assert.equal(
    end.text,
    'There was nothing so very remarkable in that, nor did Alice think it so very much out of the way to hear the Rabbit say to itself, "Oh dear! Oh dear! I shall be too late!" [1]',
  );
  const numbers = end.cites.map((c) => Number(c.n.slice(1, -1)));
  const first = [...new Set(numbers)];
  assert.deepEqual(first, first.map((_, i) => i + 1), `dense numbers: ${numbers}`);
  for (const c of end.cites) {
    const listed = end.listed.find((l) => `#source-${l.n}` === c.href);
    assert.ok(listed, `${c.n} links to a listed source`);
    assert.equal(c.target, listed.text);
  }
  assert.equal(end.listed.length, first.length);
  assert.ok(end.listed.every((l) => /#p\d+$/.test(l.id) && /epubcfi\(/.test(l.text)), JSON.stringify(end.listed));
  // The cited passage is the one that says it, in its chapter.
  assert.match(end.listed[0].id, /#p3$/);
  assert.match(end.listed[0].text, /^Alice's Adventures in Wonderland — Down The Rabbit-Hole epubcfi\(/);
  assert.doesNotMatch(end.text, /\[\[|\[\?\]/);
  await page.close();
});

test("nextjs_edge_route_renders_without_init", async () => {
  const res = await fetch(`${url}/api/edge`);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.deepEqual(body, {
    runtime: "edge",
    text: "Paris [1] is on the Seine [2], see [1].",
    sources: [{ number: 1, title: "Paris" }, { number: 2, title: "The Seine" }],
  });
});

test("nextjs_browser_bundle_and_worker_render_without_init", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${url}/render`);
  await page.waitForFunction(() => document.querySelector("#worker-result")?.textContent && document.querySelector("#main-result")?.textContent, null, { timeout: 15000 });
  const [main, worker] = await page.evaluate(() => [document.querySelector("#main-result").textContent, document.querySelector("#worker-result").textContent]);
  assert.deepEqual(errors, []);
  assert.equal(main, "Paris [1] is on the Seine [2], see [1].");
  assert.equal(worker, "Paris [1] is on the Seine [2], see [1].");
  await page.close();
});
