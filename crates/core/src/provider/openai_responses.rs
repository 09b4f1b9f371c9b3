//! OpenAI Responses API events (also Azure OpenAI and xAI): `response.output_text.delta`,
//! `response.output_text.annotation.added` (`url_citation`, `file_citation`,
//! `container_file_citation`, `file_path`), web search sources.

use serde_json::Value;

use super::json::{arr, obj, opt_str, opt_u64, str_field, Doc, Problem, ReadResult};
use super::read::{url_source, Placement, ProviderCitation, ProviderEvent, Unit};
use crate::source::Source;

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
        let v = doc.tree()?;
        let v = &*v;
        let t = str_field(v, "type")?;
        match t {
            "response.output_text.delta" => {
                self.enter_part(v, out);
                let delta = str_field(v, "delta")?;
                if !delta.is_empty() {
                    out.push(ProviderEvent::Text {
                        text: delta.to_owned(),
                    });
                }
            }
            "response.output_text.annotation.added" => {
                self.enter_part(v, out);
                if let Some(c) = annotation(obj(v, "annotation")?)? {
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
                let item = obj(v, "item")?;
                if item.get("type").and_then(Value::as_str) == Some("web_search_call") {
                    if let Some(action) = item.get("action").filter(|a| a.is_object()) {
                        let mut sources = Vec::new();
                        for s in arr(action, "sources")? {
                            if let Some(url) = opt_str(s, "url")?.filter(|u| !u.trim().is_empty()) {
                                if !sources.iter().any(|x: &Source| x.id == url) {
                                    sources.push(url_source(url, opt_str(s, "title")?));
                                }
                            }
                        }
                        if !sources.is_empty() {
                            out.push(ProviderEvent::Sources {
                                query: opt_str(action, "query")?
                                    .filter(|q| !q.is_empty())
                                    .map(str::to_owned),
                                sources,
                            });
                        }
                    }
                }
            }
            "error" => return Err(Problem::Upstream(v.to_string())),
            "response.failed" => {
                let err = v
                    .get("response")
                    .and_then(|r| r.get("error"))
                    .map_or_else(|| v.to_string(), Value::to_string);
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
    fn enter_part(&mut self, v: &Value, out: &mut Vec<ProviderEvent>) {
        let id = v
            .get("item_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let ci = v.get("content_index").and_then(Value::as_u64).unwrap_or(0);
        let key = (id, ci);
        if self.part.as_ref() != Some(&key) {
            if self.part.is_some() {
                out.push(ProviderEvent::PartEnd);
            }
            self.part = Some(key);
            out.push(ProviderEvent::PartStart);
        }
    }
}

/// One `annotation` object.
fn annotation(a: &Value) -> Result<Option<ProviderCitation>, Problem> {
    let t = str_field(a, "type")?;
    let (source, placement) = match t {
        "url_citation" => {
            let url = str_field(a, "url")?;
            let placement = match (opt_u64(a, "start_index")?, opt_u64(a, "end_index")?) {
                (Some(start), Some(end)) if end > start => Placement::Span {
                    start,
                    end,
                    unit: Unit::Chars,
                },
                // No span, or the degenerate 0..0 some servers send: no position known.
                _ => Placement::Unplaced,
            };
            (url_source(url, opt_str(a, "title")?), placement)
        }
        "file_citation" | "file_path" | "container_file_citation" => {
            let file_id = str_field(a, "file_id")?;
            let mut s = Source::new(file_id).with_key(format!("file:{file_id}"));
            if let Some(name) = opt_str(a, "filename")? {
                s = s.with_title(name);
            }
            if let Some(c) = opt_str(a, "container_id")? {
                s.metadata.insert("container_id".into(), c.to_owned());
            }
            let placement = match (
                opt_u64(a, "start_index")?,
                opt_u64(a, "end_index")?,
                opt_u64(a, "index")?,
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
