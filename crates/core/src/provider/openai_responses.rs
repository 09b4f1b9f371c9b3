//! OpenAI Responses API events (also Azure OpenAI and xAI): `response.output_text.delta`,
//! `response.output_text.annotation.added` (`url_citation`, `file_citation`,
//! `container_file_citation`, `file_path`), web search sources.

use std::borrow::Cow;
use std::ops::Range;

use serde::Deserialize;

use super::json::{Doc, Lax, List, Obj, Problem, Raw, ReadResult, Str, StrAt, U64};
use super::read::{url_source, Placement, ProviderCitation, ProviderEvent, Unit};
use crate::source::Source;

/// An event: only the fields read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    delta: Str<'a>,
    #[serde(borrow)]
    item_id: Str<'a>,
    content_index: U64,
    #[serde(borrow)]
    annotation: Obj<Annotation<'a>>,
    #[serde(borrow)]
    item: Obj<Item<'a>>,
}

/// An `annotation`: `url_citation`, `file_citation`, `file_path`, `container_file_citation`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Annotation<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    title: Str<'a>,
    start_index: U64,
    end_index: U64,
    index: U64,
    #[serde(borrow)]
    file_id: Str<'a>,
    #[serde(borrow)]
    filename: Str<'a>,
    #[serde(borrow)]
    container_id: Str<'a>,
}

/// An output `item` (a `web_search_call`'s `action`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Item<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    action: Obj<Action<'a>>,
}

/// A web search call's `action`: its `query` and `sources`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Action<'a> {
    #[serde(borrow)]
    query: Str<'a>,
    #[serde(borrow)]
    sources: List<Lax<WebSource<'a>>>,
}

/// One of a web search's `sources`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WebSource<'a> {
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    title: Str<'a>,
}

/// An `output_text.delta`, its parts located in its text: what [`Responses::read`] reads of
/// it (`delta`, `item_id`, `content_index`, as [`Event`] does) and where `delta`'s literal and
/// `sequence_number`'s value are, for an adapter that rewrites the event in its own text. Read
/// from a payload's text only (as [`StrAt`] and [`Raw`] are).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeltaAt<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    delta: StrAt<'a>,
    #[serde(borrow)]
    item_id: Str<'a>,
    content_index: U64,
    #[serde(borrow)]
    sequence_number: Raw<'a>,
}

/// `data` as an `output_text.delta` whose `delta` is a string: the text, the part
/// `(item_id, content_index)` [`Responses::read`] enters for it, and the byte ranges of the
/// `delta` literal and of the `sequence_number` value (when given); `None` for any other
/// event, or any doubt (a repeated member, text that is not an object).
pub(crate) fn text_delta(data: &str) -> Option<ResponsesDelta<'_>> {
    let v: DeltaAt<'_> = serde_json::from_str(data).ok()?;
    if v.kind.get() != Some("response.output_text.delta") {
        return None;
    }
    let (Str::Is(text), Some(literal)) = (v.delta.value, v.delta.raw.0) else {
        return None;
    };
    let item_id = match v.item_id {
        Str::Is(id) => id,
        _ => "".into(),
    };
    Some(ResponsesDelta {
        text,
        part: (item_id, v.content_index.get().unwrap_or(0)),
        delta_at: span(data, literal)?,
        sequence_at: match v.sequence_number.0 {
            Some(raw) => Some(span(data, raw)?),
            None => None,
        },
    })
}

/// What [`text_delta`] reads.
pub(crate) struct ResponsesDelta<'a> {
    pub(crate) text: Cow<'a, str>,
    pub(crate) part: (Cow<'a, str>, u64),
    pub(crate) delta_at: Range<usize>,
    pub(crate) sequence_at: Option<Range<usize>>,
}

/// Where `part` (a slice of `whole`) lies in `whole`.
fn span(whole: &str, part: &str) -> Option<Range<usize>> {
    let at = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (at + part.len() <= whole.len()).then_some(at..at + part.len())
}

/// Responses stream state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Responses {
    /// `(item_id, content_index)` of the text part being read.
    part: Option<(String, u64)>,
}

impl Responses {
    pub(crate) fn read(
        &mut self,
        doc: Doc<'_>,
        out: &mut Vec<ProviderEvent>,
        unknown: &mut Option<String>,
    ) -> ReadResult {
        let v: Event<'_> = doc.parse()?;
        match v.kind.req("type")? {
            "response.output_text.delta" => {
                self.enter_part(&v, out);
                let delta = v.delta.req("delta")?;
                if !delta.is_empty() {
                    out.push(ProviderEvent::Text {
                        text: delta.to_owned(),
                    });
                }
            }
            "response.output_text.annotation.added" => {
                self.enter_part(&v, out);
                if let Some(c) = annotation(v.annotation.req("annotation")?)? {
                    out.push(ProviderEvent::Citation(Box::new(c)));
                }
            }
            "response.output_text.done" | "response.content_part.done" => {
                if self.part.is_some() {
                    self.part = None;
                    out.push(ProviderEvent::PartEnd);
                }
            }
            "response.output_item.done" => {
                let item = v.item.req("item")?;
                if item.kind.get() == Some("web_search_call") {
                    if let Some(action) = item.action.get() {
                        let mut sources = Vec::new();
                        for s in action.sources.req("sources")? {
                            if let Some(url) = s.url.opt("url")?.filter(|u| !u.trim().is_empty()) {
                                if !sources.iter().any(|x: &Source| x.id == url) {
                                    sources.push(url_source(url, s.title.opt("title")?));
                                }
                            }
                        }
                        if !sources.is_empty() {
                            out.push(ProviderEvent::Sources {
                                query: action
                                    .query
                                    .opt("query")?
                                    .filter(|q| !q.is_empty())
                                    .map(str::to_owned),
                                sources,
                            });
                        }
                    }
                }
            }
            "error" => return Err(Problem::Upstream(doc.to_json()?)),
            "response.failed" => {
                let v = doc.tree()?;
                let err = v
                    .get("response")
                    .and_then(|r| r.get("error"))
                    .map_or_else(|| v.to_string(), ToString::to_string);
                return Err(Problem::Upstream(err));
            }
            // The rest of the Responses event family: lifecycle, tool calls, reasoning,
            // refusals, audio, usage. Known, and not answer text.
            t if t.starts_with("response.") => {}
            other => *unknown = Some(other.to_owned()),
        }
        Ok(())
    }

    /// A text event of a new `(item_id, content_index)` starts a part.
    fn enter_part(&mut self, v: &Event<'_>, out: &mut Vec<ProviderEvent>) {
        let id = v.item_id.get().unwrap_or_default();
        let ci = v.content_index.get().unwrap_or(0);
        self.enter(id, ci, out);
    }

    /// A text event of part `(id, ci)`: a new part starts (the one before ends).
    pub(crate) fn enter(&mut self, id: &str, ci: u64, out: &mut Vec<ProviderEvent>) {
        if self.part.as_ref().is_some_and(|(i, c)| i == id && *c == ci) {
            return;
        }
        if self.part.is_some() {
            out.push(ProviderEvent::PartEnd);
        }
        self.part = Some((id.to_owned(), ci));
        out.push(ProviderEvent::PartStart);
    }
}

/// One `annotation` object.
fn annotation(a: &Annotation<'_>) -> Result<Option<ProviderCitation>, Problem> {
    let t = a.kind.req("type")?;
    let (source, placement) = match t {
        "url_citation" => {
            let url = a.url.req("url")?;
            let placement = match (
                a.start_index.opt("start_index")?,
                a.end_index.opt("end_index")?,
            ) {
                (Some(start), Some(end)) if end > start => Placement::Span {
                    start,
                    end,
                    unit: Unit::Chars,
                },
                // No span, or the degenerate 0..0 some servers send: no position known.
                _ => Placement::Unplaced,
            };
            (url_source(url, a.title.opt("title")?), placement)
        }
        "file_citation" | "file_path" | "container_file_citation" => {
            let file_id = a.file_id.req("file_id")?;
            let mut s = Source::new(file_id).with_key(format!("file:{file_id}"));
            if let Some(name) = a.filename.opt("filename")? {
                s = s.with_title(name);
            }
            if let Some(c) = a.container_id.opt("container_id")? {
                s.metadata.insert("container_id".into(), c.to_owned());
            }
            let placement = match (
                a.start_index.opt("start_index")?,
                a.end_index.opt("end_index")?,
                a.index.opt("index")?,
            ) {
                (Some(start), Some(end), _) if end > start => Placement::Span {
                    start,
                    end,
                    unit: Unit::Chars,
                },
                (_, _, Some(index)) => Placement::At {
                    index,
                    unit: Unit::Chars,
                },
                _ => Placement::Unplaced,
            };
            (s, placement)
        }
        _ => return Ok(None),
    };
    Ok(Some(ProviderCitation {
        source,
        quote: None,
        placement,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn wrong_shapes_are_named() {
        let mut r = Responses::default();
        let mut out = Vec::new();
        let mut unknown = None;
        let v: Value = serde_json::json!({"type": "response.output_text.delta", "delta": 3});
        match r.read(Doc::Tree(&v), &mut out, &mut unknown) {
            Err(Problem::Shape(s)) => assert_eq!(s, "`delta` to be a string"),
            other => panic!("{other:?}"),
        }
    }
}
