// Drives the Chainlit example in headless Chromium (Debian's, through playwright-core from
// crates/server/tests/browser): asks QUESTION, samples the answer while it streams, clicks
// each citation link and reads the side panel (its text and its bold parts), takes a
// screenshot. Prints one JSON object.
// Env: CL_URL, QUESTION, SHOT, PLAYWRIGHT_CORE (the package's index.mjs), ANSWER_MS (how long
// to wait for the whole answer; default 60000: the local model of crates/llm/tests/agents is
// slower than the replaying upstream). The answer is whole at any "Round n" (a search with no
// results lists no round).
const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
const browser = await chromium.launch({
  executablePath: process.env.CITEFLOW_CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(process.env.CL_URL);
  await page.waitForSelector("#chat-input", { timeout: 30000 });
  // The socket connects after the page shows (and the input may be reset then): fill and
  // submit until the question shows as sent.
  for (let i = 0; ; i++) {
    await page.waitForTimeout(500);
    await page.fill("#chat-input", process.env.QUESTION);
    if (!(await page.locator("#chat-submit").isDisabled())) {
      await page.click("#chat-submit");
      try {
        await page.waitForSelector('[data-step-type="user_message"]', { timeout: 2000 });
        break;
      } catch (e) {
        if (i >= 20) throw e;
      }
    } else if (i >= 60) {
      throw new Error("the submit button stayed disabled");
    }
  }
  const answer = () =>
    page.evaluate(() => {
      const m = [...document.querySelectorAll('[data-step-type="assistant_message"] .message-content')].pop();
      if (!m) return null;
      return { text: m.innerText, links: [...m.querySelectorAll("a.element-link")].map((a) => a.innerText) };
    });
  const samples = [];
  const start = Date.now();
  while (Date.now() - start < Number(process.env.ANSWER_MS ?? 60000)) {
    const a = await answer();
    if (a) samples.push(a);
    if (a && /Round \d/.test(a.text)) break;
    await page.waitForTimeout(50);
  }
  await page.waitForTimeout(300);
  const final = await answer();
  const opened = [];
  for (const name of [...new Set(final.links)]) {
    await page.locator("a.element-link", { hasText: name }).first().click();
    await page.waitForFunction((n) => document.querySelector("#side-view-title")?.innerText.trim() === n, name, { timeout: 5000 });
    opened.push({
      name,
      title: (await page.locator("#side-view-title").innerText()).trim(),
      content: await page.locator("#side-view-content").innerText(),
      // What the panel shows in bold (markdown's **…**), whatever element draws it.
      bold: await page.evaluate(() => {
        const heavy = (el) => el && Number(getComputedStyle(el).fontWeight) >= 600;
        const root = document.querySelector("#side-view-content");
        return [...root.querySelectorAll("*")]
          .filter((el) => heavy(el) && !heavy(el.parentElement) && el.innerText.trim())
          .map((el) => el.innerText.trim());
      }),
    });
  }
  await page.screenshot({ path: process.env.SHOT });
  console.log(JSON.stringify({ samples, final, opened }));
} finally {
  await browser.close();
}
