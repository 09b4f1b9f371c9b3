//! The book routes: `GET /v1/books`, `POST /v1/books`, the passages of a book for a query
//! (`POST /v1/books/{key}/search`, through [`crate::plan::passages`]), and a book opened at a
//! cited place
//! (`GET /v1/books/{key}/read`), over the server's [`Library`](crate::library::Library).
//!
//! Every library call (reading, searching, cutting an uploaded book into passages) runs in
//! `spawn_blocking`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use citeflow_epub::{Cfi, PageProgression, Reading};
use citeflow_index::BookInfo;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::intake::body::{ApiJson, ApiRequest};
use crate::library::Ingest;
use crate::plan::passages::{blocking, retrieve, top_k};
use crate::state::AppState;
use crate::tenancy::Owner;

/// A book as the API shows it.
fn view(b: &BookInfo) -> Value {
    json!({
        "object": "citeflow.book",
        "key": b.key,
        "title": b.title,
        "book_id": b.book_id,
        "url": b.url,
        "passages": b.passages,
        "chapters": b.chapters.iter().map(|c| json!({
            "index": c.index,
            "title": c.title,
            "passages": c.passages,
        })).collect::<Vec<_>>(),
    })
}

/// `GET /v1/books`: the books of the index; an empty list when the server has none.
pub(crate) async fn list(
    State(state): State<AppState>,
    owner: Owner,
) -> Result<Json<Value>, ApiError> {
    let books = match &state.books {
        Some(lib) => {
            let lib = Arc::clone(lib);
            blocking(move || lib.books(&owner)).await?
        }
        None => Vec::new(),
    };
    Ok(Json(json!({
        "object": "list",
        "data": books.iter().map(view).collect::<Vec<_>>(),
    })))
}

/// `POST /v1/books`: the body is an EPUB file; it is cut into passages and indexed (201), or
/// found already indexed as it is (200).
pub(crate) async fn upload(
    State(state): State<AppState>,
    owner: Owner,
    body: Body,
) -> Result<Response, ApiError> {
    let lib = state.books.clone().ok_or(ApiError::NoBookIndex)?;
    let max_bytes = state.settings.limits.max_book_bytes;
    // The body goes to a file as it arrives: an upload holds one chunk in memory until its
    // turn in the pool below, however many wait (issue 38 §1).
    let spool = match lib
        .spool(body, max_bytes, |e| {
            crate::intake::conn::body_error(e, ApiError::BodyTooLarge { max_bytes })
        })
        .await
    {
        Ok(spool) => spool,
        // The rest of the body is left unread (a full disk, a body past the limit): the
        // connection closes after this answer and says so, so that a client does not send
        // its next request on a connection the server is about to drop.
        Err(e) => {
            let mut r = e.into_response();
            r.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
            return Ok(r);
        }
    };
    if spool.len() == 0 {
        return Err(ApiError::invalid(
            "the body is empty: send the bytes of an .epub file",
            None,
        ));
    }
    // A bounded pool: at most max_concurrent_ingests books are in memory, read and cut at
    // once; the permit goes with the job, so a job whose client left still counts until it
    // stops.
    let permit = lib.ingest_permit().await?;
    let (job, _stop_when_dropped) = Ingest::new(state.settings.limits.ingest_timeout_ms);
    let (info, added, warnings) = blocking(move || {
        let _permit = permit;
        let bytes = spool.read()?;
        drop(spool);
        lib.add(&owner, &bytes, &job)
    })
    .await?;
    if added {
        tracing::info!(book = %info.key, passages = info.passages, "book added");
    }
    let mut v = view(&info);
    v["added"] = json!(added);
    v["warnings"] = json!(warnings);
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(v)).into_response())
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadQuery {
    cfi: Option<String>,
}

/// `GET /v1/books/{key}/read?cfi=…`: the chapter that holds a CFI (such as a cited passage's
/// `locator.cfi`) as paragraphs, each a list of segments, the segments the CFI covers
/// marked: the book opened at the cited place. The text is the passages' text (whitespace
/// collapsed, ruby readings left out of it and given as their base segment's `ruby`); a
/// chapter longer than `max_reading_chars` is cut to whole paragraphs around the mark.
pub(crate) async fn read(
    State(state): State<AppState>,
    owner: Owner,
    Path(key): Path<String>,
    query: Result<Query<ReadQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::invalid(e.body_text(), None))?;
    let text = query
        .cfi
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| ApiError::invalid("cfi is missing: ?cfi=epubcfi(…)", Some("cfi")))?;
    let cfi = Cfi::parse(text.trim()).map_err(|e| ApiError::invalid(e.to_string(), Some("cfi")))?;
    let Some(lib) = state.books.clone() else {
        return Err(ApiError::BookNotFound { key, param: None });
    };
    let max_chars = state.settings.limits.max_reading_chars;
    blocking(move || -> Result<_, ApiError> {
        let (book, info) = lib.open_book(&owner, &key)?;
        let reading = book
            .reading(&cfi, false)
            .map_err(|e| ApiError::CfiNotFound {
                key: key.clone(),
                reason: e.to_string(),
            })?;
        let direction = match book.page_progression() {
            PageProgression::Rtl => "rtl",
            PageProgression::Ltr => "ltr",
            _ => "default",
        };
        let mut v = reading_view(&reading, max_chars);
        let chapter = |index: Option<usize>| {
            let index = index?;
            let cfi = book.chapter_cfi(index)?;
            let title = book.chapters().get(index).and_then(|c| c.title.clone());
            Some(json!({"index": index, "title": title, "cfi": cfi.to_string()}))
        };
        v["previous_chapter"] = json!(chapter(reading.previous_chapter));
        v["next_chapter"] = json!(chapter(reading.next_chapter));
        v["book"] = json!(key);
        v["title"] = json!(info.title);
        v["url"] = json!(info.url);
        v["language"] = json!(book.metadata().language);
        v["page_progression"] = json!(direction);
        v["cfi"] = json!(cfi.to_string());
        Ok(Json(v))
    })
    .await
}

/// A reading as the API shows it: each paragraph's text cut into [`segments`], whole
/// paragraphs around the mark kept up to `max_chars` characters.
fn reading_view(r: &Reading, max_chars: usize) -> Value {
    let lens: Vec<usize> = r
        .paragraphs
        .iter()
        .map(|p| p.text.chars().count())
        .collect();
    let (mut first, mut last) = match r.mark {
        Some(m) => (m.start.paragraph, m.end.paragraph),
        None => (0, 0),
    };
    if r.paragraphs.is_empty() {
        (first, last) = (0, 0);
    } else {
        // Grow around the mark, one paragraph on each side in turn, while it fits.
        let mut used: usize = lens[first..=last].iter().sum();
        loop {
            let before = first
                .checked_sub(1)
                .filter(|&i| used + lens[i] <= max_chars);
            if let Some(i) = before {
                first = i;
                used += lens[i];
            }
            let after = (last + 1 < lens.len())
                .then_some(last + 1)
                .filter(|&i| used + lens[i] <= max_chars);
            if let Some(i) = after {
                last = i;
                used += lens[i];
            }
            if before.is_none() && after.is_none() {
                break;
            }
        }
    }
    let shown = if r.paragraphs.is_empty() {
        &r.paragraphs[..]
    } else {
        &r.paragraphs[first..=last]
    };
    let paragraphs: Vec<Value> = shown
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let i = first + i;
            let ruby: Vec<(usize, usize, &str)> = p
                .ruby
                .iter()
                .map(|r| (r.start, r.end, r.text.as_str()))
                .collect();
            let segments = segments(&p.text, r.marked_range(i), &ruby);
            json!({"index": i, "cfi": p.cfi.to_string(), "segments": segments})
        })
        .collect();
    let pos =
        |t: citeflow_epub::TextPosition| json!({"paragraph": t.paragraph, "offset": t.char_offset});
    json!({
        "object": "citeflow.reading",
        "spine_index": r.spine_index,
        "href": r.href,
        "chapter_index": r.chapter_index,
        "chapter_title": r.chapter_title,
        "mark": r.mark.map(|m| json!({"start": pos(m.start), "end": pos(m.end)})),
        "marked_text": r.marked_text(),
        "paragraphs": paragraphs,
        "omitted": {"before": first, "after": r.paragraphs.len().saturating_sub(last + 1)},
    })
}

/// A paragraph's text cut into segments at the ends of the mark and of each ruby base: the
/// marked ones carry `"marked": true`, a ruby base its reading as `"ruby"`. A base that the
/// mark's start or end cuts in two is shown without its reading, so the marked segments are
/// exactly the marked text.
fn segments(text: &str, mark: Option<(usize, usize)>, ruby: &[(usize, usize, &str)]) -> Vec<Value> {
    let chars: Vec<char> = text.chars().collect();
    let inside = |x: usize, &(start, end, _): &(usize, usize, &str)| start < x && x < end;
    let ruby: Vec<_> = ruby
        .iter()
        .filter(|r| mark.is_none_or(|(a, b)| !inside(a, r) && !inside(b, r)))
        .collect();
    let mut cuts = vec![0, chars.len()];
    cuts.extend(mark.into_iter().flat_map(|(a, b)| [a, b]));
    cuts.extend(ruby.iter().flat_map(|&&(start, end, _)| [start, end]));
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .map(|w| {
            let (x, y) = (w[0], w[1]);
            let mut seg = json!({"text": chars[x..y].iter().collect::<String>()});
            if mark.is_some_and(|(a, b)| a <= x && y <= b) {
                seg["marked"] = json!(true);
            }
            if let Some((_, _, reading)) = ruby
                .iter()
                .find(|&&&(start, end, _)| (start, end) == (x, y))
            {
                seg["ruby"] = json!(reading);
            }
            seg
        })
        .collect()
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchRequest {
    query: String,
    top_k: Option<usize>,
}

impl ApiRequest for SearchRequest {
    fn from_json(body: Value) -> Result<Self, ApiError> {
        serde_json::from_value(body)
            .map_err(|e| ApiError::invalid(format!("search request: {e}"), None))
    }
}

/// `POST /v1/books/{key}/search`: the passages of the book that best match `query`, as
/// sources with chapter and CFI: what `citeflow.book` gives the model for that question. An
/// app (or the page's client-side rendering) can show or filter them, then send them as
/// `sources`.
pub(crate) async fn search(
    State(state): State<AppState>,
    owner: Owner,
    Path(key): Path<String>,
    ApiJson(req): ApiJson<SearchRequest>,
) -> Result<Json<Value>, ApiError> {
    let k = top_k(req.top_k, &state.settings.limits, "top_k")?;
    if req.query.trim().is_empty() {
        return Err(ApiError::invalid("query is empty", Some("query")));
    }
    // The key is in the path, not in a field of the body.
    let sources = retrieve(&state, &owner, &key, &req.query, k, None).await?;
    Ok(Json(json!({
        "object": "list",
        "book": key,
        "query": req.query,
        "data": sources,
    })))
}

#[cfg(test)]
mod tests {
    use super::segments;
    use serde_json::json;

    #[test]
    fn segments_cut_at_the_mark_and_at_ruby_bases() {
        // 東京(とうきょう) の 空(そら): the mark covers 京の空; 東京 is cut by it, 空 is not.
        let ruby = [(0, 2, "とうきょう"), (3, 4, "そら")];
        assert_eq!(
            segments("東京の空", Some((1, 4)), &ruby),
            [
                json!({"text": "東"}),
                json!({"text": "京の", "marked": true}),
                json!({"text": "空", "marked": true, "ruby": "そら"}),
            ]
        );
        assert_eq!(
            segments("東京の空", None, &ruby),
            [
                json!({"text": "東京", "ruby": "とうきょう"}),
                json!({"text": "の"}),
                json!({"text": "空", "ruby": "そら"}),
            ]
        );
        // A point marks nothing; a paragraph without ruby is one segment.
        assert_eq!(segments("abc", None, &[]), [json!({"text": "abc"})]);
        assert_eq!(
            segments("abc", Some((0, 3)), &[]),
            [json!({"text": "abc", "marked": true})]
        );
    }
}
