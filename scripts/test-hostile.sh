#!/usr/bin/env bash
# Hostile input against a real `citeflow serve` (issue 15): a misbehaving upstream (the replaying
# upstream of crates/server/replay/examples/replay_upstream.rs, fed hostile recordings) and a set of
# hostile EPUB uploads, each checked for its documented error within a stated time, with the
# server under an address-space cap; after each attack the server must answer /healthz and a
# normal streamed chat, and at the end its peak RSS (VmHWM) must be under MAX_RSS_MB.
#
# Attacks and the answers they must get (within ATTACK_SECONDS each):
#   EPUB uploads (POST /v1/books)                       status, code, param
#     entity expansion in XHTML, quadratic (100 KB x 2,000; 400 KB x 150,000)
#                                                       413 invalid_epub max_entity_bytes_per_document
#     entity expansion in the OPF (100 KB x 2,000)      413 invalid_epub max_entity_bytes_per_document
#     exponential entities in XHTML (billion laughs)    413 invalid_epub max_entity_bytes_per_document
#     exponential entities in the OPF                   400 invalid_epub (undeclared after inlining)
#     20,000 nested <div>                               413 invalid_epub max_depth
#     60,000 attributes on one element                  413 invalid_epub max_attributes_per_element
#     20,000 nested <a> in the nav                      413 invalid_epub max_depth
#     60,000 flat nav entries (stored, 2 MB)            413 invalid_epub max_toc_entries
#     zip bomb (80 MiB of one byte, deflated)           413 invalid_epub max_entry_bytes
#     an entry that lies about its size (declares 100 B, holds 80 MiB)
#                                                       400 or 413 invalid_epub (never more work)
#     10,001 entries                                    413 invalid_epub max_entries
#     10,000 spine itemrefs to one file                 413 invalid_epub max_spine_refs_per_file
#   upstream chunks (POST /v1/chat/completions, streamed)
#     data: 42 / [] / "x" / a non-object delta         error event upstream_malformed, stream ends
#     content after finish_reason                      dropped; the stream ends with [DONE]
#     3 MB of chunks (server: --max-upstream-bytes 1000000)
#                                                       error event upstream_too_large, text before kept
#     one 100 KB line (server: --max-upstream-line-bytes 65536)
#                                                       error event upstream_malformed (line too long)
#     then citeflow_streams_open is 0
#   requests
#     Last-Event-ID 2^63, 2^64, -1, garbage            400 invalid_request, param Last-Event-ID
#     GET /v1/chat/completions                         405 method_not_allowed (JSON envelope)
#     a source title of 5,000 bytes                    400 source_field_too_large, param sources[0].title
#     style template:… of 2,000 bytes                  400 invalid_setting
#   uploads at once (issue 38; a second server, default limits)
#     24 uploads at once of one 64 MiB book           one 201, 23 x 200; peak RSS under the bound
#                                                     of crates/server/README.md; no upload file left
#     20 uploads at once of one small book            one 201, 19 x 200 (never a 5xx), listed once
#   JSON bodies held open (issue 44 §10; a server of its own, in-memory store, default limits)
#     300 clients, one every 10 ms, each sends a 4 MiB chat but its last 10 bytes
#                                                     the first ones are read whole within the 64 MiB
#                                                     budget and answer once their last bytes come; the
#                                                     rest 503 overloaded, Retry-After: 1, after the 2 s
#                                                     wait; peak RSS under the bound of crates/server/README.md
#   the SQLite store on a full disk (issue 38 §3; a third server, its database on an 8 MiB tmpfs the
#   script mounts; skipped with a message where mounting is not allowed)
#     filled before a stream: chat, responses, messages 503 store_unavailable, Retry-After: 1 (an
#       answer SQLite still finds room for streams whole or ends with store_unavailable; never 500)
#     /readyz 503 naming "database or disk is full", 200 once the filler is removed; all three
#       routes answer whole again
#     filled during a paced stream: it ends with store_unavailable; once there is space, resuming
#       it gives the error event; the chat answered before the faults resumes event for event
#   a Redis past its maxmemory (issue 38 §3; a fourth server on a redis-server of its own; skipped
#   with a message where redis-server is not installed)
#     maxmemory 1 (noeviction): chat, responses, messages 503 store_unavailable, Retry-After: 1;
#       /readyz 503 naming OOM; maxmemory 0: /readyz 200, all three answer, the earlier chat resumes
#
# Needs: python3 (the driver uses its urllib and zipfile), prlimit (util-linux), cargo; mount and
# umount (root) for the full-disk checks, redis-server and redis-cli for the Redis checks.
# CITEFLOW_BIN=path uses a citeflow binary already built instead of building citeflow-cli.
# Idempotent; both servers are stopped on exit, whatever happens.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
MAX_RSS_MB="${MAX_RSS_MB:-300}"
ATTACK_SECONDS="${ATTACK_SECONDS:-10}"
# Issue 38, on a second server: UPLOADS uploads at once of a book of UPLOAD_BYTES (the default
# --max-book-bytes, 64 MiB) must keep its peak RSS under the bound of crates/server/README.md.
UPLOADS="${UPLOADS:-24}"
UPLOAD_BYTES="${UPLOAD_BYTES:-$((64 << 20))}"
# Issue 44 §10: clients holding JSON bodies open at once, on a server of its own.
FLOOD_CLIENTS="${FLOOD_CLIENTS:-300}"
# Hard cap on the server's address space: a runaway allocation is killed, not swapped.
ADDRESS_SPACE_BYTES="${ADDRESS_SPACE_BYTES:-$((4 << 30))}"
# shellcheck source=step.sh
source "$ROOT/scripts/step.sh"
# shellcheck source=debug-build.sh
source "$ROOT/scripts/debug-build.sh"

step "build citeflow-cli and the replaying upstream"
debug_build
if [ -z "${CITEFLOW_BIN:-}" ]; then
    CITEFLOW_BIN="$TARGET_DIR/debug/citeflow"
fi

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

first_line() {
    local file="$1"
    for _ in $(seq 1 400); do
        if [ -s "$file" ]; then head -n1 "$file"; return 0; fi
        sleep 0.05
    done
    echo "server did not start: $file" >&2
    cat "${file%.out}.err" >&2 2>/dev/null || true
    return 1
}

cat > "$WORK/hostile.py" <<'PY'
"""Builds the hostile inputs (`gen DIR`) and runs the attacks (`run DIR URL PID`)."""
import io, json, os, sys, time, urllib.error, urllib.request, zipfile

CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""
CHAPTER = '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>c</title></head><body><p>Hello</p></body></html>'


def opf(doctype="", title="Hostile", spine_refs=1, nav=False):
    manifest = '<item id="c" href="c.xhtml" media-type="application/xhtml+xml"/>'
    if nav:
        manifest += '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
    spine = '<itemref idref="c"/>' * spine_refs
    return (f'<?xml version="1.0"?>\n{doctype}<package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            f'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:identifier id="id">urn:hostile</dc:identifier><dc:title>{title}</dc:title></metadata>'
            f'<manifest>{manifest}</manifest><spine>{spine}</spine></package>')


def epub(chapter=CHAPTER, package=None, nav=None, extra=(), nav_stored=False):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        d = zipfile.ZIP_DEFLATED
        z.writestr("META-INF/container.xml", CONTAINER, compress_type=d)
        z.writestr("OEBPS/content.opf", package or opf(nav=nav is not None), compress_type=d)
        if nav is not None:
            z.writestr("OEBPS/nav.xhtml", nav, compress_type=zipfile.ZIP_STORED if nav_stored else d)
        z.writestr("OEBPS/c.xhtml", chapter, compress_type=d)
        for name, data in extra:
            z.writestr(name, data, compress_type=d)
    return buf.getvalue()


def entity_doc(value_bytes, refs):
    return (f'<!DOCTYPE html [<!ENTITY e "{"x" * value_bytes}">]>\n<html><head><title>t</title></head>'
            f'<body><p>{"&e;" * refs}</p></body></html>')


def laughs(refs):
    dtd = '<!ENTITY l0 "lol">' + "".join(f'<!ENTITY l{i} "{("&l%d;" % (i - 1)) * 10}">' for i in range(1, 10))
    return dtd, "&l9;" * refs


def nav_doc(body):
    return ('<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head>'
            f'<title>nav</title></head><body><nav epub:type="toc">{body}</nav></body></html>')


def lying_sizes():
    data = bytearray(epub(chapter="<html><body><p>" + "a" * (80 << 20) + "</p></body></html>"))
    name = b"OEBPS/c.xhtml"
    i = 0
    while (at := data.find(name, i)) >= 0:
        if data[at - 30:at - 26] == b"PK\x03\x04":
            data[at - 30 + 22:at - 30 + 26] = (100).to_bytes(4, "little")
        elif at >= 46 and data[at - 46:at - 42] == b"PK\x01\x02":
            data[at - 46 + 24:at - 46 + 28] = (100).to_bytes(4, "little")
        i = at + len(name)
    return bytes(data)


def many_entries():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        for i in range(10_001):
            z.writestr(f"f{i}", b"")
    return buf.getvalue()


ENTITY = ("invalid_epub", "max_entity_bytes_per_document")
# name -> (bytes, expected statuses, expected code, expected param)
def books():
    dtd, refs = laughs(100_000)
    opf_dtd, opf_refs = laughs(100)
    attrs = "".join(f' a{i}=""' for i in range(60_000))
    return {
        "entity-xhtml": (lambda: epub(chapter=entity_doc(100_000, 2_000)), {413}, *ENTITY),
        "entity-xhtml-large": (lambda: epub(chapter=entity_doc(400_000, 150_000)), {413}, *ENTITY),
        "entity-opf": (lambda: epub(package=opf(doctype=f'<!DOCTYPE package [<!ENTITY e "{"x" * 100_000}">]>',
                                                 title="&e;" * 2_000)), {413}, *ENTITY),
        "laughs-xhtml": (lambda: epub(chapter=f"<!DOCTYPE html [{dtd}]>\n<html><body><p>{refs}</p></body></html>"),
                         {413}, *ENTITY),
        "laughs-opf": (lambda: epub(package=opf(doctype=f"<!DOCTYPE package [{opf_dtd}]>", title=opf_refs)),
                       {400}, "invalid_epub", None),
        "deep-nesting": (lambda: epub(chapter="<html><body>" + "<div>x" * 20_000 + "</body></html>"),
                         {413}, "invalid_epub", "max_depth"),
        "attribute-flood": (lambda: epub(chapter=f"<html><body><p{attrs}>x</p></body></html>"),
                            {413}, "invalid_epub", "max_attributes_per_element"),
        "nav-nested-flood": (lambda: epub(nav=nav_doc("<ol><li>" + '<a href="c.xhtml">x' * 20_000 + "</li></ol>")),
                             {413}, "invalid_epub", "max_depth"),
        # Stored, so that the compression-ratio budget does not stop it first.
        "nav-flat-flood": (lambda: epub(nav=nav_doc("<ol>" + '<li><a href="c.xhtml">x</a></li>' * 60_000 + "</ol>"),
                                        nav_stored=True),
                           {413}, "invalid_epub", "max_toc_entries"),
        "zip-bomb": (lambda: epub(chapter="<html><body><p>" + "a" * (80 << 20) + "</p></body></html>"),
                     {413}, "invalid_epub", "max_entry_bytes"),
        "lying-sizes": (lying_sizes, {400, 413}, "invalid_epub", "*"),
        "10001-entries": (many_entries, {413}, "invalid_epub", "max_entries"),
        "spine-repeats": (lambda: epub(package=opf(spine_refs=10_000)), {413}, "invalid_epub",
                          "max_spine_refs_per_file"),
    }


def chunk(content=None, finish=None, delta=None):
    d = delta if delta is not None else ({} if content is None else {"content": content})
    return "data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                  "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}) + "\n\n"


def streams():
    start = chunk(delta={"role": "assistant", "content": ""}) + chunk("Hello ")
    end = chunk(finish="stop") + "data: [DONE]\n\n"
    return {
        "ok.sse": start + chunk("world") + end,
        "hostile-number.sse": start + "data: 42\n\n" + end,
        "hostile-array.sse": start + "data: []\n\n" + end,
        "hostile-string.sse": start + 'data: "x"\n\n' + end,
        "hostile-delta.sse": start + 'data: {"choices": [{"index": 0, "delta": "x"}]}\n\n' + end,
        "after-finish.sse": start + chunk(finish="stop") + chunk(" extra") + "data: [DONE]\n\n",
        "flood.sse": start + "".join(chunk("flood ") for _ in range(20_000)) + end,
        "long-line.sse": start + chunk("x" * 100_000) + end,
    }


def gen(d):
    os.makedirs(f"{d}/streams")
    for name, body in streams().items():
        with open(f"{d}/streams/{name}", "w") as f:
            f.write(body)


def request(url, method="GET", body=None, headers=None, timeout=60):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def sse_data(raw):
    return [l[5:].strip() for l in raw.decode().splitlines() if l.startswith("data:")]


def chat(base, model, timeout):
    body = json.dumps({"model": model, "stream": True, "messages": [{"role": "user", "content": "q"}]}).encode()
    return request(f"{base}/v1/chat/completions", "POST", body, {"content-type": "application/json"}, timeout)


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def big_book(size):
    """A readable EPUB of about `size` bytes: one short chapter and an incompressible image."""
    buf = io.BytesIO()
    package = opf(title="Big").replace(
        '<item id="c"', '<item id="img" href="big.png" media-type="image/png"/><item id="c"')
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        z.writestr("META-INF/container.xml", CONTAINER, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("OEBPS/content.opf", package, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("OEBPS/c.xhtml", CHAPTER, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("OEBPS/big.png", os.urandom(size), compress_type=zipfile.ZIP_STORED)
    return buf.getvalue()


def concurrent_uploads(base, pid, body, n, seconds):
    """`n` uploads of `body` at once (a thread each): their statuses and JSON answers."""
    import threading
    answers = [None] * n

    def one(i):
        s, _, raw = request(f"{base}/v1/books", "POST", body, {"content-type": "application/epub+zip"},
                            seconds)
        try:
            answers[i] = (s, json.loads(raw))
        except ValueError:
            answers[i] = (s, {})
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def http_answer(raw):
    """(status, headers, body) of a raw HTTP/1.1 response (a chunked body decoded)."""
    head, _, body = bytes(raw).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return 0, {}, b""
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    if headers.get("transfer-encoding") == "chunked":
        out, rest = bytearray(), body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size.split(b";")[0] or b"0", 16)
            if n == 0:
                break
            out += rest[:n]
            rest = rest[n + 2:]
        body = bytes(out)
    return status, headers, body


def body_flood(base, pid, clients, body_bytes, stagger, budget_mb, wait_s):
    """Issue 44 §10: `clients` clients, one every `stagger` s, each sending a chat of
    `body_bytes` but its last 10 bytes, then waiting. The bodies draw from one budget: the
    first ones are read whole and wait for their last bytes; the ones past the budget wait
    `wait_s`, then get 503 overloaded with Retry-After: 1. Then the waiting ones send their
    last bytes and get their answers; the server's peak RSS stays under the README's bound."""
    import selectors, socket
    host, port = base.replace("http://", "").rsplit(":", 1)
    prefix = json.dumps({"model": "ok.sse", "stream": True,
                         "messages": [{"role": "user", "content": "q"}]}).encode()
    body = prefix + b" " * (body_bytes - len(prefix))
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}:{port}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode()
    sel = selectors.DefaultSelector()
    conns = []
    idle = rss_now_mb(pid)
    t0 = time.monotonic()

    def open_one():
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((host, int(port)))
        c = {"s": s, "out": memoryview(head + body[:-10]), "in": bytearray(), "closed": False}
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
        conns.append(c)

    def settled():
        return all(c["closed"] or not c["out"] for c in conns)
    last_open = t0
    while len(conns) < clients or not settled() or time.monotonic() - last_open < wait_s + 1:
        if len(conns) < clients and time.monotonic() >= t0 + len(conns) * stagger:
            open_one()
            last_open = time.monotonic()
        for key, mask in sel.select(timeout=0.01):
            c = key.data
            if mask & selectors.EVENT_READ:
                try:
                    data = c["s"].recv(1 << 16)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""
                if data:
                    c["in"] += data
                elif data == b"":
                    c["closed"] = True
                    sel.unregister(c["s"])
                    c["s"].close()
                    continue
            if mask & selectors.EVENT_WRITE and c["out"]:
                try:
                    n = c["s"].send(c["out"][:1 << 20])
                    c["out"] = c["out"][n:]
                except BlockingIOError:
                    pass
                except OSError:
                    c["out"] = c["out"][:0]
                if not c["out"]:
                    sel.modify(c["s"], selectors.EVENT_READ, c)
        if time.monotonic() - t0 > 120:
            break
    peak_flood = rss_mb(pid)
    refused = [http_answer(c["in"]) for c in conns if c["closed"]]
    waiting = [c for c in conns if not c["closed"]]
    check(all((s, h.get("retry-after"), json.loads(b or b"{}").get("error", {}).get("code"))
              == (503, "1", "overloaded") for s, h, b in refused),
          f"{len(refused)} bodies past the budget: 503 overloaded, Retry-After: 1 "
          f"({sorted(set(s for s, _, _ in refused))})")
    check(1 <= len(waiting) <= budget_mb * 2**20 // body_bytes,
          f"{len(waiting)} bodies read whole within the budget of {budget_mb} MiB, waiting for their last bytes")
    texts = []
    for c in waiting:
        c["s"].setblocking(True)
        c["s"].settimeout(30)
        c["s"].sendall(body[-10:])
        while True:
            data = c["s"].recv(1 << 16)
            if not data:
                break
            c["in"] += data
        c["s"].close()
        s, _, b = http_answer(c["in"])
        texts.append((s, sse_text(b)))
    check(texts and all(t == (200, "Hello world") for t in texts),
          f"the waiting ones answered once their last bytes came: {sorted(set(texts))}")
    s, _, raw = request(f"{base}/v1/chat/completions", "POST", body, {"content-type": "application/json"}, 30)
    check(s == 200 and sse_text(raw) == "Hello world", f"then a whole {body_bytes}-byte body answers: {s}")
    peak = rss_mb(pid)
    # The README's bound: idle + 1.1 x (the budget + 128 KiB a connection: its read buffer,
    # of which hyper fills at most 64 KiB at once, and its state).
    bound = idle + 1.1 * (budget_mb + clients / 8)
    print(f"  {clients} clients of {body_bytes} bytes in {time.monotonic() - t0:.1f} s: {len(waiting)} read whole, "
          f"{len(refused)} refused; RSS idle {idle:.0f} MB, peak {peak_flood:.0f} MB during, {peak:.0f} MB after "
          f"(bound {bound:.0f} MB)", flush=True)
    check(peak < bound, f"peak RSS {peak:.0f} MB < {bound:.0f} MB with {clients} bodies held open")


def sse_text(raw):
    out = []
    for d in sse_data(raw):
        try:
            v = json.loads(d)
            out.append(v["choices"][0]["delta"].get("content") or "")
        except (ValueError, KeyError, IndexError, TypeError):
            pass
    return "".join(out)


def rss_now_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def uploads_at_once(d, base, pid, seconds):
    """Issue 38, on a server of its own: many uploads at --max-book-bytes at once stay under
    the bound of crates/server/README.md, and uploads of one book at once add it once, never
    a 5xx."""
    idle = rss_now_mb(pid)
    # The bound of crates/server/README.md for these limits: idle + 1.1 x (ingests x (book +
    # W) + the index writer's 32 MiB + 1.5 MiB per upload being received); W, the reader's
    # working set, is at most 16 MiB for this book (one short chapter; the image is never
    # decompressed); 1.1: the allocator's slack.
    bound = idle + 1.1 * (INGESTS * (UPLOAD_BYTES / 2**20 + 16) + 32 + UPLOADS * 1.5)
    body = big_book(UPLOAD_BYTES - 65536)
    t = time.monotonic()
    answers = concurrent_uploads(base, pid, body, UPLOADS, 600)
    took = time.monotonic() - t
    statuses = sorted(s for s, _ in answers)
    added = [v for s, v in answers if v.get("added") is True]
    check(statuses == [200] * (UPLOADS - 1) + [201] and len(added) == 1,
          f"{UPLOADS} uploads of a {len(body) / 2**20:.1f} MiB book at once: one 201, the others 200 "
          f"({statuses}) in {took:.1f} s")
    peak = rss_mb(pid)
    check(peak < bound,
          f"peak RSS {peak:.0f} MB (idle {idle:.0f} MB) < {bound:.0f} MB, the bound of "
          f"crates/server/README.md for {INGESTS} ingests of {UPLOAD_BYTES / 2**20:.0f} MiB and "
          f"{UPLOADS} uploads")
    leftover = os.listdir(f"{d}/index/uploads")
    check(leftover == [], f"no upload file left in index/uploads: {leftover}")
    # The same-book race with a book of ordinary size: no 5xx, one book in the index.
    small = epub(package=opf(title="Race"), chapter=CHAPTER.replace("Hello", "Hello race " * 200))
    answers = concurrent_uploads(base, pid, small, 20, seconds * 3)
    statuses = sorted(s for s, _ in answers)
    keys = {v.get("key") for _, v in answers}
    check(statuses == [200] * 19 + [201] and len(keys) == 1,
          f"20 uploads of one book at once: {statuses}, keys {sorted(map(str, keys))}")
    s, _, raw = request(f"{base}/v1/books", timeout=seconds)
    listed = [b["key"] for b in json.loads(raw)["data"]] if s == 200 else []
    check(listed.count(next(iter(keys))) == 1, f"the book is listed once: {listed}")
    s, _, _ = request(f"{base}/healthz", timeout=5)
    check(s == 200, "/healthz answers after the uploads")
    if failures:
        print(f"{len(failures)} upload checks failed", file=sys.stderr)
        sys.exit(1)
    print("all upload checks passed")


FULL_ROUTES = [
    ("/v1/chat/completions",
     {"model": "ok.sse", "stream": True, "messages": [{"role": "user", "content": "q"}]}),
    ("/v1/responses",
     {"model": "openai-web-search-tool.1.chunks.txt", "stream": True, "input": "q"}),
    ("/v1/messages",
     {"model": "anthropic-web-search-tool.1.chunks.txt", "max_tokens": 100, "stream": True,
      "messages": [{"role": "user", "content": "q"}]}),
]


def post_json(base, path, body, seconds):
    return request(f"{base}{path}", "POST", json.dumps(body).encode(), {"content-type": "application/json"},
                   seconds)


def error_codes(raw):
    """The codes of the error events of an SSE body (each wire's form)."""
    codes = []
    for x in sse_data(raw):
        try:
            v = json.loads(x)
        except ValueError:
            continue
        e = v.get("error") if isinstance(v, dict) else None
        if isinstance(e, dict) and (e.get("code") or e.get("type")):
            codes.append(e.get("code") or e.get("type"))
    return codes


def fill(mnt):
    """Fills the file system of `mnt` to its last byte; returns the filler's path."""
    path = f"{mnt}/filler"
    with open(path, "wb", buffering=0) as f:
        size = 1 << 16
        while size:
            try:
                f.write(b"z" * size)
            except OSError:
                size //= 2
    return path


def readyz_becomes(base, status, seconds=5):
    deadline = time.monotonic() + seconds
    while True:
        s, _, raw = request(f"{base}/readyz", timeout=5)
        if s == status or time.monotonic() > deadline:
            return s, json.loads(raw or b"{}")
        time.sleep(0.1)


def full_disk(base, mnt, seconds):
    """Issue 38 §3, on a server whose SQLite file is on a small tmpfs: the disk filled before
    and during a stream, on chat, responses and messages."""
    earlier = []
    for path, body in FULL_ROUTES:
        s, h, raw = post_json(base, path, body, seconds)
        check(s == 200 and not error_codes(raw), f"{path} answers before the fault: {s}")
        earlier.append((path, h.get("x-citeflow-stream-id") or h.get("X-Citeflow-Stream-Id"), raw))
    s, v = readyz_becomes(base, 200)
    check(s == 200, f"/readyz before the fault: {s} {v}")

    filler = fill(mnt)
    for path, body in FULL_ROUTES:
        answers = []
        for _ in range(20):
            s, h, raw = post_json(base, path, body, seconds)
            if s == 503:
                err = json.loads(raw).get("error", {})
                answers.append((s, err.get("code"), h.get("retry-after") or h.get("Retry-After")))
                break
            # Started before the fault showed: whole, or ended by the typed event.
            answers.append((s, error_codes(raw)[-1:]))
            if s != 200 or error_codes(raw) not in ([], ["store_unavailable"]):
                break
        check(answers[-1] == (503, "store_unavailable", "1") and all(a[0] == 200 for a in answers[:-1]),
              f"{path} on a full disk: {answers}")
    s, v = readyz_becomes(base, 503)
    why = (v.get("store") or {}).get("error", "") if isinstance(v.get("store"), dict) else ""
    check(s == 503 and "database or disk is full" in why, f"/readyz on a full disk: {s} {v}")
    os.remove(filler)
    s, v = readyz_becomes(base, 200)
    check(s == 200, f"/readyz once there is space: {s} {v}")
    for path, body in FULL_ROUTES:
        s, _, raw = post_json(base, path, body, seconds)
        check(s == 200 and not error_codes(raw), f"{path} answers after the fault: {s} {error_codes(raw)}")

    # During a stream: the disk fills while a paced answer streams.
    import threading
    result = {}

    def slow():
        result["answer"] = post_json(base, "/v1/chat/completions",
                                     {"model": "slow.sse", "stream": True,
                                      "messages": [{"role": "user", "content": "q"}]}, 60)
    t = threading.Thread(target=slow)
    t.start()
    time.sleep(1.0)
    filler = fill(mnt)
    t.join()
    s, h, raw = result["answer"]
    stream_id = h.get("x-citeflow-stream-id") or h.get("X-Citeflow-Stream-Id")
    check(s == 200 and error_codes(raw) == ["store_unavailable"],
          f"a stream the fault meets ends with store_unavailable: {s} {error_codes(raw)}")
    os.remove(filler)
    s, v = readyz_becomes(base, 200)
    check(s == 200, f"/readyz after the fault during a stream: {s}")
    deadline = time.monotonic() + 10
    while True:
        s, _, raw = request(f"{base}/v1/streams/{stream_id}", timeout=seconds)
        if s != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    check(s == 200 and error_codes(raw)[-1:] == ["store_unavailable"],
          f"resuming it gives its events and the error: {s} {error_codes(raw)[-1:]}")
    # Nothing lost: the answers completed before the faults read back the same.
    for path, stream_id, raw in earlier:
        if path != "/v1/chat/completions":
            continue
        s, _, again = request(f"{base}/v1/streams/{stream_id}", timeout=seconds)
        check(s == 200 and sse_data(again) == sse_data(raw),
              f"the answer of {path} before the faults resumes the same ({len(sse_data(again))} events)")


def redis_oom(base, port, seconds):
    """Issue 38 §3, on a server whose store is a Redis past its maxmemory: typed errors, then
    recovery."""
    import subprocess

    def config(value):
        out = subprocess.run(["redis-cli", "-p", str(port), "config", "set", "maxmemory", value],
                             capture_output=True, text=True)
        return out.stdout.strip()
    earlier = []
    for path, body in FULL_ROUTES:
        s, h, raw = post_json(base, path, body, seconds)
        check(s == 200 and not error_codes(raw), f"redis: {path} answers before the fault: {s}")
        earlier.append((path, h.get("x-citeflow-stream-id") or h.get("X-Citeflow-Stream-Id"), raw))
    check(config("1") == "OK", "redis: maxmemory 1 (noeviction)")
    for path, body in FULL_ROUTES:
        s, h, raw = post_json(base, path, body, seconds)
        err = json.loads(raw).get("error", {}) if s != 200 else {}
        check((s, err.get("code"), h.get("retry-after") or h.get("Retry-After")) == (503, "store_unavailable", "1"),
              f"redis past maxmemory: {path} {s} {err.get('code')} {err.get('message')}")
    s, v = readyz_becomes(base, 503)
    why = (v.get("store") or {}).get("error", "") if isinstance(v.get("store"), dict) else ""
    check(s == 503 and "OOM" in why, f"redis past maxmemory: /readyz {s} {v}")
    check(config("0") == "OK", "redis: maxmemory 0")
    s, v = readyz_becomes(base, 200)
    check(s == 200, f"redis with memory again: /readyz {s} {v}")
    for path, body in FULL_ROUTES:
        s, _, raw = post_json(base, path, body, seconds)
        check(s == 200 and not error_codes(raw), f"redis: {path} answers after the fault: {s}")
    path, stream_id, raw = earlier[0]
    s, _, again = request(f"{base}/v1/streams/{stream_id}", timeout=seconds)
    check(s == 200 and sse_data(again) == sse_data(raw),
          f"redis: the chat answered before the fault resumes the same ({len(sse_data(again))} events)")


def still_serving(base, after):
    s, _, _ = request(f"{base}/healthz", timeout=5)
    check(s == 200, f"/healthz answers after {after}")
    s, _, raw = chat(base, "ok.sse", 10)
    data = sse_data(raw) if s == 200 else []
    check(s == 200 and data[-1:] == ["[DONE]"], f"a normal streamed chat works after {after}")


def run(d, base, pid, seconds):
    for name, (build, statuses, code, param) in books().items():
        body = build()
        t = time.monotonic()
        s, _, raw = request(f"{base}/v1/books", "POST", body, {"content-type": "application/epub+zip"}, 60)
        took = time.monotonic() - t
        try:
            err = json.loads(raw)["error"]
        except (ValueError, KeyError):
            err = {}
        good = s in statuses and err.get("code") == code and (param == "*" or err.get("param") == param)
        check(good and took < seconds,
              f"upload {name} ({len(body)} B): {s} {err.get('code')} param={err.get('param')} in {took:.2f} s"
              + ("" if good else f" (expected {sorted(statuses)} {code} {param}: {err.get('message')})"))
        still_serving(base, name)
        check(rss_mb(pid) < MAX_RSS, f"peak RSS {rss_mb(pid):.0f} MB < {MAX_RSS} MB after {name}")
    for model in ["hostile-number.sse", "hostile-array.sse", "hostile-string.sse", "hostile-delta.sse"]:
        t = time.monotonic()
        s, _, raw = chat(base, model, seconds)
        took = time.monotonic() - t
        data = sse_data(raw)
        try:
            last = json.loads(data[-1])["error"]["code"]
        except (ValueError, KeyError, IndexError, TypeError):
            last = None
        check(s == 200 and last == "upstream_malformed" and took < seconds,
              f"upstream {model}: stream ends with {last} in {took:.2f} s")
        still_serving(base, model)
    for model, code in [("flood.sse", "upstream_too_large"), ("long-line.sse", "upstream_malformed")]:
        t = time.monotonic()
        s, _, raw = chat(base, model, seconds)
        took = time.monotonic() - t
        data = sse_data(raw)
        try:
            last = json.loads(data[-1])["error"]["code"]
        except (ValueError, KeyError, IndexError, TypeError):
            last = None
        text = "".join(json.loads(x)["choices"][0]["delta"].get("content") or ""
                       for x in data[:-1] if json.loads(x).get("choices"))
        check(s == 200 and last == code and text.startswith("Hello ") and took < seconds,
              f"upstream {model}: ends with {last} after {len(text)} characters, in {took:.2f} s")
        still_serving(base, model)
    for what, body, code, param in [
        ("a 5,000-byte source title", {"sources": [{"id": "s", "title": "t" * 5_000}]},
         "source_field_too_large", "sources[0].title"),
        ("a 2,000-byte template", {"citeflow": {"style": "template:" + "x" * 2_000}},
         "invalid_setting", "*"),
    ]:
        req = {"model": "ok.sse", "stream": True, "messages": [{"role": "user", "content": "q"}], **body}
        s, _, raw = request(f"{base}/v1/chat/completions", "POST", json.dumps(req).encode(),
                            {"content-type": "application/json"}, seconds)
        err = json.loads(raw).get("error", {}) if raw else {}
        check(s == 400 and err.get("code") == code and (param == "*" or err.get("param") == param),
              f"{what}: {s} {err.get('code')} param={err.get('param')}")
    s, _, raw = chat(base, "after-finish.sse", seconds)
    data = sse_data(raw)
    text = "".join(json.loads(x)["choices"][0]["delta"].get("content") or ""
                   for x in data if x != "[DONE]" and json.loads(x).get("choices"))
    check(data[-1:] == ["[DONE]"] and " extra" not in text, f"content after finish_reason is dropped: {text!r}")
    time.sleep(0.2)
    _, _, metrics = request(f"{base}/metrics", timeout=5)
    open_streams = [l for l in metrics.decode().splitlines() if l.startswith("citeflow_streams_open{")]
    check(open_streams and all(l.endswith("} 0") for l in open_streams), f"no stream left running: {open_streams}")
    s, h, raw = chat(base, "ok.sse", seconds)
    stream_id = h.get("x-citeflow-stream-id") or h.get("X-Citeflow-Stream-Id")
    for bad in ["9223372036854775808", "18446744073709551616", "-1", "abc"]:
        s, _, raw = request(f"{base}/v1/streams/{stream_id}", headers={"last-event-id": bad}, timeout=seconds)
        err = json.loads(raw).get("error", {}) if s == 400 else {}
        check(s == 400 and err.get("param") == "Last-Event-ID", f"Last-Event-ID {bad}: {s} {err.get('code')}")
    s, h, raw = request(f"{base}/v1/chat/completions", timeout=seconds)
    err = json.loads(raw).get("error", {}) if raw else {}
    check(s == 405 and err.get("code") == "method_not_allowed", f"GET /v1/chat/completions: {s} {err.get('code')}")
    still_serving(base, "everything")
    check(rss_mb(pid) < MAX_RSS, f"peak RSS of the server {rss_mb(pid):.0f} MB < {MAX_RSS} MB")
    if failures:
        print(f"{len(failures)} hostile-input checks failed", file=sys.stderr)
        sys.exit(1)
    print("all hostile-input checks passed")


MAX_RSS = float(os.environ.get("MAX_RSS_MB", "300"))
UPLOADS = int(os.environ.get("UPLOADS", "24"))
UPLOAD_BYTES = int(os.environ.get("UPLOAD_BYTES", str(64 << 20)))
INGESTS = int(os.environ.get("INGESTS", "2"))
if sys.argv[1] == "gen":
    gen(sys.argv[2])
elif sys.argv[1] == "uploads":
    uploads_at_once(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
elif sys.argv[1] == "redis":
    redis_oom(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    if failures:
        print(f"{len(failures)} redis checks failed", file=sys.stderr)
        sys.exit(1)
    print("all redis checks passed")
elif sys.argv[1] == "flood":
    body_flood(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]),
               int(sys.argv[7]), float(sys.argv[8]))
    if failures:
        print(f"{len(failures)} body-budget checks failed", file=sys.stderr)
        sys.exit(1)
    print("all body-budget checks passed")
elif sys.argv[1] == "full":
    full_disk(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    if failures:
        print(f"{len(failures)} full-disk checks failed", file=sys.stderr)
        sys.exit(1)
    print("all full-disk checks passed")
else:
    run(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
PY

step "hostile inputs against one server (${ATTACK_SECONDS} s an attack at most)"
python3 "$WORK/hostile.py" gen "$WORK"

"$TARGET_DIR/debug/examples/replay_upstream" "$WORK/streams" > "$WORK/upstream.out" 2> "$WORK/upstream.err" &
PIDS+=($!)
UPSTREAM="$(first_line "$WORK/upstream.out")"

CITEFLOW_LOG=error CITEFLOW_DATA_DIR="$WORK/data" prlimit --as="$ADDRESS_SPACE_BYTES" -- \
    "$CITEFLOW_BIN" serve --upstream "$UPSTREAM" --listen 127.0.0.1:0 \
    --store "sqlite:$WORK/citeflow.db" --index "$WORK/index" --no-sample-books \
    --max-upstream-bytes 1000000 --max-upstream-line-bytes 65536 \
    > "$WORK/citeflow.out" 2> "$WORK/citeflow.err" &
SERVER=$!
PIDS+=("$SERVER")
URL="$(first_line "$WORK/citeflow.out" | sed 's/^citeflow listening on //')"

MAX_RSS_MB="$MAX_RSS_MB" python3 "$WORK/hostile.py" run "$WORK" "$URL" "$SERVER" "$ATTACK_SECONDS"
kill -0 "$SERVER" || { echo "the server died" >&2; exit 1; }

step "$UPLOADS uploads at once, on a second server"
# Uploads at once (issue 38), on a fresh server with the default limits (--max-book-bytes 64 MiB,
# 2 ingests at once), under the same address-space cap.
mkdir -p "$WORK/uploads"
CITEFLOW_LOG=error CITEFLOW_DATA_DIR="$WORK/uploads/data" prlimit --as="$ADDRESS_SPACE_BYTES" -- \
    "$CITEFLOW_BIN" serve --upstream "$UPSTREAM" --listen 127.0.0.1:0 \
    --store "sqlite:$WORK/uploads/citeflow.db" --index "$WORK/uploads/index" --no-sample-books \
    > "$WORK/uploads.out" 2> "$WORK/uploads.err" &
UPLOAD_SERVER=$!
PIDS+=("$UPLOAD_SERVER")
UPLOAD_URL="$(first_line "$WORK/uploads.out" | sed 's/^citeflow listening on //')"
UPLOADS="$UPLOADS" UPLOAD_BYTES="$UPLOAD_BYTES" INGESTS=2 \
    python3 "$WORK/hostile.py" uploads "$WORK/uploads" "$UPLOAD_URL" "$UPLOAD_SERVER" "$ATTACK_SECONDS"
kill -0 "$UPLOAD_SERVER" || { echo "the upload server died" >&2; exit 1; }

step "$FLOOD_CLIENTS clients holding JSON bodies open, on a server of its own"
# Issue 44 §10: FLOOD_CLIENTS clients (one every 10 ms) each send a chat of --max-body-bytes
# (4 MiB) but its last 10 bytes, to a server with the in-memory store and the default body
# budget (64 MiB, 2 s wait), under the same address-space cap. Before the budget each body was
# read on its own: 300 clients took a release build from 13 MB to 1.2 GB.
FLOOD_START=$SECONDS
CITEFLOW_LOG=error CITEFLOW_DATA_DIR="$WORK/flood/data" prlimit --as="$ADDRESS_SPACE_BYTES" -- \
    "$CITEFLOW_BIN" serve --upstream "$UPSTREAM" --listen 127.0.0.1:0 --store memory \
    --index "$WORK/flood/index" --no-sample-books > "$WORK/flood.out" 2> "$WORK/flood.err" &
FLOOD_SERVER=$!
PIDS+=("$FLOOD_SERVER")
FLOOD_URL="$(first_line "$WORK/flood.out" | sed 's/^citeflow listening on //')"
python3 "$WORK/hostile.py" flood "$FLOOD_URL" "$FLOOD_SERVER" "$FLOOD_CLIENTS" $((4 << 20)) 0.01 64 2
kill -0 "$FLOOD_SERVER" || { echo "the body-budget server died" >&2; exit 1; }
echo "  (the body-budget checks took $((SECONDS - FLOOD_START)) s)"

step "the SQLite store on a full disk, a third server"
# The SQLite store on a full disk (issue 38 §3): a third server whose database is on an 8 MiB
# tmpfs, behind an upstream paced 20 ms an event (slow.sse streams for 3 s).
FULL="$WORK/full"
mkdir -p "$FULL/mnt" "$FULL/streams"
SHARED="${CITEFLOW_SHARED_DIR:-$ROOT/../shared}"
cp "$SHARED/fixtures/streams/openai-web-search-tool.1.chunks.txt" \
    "$SHARED/fixtures/streams/anthropic-web-search-tool.1.chunks.txt" "$WORK/streams/ok.sse" "$FULL/streams/"
python3 -c '
import json, sys
def chunk(c=None, finish=None):
    delta = {} if c is None else {"content": c}
    return "data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"
sys.stdout.write(chunk("") + "".join(chunk(f"word{i} ") for i in range(150)) + chunk(finish="stop")
                 + "data: [DONE]\n\n")' > "$FULL/streams/slow.sse"
"$TARGET_DIR/debug/examples/replay_upstream" "$FULL/streams" 20 > "$FULL/upstream.out" 2> "$FULL/upstream.err" &
PIDS+=($!)
FULL_UPSTREAM="$(first_line "$FULL/upstream.out")"
if mount -t tmpfs -o size=8m tmpfs "$FULL/mnt" 2> "$FULL/mount.err"; then
    cleanup_mount() { umount -l "$FULL/mnt" 2>/dev/null || true; cleanup; }
    trap cleanup_mount EXIT INT TERM
    CITEFLOW_LOG=error CITEFLOW_DATA_DIR="$FULL/data" prlimit --as="$ADDRESS_SPACE_BYTES" -- \
        "$CITEFLOW_BIN" serve --upstream "$FULL_UPSTREAM" --anthropic-upstream "$FULL_UPSTREAM" \
        --listen 127.0.0.1:0 --store "sqlite:$FULL/mnt/citeflow.db" --index "$FULL/index" \
        --no-sample-books > "$FULL/citeflow.out" 2> "$FULL/citeflow.err" &
    FULL_SERVER=$!
    PIDS+=("$FULL_SERVER")
    FULL_URL="$(first_line "$FULL/citeflow.out" | sed 's/^citeflow listening on //')"
    python3 "$WORK/hostile.py" full "$FULL_URL" "$FULL/mnt" "$ATTACK_SECONDS"
    kill -0 "$FULL_SERVER" || { echo "the full-disk server died" >&2; exit 1; }
else
    echo "SKIPPED the full-disk checks: cannot mount a tmpfs here ($(cat "$FULL/mount.err")); run as root" >&2
fi

step "Redis past its maxmemory, a fourth server"
# Redis past its maxmemory (issue 38 §3): a fourth server on a Redis of its own.
if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
    REDIS_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    mkdir -p "$WORK/redis"
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK/redis" \
        --maxmemory-policy noeviction --daemonize yes --pidfile "$WORK/redis/redis.pid" \
        --logfile "$WORK/redis/redis.log"
    stop_redis() { redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true; }
    trap 'stop_redis; umount -l "$FULL/mnt" 2>/dev/null || true; cleanup' EXIT INT TERM
    for _ in $(seq 1 50); do redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
    CITEFLOW_LOG=error CITEFLOW_DATA_DIR="$WORK/redis/data" prlimit --as="$ADDRESS_SPACE_BYTES" -- \
        "$CITEFLOW_BIN" serve --upstream "$FULL_UPSTREAM" --anthropic-upstream "$FULL_UPSTREAM" \
        --listen 127.0.0.1:0 --store "redis://127.0.0.1:$REDIS_PORT/0" --index "$WORK/redis/index" \
        --no-sample-books > "$WORK/redis.out" 2> "$WORK/redis.err" &
    REDIS_SERVER=$!
    PIDS+=("$REDIS_SERVER")
    REDIS_URL="$(first_line "$WORK/redis.out" | sed 's/^citeflow listening on //')"
    python3 "$WORK/hostile.py" redis "$REDIS_URL" "$REDIS_PORT" "$ATTACK_SECONDS"
    kill -0 "$REDIS_SERVER" || { echo "the Redis server died" >&2; exit 1; }
else
    echo "SKIPPED the Redis checks: redis-server is not installed (apt-get install redis-server)" >&2
fi
step_done
