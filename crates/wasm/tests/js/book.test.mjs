// Books in the npm package: `new Book(bytes)` cuts the fixture books into the passages
// `citeflow ingest` writes (compared byte for byte with the CLI's JSONL, default and other
// options), every passage's range CFI reads back to exactly its text, chapters, CFI parse /
// compare / resolve, typed errors. scripts/test-wasm.sh builds the CLI and sets CITEFLOW_CLI;
// without it the CLI comparison is skipped with a notice.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import {
  Book,
  Sources,
  citationInstruction,
  compareCfi,
  contextBlock,
  contextTemplate,
  parseCfi,
  promptSettings,
  rewrite,
} from "citeflow";

const here = dirname(fileURLToPath(import.meta.url));
const workspace = resolve(here, "..", "..", "..", "..");
const shared = process.env.CITEFLOW_SHARED_DIR ?? join(workspace, "..", "shared");
const cli = process.env.CITEFLOW_CLI;
const skipCli = cli ? false : "CITEFLOW_CLI is not set (scripts/test-wasm.sh sets it)";
if (skipCli) console.log(`notice: skipping the citeflow ingest comparison: ${skipCli}`);

const BOOKS = [
  "alice.epub",
  "cfi-spec-example.epub",
  "childrens-literature.epub",
  "georgia-cfi.epub",
  "kusamakura-japanese-vertical-writing.epub",
  "regime-anticancer-arabic.epub",
  "wasteland.epub",
];

function bookPath(name) {
  const p = join(shared, "fixtures", "epub", name);
  if (!existsSync(p)) throw new Error(`fixture book ${p} is missing (set CITEFLOW_SHARED_DIR)`);
  return p;
}

const opened = new Map();
function open(name) {
  if (!opened.has(name)) opened.set(name, new Book(new Uint8Array(readFileSync(bookPath(name)))));
  return opened.get(name);
}

function optionsOf(name) {
  const out = [
    [[], undefined],
    [["--target-chars", "300", "--overlap-chars", "40"], { targetChars: 300, overlapChars: 40 }],
  ];
  if (name.startsWith("kusamakura")) out.push([["--ruby"], { rubyText: true }]);
  return out;
}

test("passages_equal_citeflow_ingest_output_byte_for_byte", { skip: skipCli }, () => {
  assert.ok(existsSync(cli), `no CLI at ${cli}`);
  for (const name of BOOKS) {
    for (const [args, options] of optionsOf(name)) {
      const r = spawnSync(cli, ["ingest", "--format", "jsonl", ...args, bookPath(name)], {
        encoding: "utf8",
        maxBuffer: 1 << 28,
      });
      assert.equal(r.status, 0, `citeflow ingest ${name} ${args.join(" ")} failed: ${r.stderr}`);
      const ours = open(name)
        .passages(options)
        .map((p) => JSON.stringify(p) + "\n")
        .join("");
      assert.ok(r.stdout.length > 0, name);
      assert.equal(ours, r.stdout, `${name} ${args.join(" ")}`);
    }
  }
});

test("every_passage_cfi_reads_back_exactly_its_text", () => {
  let count = 0;
  for (const name of BOOKS) {
    const b = open(name);
    for (const rubyText of name.startsWith("kusamakura") ? [false, true] : [false]) {
      for (const p of b.passages({ rubyText })) {
        const r = b.reading(p.cfi, { rubyText });
        assert.equal(r.text, p.text, `${name} ${p.cfi}`);
        assert.deepEqual(
          [r.chapter_index, r.chapter_title, r.spine_index, r.href],
          [p.chapter_index, p.chapter_title, p.spine_index, p.href],
        );
        const start = b.reading(p.start_cfi, { rubyText });
        assert.deepEqual(start.mark.start, start.mark.end);
        assert.deepEqual(start.mark.start, r.mark.start);
        count++;
      }
    }
  }
  assert.ok(count > 1000, `${count} passages`);
});

test("alice_chapters_passages_and_cfis", () => {
  const b = open("alice.epub");
  assert.equal(b.title, "Alice's Adventures in Wonderland");
  assert.equal(b.bookId, "edu.nyu.itp.future-of-publishing.alice-in-wonderland");
  assert.equal(b.bookKey, "alice-s-adve-e50036");
  assert.equal(b.language, "en-US");
  const chapters = b.chapters();
  assert.deepEqual(chapters[2], {
    index: 2,
    title: "Down The Rabbit-Hole",
    depth: 0,
    spine_index: 3,
    href: "chapter_001.xhtml",
    cfi: "epubcfi(/6/8!/4)",
  });
  assert.equal(chapters[0].title, null);
  const ps = b.passages();
  assert.equal(ps.length, 92);
  const p = ps[3];
  assert.equal(p.id, "alice-s-adve-e50036#p3");
  assert.equal(p.cfi, "epubcfi(/6/8!/4/2,/8/1:192,/12/3:565)");
  assert.deepEqual(p.locator, { chapter_index: 2, chapter_title: "Down The Rabbit-Hole", cfi: p.cfi });
  assert.match(p.text, /took a watch out of its waistcoat-pocket/);
  const r = b.reading(chapters[2].cfi);
  assert.equal(r.chapter_title, "Down The Rabbit-Hole");
  assert.equal(r.previous_chapter, 1);
  assert.equal(r.next_chapter, 3);
  assert.deepEqual(r.mark, { start: { paragraph: 0, char_offset: 0 }, end: { paragraph: 0, char_offset: 0 } });

  const spec = open("cfi-spec-example.epub");
  const range = "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05],/2/1:1,/3:4)";
  assert.equal(spec.resolve(range), "yy0123");
  assert.equal(spec.reading(range).text, "yy0123");
  assert.equal(spec.resolve("epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/3:2)", 5), "23456");
  assert.equal(parseCfi("/6/4[chap01ref]"), "epubcfi(/6/4[chap01ref])");
  assert.equal(compareCfi("epubcfi(/6/2)", "epubcfi(/6/4)"), -1);
  assert.equal(compareCfi("epubcfi(/6/4)", "epubcfi(/6/2)"), 1);
  assert.equal(compareCfi("epubcfi(/6/4)", "/6/4"), 0);
});

test("book_errors_are_typed", () => {
  assert.throws(() => new Book(new Uint8Array([1, 2, 3])), (e) => {
    assert.equal(e.name, "EpubError");
    assert.equal(e.code, "not_zip");
    assert.match(e.message, /^not a zip archive/);
    return true;
  });
  assert.throws(() => parseCfi("epubcfi(/6/x)"), { name: "CfiError", code: "cfi_parse" });
  const b = open("alice.epub");
  assert.throws(() => b.reading("epubcfi(/6/9999!/4/2/1:0)"), (e) => {
    assert.equal(e.name, "CfiError");
    assert.equal(e.code, "step_out_of_range");
    assert.match(e.message, /\(\/9999\) has no target/);
    return true;
  });
  assert.throws(() => b.passages({ targetChars: "big" }), { name: "SettingsError", code: "invalid_settings" });
});

test("passages_are_sources_for_the_prompt_and_the_rewriter", () => {
  const ps = open("alice.epub").passages();
  const retrieved = [ps[3], ps[37]];
  const sources = Sources.fromArray(retrieved);
  const block = contextBlock(sources, "rank_full_width", 1000);
  assert.ok(
    block.startsWith(`【1】 (章:Down The Rabbit-Hole, CFI:${ps[3].cfi}) Alice's Adventures in Wonderland — Down The Rabbit-Hole: `),
    block,
  );
  assert.match(citationInstruction(sources, "rank_full_width"), /for example 【1】/);
  // The book form: 【n】(章:chapter index, CFI:…) and the text on the next line.
  assert.equal(
    contextTemplate(sources),
    `【1】(章:2, CFI:${ps[3].cfi})\n${ps[3].text}\n\n【2】(章:${ps[37].chapter_index}, CFI:${ps[37].cfi})\n${ps[37].text}`,
  );
  assert.equal(contextTemplate(sources, "[{n}] {id} {chapter_title}|{nope}", 5), `[1] ${ps[3].id} Down The Rabbit-Hole|{nope}\n\n[2] ${ps[37].id} ${ps[37].chapter_title}|{nope}`);
  const r = rewrite("A watch【1】 and gloves【2】【1】.", sources, { settings: promptSettings("rank_full_width") });
  assert.equal(r.text, "A watch[1] and gloves[2][1].");
  const done = r.events.at(-1);
  assert.deepEqual(
    done.sources.map((l) => [l.number, l.source.id, l.source.locator]),
    [
      [1, ps[3].id, { chapter_index: 2, chapter_title: "Down The Rabbit-Hole", cfi: ps[3].cfi }],
      [2, ps[37].id, { chapter_index: ps[37].chapter_index, chapter_title: ps[37].chapter_title, cfi: ps[37].cfi }],
    ],
  );
});
