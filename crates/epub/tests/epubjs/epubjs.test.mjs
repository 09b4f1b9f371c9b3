// The real epub.js 0.3.93 (npm `epubjs`, its dist/epub.js with JSZip, pinned in
// package-lock.json) in headless Chromium (Debian's chromium driven by playwright-core)
// resolves citeflow's epub.js-flavoured CFI of every non-whitespace text node of the fixture
// books to that node: each book is opened from its bytes with ePub(), the section is found
// from the CFI (book.spine.get(cfi), as a reader's display(cfi) does) and loaded as epub.js
// loads it (section.load: the XHTML parsed as application/xhtml+xml), and
// new ePub.CFI(cfi).toRange(section.document) must start at offset 0 of a text node whose
// data is the node's text. The spec CFIs of the nodes where the flavours differ are resolved
// too, to count how often epub.js opens those at the wrong place. The node meant is found
// without CFIs (the node_ordinal-th non-whitespace text node under <body>, by a TreeWalker),
// and the range must start at that very node. A second test opens every passage's range CFI
// (epub.js flavour) and compares the range's text with the passage's.
//
// Input: CITEFLOW_EPUBJS_INPUT and CITEFLOW_EPUBJS_PASSAGES, the JSON lines of
// `cargo run -p citeflow-epub --example epubjs_cfis -- [--passages] BOOKS…`
// (scripts/test-epubjs.sh makes them); books from CITEFLOW_SHARED_DIR/fixtures/epub.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const executablePath = process.env.CITEFLOW_CHROMIUM ?? "/usr/bin/chromium";
const input = process.env.CITEFLOW_EPUBJS_INPUT;
const shared = process.env.CITEFLOW_SHARED_DIR ?? join(here, "..", "..", "..", "..", "..", "shared");

let browser;
let page;

before(async () => {
  assert.ok(input && existsSync(input), `no input at ${input} (set CITEFLOW_EPUBJS_INPUT)`);
  assert.ok(existsSync(executablePath), `no chromium at ${executablePath}`);
  const version = JSON.parse(await readFile(join(here, "node_modules/epubjs/package.json"), "utf8")).version;
  assert.equal(version, "0.3.93", "the epubjs package the oracle was made with");
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
  page = await browser.newPage();
  await page.setContent(`<!doctype html><meta charset="utf-8"><title>epub.js</title>`);
  await page.addScriptTag({ path: require.resolve("jszip/dist/jszip.min.js") });
  await page.addScriptTag({ path: join(here, "node_modules/epubjs/dist/epub.js") });
  assert.equal(await page.evaluate(() => typeof ePub.CFI), "function");
});

after(async () => {
  await browser?.close();
});

/// Runs in the page: resolves every node's CFI (and the differing spec CFIs) with epub.js and
/// checks the node reached is the node meant: the node_ordinal-th non-whitespace text or CDATA
/// node under <body> in document order (found with a TreeWalker, not with a CFI).
async function resolveInPage({ base64, nodes }) {
  // Rust's char::is_whitespace (Unicode White_Space), which the ordinals were counted with.
  const ws = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const book = ePub(bytes.buffer);
  await book.opened;
  const sections = new Map();
  const load = async (cfi) => {
    const section = book.spine.get(cfi);
    if (!section) return null;
    if (!sections.has(section.index)) {
      await section.load(book.load.bind(book));
      const doc = section.document;
      const body = doc.getElementsByTagName("body")[0];
      const texts = [];
      const walker = doc.createTreeWalker(body, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_CDATA_SECTION);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (!ws.test(n.data)) texts.push(n);
      }
      sections.set(section.index, { index: section.index, doc, texts });
    }
    return sections.get(section.index);
  };
  const out = [];
  for (const n of nodes) {
    const s = await load(n.cfi);
    if (!s) {
      out.push({ section: null });
      continue;
    }
    const meant = s.texts[n.node_ordinal];
    const range = new ePub.CFI(n.cfi).toRange(s.doc);
    const c = range ? range.startContainer : null;
    const r = {
      section: s.index,
      range: range !== null,
      same: c !== null && c === meant,
      type: c ? c.nodeType : null,
      data: c && (c.nodeType === 3 || c.nodeType === 4) ? c.data : null,
      offset: range ? range.startOffset : null,
      meantText: meant ? meant.data === n.text : false,
    };
    if (n.cfi_spec !== n.cfi) {
      const sr = new ePub.CFI(n.cfi_spec).toRange(s.doc);
      r.spec = sr !== null && sr.startContainer === meant && sr.startOffset === 0;
    }
    out.push(r);
  }
  book.destroy();
  return out;
}

test("epubjs_0_3_93_resolves_our_epubjs_flavoured_cfi_of_every_text_node", async () => {
  const started = Date.now();
  const lines = (await readFile(input, "utf8")).split("\n").filter((l) => l.trim() !== "");
  const nodes = lines.map((l) => JSON.parse(l));
  const byBook = new Map();
  for (const n of nodes) {
    if (!byBook.has(n.book)) byBook.set(n.book, []);
    byBook.get(n.book).push(n);
  }
  let exact = 0;
  let differing = 0;
  const specRight = [];
  const cdata = [];
  const failures = [];
  for (const [name, list] of byBook) {
    const base64 = (await readFile(join(shared, "fixtures", "epub", name))).toString("base64");
    const results = await page.evaluate(resolveInPage, { base64, nodes: list });
    assert.equal(results.length, list.length);
    list.forEach((n, i) => {
      const r = results[i];
      if (n.cfi !== n.cfi_spec) {
        differing += 1;
        if (r.spec) specRight.push(n.cfi_spec);
      }
      if (n.is_cdata) {
        // epub.js writes /0/1:n for a CDATA section and cannot resolve it itself:
        // toRange's XPath step *[0] selects nothing, so it returns null.
        cdata.push({ name, cfi: n.cfi, range: r.range, meantText: r.meantText });
        return;
      }
      const ok =
        r.section === n.spine_index && r.meantText && r.same && r.type === 3 && r.data === n.text && r.offset === 0;
      if (ok) exact += 1;
      else if (failures.length < 20) failures.push({ name, cfi: n.cfi, text: n.text.slice(0, 40), ...r });
    });
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `epub.js 0.3.93 in Chromium: ${exact} of ${nodes.length} text nodes resolved to the node itself ` +
      `(start offset 0) from our epub.js-flavoured CFI; ${cdata.length} CDATA section(s), which epub.js cannot resolve; ` +
      `of the ${differing} nodes whose CFIs differ, the spec CFI reaches the node in epub.js ${specRight.length} times${specRight.length ? ` (${specRight.join(", ")})` : ""}; ${secs} s`,
  );
  assert.deepEqual(failures, []);
  assert.equal(nodes.length, 18765);
  assert.equal(differing, 1058);
  assert.deepEqual(cdata, [
    { name: "childrens-literature.epub", cfi: "epubcfi(/6/4!/4/8/0/1:0)", range: false, meantText: true },
  ]);
  assert.equal(exact, 18765 - 1);
  assert.deepEqual(specRight, [], "spec CFIs that epub.js resolves to the node");
});

/// Runs in the page: opens each passage's range CFI with epub.js and returns the text of the
/// range (and of the spec CFI's range where the two differ).
async function rangesInPage({ base64, passages }) {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const book = ePub(bytes.buffer);
  await book.opened;
  const docs = new Map();
  const out = [];
  for (const p of passages) {
    const section = book.spine.get(p.cfi);
    if (!docs.has(section.index)) {
      await section.load(book.load.bind(book));
      docs.set(section.index, section.document);
    }
    const doc = docs.get(section.index);
    const text = (cfi) => {
      try {
        const range = new ePub.CFI(cfi).toRange(doc);
        return range ? range.toString() : null;
      } catch (e) {
        return `error: ${e}`;
      }
    };
    out.push({ section: section.index, text: text(p.cfi), spec: p.cfi_spec === p.cfi ? undefined : text(p.cfi_spec) });
  }
  book.destroy();
  return out;
}

test("epubjs_0_3_93_opens_each_passage_range_cfi_at_exactly_its_text", async () => {
  const started = Date.now();
  const file = process.env.CITEFLOW_EPUBJS_PASSAGES;
  assert.ok(file && existsSync(file), `no passages at ${file} (set CITEFLOW_EPUBJS_PASSAGES)`);
  const passages = (await readFile(file, "utf8"))
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));
  const byBook = new Map();
  for (const p of passages) {
    if (!byBook.has(p.book)) byBook.set(p.book, []);
    byBook.get(p.book).push(p);
  }
  // Passage text collapses whitespace and separates paragraphs with blank lines; the range's
  // text is the document's, so both are compared without whitespace.
  const squash = (t) => (t === null ? null : t.replace(/\s+/g, ""));
  let exact = 0;
  let differing = 0;
  let specSame = 0;
  const failures = [];
  for (const [name, list] of byBook) {
    const base64 = (await readFile(join(shared, "fixtures", "epub", name))).toString("base64");
    const results = await page.evaluate(rangesInPage, { base64, passages: list });
    list.forEach((p, i) => {
      const r = results[i];
      if (r.section === p.spine_index && squash(r.text) === squash(p.text)) exact += 1;
      else if (failures.length < 10)
        failures.push({ name, index: p.index, cfi: p.cfi, want: p.text.slice(0, 60), got: r.text?.slice(0, 60) });
      if (r.spec !== undefined) {
        differing += 1;
        if (squash(r.spec) === squash(p.text)) specSame += 1;
      }
    });
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `epub.js 0.3.93 in Chromium: ${exact} of ${passages.length} passages opened at exactly their text from ` +
      `their epub.js-flavoured range CFI; of the ${differing} whose spec CFI differs, epub.js opens the spec ` +
      `CFI at the passage's text ${specSame} times; ${secs} s`,
  );
  assert.deepEqual(failures, []);
  assert.equal(exact, passages.length);
  assert.equal(passages.length, 996);
  assert.equal(differing, 79, "passages whose spec and epub.js CFIs differ");
  assert.equal(specSame, 0, "spec CFIs that epub.js opens at the passage's text");
});

test("epubjs_0_3_93_opens_each_quoted_sentence_range_cfi_at_exactly_its_sentence", async () => {
  // Issue 43: a citation's quote in a book passage carries the range CFI of its sentence
  // (Book::passage_range_cfi, epub.js flavour, ruby readings in the text).
  const started = Date.now();
  const file = process.env.CITEFLOW_EPUBJS_SENTENCES;
  assert.ok(file && existsSync(file), `no sentences at ${file} (set CITEFLOW_EPUBJS_SENTENCES)`);
  const sentences = (await readFile(file, "utf8"))
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));
  const byBook = new Map();
  for (const s of sentences) {
    if (!byBook.has(s.book)) byBook.set(s.book, []);
    byBook.get(s.book).push(s);
  }
  const squash = (t) => (t === null ? null : t.replace(/\s+/g, ""));
  let exact = 0;
  const failures = [];
  for (const [name, list] of byBook) {
    const base64 = (await readFile(join(shared, "fixtures", "epub", name))).toString("base64");
    const results = await page.evaluate(rangesInPage, { base64, passages: list });
    list.forEach((s, i) => {
      const r = results[i];
      if (r.section === s.spine_index && squash(r.text) === squash(s.text)) exact += 1;
      else if (failures.length < 10) failures.push({ name, cfi: s.cfi, want: s.text, got: r.text });
    });
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `epub.js 0.3.93 in Chromium: ${exact} of ${sentences.length} quoted sentences opened at exactly their ` +
      `text from their epub.js-flavoured range CFI; ${secs} s`,
  );
  assert.deepEqual(failures, []);
  assert.ok(sentences.length > 1000, `only ${sentences.length} sentences`);
  assert.equal(exact, sentences.length);
});
