//! Anthropic Messages stream events: `text_delta`, `citations_delta` (`web_search_result_location`,
//! `char_location`, `page_location`, `content_block_location`, `search_result_location`),
//! `web_search_tool_result` blocks as sources.

use std::borrow::Cow;

use serde::Deserialize;

use super::json::{shape, Doc, Lax, List, Obj, Problem, ReadResult, Str, U64};
use super::read::{document_source, url_source, Placement, ProviderCitation, ProviderEvent};
use crate::source::{Locator, Source};

/// An event: only the fields read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    /// The content block an event is about.
    index: U64,
    #[serde(borrow)]
    content_block: Obj<Block<'a>>,
    #[serde(borrow)]
    delta: Obj<Delta<'a>>,
    /// A whole message's content blocks.
    #[serde(borrow)]
    content: List<Lax<Block<'a>>>,
}

/// A content block.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
    #[serde(borrow)]
    citations: List<Lax<Citation<'a>>>,
    /// A `server_tool_use` block's input.
    #[serde(borrow)]
    input: Lax<ToolInput<'a>>,
    /// A `web_search_tool_result` block's results.
    #[serde(borrow)]
    content: List<Lax<SearchResult<'a>>>,
}

/// A `content_block_delta`'s delta.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
    #[serde(borrow)]
    citation: Obj<Citation<'a>>,
    #[serde(borrow)]
    partial_json: Str<'a>,
}

/// A search tool's input: its query.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolInput<'a> {
    #[serde(borrow)]
    query: Str<'a>,
}

/// One result of a `web_search_tool_result`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SearchResult<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    title: Str<'a>,
}

/// A citation.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Citation<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    cited_text: Str<'a>,
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    title: Str<'a>,
    document_index: U64,
    #[serde(borrow)]
    document_title: Str<'a>,
    start_page_number: U64,
    end_page_number: U64,
    #[serde(borrow)]
    source: Str<'a>,
    search_result_index: U64,
}

/// `data` as a `content_block_delta` of a `text_delta` whose text is a string: the text and
/// the block's index (`None` when absent or not an integer), read by [`Event`] as
/// [`Messages::read`] reads it; `None` for any other event, or any doubt (a repeated member,
/// text that is not an object).
pub(crate) fn text_delta(data: &str) -> Option<(Cow<'_, str>, Option<u64>)> {
    let v: Event<'_> = serde_json::from_str(data).ok()?;
    if v.kind.get() != Some("content_block_delta") {
        return None;
    }
    let Obj::Is(delta) = v.delta else {
        return None;
    };
    if delta.kind.get() != Some("text_delta") {
        return None;
    }
    let Str::Is(text) = delta.text else {
        return None;
    };
    Some((text, v.index.get()))
}

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
        let v: Event<'_> = doc.parse()?;
        match v.kind.req("type")? {
            "content_block_start" => {
                let block = v.content_block.req("content_block")?;
                self.start_block(block, out)?;
            }
            "content_block_delta" => {
                let delta = v.delta.req("delta")?;
                match delta.kind.req("type")? {
                    "text_delta" => {
                        let t = delta.text.req("text")?;
                        if !t.is_empty() {
                            out.push(ProviderEvent::Text { text: t.to_owned() });
                        }
                    }
                    "citations_delta" => {
                        if let Some(c) = citation(delta.citation.req("citation")?)? {
                            out.push(ProviderEvent::Citation(Box::new(c)));
                        }
                    }
                    "input_json_delta" => {
                        if let Some(p) = delta.partial_json.opt("partial_json")? {
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
                    let input = serde_json::from_str::<Lax<ToolInput<'_>>>(&self.tool_input)
                        .ok()
                        .or_else(|| {
                            // A duplicate key: the last one, as a tree keeps it.
                            let v = serde_json::from_str::<serde_json::Value>(&self.tool_input);
                            let v = v.ok()?;
                            Some(Lax(ToolInput {
                                query: match v.get("query") {
                                    None => Str::Absent,
                                    Some(q) => q
                                        .as_str()
                                        .map_or(Str::Not, |q| Str::Is(q.to_owned().into())),
                                },
                            }))
                        });
                    if let Some(q) = input.as_ref().map(|i| &i.query).filter(|q| q.is_given()) {
                        self.query = q.get().map(str::to_owned);
                    }
                    self.tool_input.clear();
                }
                if std::mem::take(&mut self.in_text) {
                    out.push(ProviderEvent::BlockEnd);
                }
            }
            "message" => {
                // A whole (non-streamed) message: its content blocks in order.
                for block in v.content.req("content")? {
                    self.start_block(block, out)?;
                    if std::mem::take(&mut self.in_text) {
                        out.push(ProviderEvent::BlockEnd);
                    }
                }
            }
            "error" => return Err(Problem::Upstream(doc.to_json()?)),
            "message_start" | "message_delta" | "message_stop" | "ping" => {}
            other => *unknown = Some(other.to_owned()),
        }
        Ok(())
    }

    fn start_block(&mut self, block: &Block<'_>, out: &mut Vec<ProviderEvent>) -> ReadResult {
        match block.kind.req("type")? {
            "text" => {
                self.in_text = true;
                out.push(ProviderEvent::PartStart);
                for c in block.citations.req("citations")? {
                    if let Some(c) = citation(c)? {
                        out.push(ProviderEvent::Citation(Box::new(c)));
                    }
                }
                if let Some(t) = block.text.opt("text")?.filter(|t| !t.is_empty()) {
                    out.push(ProviderEvent::Text { text: t.to_owned() });
                }
            }
            "server_tool_use" => {
                self.tool_input.clear();
                if let Some(q) = block.input.query.get() {
                    self.query = Some(q.to_owned());
                }
            }
            "web_search_tool_result" => {
                let mut sources: Vec<Source> = Vec::new();
                for r in block.content.get() {
                    if r.kind.get() != Some("web_search_result") {
                        continue;
                    }
                    let url = r.url.req("url")?;
                    if !sources.iter().any(|s| s.id == url) {
                        sources.push(url_source(url, r.title.opt("title")?));
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
fn citation(c: &Citation<'_>) -> Result<Option<ProviderCitation>, Problem> {
    let quote = c.cited_text.opt("cited_text")?.map(str::to_owned);
    let source = match c.kind.req("type")? {
        "web_search_result_location" => url_source(c.url.req("url")?, c.title.opt("title")?),
        "char_location" | "page_location" | "content_block_location" => {
            let index = c
                .document_index
                .opt("document_index")?
                .ok_or_else(|| shape("`document_index` to be a non-negative integer"))?;
            let mut s = document_source(index, c.document_title.opt("document_title")?);
            if let (Some(a), Some(b)) = (
                c.start_page_number.opt("start_page_number")?,
                c.end_page_number.opt("end_page_number")?,
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
            let src = c.source.opt("source")?;
            let index = c
                .search_result_index
                .opt("search_result_index")?
                .unwrap_or(0);
            let id = src.map_or_else(|| format!("search_result:{index}"), str::to_owned);
            let mut s = Source::new(id.clone());
            if src.is_some_and(|u| u.starts_with("http://") || u.starts_with("https://")) {
                s = s.with_url(id);
            } else {
                s = s.with_key(format!("search_result:{id}"));
            }
            if let Some(t) = c.title.opt("title")? {
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
