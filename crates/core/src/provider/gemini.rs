//! Gemini `generateContent` / `streamGenerateContent` responses: candidate text parts and
//! `groundingMetadata` (`groundingChunks` as sources, `groundingSupports` as spans in UTF-8
//! bytes of the candidate's text).

use serde::Deserialize;

use super::json::{shape, Doc, Given, Lax, List, Obj, Problem, ReadResult, Str, True, U64};
use super::read::{url_source, Placement, ProviderCitation, ProviderEvent, Unit};
use crate::source::Source;

/// A response: only the fields read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Response<'a> {
    error: Given,
    #[serde(borrow)]
    candidates: List<Lax<Candidate<'a>>>,
}

/// A candidate: its content and grounding.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(borrow)]
    content: Obj<Content<'a>>,
    #[serde(borrow)]
    grounding_metadata: Obj<Grounding<'a>>,
}

/// A candidate's content.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Content<'a> {
    #[serde(borrow)]
    parts: List<Lax<Part<'a>>>,
}

/// A content part.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Part<'a> {
    thought: True,
    #[serde(borrow)]
    text: Str<'a>,
}

/// `groundingMetadata`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Grounding<'a> {
    #[serde(borrow)]
    grounding_chunks: List<Lax<GroundingChunk<'a>>>,
    #[serde(borrow)]
    web_search_queries: List<Str<'a>>,
    #[serde(borrow)]
    grounding_supports: List<Lax<Support<'a>>>,
}

/// A grounding chunk: a web page, a retrieved context or a place.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct GroundingChunk<'a> {
    #[serde(borrow)]
    web: Obj<Chunk<'a>>,
    #[serde(borrow)]
    retrieved_context: Obj<Chunk<'a>>,
    #[serde(borrow)]
    maps: Obj<Chunk<'a>>,
}

/// A grounding chunk's page.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Chunk<'a> {
    #[serde(borrow)]
    uri: Str<'a>,
    #[serde(borrow)]
    title: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
}

/// A grounding support: a segment and the chunks it cites.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Support<'a> {
    #[serde(borrow)]
    segment: Obj<Segment<'a>>,
    grounding_chunk_indices: List<U64>,
}

/// A support's segment: UTF-8 byte offsets of the candidate's text.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Segment<'a> {
    start_index: U64,
    end_index: U64,
    #[serde(borrow)]
    text: Str<'a>,
}

/// Gemini stream state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Generate {
    started: bool,
    /// Grounding chunks registered so far (streams repeat the metadata).
    chunks: Vec<Source>,
}

impl Generate {
    pub(crate) fn read(&mut self, doc: Doc<'_>, out: &mut Vec<ProviderEvent>) -> ReadResult {
        let v: Response<'_> = doc.parse()?;
        if v.error.0 {
            let tree = doc.tree()?;
            return Err(Problem::Upstream(tree["error"].to_string()));
        }
        let candidates = v.candidates.req("candidates")?;
        // Candidate 0 is the answer.
        let Some(c) = candidates.first() else {
            return Ok(());
        };
        if !self.started {
            self.started = true;
            out.push(ProviderEvent::PartStart);
        }
        let parts = match &c.content {
            Obj::Absent | Obj::Null => &[][..],
            Obj::Is(content) => content.parts.req("parts")?,
            // Not an object: no parts.
            Obj::Not => &[][..],
        };
        for part in parts {
            if part.thought.0 {
                continue;
            }
            if let Some(t) = part.text.opt("text")?.filter(|t| !t.is_empty()) {
                out.push(ProviderEvent::Text { text: t.to_owned() });
            }
        }
        if let Some(g) = c.grounding_metadata.get() {
            self.grounding(g, out)?;
        }
        Ok(())
    }

    fn grounding(&mut self, g: &Grounding<'_>, out: &mut Vec<ProviderEvent>) -> ReadResult {
        let mut chunks = Vec::new();
        for ch in g.grounding_chunks.req("groundingChunks")? {
            let web = ch.web.or(&ch.retrieved_context).or(&ch.maps).get();
            let Some(w) = web else {
                return Err(shape("a grounding chunk with `web` or `retrievedContext`"));
            };
            let uri = w.uri.opt("uri")?.unwrap_or_default();
            let title = w.title.opt("title")?;
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
            if let Some(text) = w.text.opt("text")? {
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
            let queries: Vec<&str> = g
                .web_search_queries
                .req("webSearchQueries")?
                .iter()
                .filter_map(Str::get)
                .collect();
            out.push(ProviderEvent::Sources {
                query: (!queries.is_empty()).then(|| queries.join("; ")),
                sources: dedupe(fresh),
            });
        }
        for sup in g.grounding_supports.req("groundingSupports")? {
            let Some(seg) = sup.segment.get() else {
                continue;
            };
            let start = seg.start_index.opt("startIndex")?.unwrap_or(0);
            let Some(end) = seg.end_index.opt("endIndex")? else {
                continue;
            };
            let quote = seg.text.opt("text")?.map(str::to_owned);
            for i in sup.grounding_chunk_indices.req("groundingChunkIndices")? {
                let i = i
                    .get()
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
