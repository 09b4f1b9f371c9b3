//! Cohere v2 chat stream events: `content-delta` text and `citation-start` spans (characters of
//! the content item's text) with their `sources`.

use serde::Deserialize;

use super::json::{shape, Doc, Lax, List, Obj, Problem, ReadResult, Str, U64};
use super::read::{url_source, Placement, ProviderCitation, ProviderEvent, Unit};
use crate::source::Source;

/// An event: only the fields read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    delta: Lax<Delta<'a>>,
}

/// An event's `delta`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Delta<'a> {
    #[serde(borrow)]
    message: Lax<Message<'a>>,
    #[serde(borrow)]
    finish_reason: Str<'a>,
}

/// A delta's `message`: text or a citation.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Message<'a> {
    #[serde(borrow)]
    content: Lax<Content<'a>>,
    #[serde(borrow)]
    citations: Obj<Citation<'a>>,
}

/// A message's `content`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Content<'a> {
    #[serde(borrow)]
    text: Str<'a>,
}

/// A `citation-start`'s citation.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Citation<'a> {
    start: U64,
    end: U64,
    #[serde(borrow)]
    text: Str<'a>,
    #[serde(borrow)]
    sources: List<Lax<CitedSource<'a>>>,
}

/// A citation source: a document or a tool output.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CitedSource<'a> {
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    document: Obj<Document<'a>>,
    #[serde(borrow)]
    tool_output: Obj<Document<'a>>,
}

/// A cited document (or tool output).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Document<'a> {
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    title: Str<'a>,
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
}

/// Cohere stream state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chat;

impl Chat {
    pub(crate) fn read(
        &mut self,
        doc: Doc<'_>,
        out: &mut Vec<ProviderEvent>,
        unknown: &mut Option<String>,
    ) -> ReadResult {
        let v: Event<'_> = doc.parse()?;
        match v.kind.req("type")? {
            "content-start" => out.push(ProviderEvent::PartStart),
            "content-delta" => match v.delta.message.content.text.get() {
                Some("") => {}
                Some(t) => out.push(ProviderEvent::Text { text: t.to_owned() }),
                None => return Err(shape("`delta.message.content.text` to be a string")),
            },
            "citation-start" => {
                let c = v
                    .delta
                    .message
                    .citations
                    .get()
                    .ok_or_else(|| shape("`delta.message.citations` to be an object"))?;
                let start = c
                    .start
                    .opt("start")?
                    .ok_or_else(|| shape("`start` to be an integer"))?;
                let end = c
                    .end
                    .opt("end")?
                    .ok_or_else(|| shape("`end` to be an integer"))?;
                let quote = c.text.opt("text")?.map(str::to_owned);
                for s in c.sources.req("sources")? {
                    out.push(ProviderEvent::Citation(Box::new(ProviderCitation {
                        source: source(s)?,
                        quote: quote.clone(),
                        placement: Placement::Span {
                            start,
                            end,
                            unit: Unit::Chars,
                        },
                    })));
                }
            }
            "message-end" => {
                if v.delta.finish_reason.get() == Some("ERROR") {
                    return Err(Problem::Upstream(doc.to_json()?));
                }
                out.push(ProviderEvent::PartEnd);
            }
            "message-start" | "content-end" | "citation-end" | "tool-plan-delta"
            | "tool-call-start" | "tool-call-delta" | "tool-call-end" | "debug" => {}
            other => *unknown = Some(other.to_owned()),
        }
        Ok(())
    }
}

/// A citation source: `{"type": "document", "id", "document": {id, title, text, url}}` or a
/// tool output.
fn source(s: &CitedSource<'_>) -> Result<Source, Problem> {
    let doc = s.document.or(&s.tool_output).get();
    let id = match s.id.opt("id")? {
        Some(id) => id.to_owned(),
        None => doc
            .and_then(|d| d.id.get())
            .map(str::to_owned)
            .ok_or_else(|| shape("a citation source with an `id`"))?,
    };
    let (title, url, text) = match doc {
        Some(d) => (
            d.title.opt("title")?,
            d.url.opt("url")?,
            d.text.opt("text")?,
        ),
        None => (None, None, None),
    };
    let mut src = match url {
        Some(u) => {
            let mut x = url_source(u, title);
            x.id = id;
            x
        }
        None => {
            let mut x = Source::new(id);
            if let Some(t) = title {
                x = x.with_title(t);
            }
            x
        }
    };
    if let Some(t) = text {
        src.snippet = Some(t.chars().take(300).collect());
    }
    Ok(src)
}
