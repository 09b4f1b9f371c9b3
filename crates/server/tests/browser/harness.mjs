// The browser tests' environment: a replaying upstream and `citeflow serve`, each on a free
// loopback port, and headless Chromium (Debian's, driven by playwright-core).
//
// scripts/test-web.sh starts both servers itself and passes them as CITEFLOW_WEB_BASE (the
// citeflow server) and CITEFLOW_WEB_UPSTREAM (the replaying upstream, `…/v1`). Without them the
// tests start their own: the upstream in this process and `citeflow serve` from
// CITEFLOW_BIN (default: target/debug/citeflow of the workspace). Either way citeflow serve
// has a fresh book index with alice.epub ingested at start-up (`--index DIR --book …`).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

import { chromium } from "playwright-core";
import { startUpstream, sharedDir } from "./upstream.mjs";

const here = dirname(fileURLToPath(import.meta.url));
export const root = resolve(here, "../../../..");
// Screenshots go under target/ (CARGO_TARGET_DIR); the docs' copies change only through an
// explicit bless: CITEFLOW_BLESS=1 writes them to docs/screenshots/ (review and commit).
export const screenshots = process.env.CITEFLOW_BLESS
  ? join(root, "docs/screenshots")
  : join(process.env.CARGO_TARGET_DIR ?? join(root, "target"), "screenshots");
export const executablePath = process.env.CITEFLOW_CHROMIUM ?? "/usr/bin/chromium";
export const citeflowBin =
  process.env.CITEFLOW_BIN ?? join(process.env.CARGO_TARGET_DIR ?? join(root, "target"), "debug/citeflow");

/** The book `citeflow serve` ingests at start-up for the tests (`--book`). */
export const BOOK = join(sharedDir, "fixtures/epub/alice.epub");

/** Starts `citeflow serve` on a free port against `upstream`, with a fresh book index holding
 * BOOK; resolves to {base, stop}. */
export async function startCiteflow(upstream) {
  if (!existsSync(citeflowBin)) throw new Error(`no citeflow binary at ${citeflowBin} (set CITEFLOW_BIN)`);
  const index = mkdtempSync(join(tmpdir(), "citeflow-web-index-"));
  const child = spawn(
    citeflowBin,
    ["serve", "--listen", "127.0.0.1:0", "--upstream", upstream, "--anthropic-upstream", upstream, "--store", "memory", "--index", index, "--book", BOOK],
    { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, CITEFLOW_LOG: process.env.CITEFLOW_LOG ?? "warn" } },
  );
  const lines = createInterface({ input: child.stdout });
  const base = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error("citeflow serve printed no address in 20 s")), 20000);
    child.once("exit", (code) => fail(new Error(`citeflow serve exited with ${code}`)));
    lines.on("line", (l) => {
      const m = /listening on (http:\/\/\S+)/.exec(l);
      if (m) {
        clearTimeout(timer);
        ok(m[1]);
      }
    });
  });
  return {
    base,
    stop: () =>
      new Promise((ok) => {
        const done = () => {
          rmSync(index, { recursive: true, force: true });
          ok();
        };
        if (child.exitCode !== null) return done();
        child.once("exit", done);
        child.kill("SIGTERM");
      }),
  };
}

/** The servers under test: given by the environment, or started here. */
export async function servers() {
  if (process.env.CITEFLOW_WEB_BASE && process.env.CITEFLOW_WEB_UPSTREAM) {
    return { base: process.env.CITEFLOW_WEB_BASE, upstream: process.env.CITEFLOW_WEB_UPSTREAM, stop: async () => {} };
  }
  const up = await startUpstream();
  const cf = await startCiteflow(up.url);
  return {
    base: cf.base,
    upstream: up.url,
    stop: async () => {
      await cf.stop();
      await up.close();
    },
  };
}

/** Registers a scripted answer on the replaying upstream. */
export async function script(upstream, model, pieces, { paceMs = 60, splitBytes } = {}) {
  const origin = upstream.replace(/\/v1$/, "");
  const r = await fetch(`${origin}/_scripts`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, pieces, paceMs, splitBytes }),
  });
  await r.arrayBuffer();
  if (!r.ok) throw new Error(`cannot register script ${model}: ${r.status}`);
}

export async function launch() {
  if (!existsSync(executablePath)) throw new Error(`no chromium at ${executablePath}`);
  mkdirSync(screenshots, { recursive: true });
  return chromium.launch({
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
}
