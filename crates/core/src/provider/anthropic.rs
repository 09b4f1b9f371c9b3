//! Anthropic Messages stream events: `text_delta`, `citations_delta` (`web_search_result_location`,
//! `char_location`, `page_location`, `content_block_location`, `search_result_location`),
//! `web_search_tool_result` blocks as sources.

use serde_json::Value;

use super::json::{arr, obj, opt_str, opt_u64, shape, str_field, Doc, Problem, ReadResult};
use super::read::{document_source, url_source, Placement, ProviderCitation, ProviderEvent};
use crate::source::{Locator, Source};

/// Messages stream state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Messages {
    /// Whether the open content block is a text block.
    in_text: bool,
    /// The JSON input of the open `server_tool_use` block (the search query), as streamed.
    tool_input: String,
    /// The last search query, for the results that follow it.
    query: Option<String>,
}

impl Messages {
    pub(crate) fn read(
        &mut self,
        doc: Doc<'_>,
        out: &mut Vec<ProviderEvent>,
        unknown: &mut Option<String>,
    ) -> ReadResult {
        let v = doc.tree()?;
        let v = &*v;
        match str_field(v, "type")? {
            "content_block_start" => {
                let block = obj(v, "content_block")?;
                self.start_block(block, out)?;
            }
            "content_block_delta" => {
                let delta = obj(v, "delta")?;
                match str_field(delta, "type")? {
                    "text_delta" => {
                        let t = str_field(delta, "text")?;
                        if !t.is_empty() {
                            out.push(ProviderEvent::Text { text: t.to_owned() });
                        }
                    }
                    "citations_delta" => {
                        if let Some(c) = citation(obj(delta, "citation")?)? {
                            out.push(ProviderEvent::Citation(Box::new(c)));
                        }
                    }
                    "input_json_delta" => {
                        if let Some(p) = opt_str(delta, "partial_json")? {
                            self.tool_input.push_str(p);
                        }
                    }
                    // Thinking and signatures are not answer text.
                    "thinking_delta" | "signature_delta" => {}
                    other => *unknown = Some(format!("content_block_delta/{other}")),
                }
            }
            "content_block_stop" => {
                if !self.tool_input.is_empty() {
                    let input: Option<Value> = serde_json::from_str(&self.tool_input).ok();
                    if let Some(q) = input.as_ref().and_then(|i| i.get("query")) {
                        self.query = q.as_str().map(str::to_owned);
                    }
                    self.tool_input.clear();
                }
                if std::mem::take(&mut self.in_text) {
                    out.push(ProviderEvent::BlockEnd);
                }
            }
            "message" => {
                // A whole (non-streamed) message: its content blocks in order.
                for block in arr(v, "content")? {
                    self.start_block(block, out)?;
                    if std::mem::take(&mut self.in_text) {
                        out.push(ProviderEvent::BlockEnd);
                    }
                }
            }
            "error" => return Err(Problem::Upstream(v.to_string())),
            "message_start" | "message_delta" | "message_stop" | "ping" => {}
            other => *unknown = Some(other.to_owned()),
        }
        Ok(())
    }

    fn start_block(&mut self, block: &Value, out: &mut Vec<ProviderEvent>) -> ReadResult {
        match str_field(block, "type")? {
            "text" => {
                self.in_text = true;
                out.push(ProviderEvent::PartStart);
                for c in arr(block, "citations")? {
                    if let Some(c) = citation(c)? {
                        out.push(ProviderEvent::Citation(Box::new(c)));
                    }
                }
                if let Some(t) = opt_str(block, "text")?.filter(|t| !t.is_empty()) {
                    out.push(ProviderEvent::Text { text: t.to_owned() });
                }
            }
            "server_tool_use" => {
                self.tool_input.clear();
                if let Some(q) = block
                    .get("input")
                    .and_then(|i| i.get("query"))
                    .and_then(Value::as_str)
                {
                    self.query = Some(q.to_owned());
                }
            }
            "web_search_tool_result" => {
                let mut sources: Vec<Source> = Vec::new();
                if let Some(Value::Array(results)) = block.get("content") {
                    for r in results {
                        if r.get("type").and_then(Value::as_str) != Some("web_search_result") {
                            continue;
                        }
                        let url = str_field(r, "url")?;
                        if !sources.iter().any(|s| s.id == url) {
                            sources.push(url_source(url, opt_str(r, "title")?));
                        }
                    }
                }
                if !sources.is_empty() {
                    out.push(ProviderEvent::Sources {
                        query: self.query.take(),
                        sources,
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// One citation object of a `citations_delta` or a text block's `citations`.
fn citation(c: &Value) -> Result<Option<ProviderCitation>, Problem> {
    let quote = opt_str(c, "cited_text")?.map(str::to_owned);
    let source = match str_field(c, "type")? {
        "web_search_result_location" => url_source(str_field(c, "url")?, opt_str(c, "title")?),
        "char_location" | "page_location" | "content_block_location" => {
            let index = opt_u64(c, "document_index")?
                .ok_or_else(|| shape("`document_index` to be a non-negative integer"))?;
            let mut s = document_source(index, opt_str(c, "document_title")?);
            if let (Some(a), Some(b)) = (
                opt_u64(c, "start_page_number")?,
                opt_u64(c, "end_page_number")?,
            ) {
                // The cited pages belong to the citation, not the document: kept as the
                // quote's context when there is no quote.
                if quote.is_none() {
                    s.snippet = Some(format!("pages {a}-{}", b.saturating_sub(1).max(a)));
                }
            }
            s
        }
        "search_result_location" => {
            let src = opt_str(c, "source")?;
            let index = opt_u64(c, "search_result_index")?.unwrap_or(0);
            let id = src.map_or_else(|| format!("search_result:{index}"), str::to_owned);
            let mut s = Source::new(id.clone());
            if src.is_some_and(|u| u.starts_with("http://") || u.starts_with("https://")) {
                s = s.with_url(id);
            } else {
                s = s.with_key(format!("search_result:{id}"));
            }
            if let Some(t) = opt_str(c, "title")? {
                s = s.with_title(t);
            }
            s.locator = None::<Locator>;
            s
        }
        _ => return Ok(None),
    };
    Ok(Some(ProviderCitation {
        source,
        quote,
        placement: Placement::BlockEnd,
    }))
}
