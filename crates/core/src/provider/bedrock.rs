//! Amazon Bedrock ConverseStream events as JSON (`{"contentBlockDelta": {…}}`, the shape the
//! AWS SDKs decode the event stream into): text deltas and `citation` deltas.

use serde::Deserialize;

use super::json::{Doc, Entries, Lax, List, Obj, Problem, ReadResult, Str, U64};
use super::read::{document_source, url_source, Placement, ProviderCitation, ProviderEvent};

/// An event's body (`contentBlockDelta`, `contentBlockStop`, …): only the fields read.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Body<'a> {
    content_block_index: U64,
    #[serde(borrow)]
    delta: Obj<Delta<'a>>,
}

/// A content block delta.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Delta<'a> {
    #[serde(borrow)]
    text: Str<'a>,
    #[serde(borrow)]
    citation: Obj<Citation<'a>>,
}

/// A `citation` delta.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Citation<'a> {
    #[serde(borrow)]
    title: Str<'a>,
    #[serde(borrow)]
    source_content: List<Lax<SourceText<'a>>>,
    /// `documentChar`, `documentPage`, `documentChunk` or `web`, by key.
    #[serde(borrow)]
    location: Entries<'a, Lax<Location<'a>>>,
}

/// One of a citation's `sourceContent`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SourceText<'a> {
    #[serde(borrow)]
    text: Str<'a>,
}

/// A citation's location of any kind: a document's index, or a web page's url.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Location<'a> {
    document_index: U64,
    #[serde(borrow)]
    url: Str<'a>,
}

/// ConverseStream state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Converse {
    /// The content block being read.
    block: Option<u64>,
}

impl Converse {
    pub(crate) fn read(
        &mut self,
        doc: Doc<'_>,
        out: &mut Vec<ProviderEvent>,
        unknown: &mut Option<String>,
    ) -> ReadResult {
        // The event's keys in the order a tree keeps them.
        let event: Entries<'_, Lax<Body<'_>>> = doc.parse()?;
        for (key, body) in &event.0 {
            match key.as_ref() {
                "contentBlockDelta" => {
                    let index = body
                        .content_block_index
                        .opt("contentBlockIndex")?
                        .unwrap_or(0);
                    self.enter(index, out);
                    let delta = body.delta.req("delta")?;
                    if let Some(t) = delta.text.opt("text")?.filter(|t| !t.is_empty()) {
                        out.push(ProviderEvent::Text { text: t.to_owned() });
                    }
                    let c = match &delta.citation {
                        Obj::Absent | Obj::Null => None,
                        Obj::Is(c) => Some(citation(c)?),
                        // Not an object: a citation with no fields.
                        Obj::Not => Some(citation(&Citation::default())?),
                    };
                    if let Some(c) = c {
                        out.push(ProviderEvent::Citation(Box::new(c)));
                    }
                }
                "contentBlockStop" => {
                    let index = body
                        .content_block_index
                        .opt("contentBlockIndex")?
                        .unwrap_or(0);
                    if self.block == Some(index) {
                        self.block = None;
                        out.push(ProviderEvent::BlockEnd);
                    }
                }
                "internalServerException"
                | "modelStreamErrorException"
                | "validationException"
                | "throttlingException"
                | "serviceUnavailableException" => {
                    let tree = doc.tree()?;
                    return Err(Problem::Upstream(format!("{key}: {}", tree[key.as_ref()])));
                }
                "messageStart" | "contentBlockStart" | "messageStop" | "metadata" | "p" => {}
                other => *unknown = Some(other.to_owned()),
            }
        }
        Ok(())
    }

    fn enter(&mut self, index: u64, out: &mut Vec<ProviderEvent>) {
        if self.block != Some(index) {
            if self.block.is_some() {
                out.push(ProviderEvent::BlockEnd);
            }
            self.block = Some(index);
            out.push(ProviderEvent::PartStart);
        }
    }
}

/// A `citation` delta: `title`, `sourceContent[].text`, `location` (`documentChar`,
/// `documentPage`, `documentChunk` with `documentIndex`; or `web` with `url`).
fn citation(c: &Citation<'_>) -> Result<ProviderCitation, Problem> {
    let title = c.title.opt("title")?;
    let mut quote = String::new();
    for part in c.source_content.req("sourceContent")? {
        if let Some(t) = part.text.opt("text")? {
            quote.push_str(t);
        }
    }
    let location = &c.location.0;
    let web = location.iter().find(|(k, _)| k == "web").map(|(_, w)| w);
    let source = if let Some(url) = web.and_then(|w| w.url.get()) {
        url_source(url, title)
    } else {
        // The first location (by key) that names a document index.
        let index = location
            .iter()
            .find(|(_, l)| l.document_index.is_given())
            .and_then(|(_, l)| l.document_index.get())
            .unwrap_or(0);
        document_source(index, title)
    };
    Ok(ProviderCitation {
        source,
        quote: (!quote.is_empty()).then_some(quote),
        placement: Placement::BlockEnd,
    })
}
