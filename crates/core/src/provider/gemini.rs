//! Gemini `generateContent` / `streamGenerateContent` responses: candidate text parts and
//! `groundingMetadata` (`groundingChunks` as sources, `groundingSupports` as spans in UTF-8
//! bytes of the candidate's text).

use serde_json::Value;

use super::json::{arr, opt_str, opt_u64, shape, Doc, Problem, ReadResult};
use super::read::{url_source, Placement, ProviderCitation, ProviderEvent, Unit};
use crate::source::Source;

/// Gemini stream state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Generate {
    started: bool,
    /// Grounding chunks registered so far (streams repeat the metadata).
    chunks: Vec<Source>,
}

impl Generate {
    pub(crate) fn read(&mut self, doc: Doc<'_>, out: &mut Vec<ProviderEvent>) -> ReadResult {
        let v = doc.tree()?;
        let v = &*v;
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            return Err(Problem::Upstream(e.to_string()));
        }
        let candidates = arr(v, "candidates")?;
        // Candidate 0 is the answer.
        let Some(c) = candidates.first() else {
            return Ok(());
        };
        if !self.started {
            self.started = true;
            out.push(ProviderEvent::PartStart);
        }
        if let Some(content) = c.get("content").filter(|x| !x.is_null()) {
            for part in arr(content, "parts")? {
                if part.get("thought").and_then(Value::as_bool) == Some(true) {
                    continue;
                }
                if let Some(t) = opt_str(part, "text")?.filter(|t| !t.is_empty()) {
                    out.push(ProviderEvent::Text { text: t.to_owned() });
                }
            }
        }
        if let Some(g) = c.get("groundingMetadata").filter(|g| g.is_object()) {
            self.grounding(g, out)?;
        }
        Ok(())
    }

    fn grounding(&mut self, g: &Value, out: &mut Vec<ProviderEvent>) -> ReadResult {
        let mut chunks = Vec::new();
        for ch in arr(g, "groundingChunks")? {
            let web = ch
                .get("web")
                .or_else(|| ch.get("retrievedContext"))
                .or_else(|| ch.get("maps"))
                .filter(|w| w.is_object());
            let Some(w) = web else {
                return Err(shape("a grounding chunk with `web` or `retrievedContext`"));
            };
            let uri = opt_str(w, "uri")?.unwrap_or_default();
            let title = opt_str(w, "title")?;
            let mut s = if uri.is_empty() {
                let id = format!("grounding:{}", title.unwrap_or("chunk"));
                let mut s = Source::new(id);
                if let Some(t) = title {
                    s = s.with_title(t);
                }
                s
            } else {
                url_source(uri, title)
            };
            if let Some(text) = opt_str(w, "text")? {
                s.snippet = Some(text.chars().take(300).collect());
            }
            chunks.push(s);
        }
        let fresh: Vec<Source> = chunks
            .iter()
            .filter(|s| !self.chunks.iter().any(|x| x.id == s.id))
            .cloned()
            .collect();
        if !chunks.is_empty() {
            self.chunks = chunks;
        }
        if !fresh.is_empty() {
            let queries: Vec<&str> = arr(g, "webSearchQueries")?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            out.push(ProviderEvent::Sources {
                query: (!queries.is_empty()).then(|| queries.join("; ")),
                sources: dedupe(fresh),
            });
        }
        for sup in arr(g, "groundingSupports")? {
            let Some(seg) = sup.get("segment").filter(|s| s.is_object()) else {
                continue;
            };
            let start = opt_u64(seg, "startIndex")?.unwrap_or(0);
            let Some(end) = opt_u64(seg, "endIndex")? else {
                continue;
            };
            let quote = opt_str(seg, "text")?.map(str::to_owned);
            for i in arr(sup, "groundingChunkIndices")? {
                let i = i
                    .as_u64()
                    .ok_or_else(|| shape("`groundingChunkIndices` to hold integers"))?;
                let Some(source) = usize::try_from(i).ok().and_then(|i| self.chunks.get(i)) else {
                    return Err(shape(format!(
                        "grounding chunk index {i} to name one of the {} chunks",
                        self.chunks.len()
                    )));
                };
                out.push(ProviderEvent::Citation(Box::new(ProviderCitation {
                    source: source.clone(),
                    quote: quote.clone(),
                    placement: Placement::Span {
                        start,
                        end,
                        unit: Unit::Bytes,
                    },
                })));
            }
        }
        Ok(())
    }
}

fn dedupe(sources: Vec<Source>) -> Vec<Source> {
    let mut out: Vec<Source> = Vec::new();
    for s in sources {
        if !out.iter().any(|x| x.id == s.id) {
            out.push(s);
        }
    }
    out
}
