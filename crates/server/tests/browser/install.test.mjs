// The page of an installed `citeflow` run alone from an empty directory (scripts/test-install.sh
// starts it and passes CITEFLOW_WEB_BASE, CITEFLOW_WEB_UPSTREAM and CITEFLOW_WASM_ASSETS): its
// browser rendering works with the WASM compiled into the binary, and gives the text, numbers
// and source list the server gives.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { servers, script, launch } from "./harness.mjs";

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
  { id: "source_3", title: "Paris — Wikipedia", url: "https://en.wikipedia.org/wiki/Paris" },
  { id: "source_7", title: "Seine — Wikipedia", url: "https://en.wikipedia.org/wiki/Seine" },
  { id: "source_12", title: "Eiffel Tower — Wikipedia", url: "https://en.wikipedia.org/wiki/Eiffel_Tower" },
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

async function ask(page, question, model) {
  await setField(page, "#model", model);
  await setField(page, "#marker", "double_bracket");
  await setField(page, "#sources-json", JSON.stringify(SOURCES));
  const before = await page.locator(".answer").count();
  await page.locator("#question").fill(question);
  await page.locator("#question").press("Enter");
  await page.waitForFunction((n) => document.querySelectorAll(".answer").length > n, before);
  const id = await page.locator(".answer").nth(before).getAttribute("id");
  await page.waitForFunction((i) => document.getElementById(i)?.dataset.state, id, { timeout: 30000 });
  return id;
}

function view(page, id) {
  return page.evaluate((i) => {
    const card = document.getElementById(i);
    return {
      state: card.dataset.state,
      text: card.querySelector(".text").textContent,
      numbers: [...card.querySelectorAll(".text .cite a")].map((a) => Number(a.dataset.n)),
      unresolved: card.querySelectorAll(".text .unresolved").length,
      list: [...card.querySelectorAll(".src")].map((li) => [Number(li.dataset.n), li.dataset.sourceId]),
      report: card.querySelector(".report").textContent,
    };
  }, id);
}

test("the installed binary's page renders in the browser with its embedded WASM", async () => {
  const assets = process.env.CITEFLOW_WASM_ASSETS;
  assert.ok(assets, "CITEFLOW_WASM_ASSETS names the vendored WASM directory");
  // The binary serves exactly the vendored files.
  for (const f of ["citeflow_wasm.js", "citeflow_wasm_bg.wasm"]) {
    const r = await fetch(`${env.base}/wasm/${f}`);
    const served = Buffer.from(await r.arrayBuffer());
    assert.equal(r.status, 200, f);
    assert.ok(served.equals(readFileSync(join(assets, f))), `${f} is the vendored file`);
  }
  await script(env.upstream, "paris-installed", PIECES, { paceMs: 20, splitBytes: 7 });
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await ctx.newPage();
  const errors = [];
  const wasmRequests = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => r.url().includes("/wasm/") && wasmRequests.push(new URL(r.url()).pathname));
  await page.goto(`${env.base}/`);
  await page.waitForFunction(() => document.documentElement.dataset.ready === "1");
  assert.equal(await page.locator('#render option[value="client"]').isDisabled(), false, "the switch is enabled");

  const server = await view(page, await ask(page, "server-side", "paris-installed"));
  await page.locator("#render").selectOption("client");
  const client = await view(page, await ask(page, "client-side", "paris-installed"));

  for (const v of [server, client]) {
    assert.equal(v.state, "done");
    assert.equal(v.text, EXPECTED_TEXT);
    assert.deepEqual(v.numbers, [1, 2, 3, 1]);
    assert.equal(v.unresolved, 1);
    assert.deepEqual(v.list, [
      [1, "source_3"],
      [2, "source_7"],
      [3, "source_12"],
    ]);
  }
  assert.match(client.report, /rendered in the browser \(WASM\)/);
  assert.doesNotMatch(server.report, /rendered in the browser/);
  assert.ok(wasmRequests.includes("/wasm/citeflow_wasm_bg.wasm"), `loaded ${wasmRequests}`);
  assert.deepEqual(errors, []);
  await ctx.close();
});
