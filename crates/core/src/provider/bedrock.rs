//! Amazon Bedrock ConverseStream events as JSON (`{"contentBlockDelta": {…}}`, the shape the
//! AWS SDKs decode the event stream into): text deltas and `citation` deltas.

use serde_json::Value;

use super::json::{arr, obj, opt_str, opt_u64, shape, Doc, Problem, ReadResult};
use super::read::{document_source, url_source, Placement, ProviderCitation, ProviderEvent};

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
        let v = doc.tree()?;
        let v = &*v;
        let o = v.as_object().ok_or_else(|| shape("a JSON object"))?;
        for (key, body) in o {
            match key.as_str() {
                "contentBlockDelta" => {
                    let index = opt_u64(body, "contentBlockIndex")?.unwrap_or(0);
                    self.enter(index, out);
                    let delta = obj(body, "delta")?;
                    if let Some(t) = opt_str(delta, "text")?.filter(|t| !t.is_empty()) {
                        out.push(ProviderEvent::Text { text: t.to_owned() });
                    }
                    if let Some(c) = delta.get("citation").filter(|c| !c.is_null()) {
                        out.push(ProviderEvent::Citation(Box::new(citation(c)?)));
                    }
                }
                "contentBlockStop" => {
                    let index = opt_u64(body, "contentBlockIndex")?.unwrap_or(0);
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
                    return Err(Problem::Upstream(format!("{key}: {body}")));
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
fn citation(c: &Value) -> Result<ProviderCitation, Problem> {
    let title = opt_str(c, "title")?;
    let mut quote = String::new();
    for part in arr(c, "sourceContent")? {
        if let Some(t) = opt_str(part, "text")? {
            quote.push_str(t);
        }
    }
    let location = c.get("location").filter(|l| l.is_object());
    let web = location.and_then(|l| l.get("web"));
    let source = if let Some(url) = web.and_then(|w| w.get("url")).and_then(Value::as_str) {
        url_source(url, title)
    } else {
        let index = location
            .and_then(Value::as_object)
            .and_then(|l| l.values().find_map(|x| x.get("documentIndex")))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        document_source(index, title)
    };
    Ok(ProviderCitation {
        source,
        quote: (!quote.is_empty()).then_some(quote),
        placement: Placement::BlockEnd,
    })
}
