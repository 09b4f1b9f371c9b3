// The web build in headless Chromium (Debian's chromium driven by playwright-core), loaded
// from a static server on 127.0.0.1 that this test starts and stops.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join, dirname, normalize, extname } from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = process.env.CITEFLOW_WASM_PKG ?? join(here, "..", "..", "pkg");
const executablePath = process.env.CITEFLOW_CHROMIUM ?? "/usr/bin/chromium";
const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
};
const page = `<!doctype html><meta charset="utf-8"><title>citeflow</title><p id="out"></p>`;

let server;
let browser;
let origin;

before(async () => {
  assert.ok(existsSync(join(pkgDir, "web", "citeflow_wasm.js")), `no web build in ${pkgDir}`);
  assert.ok(existsSync(executablePath), `no chromium at ${executablePath}`);
  server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    if (path === "/") {
      res.writeHead(200, { "content-type": types[".html"] });
      res.end(page);
      return;
    }
    const file = normalize(join(pkgDir, path));
    if (!file.startsWith(pkgDir)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({
    executablePath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
});

after(async () => {
  await browser?.close();
  await new Promise((ok) => (server ? server.close(ok) : ok()));
});

test("web_build_numbers_a_marker_split_across_chunks_in_chromium", async () => {
  const ctx = await browser.newContext();
  const tab = await ctx.newPage();
  const errors = [];
  tab.on("pageerror", (e) => errors.push(String(e)));
  await tab.goto(`${origin}/`);
  const got = await tab.evaluate(async () => {
    const cf = await import("/web/citeflow_wasm.js");
    await cf.default(); // fetches citeflow_wasm_bg.wasm next to the module
    const sources = cf.Sources.fromArray([
      { id: "source_7", title: "Paris" },
      { id: "source_3", title: "France" },
    ]);
    const rw = new cf.Rewriter(sources, { settings: { style: "brackets" } });
    const events = [];
    for (const chunk of ["France [[sour", "ce_3]] and Paris <cite:so", "urce_7> then [[source_3", "]]."]) {
      events.push(...rw.feed(chunk));
    }
    events.push(...rw.finish());
    const text = events.filter((e) => e.type === "text").map((e) => e.text).join("");
    document.getElementById("out").textContent = text;
    let code;
    try {
      rw.write("late");
    } catch (e) {
      code = `${e.name}/${e.code}`;
    }
    return {
      text,
      citations: events.filter((e) => e.type === "citation").map((e) => e.number),
      done: events.at(-1),
      code,
      ua: navigator.userAgent,
    };
  });
  assert.deepStrictEqual(errors, []);
  assert.match(got.ua, /HeadlessChrome|Chrome/);
  assert.equal(got.text, "France [1] and Paris [2] then [1].");
  assert.deepStrictEqual(got.citations, [1, 2, 1]);
  assert.equal(got.done.type, "done");
  assert.deepStrictEqual(got.done.report.numbers_in_body, [1, 2]);
  assert.equal(got.done.report.verified, true);
  assert.equal(got.code, "RewriteError/ended");
  assert.equal(await tab.textContent("#out"), "France [1] and Paris [2] then [1].");
  await ctx.close();
});
