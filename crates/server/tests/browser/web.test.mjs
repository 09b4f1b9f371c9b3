// The chat page in headless Chromium against `citeflow serve` and a replaying upstream.
// Assertions are made on intermediate DOM states while the answer streams (a MutationObserver
// log kept in the page, and polling), not only on the end state.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { servers, script, launch, screenshots, citeflowBin } from "./harness.mjs";
import { sharedDir } from "./upstream.mjs";

let env;
let browser;

before(async () => {
  env = await servers();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await env?.stop();
});

const SOURCES = [
  {
    id: "source_3",
    title: "Paris — Wikipedia",
    url: "https://en.wikipedia.org/wiki/Paris",
    snippet: "Paris is the capital and largest city of France.",
  },
  {
    id: "source_7",
    title: "Seine — Wikipedia",
    url: "https://en.wikipedia.org/wiki/Seine",
    snippet: "The Seine flows through the heart of Paris.",
  },
  {
    id: "source_12",
    title: "Eiffel Tower — Wikipedia",
    url: "https://en.wikipedia.org/wiki/Eiffel_Tower",
    text: "The Eiffel Tower was completed in 1889 for the World's Fair.",
  },
];
// Markers cut across chunks, a repeated source, an unknown id.
const PIECES = [
  "Paris is the capital of France ",
  "[[sou",
  "rce_3]]. The Seine ",
  "flows through it [[source_7",
  "]]",
  " and past the tower [[source_12]]",
  ", built in 1889 [[source_3]]. ",
  "Some say [[source_99]]",
  " is a source too.",
];
const EXPECTED_TEXT =
  "Paris is the capital of France [1]. The Seine flows through it [2] and past the tower [3], " +
  "built in 1889 [1]. Some say [?] is a source too.";

/** Records, in the page, every list entry and every number as it is added to the DOM. */
function recordMutations() {
  window.__log = [];
  // The callback runs after a batch: an added subtree may already hold nodes added later.
  const seen = new WeakSet();
  new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.addedNodes) {
        if (n.nodeType !== 1) continue;
        const busy = n.closest?.(".answer")?.getAttribute("aria-busy") === "true";
        const all = (sel) =>
          (n.matches(sel) ? [n] : [...n.querySelectorAll(sel)]).filter((e) => !seen.has(e) && seen.add(e));
        for (const li of all("li.src")) window.__log.push({ kind: "source", n: Number(li.dataset.n), busy });
        for (const a of all(".cite a")) window.__log.push({ kind: "cite", n: Number(a.dataset.n), busy });
      }
    }
  }).observe(document, { childList: true, subtree: true });
}

async function openPage({ width = 1200, height = 800 } = {}) {
  const ctx = await browser.newContext({ viewport: { width, height }, deviceScaleFactor: 1 });
  await ctx.addInitScript(recordMutations);
  const page = await ctx.newPage();
  const errors = [];
  const requests = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) =>
    requests.push({ url: r.url(), method: r.method(), headers: r.headers(), body: r.postData() }),
  );
  await page.goto(`${env.base}/`);
  await page.waitForFunction(() => document.documentElement.dataset.ready === "1");
  return { ctx, page, errors, requests };
}

/** Sets a form field the way a user would end up with it (some sit in a closed <details>). */
async function setField(page, selector, value) {
  await page.evaluate(
    ([sel, v]) => {
      const e = document.querySelector(sel);
      e.value = v;
      e.dispatchEvent(new Event("change", { bubbles: true }));
    },
    [selector, value],
  );
}

/** Types the question and presses Enter; resolves to the new answer's id. */
async function ask(page, question, { model, sources, marker = "double_bracket" } = {}) {
  if (model) await setField(page, "#model", model);
  await setField(page, "#marker", marker);
  if (sources) await setField(page, "#sources-json", JSON.stringify(sources));
  const before = await page.locator(".answer").count();
  await page.locator("#question").fill(question);
  await page.locator("#question").press("Enter");
  await page.waitForFunction((n) => document.querySelectorAll(".answer").length > n, before);
  return page.locator(".answer").nth(before).getAttribute("id");
}

async function finished(page, id, timeout = 30000) {
  await page.waitForFunction((i) => document.getElementById(i)?.dataset.state, id, { timeout });
  return page.evaluate((i) => document.getElementById(i).dataset.state, id);
}

/** What an answer shows: its text, the numbers in text order, the list (number, id, group). */
function view(page, id) {
  return page.evaluate((i) => {
    const card = document.getElementById(i);
    return {
      text: card.querySelector(".text").textContent,
      numbers: [...card.querySelectorAll(".text .cite a")].map((a) => Number(a.dataset.n)),
      unresolved: [...card.querySelectorAll(".text .unresolved")].map((u) => u.dataset.reason),
      list: [...card.querySelectorAll(".src")].map((li) => [
        Number(li.dataset.n),
        li.dataset.sourceId,
        li.closest(".group").dataset.key,
      ]),
      report: card.querySelector(".report").textContent,
      speed: card.querySelector(".speed").hidden ? "" : card.querySelector(".speed").textContent,
    };
  }, id);
}

/** The passages `citeflow serve` retrieves from a book for `query` (POST /v1/books/{key}/search). */
async function searchBook(key, query, topK) {
  const r = await fetch(`${env.base}/v1/books/${encodeURIComponent(key)}/search`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query, top_k: topK }),
  });
  assert.equal(r.status, 200, `search ${key}`);
  return r.json();
}

async function shot(page, locator, name) {
  await locator.screenshot({ path: join(screenshots, name), animations: "disabled" });
}

test("the page and its assets come from the binary and load nothing from elsewhere", async () => {
  // Every body is read: an unread one keeps its connection (and this process) alive.
  const resp = await fetch(`${env.base}/`);
  assert.equal(resp.status, 200);
  assert.match(await resp.text(), /<script type="module" src="\/assets\/app.js">/);
  assert.match(resp.headers.get("content-type"), /text\/html/);
  assert.match(resp.headers.get("content-security-policy"), /default-src 'self'/);
  const status = async (url) => {
    const r = await fetch(url);
    await r.arrayBuffer();
    return r.status;
  };
  for (const a of ["app.js", "app.css", "icon.svg"]) {
    assert.equal(await status(`${env.base}/assets/${a}`), 200, a);
  }
  assert.equal(await status(`${env.base}/assets/nope.js`), 404);
  const { ctx, page, errors, requests } = await openPage();
  const origin = new URL(env.base).origin;
  const foreign = requests.filter((r) => !r.url.startsWith(origin));
  assert.deepEqual(foreign, [], "requests to other origins");
  assert.deepEqual(errors, []);
  // The server lists its books (citeflow serve --book alice.epub), so the picker is on.
  assert.equal(await page.locator("#mode-book").isDisabled(), false, "GET /v1/books enables the book picker");
  assert.ok(requests.some((r) => r.url === `${origin}/v1/books`));
  await ctx.close();
});

test("numbers appear while the answer streams and the list fills before the text shows each number", async () => {
  await script(env.upstream, "paris", PIECES, { paceMs: 250 });
  const { ctx, page, errors } = await openPage();
  const id = await ask(page, "What is Paris known for?", { model: "paris", sources: SOURCES });
  const card = page.locator(`#${id}`);

  // Mid-stream: some numbers are shown, the answer is still streaming.
  await page.waitForFunction(
    (i) => document.querySelectorAll(`#${i} .text .cite a`).length >= 2,
    id,
  );
  const mid = await page.evaluate((i) => {
    const c = document.getElementById(i);
    const first = c.querySelector(".text .cite a");
    return {
      busy: c.getAttribute("aria-busy"),
      cites: c.querySelectorAll(".text .cite a").length,
      listed: c.querySelectorAll(".src").length,
      firstTop: first.getBoundingClientRect().top,
      questionTop: c.querySelector(".question").getBoundingClientRect().top,
      live: c.querySelector(".badge.live")?.textContent,
    };
  }, id);
  assert.equal(mid.busy, "true", "still streaming");
  assert.equal(mid.live, "streaming");
  assert.ok(mid.cites < 4, `only part of the numbers so far (${mid.cites})`);
  assert.ok(mid.listed >= 2);
  await shot(page, page.locator(".layout"), "streaming-midway.png");

  assert.equal(await finished(page, id), "done");
  const v = await view(page, id);
  assert.equal(v.text, EXPECTED_TEXT);
  assert.deepEqual(v.numbers, [1, 2, 3, 1]);
  assert.deepEqual(v.unresolved, ["unknown_id"]);
  assert.deepEqual(
    v.list.map(([n, sid]) => [n, sid]),
    [
      [1, "source_3"],
      [2, "source_7"],
      [3, "source_12"],
    ],
  );
  assert.match(v.report, /3 sources · 4 citations · 1 unresolved · list verified/);
  // The server's timing of the answer: time to first token and generation speed.
  assert.match(v.speed, /^first token after \d+ ms · \d+\.\d tokens\/s · \d+ chunks$/);

  // The log: every entry joined the list before the text showed its number, in the order of
  // first appearance, and all of it happened while the answer was streaming.
  const log = await page.evaluate(() => window.__log);
  const firstCite = (n) => log.findIndex((e) => e.kind === "cite" && e.n === n);
  const sourceAt = (n) => log.findIndex((e) => e.kind === "source" && e.n === n);
  for (const n of [1, 2, 3]) {
    assert.ok(sourceAt(n) >= 0 && sourceAt(n) < firstCite(n), `source ${n} listed before its number: ${JSON.stringify(log)}`);
  }
  assert.deepEqual(
    log.filter((e) => e.kind === "source").map((e) => e.n),
    [1, 2, 3],
  );
  assert.ok(log.every((e) => e.busy), "every number and entry arrived during streaming");
  assert.equal(log.filter((e) => e.kind === "source").length, 3, "no entry twice");

  // No layout jump: what was on screen mid-stream has not moved.
  const end = await page.evaluate((i) => {
    const c = document.getElementById(i);
    return {
      firstTop: c.querySelector(".text .cite a").getBoundingClientRect().top,
      questionTop: c.querySelector(".question").getBoundingClientRect().top,
    };
  }, id);
  assert.equal(end.firstTop, mid.firstTop);
  assert.equal(end.questionTop, mid.questionTop);

  // Hover shows the cited passage; an unresolved marker shows why.
  await card.locator(".text .cite a").nth(2).hover();
  await page.waitForSelector("#tip:not([hidden])");
  assert.match(await page.locator("#tip").textContent(), /Eiffel Tower — Wikipedia.*completed in 1889/);
  await card.locator(".text .unresolved").hover();
  assert.match(await page.locator("#tip").textContent(), /Unresolved: \[\[source_99\]\].*unknown_id: source_99/);
  await page.mouse.move(0, 0);
  await page.waitForSelector("#tip", { state: "hidden" });

  // Keyboard: Tab reaches a number, focus shows its passage, Enter jumps to the list entry.
  await card.locator(".text .cite a").first().focus();
  await page.keyboard.press("Tab");
  const focused = await page.evaluate(() => document.activeElement.dataset.n);
  assert.equal(focused, "2");
  assert.match(await page.locator("#tip").textContent(), /Seine — Wikipedia.*heart of Paris/);
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate(() => document.activeElement.id), `${id}-src-2`);
  await page.keyboard.press("Escape");

  // Each list entry has its title and link.
  const entry = card.locator(`#${id}-src-1`);
  assert.equal(await entry.locator("a.title").getAttribute("href"), "https://en.wikipedia.org/wiki/Paris");
  await shot(page, page.locator(".layout"), "finished-with-list.png");
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("the style switch shows [1], 【1】 and footnotes, and the server renders the chosen style", async () => {
  await script(env.upstream, "paris-fast", PIECES, { paceMs: 5 });
  const { ctx, page } = await openPage();
  await page.locator("#style").selectOption("full_width");
  const id = await ask(page, "Paris?", { model: "paris-fast", sources: SOURCES });
  assert.equal(await finished(page, id), "done");
  let v = await view(page, id);
  assert.equal(v.text, EXPECTED_TEXT.replaceAll("[1]", "【1】").replace("[2]", "【2】").replace("[3]", "【3】").replace("[?]", "【?】"));
  assert.equal(await page.locator("[data-mismatch]").count(), 0, "the server rendered 【n】 as asked");
  await page.locator("#style").selectOption("footnote");
  v = await view(page, id);
  assert.ok(v.text.startsWith("Paris is the capital of France 1. The Seine flows through it 2 "), v.text);
  await page.locator("#style").selectOption("brackets");
  assert.equal((await view(page, id)).text, EXPECTED_TEXT);
  await ctx.close();
});

test("the page switches to the responses and messages routes and lists the provider's own citations", async () => {
  const { ctx, page, errors, requests } = await openPage();
  const cases = [
    // Anthropic Messages with web search: citations_delta on 4 pages, [n] at each cited block's end.
    ["messages", "anthropic-web-search-tool.1.chunks.txt", 4, "https://www.apple.com/newsroom/"],
    // OpenAI Responses with web search: 12 url_citation annotations on 7 pages.
    ["responses", "openai-web-search-tool.1.chunks.txt", 7, "https://techcrunch.com/"],
  ];
  for (const [api, file, count, first] of cases) {
    await script(env.upstream, `file:${file}`, [], { paceMs: 1 });
    await setField(page, "#api", api);
    const id = await ask(page, "Tech news today?", { model: `file:${file}`, sources: [] });
    assert.equal(await finished(page, id), "done", api);
    const v = await view(page, id);
    const shown = [...new Set(v.numbers)].sort((a, b) => a - b);
    assert.deepEqual(shown, Array.from({ length: count }, (_, i) => i + 1), `${api}: ${v.text}`);
    assert.deepEqual(v.list.map(([n]) => n), shown, api);
    assert.ok(v.list[0][1].startsWith(first), `${api}: ${JSON.stringify(v.list)}`);
    for (const [, sourceId] of v.list) assert.match(sourceId, /^https:\/\//);
    const sent = requests.filter((r) => r.url.endsWith(`/v1/${api}`));
    assert.equal(sent.length, 1, api);
  }
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("a dropped connection resumes with Last-Event-ID: same text, same numbers, nothing twice", async () => {
  const pieces = [];
  for (let i = 0; i < 6; i++) {
    pieces.push(`Sentence ${i} about Paris `, `[[source_${[3, 7, 12][i % 3]}]]`, ". ");
  }
  await script(env.upstream, "long", pieces, { paceMs: 120 });
  const { ctx, page, errors, requests } = await openPage();
  const plain = await ask(page, "uninterrupted", { model: "long", sources: SOURCES });
  assert.equal(await finished(page, plain), "done");
  const want = await view(page, plain);

  const id = await ask(page, "interrupted", { model: "long" });
  await page.waitForFunction((i) => document.querySelectorAll(`#${i} .text .cite a`).length >= 2, id);
  const before = await view(page, id);
  assert.equal(await page.evaluate(() => window.citeflow.dropConnection()), true);
  assert.equal(await finished(page, id), "done");
  const got = await view(page, id);
  assert.equal(got.text, want.text);
  assert.deepEqual(got.numbers, want.numbers);
  assert.deepEqual(got.list, want.list);
  assert.deepEqual(got.numbers.slice(0, before.numbers.length), before.numbers, "no renumbering");
  const resumed = await page.locator(`#${id} .badge.resumed`).textContent();
  assert.match(resumed, /resumed after event \d+/);
  const resume = requests.find((r) => r.url.includes("/v1/streams/"));
  assert.ok(resume, "the page reconnected to /v1/streams/{id}");
  assert.match(resume.headers["last-event-id"], /^\d+$/);
  assert.equal(resume.headers["last-event-id"], resumed.match(/\d+/)[0]);
  const log = await page.evaluate((i) => window.__log.filter((e) => e.kind === "source").length, id);
  assert.ok(log >= 6, "two answers of three sources each");
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("agent mode groups the list by round with each round's query and keeps numbers across answers", async () => {
  await script(env.upstream, "agent-1", ["The Seine [[source_2]] flows through Paris, ", "the capital [[source_1]]."], { paceMs: 80 });
  await script(env.upstream, "agent-2", ["Again [[source_1]], and the region [[source_4]]."], { paceMs: 80 });
  const { ctx, page, errors } = await openPage();
  await page.locator('input[name="mode"][value="agent"]').check();
  const rounds = [
    {
      query: "capital of France",
      sources: [
        { id: "source_1", title: "France", snippet: "Its capital is Paris." },
        { id: "source_4", title: "Île-de-France", snippet: "The region around Paris." },
      ],
    },
    { query: "river through Paris", sources: [{ id: "source_2", title: "Seine", snippet: "The Seine flows through Paris." }] },
  ];
  for (const [i, r] of rounds.entries()) {
    await page.locator(".round-query").nth(i).fill(r.query);
    await page.locator(".round-sources").nth(i).fill(JSON.stringify(r.sources));
  }
  const a1 = await ask(page, "Which river and which capital?", { model: "agent-1" });
  assert.equal(await finished(page, a1), "done");
  const v1 = await view(page, a1);
  assert.deepEqual(v1.numbers, [1, 2]);
  assert.deepEqual(v1.list, [
    [2, "source_1", "r1"],
    [1, "source_2", "r2"],
  ]);
  const heads = await page.locator(`#${a1} .group h4`).allTextContents();
  assert.deepEqual(heads, ["Round 1: capital of France", "Round 2: river through Paris"]);

  const a2 = await ask(page, "And again?", { model: "agent-2" });
  assert.equal(await finished(page, a2), "done");
  const v2 = await view(page, a2);
  assert.deepEqual(v2.numbers, [2, 3], "source_1 keeps its number in the session");
  assert.match(await page.locator(`#${a2}-src-2`).textContent(), /numbered in an earlier answer/);
  assert.ok(await page.evaluate(() => window.citeflow.sessionId));
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("Japanese and Chinese answers render, full-width 【1】 included", async () => {
  // A recorded SmolLM2 stream (Japanese, rank markers [1]..[4], one token a chunk).
  const manifest = readFileSync(join(sharedDir, "fixtures/streams/smollm2-manifest.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .find((m) => m.file === "smollm2-17.sse");
  const system = manifest.request.messages[0].content;
  const sources = manifest.source_ids.map((n) => ({
    id: `doc_${n}`,
    title: `資料${n}`,
    text: system.split("\n").find((l) => l.startsWith(`[${n}] `)).slice(n.length + 3),
  }));
  const { ctx, page, errors } = await openPage();
  await page.locator("#style").selectOption("full_width");
  const ja = await ask(page, "夏目漱石について簡単に説明してください。", {
    model: "file:smollm2-17.sse",
    sources,
    marker: "rank",
  });
  assert.equal(await finished(page, ja), "done");
  const v = await view(page, ja);
  assert.deepEqual(v.numbers, [1, 2, 3, 4]);
  assert.ok(v.text.startsWith("夏目漱石について"), v.text);
  assert.ok(v.text.includes("【1】 2018年"), v.text);
  assert.ok(!v.text.includes("\uFFFD"), "no broken characters");
  assert.deepEqual(v.list.map((l) => l[1]), ["doc_1", "doc_2", "doc_3", "doc_4"]);

  // Chinese, every SSE event cut into 4-byte writes (inside characters and markers).
  await script(env.upstream, "zh", ["巴黎是法国的首都[[source_3]]。", "塞纳河流经巴黎[[source_7]]，", "埃菲尔铁塔[[source_12]]建于1889年。"], {
    paceMs: 30,
    splitBytes: 4,
  });
  const zh = await ask(page, "巴黎有什么？", { model: "zh", sources: SOURCES, marker: "double_bracket" });
  assert.equal(await finished(page, zh), "done");
  const z = await view(page, zh);
  assert.equal(z.text, "巴黎是法国的首都【1】。塞纳河流经巴黎【2】，埃菲尔铁塔【3】建于1889年。");
  await page.locator(`#${zh} .text .cite a`).first().hover();
  assert.match(await page.locator("#tip").textContent(), /capital and largest city/);
  await page.mouse.move(0, 0);
  await shot(page, page.locator(".answers"), "cjk-answers.png");
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("a book source shows its chapter and CFI (passages of `citeflow ingest`, uploaded as a file)", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "citeflow-web-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, "alice.json");
  execFileSync(citeflowBin, ["ingest", join(sharedDir, "fixtures/epub/alice.epub"), "--format", "json", "--out", out], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const passages = JSON.parse(readFileSync(out, "utf8")).filter((p) => p.locator?.chapter_title && p.locator?.cfi);
  assert.ok(passages.length >= 10, "passages with chapter and CFI");
  const chapters = [...new Map(passages.map((p) => [p.locator.chapter_title, p])).values()];
  const [a, b] = [chapters[1] ?? passages[1], chapters[2] ?? passages[2]];
  writeFileSync(join(dir, "two.json"), JSON.stringify([a, b]));
  await script(env.upstream, "book", [`Alice follows the Rabbit [[${a.id}]]`, ` and the story goes on [[${b.id}]].`], { paceMs: 60 });
  const { ctx, page, errors } = await openPage();
  await page.locator("#sources-file").setInputFiles(join(dir, "two.json"));
  await page.waitForFunction(() => document.querySelector("#sources-json").value.includes("locator"));
  const id = await ask(page, "What happens to Alice?", { model: "book" });
  assert.equal(await finished(page, id), "done");
  const entry = page.locator(`#${id}-src-1`);
  assert.equal(await entry.locator(".chapter").textContent(), `Chapter: ${a.locator.chapter_title}`);
  assert.equal(await entry.locator(".cfi").textContent(), a.locator.cfi);
  await page.locator(`#${id} .text .cite a`).first().hover();
  const tip = await page.locator("#tip").textContent();
  assert.ok(tip.includes(a.locator.cfi) && tip.includes(a.locator.chapter_title), tip);
  assert.ok(tip.includes((a.snippet || a.text).slice(0, 40)), tip);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("asking against a book picked in the list: the server retrieves its passages, the list shows chapter and CFI", async () => {
  // The model cites the second and the first passage the server put in its context.
  await script(env.upstream, "book-pick", [
    "The White Rabbit took a watch out of its waistcoat-pocket ",
    "{{cite:2}}, and Alice ran across the field after it {{cite:1}}. ",
    "It popped down a large rabbit-hole {{cite:2}}.",
  ], { paceMs: 120 });
  const { ctx, page, errors, requests } = await openPage();
  const listed = await (await fetch(`${env.base}/v1/books`)).json();
  const alice = listed.data.find((b) => b.title.startsWith("Alice"));
  assert.ok(alice, `alice.epub is listed: ${JSON.stringify(listed)}`);
  assert.ok(alice.passages > 10 && alice.chapters.length > 5);
  // The picker lists it; choose the book mode with the keyboard-reachable radio.
  await page.locator("#mode-book").check();
  assert.equal(await page.locator('.mode-panel[data-mode="book"]').isVisible(), true);
  const options = await page.locator("#book option").evaluateAll((os) => os.map((o) => [o.value, o.textContent]));
  assert.ok(options.some(([v, t]) => v === alice.key && t.includes("Alice")), JSON.stringify(options));
  await page.locator("#book").selectOption(alice.key);
  assert.match(await page.locator("#book-info").textContent(), new RegExp(`${alice.passages} passages in ${alice.chapters.length} chapters`));
  await page.locator("#top-k").fill("4");
  const id = await ask(page, "What did the White Rabbit take out of its waistcoat-pocket?", { model: "book-pick" });
  assert.equal(await finished(page, id), "done");

  // The page asked with citeflow.book and no sources of its own.
  const post = requests.filter((r) => r.url.endsWith("/v1/chat/completions")).pop();
  const sent = JSON.parse(post.body);
  assert.equal(sent.citeflow.book, alice.key);
  assert.equal(sent.citeflow.top_k, 4);
  assert.equal(sent.sources, undefined);

  // What reached the model: four passages of that book, each labelled with chapter and CFI.
  const upstream = await (await fetch(`${env.upstream.replace(/\/v1$/, "")}/_requests`)).json();
  const prompt = upstream.filter((r) => r.model === "book-pick").pop().messages[0].content;
  const context = [...prompt.matchAll(/^\[\[([^\]]+)\]\] \(chapter: (.+?), CFI: (epubcfi\(.+?\))\) /gm)].map((m) => ({
    id: m[1],
    chapter: m[2],
    cfi: m[3],
  }));
  assert.equal(context.length, 4, prompt);
  assert.ok(context.every((c) => c.id.startsWith(`${alice.key}#p`)), prompt);

  // The list: the cited passages in first-citation order, each with chapter title and CFI.
  const v = await view(page, id);
  assert.deepEqual(v.numbers, [1, 2, 1]);
  assert.deepEqual(v.list.map(([n, sid]) => [n, sid]), [[1, context[1].id], [2, context[0].id]]);
  for (const [n, c] of [[1, context[1]], [2, context[0]]]) {
    const entry = page.locator(`#${id}-src-${n}`);
    assert.equal(await entry.locator(".chapter").textContent(), `Chapter: ${c.chapter}`);
    assert.equal(await entry.locator(".cfi").textContent(), c.cfi);
    assert.match(await entry.locator(".title").textContent(), /^Alice.* — /);
  }
  assert.match(v.report, /2 sources · 3 citations · list verified/);
  await page.locator(`#${id} .text .cite a`).first().hover();
  const tip = await page.locator("#tip").textContent();
  assert.ok(tip.includes(context[1].cfi) && tip.includes(context[1].chapter), tip);
  await page.mouse.move(1, 1);
  await page.waitForFunction(() => document.querySelector("#tip").hidden);
  await shot(page, page.locator(".layout"), "book-source.png");

  // "Open in book": the chapter of the cited passage, with exactly the passage marked, scrolled
  // into view; Escape closes the reader and gives the focus back to the button.
  const found = await searchBook(alice.key, "What did the White Rabbit take out of its waistcoat-pocket?", 4);
  const cited = found.data.find((p) => p.id === context[1].id);
  const open = page.locator(`#${id}-src-1 .open-book`);
  await open.click();
  await page.waitForFunction(() => document.querySelector("#reader").dataset.state === "ready");
  const reader = await page.evaluate(() => {
    const d = document.querySelector("#reader");
    const body = d.querySelector(".reader-body");
    const marks = [...body.querySelectorAll("mark")];
    const box = body.getBoundingClientRect();
    const m = marks[0].getBoundingClientRect();
    return {
      open: d.open,
      title: d.querySelector("#reader-title").textContent,
      where: d.querySelector(".reader-where").textContent,
      marked: marks.map((x) => x.textContent).join("\n\n"),
      paragraphs: body.querySelectorAll("p[data-index]").length,
      markInView: m.top >= box.top && m.top < box.bottom,
    };
  });
  assert.equal(reader.open, true);
  assert.equal(reader.title, alice.title);
  assert.ok(reader.where.includes(`Chapter: ${context[1].chapter}`) && reader.where.includes(context[1].cfi), reader.where);
  assert.equal(reader.marked, cited.text, "the reader marks exactly the cited passage");
  assert.ok(reader.paragraphs > 3, "the whole chapter around it");
  assert.ok(reader.markInView, "the passage is scrolled into view");
  await shot(page, page.locator("#reader"), "book-reader.png");
  // Previous and next chapter, as the read route names them. The focus stays on the button,
  // and goes to the text when paging reaches the last chapter (its "next" is disabled).
  const read = async (cfi) =>
    (await fetch(`${env.base}/v1/books/${encodeURIComponent(alice.key)}/read?cfi=${encodeURIComponent(cfi)}`)).json();
  const here = await read(cited.locator.cfi);
  assert.ok(here.previous_chapter?.title, JSON.stringify(here));
  assert.equal(await page.locator("#reader-prev").textContent(), `← ${here.previous_chapter.title}`);
  assert.equal(await page.locator("#reader-prev").getAttribute("aria-label"), `Previous chapter: ${here.previous_chapter.title}`);
  const chapterShown = async (button) => {
    await page.locator(button).focus();
    await page.keyboard.press("Enter");
    await page.waitForFunction(
      () => document.querySelector("#reader").dataset.state === "ready" && !document.querySelector("#reader .reader-body mark"),
    );
    return page.evaluate(() => ({
      where: document.querySelector("#reader .reader-where").textContent,
      paragraphs: document.querySelectorAll("#reader .reader-body p[data-index]").length,
      focused: document.activeElement?.id || document.activeElement?.className,
      nextDisabled: document.querySelector("#reader-next").disabled,
    }));
  };
  const before = await chapterShown("#reader-prev");
  assert.ok(before.where.startsWith(`Chapter: ${here.previous_chapter.title} ·`), before.where);
  assert.ok(before.paragraphs > 3, "the chapter's text");
  assert.equal(before.focused, "reader-prev");
  const again = await chapterShown("#reader-next");
  assert.ok(again.where.startsWith(`Chapter: ${context[1].chapter} ·`), again.where);
  assert.equal(again.focused, "reader-next");
  // On to the end of the book: the last chapter has no "next".
  let last = again;
  for (let i = 0; i < 20 && !last.nextDisabled; i++) last = await chapterShown("#reader-next");
  assert.equal(last.nextDisabled, true, "the last chapter has no next");
  assert.ok(last.where.startsWith(`Chapter: ${alice.chapters.at(-1).title} ·`), last.where);
  assert.equal(last.focused, "reader-body", "paging past the end puts the focus on the text");
  await page.keyboard.press("Escape");
  await page.waitForFunction(() => !document.querySelector("#reader").open);
  assert.equal(await page.evaluate(() => document.activeElement?.classList.contains("open-book")), true);

  // Claim anchors: when the server gives the quote of [1] a CFI range (quote.cfi), the entry
  // opens the reader at that sentence, marked: the quote the hover shows.
  const openQuote = page.locator(`#${id}-src-1 .open-quote`);
  if (await openQuote.count()) {
    await page.locator(`#${id} .text .cite a`).first().hover();
    const quote = await page.locator("#tip .tip-quote").textContent();
    await page.mouse.move(1, 1);
    await openQuote.click();
    await page.waitForFunction(() => document.querySelector("#reader").dataset.state === "ready");
    const marked = await page.evaluate(() => [...document.querySelectorAll("#reader .reader-body mark")].map((m) => m.textContent).join(" "));
    const norm = (x) => x.replace(/\s+/g, " ").trim();
    assert.equal(norm(marked), norm(quote), "the reader marks the quoted sentence");
    assert.ok(norm(cited.text).includes(norm(quote)), "inside the cited passage");
    await shot(page, page.locator("#reader"), "book-reader-quote.png");
    await page.keyboard.press("Escape");
    await page.waitForFunction(() => !document.querySelector("#reader").open);
  } else {
    console.log("no quote.cfi from this server: the reader at the quote is not checked");
  }

  // Rendered in the browser: the page searches the book first and sends the passages as
  // sources; the model sees the same passages, and the numbers and the list are the same.
  await page.locator("#render").selectOption("client");
  const cid = await ask(page, "What did the White Rabbit take out of its waistcoat-pocket?", { model: "book-pick" });
  assert.equal(await finished(page, cid), "done");
  const search = requests.filter((r) => r.url.endsWith(`/v1/books/${encodeURIComponent(alice.key)}/search`));
  assert.equal(search.length, 1, "one book search for the client-rendered answer");
  assert.deepEqual(JSON.parse(search[0].body), { query: "What did the White Rabbit take out of its waistcoat-pocket?", top_k: 4 });
  const clientSent = JSON.parse(requests.filter((r) => r.url.endsWith("/v1/chat/completions")).pop().body);
  assert.equal(clientSent.citeflow.book, undefined);
  assert.equal(clientSent.citeflow.render, "client");
  assert.deepEqual(clientSent.sources.map((x) => x.id), context.map((c) => c.id));
  const c = await view(page, cid);
  assert.equal(c.text, v.text);
  assert.deepEqual(c.numbers, v.numbers);
  assert.deepEqual(c.list, v.list);
  assert.match(c.report, /rendered in the browser \(WASM\)/);
  const centry = page.locator(`#${cid}-src-1`);
  assert.equal(await centry.locator(".cfi").textContent(), context[1].cfi);
  await page.locator("#render").selectOption("server");
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("an .epub uploaded in the page joins the book list and can be asked at once", async (t) => {
  await script(env.upstream, "book-upload", ["April is the cruellest month {{cite:1}}."], { paceMs: 20 });
  const { ctx, page, errors } = await openPage();
  await page.locator("#mode-book").check();
  await page.locator("#book-file").setInputFiles(join(sharedDir, "fixtures/epub/wasteland.epub"));
  await page.waitForFunction(() => /Waste Land/.test(document.querySelector("#book").selectedOptions[0]?.textContent ?? ""));
  assert.match(await page.locator("#status").textContent(), /(Added .*Waste Land.*passages|in the index already)/);
  const id = await ask(page, "Which month is the cruellest?", { model: "book-upload" });
  assert.equal(await finished(page, id), "done");
  const entry = page.locator(`#${id}-src-1`);
  assert.match(await entry.locator(".title").textContent(), /Waste Land/);
  assert.match(await entry.locator(".cfi").textContent(), /^epubcfi\(\/6\//);
  // Not an EPUB: the server says why.
  const dir = mkdtempSync(join(tmpdir(), "citeflow-web-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "fake.epub"), "not a zip at all");
  await page.locator("#book-file").setInputFiles(join(dir, "fake.epub"));
  await page.waitForFunction(() => /fake\.epub: not a readable EPUB/.test(document.querySelector("#status").textContent));
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("a Japanese book opens at the cited place in vertical lines, and switches to horizontal", async () => {
  const up = await fetch(`${env.base}/v1/books`, {
    method: "POST",
    headers: { "content-type": "application/epub+zip" },
    body: readFileSync(join(sharedDir, "fixtures/epub/kusamakura-japanese-vertical-writing.epub")),
  });
  assert.ok(up.ok, `upload: ${up.status}`);
  const book = await up.json();
  const found = await searchBook(book.key, "智に働けば角が立つ", 2);
  await script(env.upstream, "kusamakura", ["山路を登りながら、こう考えた{{cite:1}}。"], { paceMs: 20 });
  const { ctx, page, errors } = await openPage();
  const id = await ask(page, "智に働けば？", { model: "kusamakura", sources: found.data });
  assert.equal(await finished(page, id), "done");
  await page.locator(`#${id}-src-1 .open-book`).click();
  await page.waitForFunction(() => document.querySelector("#reader").dataset.state === "ready");
  const r = await page.evaluate(() => {
    const d = document.querySelector("#reader");
    const body = d.querySelector(".reader-body");
    return {
      vertical: d.classList.contains("vertical"),
      mode: getComputedStyle(body).writingMode,
      lang: body.lang,
      // The marked text as the passage has it: ruby readings (<rt>) are beside it, not in it.
      marked: [...body.querySelectorAll("mark")]
        .map((x) => {
          const c = x.cloneNode(true);
          for (const rt of c.querySelectorAll("rt")) rt.remove();
          return c.textContent;
        })
        .join("\n\n"),
      rubies: body.querySelectorAll("ruby").length,
      toggle: d.querySelector("#reader-vertical").textContent,
    };
  });
  assert.equal(r.vertical, true);
  assert.equal(r.mode, "vertical-rl");
  assert.equal(r.lang, "ja-jp");
  assert.equal(r.marked, found.data[0].text);
  assert.ok(r.marked.includes("智に働けば角が立つ"), r.marked);
  assert.ok(r.rubies > 20, `ruby readings are shown: ${r.rubies}`);
  // Pages turn right to left: the next chapter is on the left, its arrow pointing there.
  const nav = await page.evaluate(() => {
    const box = (id) => document.querySelector(id).getBoundingClientRect();
    return { prev: box("#reader-prev").left, next: box("#reader-next").left, text: document.querySelector("#reader-next").textContent };
  });
  assert.ok(nav.next < nav.prev, JSON.stringify(nav));
  assert.equal(nav.text, "← 二");
  // 智 is read ち: the reading is beside its kanji, to the right in vertical lines and above
  // in horizontal ones.
  const rubyBox = () =>
    page.evaluate(() => {
      const ruby = [...document.querySelectorAll("#reader .reader-body ruby")].find((x) => x.firstChild.textContent === "智");
      const range = document.createRange();
      range.selectNodeContents(ruby.firstChild);
      const base = range.getBoundingClientRect();
      const rt = ruby.querySelector("rt");
      const box = rt.getBoundingClientRect();
      const centre = (r) => ({ x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2 });
      return { reading: rt.textContent, base: centre(base), rt: centre(box) };
    });
  const v = await rubyBox();
  assert.equal(v.reading, "ち");
  assert.ok(v.rt.x > v.base.x + 4 && Math.abs(v.rt.y - v.base.y) < 12, `vertical: the reading is right of its kanji ${JSON.stringify(v)}`);
  await shot(page, page.locator("#reader"), "book-reader-vertical.png");
  await page.locator("#reader-vertical").click();
  assert.equal(await page.evaluate(() => getComputedStyle(document.querySelector("#reader .reader-body")).writingMode), "horizontal-tb");
  const hz = await rubyBox();
  assert.ok(hz.rt.y < hz.base.y - 4 && Math.abs(hz.rt.x - hz.base.x) < 12, `horizontal: the reading is above its kanji ${JSON.stringify(hz)}`);
  await page.locator("#reader-close").click();
  await page.waitForFunction(() => !document.querySelector("#reader").open);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("client-side rendering with the WASM core shows the same numbers as the server", async () => {
  const wasm = await fetch(`${env.base}/wasm/citeflow_wasm.js`, { method: "HEAD" });
  await wasm.arrayBuffer();
  assert.equal(wasm.status, 200, "the WASM web build is served at /wasm/ (scripts/test-web.sh builds it)");
  await script(env.upstream, "paris-wasm", PIECES, { paceMs: 40, splitBytes: 7 });
  const { ctx, page, errors, requests } = await openPage();
  const server = await ask(page, "server-side", { model: "paris-wasm", sources: SOURCES });
  assert.equal(await finished(page, server), "done");
  await page.locator("#render").selectOption("client");
  const client = await ask(page, "client-side", { model: "paris-wasm" });
  assert.equal(await finished(page, client), "done");
  const [s, c] = [await view(page, server), await view(page, client)];
  assert.equal(c.text, EXPECTED_TEXT);
  assert.equal(c.text, s.text);
  assert.deepEqual(c.numbers, s.numbers);
  assert.deepEqual(c.list, s.list);
  assert.deepEqual(c.unresolved, s.unresolved);
  assert.match(c.report, /rendered in the browser \(WASM\)/);
  const posts = requests.filter((r) => r.url.endsWith("/v1/chat/completions"));
  assert.equal(posts.length, 2);
  assert.ok(requests.some((r) => r.url.endsWith("/wasm/citeflow_wasm_bg.wasm")));
  assert.deepEqual(errors, []);
  await ctx.close();
});

// Claim anchors (issue 43): the page asks with citeflow.settings.anchors; hovering or focusing
// [n] shows the sentence of its source that supports the claim; a weak or unsupported citation
// is marked. In both renderings: the server's core and the browser's WASM core.
const ANCHOR_SOURCES = [
  {
    id: "source_1",
    title: "Seine — Wikipedia",
    url: "https://en.wikipedia.org/wiki/Seine",
    text: "The Seine 🌊 is a river in Île-de-France. The Seine flows through Paris and into the English Channel. Its length is 777 km.",
  },
  { id: "source_2", title: "Moon — Wikipedia", url: "https://en.wikipedia.org/wiki/Moon", text: "The Moon orbits the Earth. It has no atmosphere to speak of." },
];
const ANCHOR_PIECES = ["The Seine flows through Paris [[sour", "ce_1]]. The Seine is 777 km", " long [[source_1]]. Bananas are blue [[source_2]]."];

/** Each citation's verdict class and mark, as the page shows them. */
function verdicts(page, id) {
  return page.evaluate((i) =>
    [...document.querySelectorAll(`#${i} .text .cite`)].map((sup) => [
      Number(sup.querySelector("a").dataset.n),
      sup.dataset.verdict ?? null,
      getComputedStyle(sup, "::after").content,
    ]), id);
}

for (const render of ["server", "client"]) {
  test(`claim anchors (${render}): hovering [n] shows the supporting quote; weak and unsupported citations are marked`, async () => {
    await script(env.upstream, `anchors-${render}`, ANCHOR_PIECES, { paceMs: 150 });
    const { ctx, page, errors, requests } = await openPage();
    if (render === "client") await page.locator("#render").selectOption("client");
    const id = await ask(page, "Tell me about the Seine.", { model: `anchors-${render}`, sources: ANCHOR_SOURCES });
    // The first sentence's anchor comes while the answer still streams.
    await page.waitForFunction((i) => document.querySelector(`#${i} .text .cite[data-verdict]`), id, { timeout: 20000 });
    assert.equal(await page.locator(`#${id}`).getAttribute("aria-busy"), "true", "the anchor came before the answer's end");
    assert.equal(await finished(page, id), "done");
    const v = await view(page, id);
    assert.equal(v.text, "The Seine flows through Paris [1]. The Seine is 777 km long [1]. Bananas are blue [2].");
    if (render === "server") {
      const post = requests.filter((r) => r.url.endsWith("/v1/chat/completions")).pop();
      assert.deepEqual(JSON.parse(post.body).citeflow.settings, { anchors: true });
    }
    // The second citation's verdict is the core's to tune; its mark follows it.
    const marks = await verdicts(page, id);
    const mark = { supported: "none", weak: '"?"', unsupported: '"!"' };
    assert.deepEqual(marks, [
      [1, "supported", "none"],
      [1, marks[1][1], mark[marks[1][1]]],
      [2, "unsupported", '"!"'],
    ]);
    await shot(page, page.locator(`#${id}`), `anchors-marked-${render}.png`);
    const cite = page.locator(`#${id} .text .cite a`);
    await cite.nth(0).hover();
    await page.waitForSelector("#tip:not([hidden])");
    assert.equal(await page.locator("#tip .tip-quote").textContent(), "The Seine flows through Paris and into the English Channel.");
    assert.match(await page.locator("#tip .tip-verdict").textContent(), /^The source supports this \(support [01]\.\d\d\)$/);
    // Marked in its passage: the source's text around it.
    assert.match(await page.locator("#tip .tip-passage").textContent(), /Île-de-France\. The Seine flows through Paris and into the English Channel\. Its length/);
    assert.match(await page.locator("#tip").textContent(), /^1\. Seine — Wikipedia/);
    await shot(page, page.locator(".layout"), `anchors-hover-${render}.png`);
    // The same number's second citation has a quote of its own.
    await cite.nth(1).hover();
    // (the core may widen a quote to the adjacent sentence that adds claim terms)
    assert.match(await page.locator("#tip .tip-quote").textContent(), /Its length is 777 km\.$/);
    // Keyboard focus shows it too; an unsupported citation says nothing in the source says it.
    await page.mouse.move(0, 0);
    await cite.nth(2).focus();
    await page.waitForSelector("#tip:not([hidden])");
    assert.equal(await page.locator("#tip .tip-quote").count(), 0, "no sentence of the Moon shares a term");
    assert.match(await page.locator("#tip .tip-verdict").textContent(), /Nothing found in this source says this/);
    assert.match(await cite.nth(2).getAttribute("aria-label"), /Nothing found in this source says this/);
    await shot(page, page.locator(".layout"), `anchors-unsupported-${render}.png`);
    assert.deepEqual(errors, []);
    await ctx.close();
  });
}

test("phone width: readable, nothing wider than the screen", async () => {
  await script(env.upstream, "paris-phone", PIECES, { paceMs: 5 });
  const { ctx, page } = await openPage({ width: 390, height: 844 });
  const id = await ask(page, "Paris?", { model: "paris-phone", sources: SOURCES });
  assert.equal(await finished(page, id), "done");
  const m = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    width: window.innerWidth,
    font: parseFloat(getComputedStyle(document.querySelector(".text")).fontSize),
  }));
  assert.ok(m.scroll <= m.width, `page ${m.scroll}px wide on a ${m.width}px screen`);
  assert.ok(m.font >= 14);
  await ctx.close();
});
