//! Cohere v2 chat stream events: `content-delta` text and `citation-start` spans (characters of
//! the content item's text) with their `sources`.

use serde_json::Value;

use super::json::{arr, opt_str, opt_u64, shape, str_field, Doc, Problem, ReadResult};
use super::read::{url_source, Placement, ProviderCitation, ProviderEvent, Unit};
use crate::source::Source;

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
        let v = doc.tree()?;
        let v = &*v;
        match str_field(v, "type")? {
            "content-start" => out.push(ProviderEvent::PartStart),
            "content-delta" => {
                let text = v
                    .get("delta")
                    .and_then(|d| d.get("message"))
                    .and_then(|m| m.get("content"))
                    .and_then(|c| c.get("text"));
                match text {
                    Some(Value::String(t)) if !t.is_empty() => {
                        out.push(ProviderEvent::Text { text: t.clone() });
                    }
                    Some(Value::String(_)) => {}
                    _ => return Err(shape("`delta.message.content.text` to be a string")),
                }
            }
            "citation-start" => {
                let c = v
                    .get("delta")
                    .and_then(|d| d.get("message"))
                    .and_then(|m| m.get("citations"))
                    .filter(|c| c.is_object())
                    .ok_or_else(|| shape("`delta.message.citations` to be an object"))?;
                let start =
                    opt_u64(c, "start")?.ok_or_else(|| shape("`start` to be an integer"))?;
                let end = opt_u64(c, "end")?.ok_or_else(|| shape("`end` to be an integer"))?;
                let quote = opt_str(c, "text")?.map(str::to_owned);
                for s in arr(c, "sources")? {
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
                let reason = v
                    .get("delta")
                    .and_then(|d| d.get("finish_reason"))
                    .and_then(Value::as_str);
                if reason == Some("ERROR") {
                    return Err(Problem::Upstream(v.to_string()));
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
fn source(s: &Value) -> Result<Source, Problem> {
    let doc = s
        .get("document")
        .or_else(|| s.get("tool_output"))
        .filter(|d| d.is_object());
    let id = match opt_str(s, "id")? {
        Some(id) => id.to_owned(),
        None => doc
            .and_then(|d| d.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| shape("a citation source with an `id`"))?,
    };
    let (title, url, text) = match doc {
        Some(d) => (
            opt_str(d, "title")?,
            opt_str(d, "url")?,
            opt_str(d, "text")?,
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
