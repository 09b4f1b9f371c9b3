//! Server-sent events as bytes: each event framed once into one [`Bytes`] ([`event`]), and the
//! `text/event-stream` response that carries a feed of them with keep-alive comments
//! ([`response`]), a logged event's frame as its stream names it ([`logged`]), and the
//! `Last-Event-ID` a client resumes after ([`last_event_id`], the one
//! parser of every resume route).
//!
//! The frames are those axum's `Sse` writes (`id:`, `event:`, then the data split into one
//! `data:` line per line), built in one buffer of the right size; the keep-alive costs one
//! timer tick per half interval instead of a timer reset per event.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::Stream;
use tokio::time::{interval_at, Instant, Interval, MissedTickBehavior};

use crate::cut::OwnWake;
use crate::error::ApiError;

/// The keep-alive comment: a comment line alone, with no blank line after it. A blank line
/// ends an event, and the official OpenAI and Anthropic Python SDKs dispatch one even when it
/// holds no `data:` once an `id:` was seen (the last event id persists), then fail to parse
/// its empty data as JSON: axum's default (`:` and a blank line) broke them on an answer
/// silent for the keep-alive's period. A comment line joins the next event's lines, where
/// every reader skips it.
const COMMENT: &[u8] = b":\n";

/// One event: `id: {id}` and `event: {name}` when given, `data` split into `data:` lines at
/// each `\n` or `\r` (as axum splits it), then the blank line that ends it.
pub(crate) fn event(id: Option<u64>, name: Option<&str>, data: &str) -> Bytes {
    let mut digits = itoa::Buffer::new();
    let id = id.map(|id| digits.format(id).as_bytes());
    let data = data.as_bytes();
    let breaks = memchr::memchr2_iter(b'\n', b'\r', data).count();
    // The exact length: a `Vec` as long as its capacity becomes a `Bytes` without a second
    // allocation (a `BytesMut` with room left over would make one, and a shared count).
    let len = id.map_or(0, |id| ID.len() + id.len() + 1)
        + name.map_or(0, |n| EVENT.len() + n.len() + 1)
        + if data.is_empty() {
            0
        } else {
            DATA.len() * (breaks + 1) + data.len() + 1
        }
        + 1;
    let mut b = Vec::with_capacity(len);
    if let Some(id) = id {
        b.extend_from_slice(ID);
        b.extend_from_slice(id);
        b.push(b'\n');
    }
    if let Some(name) = name {
        b.extend_from_slice(EVENT);
        b.extend_from_slice(name.as_bytes());
        b.push(b'\n');
    }
    if !data.is_empty() {
        b.extend_from_slice(DATA);
        let mut from = 0;
        if breaks > 0 {
            for at in memchr::memchr2_iter(b'\n', b'\r', data) {
                b.extend_from_slice(&data[from..=at]);
                b.extend_from_slice(DATA);
                from = at + 1;
            }
        }
        b.extend_from_slice(&data[from..]);
        b.push(b'\n');
    }
    b.push(b'\n');
    debug_assert_eq!(b.len(), len);
    Bytes::from(b)
}

const ID: &[u8] = b"id: ";
const EVENT: &[u8] = b"event: ";
const DATA: &[u8] = b"data: ";

/// How a stream's frames name its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Naming {
    /// No `event:` line (chat completions, the AI SDK UI message stream).
    Unnamed,
    /// `event:` the event's `type` (Responses, Messages: the Anthropic SDKs read that line).
    ByType,
}

/// A logged event's frame: `id:` its `id`, `event:` as `naming` says, its `data`.
pub(crate) fn logged(naming: Naming, id: u64, data: &str) -> Bytes {
    let typed = match naming {
        Naming::Unnamed => None,
        Naming::ByType => match edge_type(data) {
            Some(t) => return event(Some(id), Some(t), data),
            None => serde_json::from_str::<Typed<'_>>(data).ok(),
        },
    };
    event(
        Some(id),
        typed.as_ref().and_then(|t| t.r#type.as_deref()),
        data,
    )
}

/// The `type` of a logged event when it is the object's first or last member with a plain
/// string value (no escape), found without reading the rest: serde_json writes the server's
/// own events with their keys sorted (`type` last), and the upstreams put it first. `None`
/// otherwise, for the typed read. `data` is JSON the server wrote (a logged event), so the
/// closing `}` is the top-level object's, and a quote with no backslash before it is a
/// string's edge.
fn edge_type(data: &str) -> Option<&str> {
    let b = data.as_bytes();
    let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
    let start = b.iter().position(|c| !ws(c))?;
    let end = b.iter().rposition(|c| !ws(c))?;
    let plain = |v: &[u8]| !v.contains(&b'\\') && !v.contains(&b'"');
    // First: `{ "type" : "…" ,` or `}`.
    let mut i = start;
    let eat = |i: &mut usize, lit: &[u8]| -> Option<()> {
        while b.get(*i).is_some_and(ws) {
            *i += 1;
        }
        b.get(*i..*i + lit.len()).filter(|s| *s == lit)?;
        *i += lit.len();
        Some(())
    };
    let first = (|| {
        eat(&mut i, b"{")?;
        eat(&mut i, b"\"type\"")?;
        eat(&mut i, b":")?;
        eat(&mut i, b"\"")?;
        let len = b.get(i..end)?.iter().position(|&c| c == b'"')?;
        let (v0, v1) = (i, i + len);
        i = v1 + 1;
        let after = eat(&mut i, b",").or_else(|| eat(&mut i, b"}"));
        after.and_then(|()| data.get(v0..v1))
    })();
    if let Some(t) = first.filter(|t| plain(t.as_bytes())) {
        return Some(t);
    }
    // Last: `, "type" : "…" }` (or the only member).
    if b[end] != b'}' {
        return None;
    }
    let mut j = end;
    let back = |j: &mut usize| -> Option<u8> {
        while *j > start && ws(&b[*j - 1]) {
            *j -= 1;
        }
        *j = j.checked_sub(1)?;
        Some(b[*j])
    };
    (back(&mut j)? == b'"').then_some(())?;
    let v1 = j;
    let v0 = b[..v1].iter().rposition(|&c| c == b'"')? + 1;
    j = v0 - 1;
    if j == 0 || b[j - 1] == b'\\' {
        return None;
    }
    (back(&mut j)? == b':').then_some(())?;
    (back(&mut j)? == b'"').then_some(())?;
    j = j.checked_sub(5)?;
    (b.get(j..j + 5)? == b"\"type").then_some(())?;
    matches!(back(&mut j)?, b',' | b'{').then_some(())?;
    data.get(v0..v1).filter(|t| plain(t.as_bytes()))
}

/// The `type` of an event, read without a tree.
#[derive(serde::Deserialize)]
struct Typed<'a> {
    #[serde(borrow)]
    r#type: Option<std::borrow::Cow<'a, str>>,
}

/// A `text/event-stream` response of `feed`'s frames, with a comment after `keep_alive` of
/// silence (at least 1 ms).
pub(crate) fn response<S>(feed: S, keep_alive: Duration) -> Response
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    let keep_alive = keep_alive.max(Duration::from_millis(1));
    let body = Body::from_stream(KeptAlive::new(feed, keep_alive));
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `feed` with a comment whenever a whole `period / 2` tick and the one before went by
/// without a frame: silence never lasts more than `period`. The ticks are polled only when
/// their own wake-up came ([`OwnWake`]), not at each wait of the feed.
struct KeptAlive<S> {
    feed: Pin<Box<S>>,
    ticks: Interval,
    tick: OwnWake,
    /// A frame went out since the last tick.
    active: bool,
}

impl<S: Stream<Item = Bytes>> KeptAlive<S> {
    fn new(feed: S, period: Duration) -> Self {
        let half = period / 2;
        let mut ticks = interval_at(Instant::now() + half, half);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        KeptAlive {
            feed: Box::pin(feed),
            ticks,
            tick: OwnWake::new(),
            active: true,
        }
    }
}

impl<S: Stream<Item = Bytes>> Stream for KeptAlive<S> {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            match this.feed.as_mut().poll_next(cx) {
                Poll::Ready(Some(frame)) => {
                    this.active = true;
                    return Poll::Ready(Some(Ok(frame)));
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => {
                    if this.tick.take_due() {
                        let mut own = this.tick.context();
                        while this.ticks.poll_tick(&mut own).is_ready() {
                            if !std::mem::replace(&mut this.active, false) {
                                // Counts as a frame: the next comment comes a whole period
                                // later. The next tick's timer is not set yet: due again.
                                this.active = true;
                                this.tick.rearm();
                                return Poll::Ready(Some(Ok(Bytes::from_static(COMMENT))));
                            }
                        }
                    }
                    if !this.tick.park(cx) {
                        return Poll::Pending;
                    }
                }
            }
        }
    }
}

/// The event id a resume starts after: the `Last-Event-ID` header, else `query` (the route's
/// `?last_event_id=`, or the Responses API's cursor made into one); absent or blank, `0`
/// (everything). Every resume route reads it here.
///
/// # Errors
/// A 400 `invalid_request` naming `Last-Event-ID` for anything but decimal digits up to
/// `i64::MAX` (the largest id a store keeps): a sign, garbage, a header that is not ASCII,
/// `2^63` or more. Never a silent full replay.
pub(crate) fn last_event_id(headers: &HeaderMap, query: Option<&str>) -> Result<u64, ApiError> {
    let raw = match headers.get("last-event-id") {
        Some(v) => v.to_str().unwrap_or("?"),
        None => query.unwrap_or(""),
    };
    let t = raw.trim();
    if t.is_empty() {
        return Ok(0);
    }
    let invalid = |why: &str| {
        let shown: String = raw.chars().take(40).collect();
        ApiError::invalid(
            format!("Last-Event-ID {shown:?} {why}"),
            Some("Last-Event-ID"),
        )
    };
    if !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(
            "is not an event id of this server (decimal digits)",
        ));
    }
    match t.parse::<u64>() {
        Ok(n) if i64::try_from(n).is_ok() => Ok(n),
        _ => Err(invalid(&format!(
            "is past the largest event id ({})",
            i64::MAX
        ))),
    }
}

#[cfg(test)]
mod tests {
    use axum::response::sse::Event as AxumEvent;
    use futures_util::StreamExt;

    use super::*;

    /// What the typed read gives as an event's `type`.
    fn typed(data: &str) -> Option<String> {
        serde_json::from_str::<Typed<'_>>(data)
            .ok()
            .and_then(|t| t.r#type.map(|t| t.into_owned()))
    }

    #[test]
    fn an_edge_type_is_the_typed_reads() {
        for (data, edge) in [
            (
                r#"{"delta":{"text":"a","type":"text_delta"},"index":0,"type":"content_block_delta"}"#,
                Some("content_block_delta"),
            ),
            (
                r#"{"type":"response.output_text.delta","delta":"x","sequence_number":3}"#,
                Some("response.output_text.delta"),
            ),
            (r#" { "type" : "message_stop" } "#, Some("message_stop")),
            (r#"{"a":1, "type" :"ping"}"#, Some("ping")),
            (r#"{"a":{"type":"inner"}}"#, None),
            (r#"{"a":"x\",\"type\":\"fake"}"#, None),
            (r#"{"type":"a\"b"}"#, None),
            (r#"{"type":"caf\u00e9","b":1}"#, None),
            (r#"{"b":[1,{"type":"inner"}],"c":"d"}"#, None),
            (r#"{"type":5}"#, None),
            (r#"{}"#, None),
        ] {
            assert_eq!(edge_type(data), edge, "{data}");
            if let Some(t) = edge {
                assert_eq!(typed(data).as_deref(), Some(t), "{data}");
            }
        }
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        /// Any object serde_json writes, and the same members written with `type` first:
        /// a `type` found at an edge is the typed read's, and every frame names its event as
        /// the typed read does.
        #[test]
        fn an_edge_type_never_differs_from_the_typed_read(
            kind in "(\\PC|[\"\\\\]|【1】){0,8}",
            others in proptest::collection::btree_map(
                "[a-z]{1,6}",
                proptest::prop_oneof![
                    "(\\PC|[\"\\\\]){0,6}".prop_map(serde_json::Value::from),
                    proptest::prelude::any::<u32>().prop_map(serde_json::Value::from),
                    "[a-z\"]{0,4}".prop_map(|t| serde_json::json!({"type": t})),
                    // A string that holds what a `type` member looks like.
                    "[a-z]{0,3}".prop_map(|t| serde_json::Value::from(format!("x\",\"type\":\"{t}"))),
                ],
                0..4,
            ),
            typed_too in proptest::prelude::any::<bool>(),
        ) {
            let mut m: serde_json::Map<String, serde_json::Value> = others.into_iter().collect();
            if typed_too {
                m.insert("type".into(), serde_json::Value::from(kind.clone()));
            }
            let sorted = serde_json::Value::Object(m.clone()).to_string();
            let mut first = m.clone();
            let t = first.remove("type");
            let rest = serde_json::Value::Object(first).to_string();
            let leading = match t {
                Some(t) if rest == "{}" => format!("{{\"type\":{t}}}"),
                Some(t) => format!("{{\"type\":{t},{}", &rest[1..]),
                None => rest,
            };
            for data in [sorted, leading] {
                let want = typed(&data);
                if let Some(e) = edge_type(&data) {
                    proptest::prop_assert_eq!(Some(e.to_owned()), want.clone(), "{}", data);
                }
                // The frame is the one the typed read's name makes.
                proptest::prop_assert_eq!(
                    logged(Naming::ByType, 1, &data),
                    event(Some(1), want.as_deref(), &data),
                    "{}", data
                );
            }
        }
    }

    /// The frames are byte for byte those of axum's `Sse`.
    #[tokio::test]
    async fn frames_are_axums() {
        let cases: [(Option<u64>, Option<&str>, &str); 6] = [
            (Some(7), None, r#"{"a":1}"#),
            (None, None, "plain"),
            (Some(12), Some("response.output_text.delta"), "x"),
            (None, Some("error"), "two\nlines\r\nand\rmore"),
            (Some(1), None, "\n"),
            (Some(3), None, ""),
        ];
        for (id, name, data) in cases {
            let mut ev = AxumEvent::default();
            if let Some(id) = id {
                ev = ev.id(id.to_string());
            }
            if let Some(n) = name {
                ev = ev.event(n);
            }
            if !data.is_empty() {
                ev = ev.data(data);
            }
            let stream = futures_util::stream::iter([Ok::<_, Infallible>(ev)]);
            let axum = axum::response::sse::Sse::new(stream).into_response();
            let want = axum::body::to_bytes(axum.into_body(), 1 << 20)
                .await
                .expect("body");
            assert_eq!(event(id, name, data), want, "{id:?} {name:?} {data:?}");
        }
    }

    /// Silence gets a comment within the period; frames keep it away.
    #[tokio::test(start_paused = true)]
    async fn silence_gets_a_comment_within_the_period() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
        let mut rx = rx;
        let feed = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        let mut kept = KeptAlive::new(feed, Duration::from_secs(10));
        let start = Instant::now();
        tx.send(Bytes::from_static(b"data: a\n\n")).expect("send");
        assert_eq!(
            kept.next().await,
            Some(Ok(Bytes::from_static(b"data: a\n\n")))
        );
        assert_eq!(kept.next().await, Some(Ok(Bytes::from_static(COMMENT))));
        let first = start.elapsed();
        assert!(first <= Duration::from_secs(10), "{first:?}");
        assert_eq!(kept.next().await, Some(Ok(Bytes::from_static(COMMENT))));
        let gap = start.elapsed() - first;
        assert!(
            gap <= Duration::from_secs(10) && gap >= Duration::from_secs(5),
            "{gap:?}"
        );
        drop(tx);
        assert_eq!(kept.next().await, None);
    }

    /// The keep-alive's edge: a period of 0 is taken as 1 ms (a zero-period timer would
    /// panic), and the silent response still gets its comments.
    #[tokio::test(start_paused = true)]
    async fn a_zero_keep_alive_is_taken_as_one_millisecond() {
        let feed = futures_util::stream::pending::<Bytes>();
        let mut body = response(feed, Duration::ZERO)
            .into_body()
            .into_data_stream();
        let start = Instant::now();
        for _ in 0..3 {
            let frame = body.next().await.expect("a frame").expect("bytes");
            assert_eq!(frame, Bytes::from_static(COMMENT));
        }
        assert!(
            start.elapsed() <= Duration::from_millis(3),
            "{:?}",
            start.elapsed()
        );
    }

    fn headers(last: Option<&[u8]>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = last {
            h.insert(
                "last-event-id",
                axum::http::HeaderValue::from_bytes(v).expect("header"),
            );
        }
        h
    }

    /// The message of the 400 that `header` (or, with no header, `query`) gets.
    fn rejected(header: Option<&[u8]>, query: Option<&str>) -> String {
        match last_event_id(&headers(header), query) {
            Err(ApiError::InvalidRequest { message, param }) => {
                assert_eq!(param.as_deref(), Some("Last-Event-ID"), "{message}");
                message
            }
            other => panic!("{header:?} {query:?} gave {other:?}"),
        }
    }

    /// What both parsers (chat streams' and the provider-shaped routes') accepted.
    #[test]
    fn last_event_id_is_parsed_at_the_edges() {
        let ok = |header: Option<&[u8]>, query: Option<&str>| {
            last_event_id(&headers(header), query).expect("accepted")
        };
        assert_eq!(ok(None, None), 0);
        assert_eq!(ok(Some(b"0"), None), 0);
        assert_eq!(ok(Some(b" 42 "), None), 42);
        assert_eq!(ok(Some(b"007"), None), 7);
        assert_eq!(
            ok(Some(b"9223372036854775807"), None),
            9_223_372_036_854_775_807
        );
        // The query when there is no header; the header wins over it.
        assert_eq!(ok(None, Some("12")), 12);
        assert_eq!(ok(Some(b"5"), Some("12")), 5);
        // Blank is absent: everything (a blank header does not fall back to the query, as
        // before in both).
        assert_eq!(ok(Some(b""), None), 0);
        assert_eq!(ok(None, Some("  ")), 0);
        assert_eq!(ok(Some(b"  "), Some("12")), 0);
    }

    /// What both rejected, with the same param, whether in the header or the query.
    #[test]
    fn last_event_id_garbage_is_a_400_naming_the_header() {
        for garbage in [
            "-1", "+1", "1.5", "1e3", "abc", "0x10", "?", "\u{0663}", "1 2",
        ] {
            for message in [
                rejected(Some(garbage.as_bytes()), None),
                rejected(None, Some(garbage)),
            ] {
                assert!(
                    message.contains("is not an event id of this server (decimal digits)"),
                    "{garbage}: {message}"
                );
            }
        }
        // A header that is not visible ASCII is never read as "no id".
        assert!(rejected(Some(b"\xff12"), Some("3")).contains("is not an event id"));
        // The value is shown, cut to 40 characters.
        let long = "x".repeat(100);
        let message = rejected(None, Some(&long));
        assert!(message.contains(&"x".repeat(40)), "{message}");
        assert!(!message.contains(&"x".repeat(41)), "{message}");
    }

    /// Where the two parsers had drifted apart: past `i64::MAX`, the chat streams' parser
    /// said why and the provider-shaped routes' said only "not an event id"; both now say
    /// why (2^63 would wrap to a negative id in SQLite and replay everything).
    #[test]
    fn last_event_id_past_the_largest_id_says_so() {
        for big in [
            "9223372036854775808".to_owned(),
            "18446744073709551616".to_owned(),
            "9".repeat(100),
        ] {
            for message in [
                rejected(Some(big.as_bytes()), None),
                rejected(None, Some(&big)),
            ] {
                assert!(
                    message.contains("is past the largest event id (9223372036854775807)"),
                    "{big}: {message}"
                );
            }
        }
    }
}
