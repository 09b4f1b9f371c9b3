// citeflow chat page. Plain ES module, no build step, no dependencies.
//
// Every citation decision is made by the Rust core: in the default mode by the server (this
// page only displays the text and the `citeflow.events` of each chunk), in the client-side
// mode by the same core compiled to WebAssembly (`/wasm/citeflow_wasm.js`). The page never
// looks for markers in the text: it places each number where the core's `citation` event says
// it starts (`byte_offset`, UTF-8 bytes of the rendered text) and knows how long the rendering
// is from the style it asked for.

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];
const encoder = new TextEncoder();

/** Where the list of an answer folds: entries after this many are behind "Show more". */
const LIST_FOLD = 8;
/** Reconnect attempts after a dropped stream, and the pause before each (ms). */
const RESUME_DELAYS_MS = [250, 500, 1000, 2000, 4000, 8000];

const DEMO_SOURCES = [
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
];
const DEMO_ROUNDS = [
  {
    query: "capital of France",
    sources: [
      { id: "source_1", title: "France — Wikipedia", url: "https://en.wikipedia.org/wiki/France", snippet: "Its capital is Paris." },
    ],
  },
  {
    query: "river through Paris",
    sources: [
      { id: "source_2", title: "Seine — Wikipedia", url: "https://en.wikipedia.org/wiki/Seine", snippet: "The Seine flows through Paris." },
    ],
  },
];

// ---------------------------------------------------------------------------------------------
// Small helpers

function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function utf8Length(s) {
  return encoder.encode(s).length;
}

/** Splits `s` after at most `n` UTF-8 bytes without cutting a character: [head, rest, bytes]. */
function splitAtBytes(s, n) {
  let bytes = 0;
  let i = 0;
  while (i < s.length) {
    const cp = s.codePointAt(i);
    const len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes + len > n) break;
    bytes += len;
    i += cp > 0xffff ? 2 : 1;
  }
  return [s.slice(0, i), s.slice(i), bytes];
}

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/** The text the core writes for a number in a style (the page asked for that style). */
function rendered(style, n) {
  if (style === "full_width") return `【${n}】`;
  if (style === "footnote") return `[^${n}]`;
  return `[${n}]`;
}

/** What the page shows for a number in the chosen display style. */
function label(style, n) {
  if (style === "full_width") return `【${n}】`;
  if (style === "footnote") return String(n);
  return `[${n}]`;
}

/** What a claim anchor's verdict says, in words (a low score: nothing in the source says it). */
const VERDICTS = {
  supported: "The source supports this",
  weak: "The source supports this only in part",
  unsupported: "Nothing found in this source says this",
};

const REASONS = {
  unknown_id: "the model cited an id that is not among the sources",
  rank_out_of_range: "the model cited a rank beyond the sources it was shown",
};

function hostOf(url) {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function safeHref(url) {
  try {
    const u = new URL(url, location.href);
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
  } catch {
    return null;
  }
}

/** Sources from pasted or uploaded text: a JSON array, `{sources: [...]}`, or JSON lines. */
function parseSources(text) {
  const t = text.trim();
  if (!t) return [];
  let list;
  if (t.startsWith("[") || t.startsWith("{\"sources\"") || /^\{\s*"sources"/.test(t)) {
    const v = JSON.parse(t);
    list = Array.isArray(v) ? v : v.sources;
  } else {
    list = t.split(/\r?\n/).filter((l) => l.trim()).map((l) => JSON.parse(l));
  }
  if (!Array.isArray(list)) throw new Error("expected a JSON array of sources");
  return list;
}

// ---------------------------------------------------------------------------------------------
// Page state

const app = {
  style: "brackets",
  render: "server",
  wasm: null, // the loaded module, or a promise of it
  wasmAvailable: false,
  sessionId: null,
  active: null, // { answer, ctl, stopped }
  answers: new Map(),
  count: 0,
};

function headers(extra = {}) {
  const key = $("#api-key").value.trim();
  return key ? { ...extra, authorization: `Bearer ${key}` } : extra;
}

function status(text) {
  $("#status").textContent = text;
}

async function apiError(resp) {
  let message = `${resp.status} ${resp.statusText}`;
  try {
    const v = await resp.json();
    if (v?.error?.message) message = `${v.error.message} (${v.error.code ?? resp.status})`;
  } catch {
    /* not JSON */
  }
  return new Error(message);
}

async function api(method, path, body) {
  const resp = await fetch(path, {
    method,
    headers: headers(body ? { "content-type": "application/json" } : {}),
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!resp.ok) throw await apiError(resp);
  return resp.status === 204 ? null : resp.json();
}

// ---------------------------------------------------------------------------------------------
// One answer: the card, the text with its numbers, the source list

class Answer {
  constructor({ question, requestStyle, render, grouped, roundQueries }) {
    this.id = `a${++app.count}`;
    this.requestStyle = requestStyle;
    this.render = render;
    this.grouped = grouped;
    this.roundQueries = roundQueries ?? new Map();
    this.sources = new Map(); // number -> { source, round, isNew }
    this.anchors = new Map(); // number -> the anchor of each of its citations, in order
    this.citeCount = new Map(); // number -> citations of it shown so far
    this.pending = []; // citations and unresolved markers whose rendering is still to come
    this.cur = null; // the rendering being consumed: { p, remaining, raw }
    this.outBytes = 0;
    this.lastEventId = 0;
    this.streamId = null;
    this.resumes = 0;
    this.finished = false;
    this.rewriter = null; // client-side mode
    const card = $("#answer-template").content.firstElementChild.cloneNode(true);
    card.id = this.id;
    card.dataset.render = render;
    $(".question", card).textContent = question;
    this.el = card;
    this.textEl = $(".text", card);
    this.groupsEl = $(".groups", card);
    this.moreBtn = $(".more", card);
    this.stateEl = $(".state", card);
    this.expanded = false;
    this.moreBtn.addEventListener("click", () => {
      this.expanded = !this.expanded;
      this.fold();
    });
    app.answers.set(this.id, this);
    $("#answers").append(card);
  }

  setState(kind, text) {
    let b = $(`.badge.${kind}`, this.stateEl);
    if (!b) {
      b = h("span", { class: `badge ${kind}` });
      this.stateEl.append(b);
    }
    b.textContent = text;
    return b;
  }

  clearState(kind) {
    $(`.badge.${kind}`, this.stateEl)?.remove();
  }

  /** Applies core events in stream order. */
  apply(events) {
    for (const ev of events) {
      switch (ev.type) {
        case "source":
          this.addSource(ev.number, ev.source, ev.round, ev.is_new);
          break;
        case "citation":
        case "unresolved":
          this.pending.push(ev);
          break;
        case "text":
          this.writeText(ev.text);
          break;
        case "anchor":
          this.addAnchor(ev);
          break;
        case "done":
          this.done(ev);
          break;
        default:
          break;
      }
    }
    this.openEmpty();
  }

  renderingOf(ev) {
    return ev.type === "citation" ? rendered(this.requestStyle, ev.number) : rendered(this.requestStyle, "?");
  }

  writeText(text) {
    let guard = 0;
    while (text.length && guard++ < 100000) {
      if (this.cur) {
        const [head, rest, bytes] = splitAtBytes(text, this.cur.remaining);
        if (!bytes) {
          this.closeSpan(); // the rendering ended inside a character: not what was expected
          continue;
        }
        this.cur.raw += head;
        this.cur.remaining -= bytes;
        this.outBytes += bytes;
        text = rest;
        if (this.cur.remaining === 0) this.closeSpan();
        continue;
      }
      const next = this.pending[0];
      if (next && next.byte_offset <= this.outBytes) {
        this.openSpan(this.pending.shift());
        continue;
      }
      const limit = next ? next.byte_offset - this.outBytes : Infinity;
      const [head, rest, bytes] =
        limit === Infinity ? [text, "", utf8Length(text)] : splitAtBytes(text, limit);
      if (!bytes) {
        this.openSpan(this.pending.shift());
        continue;
      }
      this.appendPlain(head);
      this.outBytes += bytes;
      text = rest;
    }
  }

  /** Unresolved markers with no rendering (policy "drop") at the current offset. */
  openEmpty() {
    while (!this.cur && this.pending[0] && this.pending[0].byte_offset < this.outBytes) {
      this.openSpan(this.pending.shift());
    }
  }

  appendPlain(text) {
    const last = this.textEl.lastChild;
    if (last && last.nodeType === Node.TEXT_NODE) last.appendData(text);
    else this.textEl.append(text);
  }

  openSpan(ev) {
    const expect = this.renderingOf(ev);
    let node;
    if (ev.type === "citation") {
      const a = h("a", {
        href: `#${this.id}-src-${ev.number}`,
        "data-n": ev.number,
        "data-answer": this.id,
        "data-source-id": ev.source_id,
      });
      a.textContent = label(app.style, ev.number);
      // The k-th citation of a number: its anchor is the k-th anchor of that number.
      const k = this.citeCount.get(ev.number) ?? 0;
      this.citeCount.set(ev.number, k + 1);
      a.dataset.k = String(k);
      node = h("sup", { class: "cite" }, a);
      const anchor = this.anchors.get(ev.number)?.[k];
      if (anchor) this.markCitation(node, anchor);
    } else {
      node = h("span", {
        class: "unresolved",
        tabindex: "0",
        "data-answer": this.id,
        "data-reason": ev.reason,
        "data-reference": ev.reference,
        "data-raw": ev.raw,
        "aria-label": `unresolved citation ${ev.raw}: ${REASONS[ev.reason] ?? ev.reason}`,
      });
      node.textContent = app.style === "footnote" ? "?" : label(app.style, "?");
      if (app.style === "footnote") node = h("sup", { class: "unres-wrap" }, node);
    }
    this.textEl.append(node);
    this.cur = { ev, expect, raw: "", remaining: utf8Length(expect), node };
    if (this.cur.remaining === 0) this.closeSpan();
  }

  closeSpan() {
    const { raw, expect, node } = this.cur;
    if (raw !== expect) {
      // Not the rendering the page asked for: show the text as it came.
      node.dataset.mismatch = raw;
      console.warn("citeflow: rendering differs from the requested style", { raw, expect });
    }
    this.cur = null;
  }

  /** A claim anchor (`citeflow.settings.anchors`): the citation it belongs to shows its verdict. */
  addAnchor(anchor) {
    const list = this.anchors.get(anchor.number) ?? [];
    const k = list.length;
    list.push(anchor);
    this.anchors.set(anchor.number, list);
    // The citation may be in text not shown yet (its chunk's events come before its text).
    const a = $(`.cite a[data-n="${anchor.number}"][data-k="${k}"]`, this.textEl);
    if (a) this.markCitation(a.parentElement, anchor);
    // A book passage's quote as a CFI range: the list entry opens the reader at the sentence.
    const cfi = anchor.quote?.cfi;
    const li = document.getElementById(`${this.id}-src-${anchor.number}`);
    if (cfi && li && !$(".open-quote", li)) {
      const book = bookOf(this.sources.get(anchor.number)?.source ?? {});
      if (book) {
        $(".where", li)?.append(
          " · ",
          h(
            "button",
            { type: "button", class: "open-quote", "data-book": book, "data-cfi": cfi, "data-answer": this.id, "data-n": anchor.number },
            "Open at the quote",
          ),
        );
      }
    }
  }

  /**
   * Marks a citation (`sup.cite`) with its anchor's verdict: a class (`verdict-weak`,
   * `verdict-unsupported`: a visible mark drawn by the stylesheet, so the text stays the
   * answer's) and, for screen readers, the verdict in the link's label.
   */
  markCitation(sup, anchor) {
    const v = anchor.verdict;
    sup.dataset.verdict = v;
    sup.classList.add(`verdict-${v}`);
    const a = $("a", sup);
    if (!a) return;
    a.dataset.support = String(anchor.support);
    if (v === "weak" || v === "unsupported") a.setAttribute("aria-label", `${a.textContent}: ${VERDICTS[v]}`);
  }

  /** The anchor of a citation link (`.cite a`), when it has come. */
  anchorOfLink(a) {
    return this.anchors.get(Number(a.dataset.n))?.[Number(a.dataset.k)];
  }

  addSource(n, source, round, isNew) {
    if (this.sources.has(n)) return;
    this.sources.set(n, { source, round, isNew });
    const ol = this.groupList(round);
    const title = source.title || source.id;
    const href = source.url ? safeHref(source.url) : null;
    const loc = source.locator ?? {};
    const where = [];
    if (loc.chapter_title) where.push(h("span", { class: "chapter" }, `Chapter: ${loc.chapter_title}`));
    if (loc.page) where.push(h("span", {}, `p. ${loc.page}`));
    if (loc.cfi) where.push(h("code", { class: "cfi" }, loc.cfi));
    const bookKey = bookOf(source);
    if (bookKey && loc.cfi) {
      where.push(
        h(
          "button",
          { type: "button", class: "open-book", "data-book": bookKey, "data-cfi": loc.cfi, "data-answer": this.id, "data-n": n },
          "Open in book",
        ),
      );
    }
    const whereEl = where.length ? h("span", { class: "where" }) : null;
    where.forEach((w, i) => {
      if (i) whereEl.append(" · ");
      whereEl.append(w);
    });
    const li = h(
      "li",
      { class: "src", id: `${this.id}-src-${n}`, tabindex: "-1", "data-n": n, "data-source-id": source.id },
      h("span", { class: "n" }, String(n)),
      h(
        "div",
        {},
        href
          ? h("a", { class: "title", href, target: "_blank", rel: "noopener noreferrer" }, title)
          : h("span", { class: "title" }, title),
        whereEl,
        href ? h("span", { class: "url" }, hostOf(href)) : source.url ? h("span", { class: "url" }, source.url) : null,
        isNew === false ? h("span", { class: "earlier" }, "numbered in an earlier answer") : null,
      ),
    );
    ol.append(li);
    $(".count", this.el).textContent = `(${this.sources.size})`;
    this.fold();
  }

  groupList(round) {
    const key = this.grouped && round ? `r${round}` : "all";
    let g = $(`.group[data-key="${key}"]`, this.groupsEl);
    if (!g) {
      g = h("section", { class: "group", "data-key": key, "data-round": round ?? "" });
      if (key !== "all") {
        const q = this.roundQueries.get(round);
        const head = h("h4", {}, `Round ${round}`);
        if (q) head.append(": ", h("q", {}, q));
        g.append(head);
      }
      g.append(h("ol"));
      // Rounds in their order.
      const after = $$(".group", this.groupsEl).find((o) => Number(o.dataset.round) > (round ?? 0));
      this.groupsEl.insertBefore(g, after ?? null);
    }
    return $("ol", g);
  }

  /** Entries past LIST_FOLD hide behind a button; the list only grows while streaming. */
  fold() {
    const items = $$(".src", this.groupsEl);
    const extra = items.length - LIST_FOLD;
    items.forEach((li, i) => li.classList.toggle("hidden-by-collapse", !this.expanded && i >= LIST_FOLD));
    this.moreBtn.hidden = extra <= 0;
    this.moreBtn.setAttribute("aria-expanded", String(this.expanded));
    this.moreBtn.textContent = this.expanded ? "Show fewer" : `Show ${extra} more (${items.length} sources)`;
  }

  reveal(n) {
    const li = document.getElementById(`${this.id}-src-${n}`);
    if (!li) return;
    if (li.classList.contains("hidden-by-collapse")) {
      this.expanded = true;
      this.fold();
    }
    const smooth = !matchMedia("(prefers-reduced-motion: reduce)").matches;
    li.scrollIntoView({ block: "nearest", behavior: smooth ? "smooth" : "auto" });
    li.focus({ preventScroll: true });
    li.classList.add("flash");
    setTimeout(() => li.classList.remove("flash"), 900);
  }

  done(ev) {
    for (const s of ev.sources ?? []) {
      if (!this.sources.has(s.number)) this.addSource(s.number, s.source, s.round, true);
    }
    const r = ev.report ?? {};
    this.report = r;
    const parts = [
      `${this.sources.size} source${this.sources.size === 1 ? "" : "s"}`,
      `${r.citations ?? 0} citation${r.citations === 1 ? "" : "s"}`,
    ];
    if (r.unresolved) parts.push(`${r.unresolved} unresolved`);
    parts.push(r.verified ? "list verified" : "list not verified");
    parts.push(this.render === "client" ? "rendered in the browser (WASM)" : "rendered by the server");
    $(".report", this.el).textContent = parts.join(" · ");
  }

  /** The answer's time to first token and generation speed, as the server measured them. */
  showStats(stats) {
    const el = $(".speed", this.el);
    const parts = [];
    if (typeof stats.first_token_ms === "number") {
      const ms = stats.first_token_ms;
      parts.push(`first token after ${ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`}`);
    }
    if (typeof stats.tokens_per_second === "number") {
      parts.push(`${stats.tokens_per_second.toFixed(1)} tokens/s`);
    }
    if (typeof stats.tokens === "number") {
      parts.push(`${stats.tokens} ${stats.tokens_counted_by === "usage" ? "tokens" : "chunks"}`);
    }
    el.textContent = parts.join(" · ");
    el.hidden = parts.length === 0;
  }

  finish(ok, message) {
    this.finished = true;
    this.el.setAttribute("aria-busy", "false");
    this.clearState("live");
    this.clearState("reconnecting");
    if (ok) this.setState("done", "done");
    else {
      this.setState("error", "error");
      $(".report", this.el).append(h("span", { class: "error-text" }, ` ${message}`));
    }
    this.el.dataset.state = ok ? "done" : "error";
  }
}

// ---------------------------------------------------------------------------------------------
// SSE over fetch (EventSource cannot POST): events with `id:`, resume with Last-Event-ID

/** Reads one SSE response; calls onEvent({id, data}). Resolves true at `[DONE]` or an error
 * event, false when the body ends early (a dropped connection). */
async function readSse(body, onEvent) {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  let buf = "";
  let data = [];
  let id = null;
  const dispatch = () => {
    const ev = { id, data: data.join("\n") };
    data = [];
    id = null;
    return ev.data === "" && ev.id === null ? false : onEvent(ev);
  };
  for (;;) {
    const { value, done } = await reader.read();
    buf += decoder.decode(value ?? new Uint8Array(), { stream: !done });
    let m;
    while ((m = /\r\n|\n|\r(?=[^\n])/.exec(buf))) {
      const line = buf.slice(0, m.index);
      buf = buf.slice(m.index + m[0].length);
      if (line === "") {
        if (dispatch()) {
          reader.cancel().catch(() => {});
          return true;
        }
      } else if (!line.startsWith(":")) {
        const c = line.indexOf(":");
        const field = c < 0 ? line : line.slice(0, c);
        let v = c < 0 ? "" : line.slice(c + 1);
        if (v.startsWith(" ")) v = v.slice(1);
        if (field === "data") data.push(v);
        else if (field === "id") id = v;
      }
    }
    if (done) return false;
  }
}

/** Runs an answer's stream to its end, resuming after drops. */
async function runStream(answer, first) {
  const active = { answer, ctl: null, stopped: false, dropped: false };
  app.active = active;
  $("#stop").disabled = false;
  let request = first;
  let attempt = 0;
  try {
    for (;;) {
      const ctl = new AbortController();
      active.ctl = ctl;
      let resp = null;
      let ended = false;
      try {
        resp = await request(ctl.signal);
        if (!resp.ok) {
          answer.finish(false, (await apiError(resp)).message);
          return;
        }
        answer.streamId ??= resp.headers.get("x-citeflow-stream-id");
        if (attempt > 0) {
          answer.resumes += 1;
          answer.clearState("reconnecting");
          answer.setState("resumed", `resumed after event ${answer.resumedAfter}`);
          answer.el.dataset.resumes = String(answer.resumes);
          status(`Reconnected: resumed after event ${answer.resumedAfter}, nothing lost or renumbered.`);
          attempt = 0;
        }
        ended = await readSse(resp.body, (ev) => onSse(answer, ev));
      } catch (e) {
        if (active.stopped) {
          answer.finish(false, "stopped");
          status("Stopped.");
          return;
        }
        if (!resp) {
          if (!answer.streamId) {
            answer.finish(false, String(e.message ?? e));
            return;
          }
        }
      }
      if (ended) {
        status(answer.el.dataset.state === "error" ? "The answer ended with an error." : "Done.");
        return;
      }
      if (!answer.streamId) {
        answer.finish(false, "the connection dropped before the stream started");
        return;
      }
      if (attempt >= RESUME_DELAYS_MS.length) {
        answer.finish(false, "could not reconnect");
        return;
      }
      answer.setState("reconnecting", "reconnecting…");
      status(`Connection lost after event ${answer.lastEventId}; reconnecting…`);
      await sleep(RESUME_DELAYS_MS[attempt++]);
      const after = answer.lastEventId;
      answer.resumedAfter = after;
      // Each API resumes on its own route, with its own event format.
      const resume = { chat: "/v1/streams", responses: "/v1/responses", messages: "/v1/messages" }[answer.api];
      request = (signal) =>
        fetch(`${resume}/${encodeURIComponent(answer.streamId)}`, {
          headers: headers({ accept: "text/event-stream", "last-event-id": String(after) }),
          signal,
          cache: "no-store",
        });
    }
  } finally {
    if (app.active === active) app.active = null;
    $("#stop").disabled = true;
    $("#send").disabled = false;
  }
}

/** One SSE event of the answer's stream. True when the stream is over. */
function onSse(answer, ev) {
  const id = ev.id === null ? null : Number(ev.id);
  if (id !== null) {
    if (id <= answer.lastEventId) return false; // already shown: never twice
    answer.lastEventId = id;
    answer.el.dataset.lastEventId = String(id);
  }
  if (ev.data === "[DONE]") {
    if (answer.rewriter) answer.apply(finishClient(answer));
    answer.finish(true);
    return true;
  }
  let chunk;
  try {
    chunk = JSON.parse(ev.data);
  } catch {
    return false;
  }
  if (answer.api !== "chat") return onProviderEvent(answer, chunk);
  if (chunk.error) {
    answer.finish(false, `${chunk.error.message} (${chunk.error.code ?? "error"})`);
    return true;
  }
  if (chunk.citeflow?.stats) answer.showStats(chunk.citeflow.stats);
  const choice = chunk.choices?.[0];
  const text = choice?.delta?.content ?? choice?.text ?? "";
  if (answer.rewriter) {
    if (text) answer.apply(answer.rewriter.feed(text));
  } else {
    const events = chunk.citeflow?.events ?? [];
    answer.apply(text ? [...events, { type: "text", text }] : events);
  }
  return false;
}

/**
 * One event of the responses or messages route: its rewritten text (`response.output_text.delta`,
 * a `text_delta`) and citeflow's events in its `citeflow` field; `response.completed` or
 * `message_stop` ends the answer. True when the stream is over.
 */
function onProviderEvent(answer, e) {
  if (e.type === "error" || e.type === "response.failed") {
    const err = e.error ?? e.response?.error ?? e;
    answer.finish(false, `${err.message ?? "error"} (${err.code ?? err.type ?? "error"})`);
    return true;
  }
  let text = "";
  if (e.type === "response.output_text.delta") text = e.delta ?? "";
  else if (e.type === "content_block_delta" && e.delta?.type === "text_delta") text = e.delta.text ?? "";
  const events = e.citeflow?.events ?? [];
  answer.apply(text ? [...events, { type: "text", text }] : events);
  if (["response.completed", "response.incomplete", "message_stop"].includes(e.type)) {
    answer.finish(true);
    return true;
  }
  return false;
}

function finishClient(answer) {
  const events = answer.rewriter.finish();
  answer.rewriter.close();
  answer.rewriter = null;
  return events;
}

// ---------------------------------------------------------------------------------------------
// Asking

function currentMode() {
  return $('input[name="mode"]:checked').value;
}

async function loadWasm() {
  if (!app.wasm) {
    app.wasm = import("/wasm/citeflow_wasm.js").then(async (m) => {
      await m.default();
      return m;
    });
  }
  return app.wasm;
}

async function registerRounds() {
  if (!app.sessionId) {
    const s = await api("POST", "/v1/sessions", {});
    app.sessionId = s.id;
  }
  for (const li of $$("#rounds .round")) {
    if (li.dataset.registered) continue;
    const query = $(".round-query", li).value.trim();
    const text = $(".round-sources", li).value;
    if (!query && !text.trim()) continue;
    let sources;
    try {
      sources = parseSources(text);
    } catch (e) {
      throw new Error(`round "${query}": ${e.message}`);
    }
    const r = await api("POST", `/v1/sessions/${encodeURIComponent(app.sessionId)}/rounds`, {
      query: query || null,
      sources,
    });
    li.dataset.registered = String(r.round);
    $(".round-query", li).readOnly = true;
    $(".round-sources", li).readOnly = true;
    $(".round-state", li).textContent = `Registered as round ${r.round}.`;
  }
  const session = await api("GET", `/v1/sessions/${encodeURIComponent(app.sessionId)}`);
  $("#session-info").textContent = `Session ${session.id}: ${session.rounds.length} round(s).`;
  return session;
}

async function ask(question) {
  const mode = currentMode();
  const render = app.render;
  const style = app.style;
  // Empty: the server's default marker (and grammar), e.g. the one chosen for its local model.
  // The browser's own rewriter needs to know the marker, so client rendering names one.
  const marker = $("#marker").value || (render === "client" ? "double_bracket" : "");
  const apiName = $("#api").value || "chat";
  if (apiName !== "chat" && render === "client") {
    throw new Error("rendering in the browser works with the chat completions API only");
  }
  const body = {
    model: $("#model").value.trim() || "replay",
    stream: true,
    messages: [{ role: "user", content: question }],
    // Claim anchors: each citation's supporting sentence of its source, for the hover.
    citeflow: { style, ...(marker ? { marker } : {}), settings: { anchors: true } },
  };
  if (apiName === "responses") {
    delete body.messages;
    body.input = question;
  } else if (apiName === "messages") {
    body.max_tokens = 1024;
  }
  let sources = [];
  let rounds = null;
  let roundQueries = new Map();
  if (mode === "agent") {
    const session = await registerRounds();
    body.citeflow.session = session.id;
    body.citeflow.scope = "session";
    rounds = session.rounds;
    for (const r of session.rounds) roundQueries.set(r.number, r.query);
  } else if (mode === "book") {
    const key = $("#book").value;
    if (!key) throw new Error("choose a book first, or upload an .epub");
    const k = Number($("#top-k").value);
    const topK = Number.isInteger(k) && k > 0 ? k : undefined;
    if (render === "client") {
      // The browser numbers the answer itself, so it needs the passages before the answer:
      // the server searches the book as it would for citeflow.book, and they go back as the
      // sources (the model sees the same prompt).
      const found = await api("POST", `/v1/books/${encodeURIComponent(key)}/search`, {
        query: question,
        top_k: topK,
      });
      sources = found.data;
      body.sources = sources;
    } else {
      body.citeflow.book = key;
      if (topK) body.citeflow.top_k = topK;
    }
  } else {
    sources = parseSources($("#sources-json").value);
    body.sources = sources;
  }
  const answer = new Answer({ question, requestStyle: style, render, grouped: mode === "agent", roundQueries });
  answer.api = apiName;
  answer.el.scrollIntoView({ block: "nearest" });
  if (render === "client") {
    body.citeflow.render = "client";
    delete body.citeflow.settings; // the browser's own core anchors
    const cf = await loadWasm();
    let src;
    if (rounds) {
      src = new cf.Sources();
      for (const r of rounds) src.appendRound(r.sources, r.query ?? undefined);
    } else {
      src = cf.Sources.fromArray(sources);
    }
    const opts = { settings: cf.promptSettings(marker, { style, anchors: true }) };
    if (rounds) {
      const session = await api("GET", `/v1/sessions/${encodeURIComponent(app.sessionId)}`);
      opts.numbering = session.numbering;
    }
    answer.rewriter = new cf.Rewriter(src, opts);
  }
  status("Streaming…");
  const route = { chat: "/v1/chat/completions", responses: "/v1/responses", messages: "/v1/messages" }[apiName];
  await runStream(answer, (signal) =>
    fetch(route, {
      method: "POST",
      headers: headers({ "content-type": "application/json", accept: "text/event-stream" }),
      body: JSON.stringify(body),
      signal,
    }),
  );
  return answer;
}

// ---------------------------------------------------------------------------------------------
// The passage tooltip (hover and keyboard focus) and jumping to the list

const tip = () => $("#tip");

function showTip(target) {
  const t = tip();
  t.replaceChildren();
  const answer = app.answers.get(target.dataset.answer);
  if (!answer) return;
  if (target.classList.contains("unresolved")) {
    const reason = target.dataset.reason;
    t.append(
      h("span", { class: "tip-title" }, `Unresolved: ${target.dataset.raw}`),
      `${REASONS[reason] ?? reason} (${reason}: ${target.dataset.reference}). No number was used.`,
    );
  } else {
    const n = Number(target.dataset.n);
    const s = answer.sources.get(n);
    if (!s) return;
    const src = s.source;
    t.append(h("span", { class: "tip-title" }, `${n}. ${src.title || src.id}`));
    const loc = src.locator ?? {};
    const anchor = answer.anchorOfLink(target);
    const where = [loc.chapter_title && `Chapter: ${loc.chapter_title}`, loc.cfi].filter(Boolean).join(" · ");
    if (where) t.append(h("span", { class: "tip-where" }, where));
    if (anchor?.quote) {
      // The sentence of the source that supports the claim, marked in its passage.
      t.append(quoteInPassage(anchor.quote, src.text));
    } else {
      let passage = src.snippet || src.text || "(no passage text)";
      if (passage.length > 600) passage = `${passage.slice(0, 600)}…`;
      t.append(h("span", { class: "tip-passage" }, passage));
    }
    if (anchor) {
      // What the support score says (a low one: nothing found in the source says it).
      t.dataset.verdict = anchor.verdict;
      const score = `support ${Number(anchor.support).toFixed(2)}`;
      t.append(h("span", { class: `tip-verdict ${anchor.verdict}` }, `${VERDICTS[anchor.verdict] ?? anchor.verdict} (${score})`));
      if (anchor.quote?.origin === "provider") t.append(h("span", { class: "tip-where" }, "quoted by the provider"));
    } else {
      delete t.dataset.verdict;
    }
  }
  t.hidden = false;
  target.setAttribute("aria-describedby", "tip");
  const r = target.getBoundingClientRect();
  const w = t.offsetWidth;
  const hgt = t.offsetHeight;
  let left = Math.min(Math.max(8, r.left + r.width / 2 - w / 2), window.innerWidth - w - 8);
  let top = r.bottom + 8;
  if (top + hgt > window.innerHeight - 8) top = Math.max(8, r.top - hgt - 8);
  t.style.left = `${left}px`;
  t.style.top = `${top}px`;
}

/** Code units of context shown on each side of a quote in its passage. */
const QUOTE_CONTEXT = 160;

/**
 * A quote in its passage: the source's text around it, the quote marked (`mark.tip-quote`).
 * Its offsets (`utf16_start`, `utf16_end`: JavaScript string indexes) are into the source's
 * `text`; a quote with none (a provider's that the text does not hold) is shown alone.
 */
function quoteInPassage(quote, text) {
  const p = h("span", { class: "tip-passage" });
  const [a, b] = [quote.utf16_start, quote.utf16_end];
  let q = quote.text;
  if (q.length > 600) q = `${q.slice(0, 600)}…`;
  if (typeof text !== "string" || typeof a !== "number" || text.slice(a, b) !== quote.text) {
    p.append(h("mark", { class: "tip-quote" }, q));
    return p;
  }
  const from = Math.max(0, a - QUOTE_CONTEXT);
  const to = Math.min(text.length, b + QUOTE_CONTEXT);
  p.append(from > 0 ? `…${text.slice(from, a)}` : text.slice(0, a), h("mark", { class: "tip-quote" }, q), to < text.length ? `${text.slice(b, to)}…` : text.slice(b));
  return p;
}

function hideTip(target) {
  tip().hidden = true;
  target?.removeAttribute("aria-describedby");
}

const tipTarget = (e) => e.target.closest?.(".cite a, .unresolved");

document.addEventListener("mouseover", (e) => {
  const t = tipTarget(e);
  if (t) showTip(t);
});
document.addEventListener("mouseout", (e) => {
  const t = tipTarget(e);
  if (t && !t.contains(e.relatedTarget)) hideTip(t);
});
document.addEventListener("focusin", (e) => {
  const t = tipTarget(e);
  if (t) showTip(t);
});
document.addEventListener("focusout", (e) => {
  const t = tipTarget(e);
  if (t) hideTip(t);
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && !tip().hidden) hideTip(document.activeElement);
});
document.addEventListener("click", (e) => {
  const open = e.target.closest?.(".open-book, .open-quote");
  if (open) {
    openBook(open);
    return;
  }
  const a = e.target.closest?.(".cite a");
  if (!a) return;
  e.preventDefault();
  app.answers.get(a.dataset.answer)?.reveal(Number(a.dataset.n));
});

// ---------------------------------------------------------------------------------------------
// The book reader: a cited passage opened in its chapter (GET /v1/books/{key}/read)

/** The key of the server's book a source is a passage of (by its `book:` url), or null. */
function bookOf(source) {
  if (!source.url?.startsWith("book:") || !source.locator?.cfi) return null;
  for (const b of books.values()) if (b.url === source.url) return b.key;
  const prefix = source.id.split("#p")[0];
  return books.has(prefix) ? prefix : null;
}

/** Japanese and Chinese books that turn pages right to left are read in vertical lines. */
function readsVertically(r) {
  return r.page_progression === "rtl" && /^(ja|zh)/i.test(r.language ?? "");
}

/** Opens the reader from an "Open in book" button; the focus goes back to it on close. */
function openBook(button) {
  app.readerOpener = button;
  return readAt(button.dataset.book, button.dataset.cfi);
}

/** Shows the chapter of `book` that holds `cfi` in the reader, what the CFI covers marked. */
async function readAt(book, cfi) {
  const dialog = $("#reader");
  const body = $(".reader-body", dialog);
  const seq = (app.readSeq = (app.readSeq ?? 0) + 1); // only the latest request is shown
  const fromNav = Boolean(document.activeElement?.closest?.(".reader-nav"));
  $("#reader-title").textContent = books.get(book)?.title ?? book;
  $(".reader-where", dialog).textContent = "Opening the book…";
  body.replaceChildren();
  dialog.dataset.state = "loading";
  if (!dialog.open) dialog.showModal();
  let r;
  try {
    const resp = await fetch(`/v1/books/${encodeURIComponent(book)}/read?cfi=${encodeURIComponent(cfi)}`, {
      headers: headers(),
    });
    if (!resp.ok) throw await apiError(resp);
    r = await resp.json();
  } catch (e) {
    if (seq !== app.readSeq) return;
    $(".reader-where", dialog).textContent = `The book cannot be opened here: ${e.message}`;
    for (const b of $$(".reader-nav button", dialog)) b.disabled = true;
    dialog.dataset.state = "error";
    return;
  }
  if (seq !== app.readSeq) return;
  $("#reader-title").textContent = r.title || book;
  const where = $(".reader-where", dialog);
  where.replaceChildren(
    r.chapter_title ? `Chapter: ${r.chapter_title} · ` : "",
    h("code", { class: "cfi" }, r.cfi),
  );
  body.lang = r.language ?? "";
  if (r.omitted.before) body.append(h("p", { class: "omitted" }, `… ${r.omitted.before} paragraphs before`));
  for (const p of r.paragraphs) {
    const el = h("p", { dir: "auto", "data-index": p.index, "data-cfi": p.cfi });
    let mark = null; // consecutive marked segments share one <mark>
    for (const seg of p.segments) {
      const text = seg.ruby ? h("ruby", {}, seg.text, h("rt", {}, seg.ruby)) : seg.text;
      if (!seg.marked) mark = null;
      else if (!mark) el.append((mark = h("mark")));
      (mark ?? el).append(text);
    }
    body.append(el);
  }
  if (r.omitted.after) body.append(h("p", { class: "omitted" }, `… ${r.omitted.after} paragraphs after`));
  if (!r.paragraphs.length) body.append(h("p", { class: "omitted" }, "This chapter has no text."));
  // Books whose pages turn right to left go on to the left: "next" is on the left.
  const rtl = r.page_progression === "rtl";
  dialog.classList.toggle("rtl-pages", rtl);
  const back = (t) => (rtl ? `${t} →` : `← ${t}`);
  const on = (t) => (rtl ? `← ${t}` : `${t} →`);
  const nav = [
    [$("#reader-prev"), r.previous_chapter, "Previous chapter", back],
    [$("#reader-next"), r.next_chapter, "Next chapter", on],
  ];
  for (const [button, chapter, name, arrow] of nav) {
    button.disabled = !chapter;
    button.dataset.cfi = chapter?.cfi ?? "";
    button.textContent = arrow(chapter?.title ?? name);
    button.title = chapter?.title ? `${name}: ${chapter.title}` : name;
    button.setAttribute("aria-label", button.title);
  }
  // Paging past the last chapter disables the focused button: the focus goes to the text.
  const active = document.activeElement;
  if (fromNav && (!active || active === document.body || active.disabled)) body.focus();
  const vertical = $("#reader-vertical");
  vertical.hidden = !readsVertically(r);
  setVertical(readsVertically(r));
  dialog.dataset.state = "ready";
  dialog.dataset.book = book;
  showMark();
}

function setVertical(on) {
  $("#reader").classList.toggle("vertical", on);
  $("#reader-vertical").setAttribute("aria-pressed", String(on));
  $("#reader-vertical").textContent = on ? "Horizontal" : "Vertical";
}

/** Scrolls the first marked segment (or the paragraph of a point) into the middle. */
function showMark() {
  const body = $("#reader .reader-body");
  const target = $("mark", body) ?? $("p[data-index]", body);
  target?.scrollIntoView({ block: "center", inline: "center" });
}

// ---------------------------------------------------------------------------------------------
// Controls

function applyStyle(style) {
  app.style = style;
  document.body.classList.toggle("footnote-style", style === "footnote");
  for (const a of $$(".cite a")) a.textContent = label(style, a.dataset.n);
  for (const u of $$(".unresolved")) u.textContent = style === "footnote" ? "?" : label(style, "?");
}

function addRound(query = "", sources = []) {
  const li = $("#round-template").content.firstElementChild.cloneNode(true);
  $(".round-query", li).value = query;
  $(".round-sources", li).value = sources.length ? JSON.stringify(sources, null, 2) : "";
  $("#rounds").append(li);
  return li;
}

function showMode() {
  const mode = currentMode();
  for (const p of $$(".mode-panel")) p.hidden = p.dataset.mode !== mode;
}

async function probeWasm() {
  try {
    const r = await fetch("/wasm/citeflow_wasm.js", { method: "HEAD", cache: "no-store" });
    app.wasmAvailable = r.ok;
  } catch {
    app.wasmAvailable = false;
  }
  const opt = $('#render option[value="client"]');
  opt.disabled = !app.wasmAvailable;
  const note = $("#render-note");
  note.hidden = app.wasmAvailable;
  note.textContent = app.wasmAvailable
    ? ""
    : "In-browser rendering needs the WASM build, which this server does not serve.";
  if (!app.wasmAvailable && app.render === "client") {
    app.render = "server";
    $("#render").value = "server";
  }
}

/** The books of the server (`GET /v1/books`), as listed last. */
const books = new Map();

function describeBook(b) {
  if (!b) return "";
  const titled = b.chapters.filter((c) => c.title);
  const names = titled.slice(0, 4).map((c) => c.title).join(", ");
  const more = titled.length > 4 ? ` and ${titled.length - 4} more` : "";
  return `${b.passages} passages in ${b.chapters.length} chapter${b.chapters.length === 1 ? "" : "s"}${names ? `: ${names}${more}` : ""}.`;
}

function showBook() {
  $("#book-info").textContent = describeBook(books.get($("#book").value));
}

/** Lists the server's books in the picker; selects `select` (a key) when given. */
async function loadBooks(select) {
  let list;
  try {
    const r = await fetch("/v1/books", { headers: headers(), cache: "no-store" });
    if (!r.ok) throw await apiError(r);
    list = (await r.json()).data ?? [];
  } catch (e) {
    $("#book-info").textContent = `Books cannot be listed: ${e.message}`;
    return;
  }
  $("#mode-book").disabled = false;
  const sel = $("#book");
  const keep = select ?? sel.value;
  books.clear();
  sel.replaceChildren();
  for (const b of list) {
    books.set(b.key, b);
    sel.append(h("option", { value: b.key }, b.title ? `${b.title} (${b.key})` : b.key));
  }
  if (!list.length) sel.append(h("option", { value: "" }, "(no books yet: upload one)"));
  sel.disabled = !list.length;
  if (books.has(keep)) sel.value = keep;
  showBook();
}

async function uploadBook(file) {
  status(`Adding ${file.name}…`);
  const r = await fetch("/v1/books", {
    method: "POST",
    headers: headers({ "content-type": "application/epub+zip" }),
    body: file,
  });
  if (!r.ok) throw await apiError(r);
  const b = await r.json();
  await loadBooks(b.key);
  const what = b.added ? `Added ${b.title || b.key}: ${b.passages} passages.` : `${b.title || b.key} is in the index already.`;
  status(b.warnings?.length ? `${what} ${b.warnings.length} warning(s): ${b.warnings[0]}` : what);
}

function init() {
  $("#sources-json").value = JSON.stringify(DEMO_SOURCES, null, 2);
  for (const r of DEMO_ROUNDS) addRound(r.query, r.sources);
  const saved = (k, d) => {
    try {
      return localStorage.getItem(`citeflow.${k}`) ?? d;
    } catch {
      return d;
    }
  };
  const save = (k, v) => {
    try {
      localStorage.setItem(`citeflow.${k}`, v);
    } catch {
      /* private mode */
    }
  };
  $("#style").value = saved("style", "brackets");
  applyStyle($("#style").value);
  $("#style").addEventListener("change", (e) => {
    applyStyle(e.target.value);
    save("style", e.target.value);
  });
  app.render = saved("render", "server");
  $("#render").value = app.render;
  $("#render").addEventListener("change", (e) => {
    app.render = e.target.value;
    save("render", app.render);
    if (app.render === "client") loadWasm().catch((err) => status(`WASM: ${err.message}`));
  });
  for (const r of $$('input[name="mode"]')) r.addEventListener("change", showMode);
  showMode();
  $("#add-round").addEventListener("click", () => $(".round-query", addRound()).focus());
  $("#new-session").addEventListener("click", () => {
    app.sessionId = null;
    for (const li of $$("#rounds .round")) {
      delete li.dataset.registered;
      $(".round-query", li).readOnly = false;
      $(".round-sources", li).readOnly = false;
      $(".round-state", li).textContent = "";
    }
    $("#session-info").textContent = "A new session starts with the next question.";
  });
  $("#sources-file").addEventListener("change", async (e) => {
    const f = e.target.files?.[0];
    if (!f) return;
    const text = await f.text();
    try {
      $("#sources-json").value = JSON.stringify(parseSources(text), null, 2);
      status(`Loaded ${f.name}.`);
    } catch (err) {
      status(`${f.name}: ${err.message}`);
    }
  });
  $("#question").addEventListener("keydown", (e) => {
    // Enter sends; not while an input method is composing (Japanese, Chinese).
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
      e.preventDefault();
      $("#ask").requestSubmit();
    }
  });
  $("#ask").addEventListener("submit", async (e) => {
    e.preventDefault();
    const q = $("#question").value.trim();
    if (!q || app.active) return;
    $("#send").disabled = true;
    $("#question").value = "";
    try {
      await ask(q);
    } catch (err) {
      status(`Error: ${err.message}`);
      $("#send").disabled = false;
    }
  });
  $("#stop").addEventListener("click", () => {
    if (!app.active) return;
    app.active.stopped = true;
    app.active.ctl?.abort();
  });
  $("#book").addEventListener("change", showBook);
  $("#reader-close").addEventListener("click", () => $("#reader").close());
  for (const id of ["#reader-prev", "#reader-next"]) {
    $(id).addEventListener("click", (e) => readAt($("#reader").dataset.book, e.currentTarget.dataset.cfi));
  }
  $("#reader-vertical").addEventListener("click", () => {
    setVertical(!$("#reader").classList.contains("vertical"));
    showMark();
  });
  $("#reader").addEventListener("close", () => {
    app.readerOpener?.focus();
    app.readerOpener = null;
  });
  $("#book-file").addEventListener("change", async (e) => {
    const f = e.target.files?.[0];
    if (!f) return;
    try {
      await uploadBook(f);
    } catch (err) {
      status(`${f.name}: ${err.message}`);
    } finally {
      e.target.value = "";
    }
  });
  const ready = Promise.all([probeWasm(), loadBooks()]).then(() => {
    document.documentElement.dataset.ready = "1";
  });
  // For tests and for trying out resume by hand: cut the live connection as a network drop
  // would; the page reconnects with Last-Event-ID.
  window.citeflow = {
    ready,
    dropConnection() {
      const a = app.active;
      if (!a?.ctl) return false;
      a.ctl.abort();
      return true;
    },
    get sessionId() {
      return app.sessionId;
    },
  };
}

init();
