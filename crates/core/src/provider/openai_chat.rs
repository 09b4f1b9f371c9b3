//! OpenAI Chat Completions chunks (and completions, and compatible servers): `delta.content`,
//! `delta.annotations` (`url_citation`), Perplexity's top-level `citations` and
//! `search_results`. The one reader of a chat chunk: [`super::ChatChunk`] reads the same
//! structs, for the plain chunk an adapter rewrites in its own text.

use serde::Deserialize;

use super::json::{
    shape, Doc, Given, Lax, List, MetaValue, Obj, Problem, Raw, ReadResult, Str, StrAt, U64,
};
use super::read::{url_source, Placement, ProviderCitation, ProviderEvent, Unit};

/// A chunk: only the fields read (by the dialect, and by [`super::ChatChunk`]: the members
/// an answer keeps as metadata, and `usage` and `citeflow` as the upstream wrote them).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Chunk<'a> {
    /// An error object (given and not null: the stream reported an error).
    #[serde(borrow)]
    pub(crate) error: Raw<'a>,
    #[serde(borrow)]
    pub(crate) choices: List<Obj<Choice<'a>>>,
    /// Perplexity: the urls `[n]` counts.
    #[serde(borrow)]
    pub(crate) citations: List<Str<'a>>,
    /// Perplexity: the search results (`url`, `title`, `snippet`).
    #[serde(borrow)]
    pub(crate) search_results: List<Lax<SearchResult<'a>>>,
    #[serde(borrow)]
    pub(crate) id: MetaValue<'a>,
    #[serde(borrow)]
    pub(crate) object: MetaValue<'a>,
    #[serde(borrow)]
    pub(crate) created: MetaValue<'a>,
    #[serde(borrow)]
    pub(crate) model: MetaValue<'a>,
    #[serde(borrow)]
    pub(crate) system_fingerprint: MetaValue<'a>,
    #[serde(borrow)]
    pub(crate) usage: Raw<'a>,
    /// What a citeflow proxy added (a chunk that has it was rewritten already).
    #[serde(borrow)]
    pub(crate) citeflow: Raw<'a>,
}

/// A choice: `delta` (streamed) or `message` (whole), or `text` (completions).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Choice<'a> {
    pub(crate) index: U64,
    #[serde(borrow)]
    pub(crate) delta: Obj<Delta<'a>>,
    #[serde(borrow)]
    pub(crate) message: Obj<Delta<'a>>,
    #[serde(borrow)]
    pub(crate) text: Str<'a>,
    pub(crate) finish_reason: Given,
}

/// A choice's `delta` or `message`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Delta<'a> {
    /// With its string literal, for an adapter that replaces it.
    #[serde(borrow)]
    pub(crate) content: StrAt<'a>,
    #[serde(borrow)]
    pub(crate) annotations: List<Lax<Annotation<'a>>>,
}

/// `{"type": "url_citation", "url_citation": {…}}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Annotation<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Str<'a>,
    #[serde(borrow)]
    pub(crate) url_citation: Obj<UrlCitation<'a>>,
}

/// An annotation's `url_citation`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(crate) struct UrlCitation<'a> {
    #[serde(borrow)]
    pub(crate) url: Str<'a>,
    #[serde(borrow)]
    pub(crate) title: Str<'a>,
    pub(crate) start_index: U64,
    pub(crate) end_index: U64,
}

/// One of Perplexity's `search_results`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SearchResult<'a> {
    #[serde(borrow)]
    pub(crate) url: Str<'a>,
    #[serde(borrow)]
    pub(crate) title: Str<'a>,
    #[serde(borrow)]
    pub(crate) snippet: Str<'a>,
}

/// An annotation as read, to know it again (gateways repeat annotations in later chunks).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    url: String,
    title: Option<String>,
    start: Option<u64>,
    end: Option<u64>,
}

/// Chat stream state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chat {
    /// Urls of the `citations` / `search_results` lists registered so far.
    listed: Vec<String>,
    /// `url_citation` annotations already read.
    seen_annotations: Vec<Seen>,
}

impl Chat {
    pub(crate) fn read(&mut self, doc: Doc<'_>, out: &mut Vec<ProviderEvent>) -> ReadResult {
        // The structs keep where some fields are in the text: a tree is read as its text.
        let text = doc.text();
        let v: Chunk<'_> = Doc::Text(&text).parse()?;
        if !v.error.is_null() {
            let tree = doc.tree()?;
            return Err(Problem::Upstream(tree["error"].to_string()));
        }
        self.read_listed(&v, out)?;
        let choices = v.choices.req("choices")?;
        // Choice 0 is the answer; with n > 1 the others are other answers, not this one.
        let Some(choice) = choices
            .iter()
            .find(|c| c.get().and_then(|c| c.index.get()).unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        let Some(choice) = choice.get() else {
            return Err(shape("`choices[0]` to be an object"));
        };
        let delta = match choice.delta.or(&choice.message) {
            Obj::Absent | Obj::Null => None,
            Obj::Is(d) => Some(d),
            Obj::Not => return Err(shape("`choices[0].delta` to be an object")),
        };
        let text = match delta {
            Some(d) => d.content.value.opt("content")?,
            None => choice.text.opt("text")?,
        };
        if let Some(t) = text.filter(|t| !t.is_empty()) {
            out.push(ProviderEvent::Text { text: t.to_owned() });
        }
        if let Some(d) = delta {
            for a in d.annotations.req("annotations")? {
                if let Some(c) = self.annotation(a)? {
                    out.push(ProviderEvent::Citation(Box::new(c)));
                }
            }
        }
        Ok(())
    }

    /// Perplexity: `citations` (urls) and `search_results` (`title`, `url`), repeated in every
    /// chunk; what is new is registered as a round. Their order is the order `[n]` ranks count:
    /// each source carries its position as its label, so that `[n]` names Perplexity's n-th
    /// source even when the caller's own sources come first in the table.
    fn read_listed(&mut self, v: &Chunk<'_>, out: &mut Vec<ProviderEvent>) -> ReadResult {
        let results = v.search_results.req("search_results")?;
        let citations = v.citations.req("citations")?;
        let mut fresh = Vec::new();
        if !results.is_empty() {
            for (label, r) in (1u32..).zip(results) {
                let url = match r.url.opt("url")? {
                    Some(u) if !u.trim().is_empty() => u,
                    _ => continue,
                };
                if self.listed.iter().any(|l| l == url) {
                    continue;
                }
                self.listed.push(url.to_owned());
                let mut s = url_source(url, r.title.opt("title")?).with_label(label);
                if let Some(snippet) = r.snippet.opt("snippet")? {
                    s.snippet = Some(snippet.to_owned());
                }
                fresh.push(s);
            }
        } else {
            for (label, c) in (1u32..).zip(citations) {
                let Some(url) = c.get().filter(|u| !u.trim().is_empty()) else {
                    return Err(shape("`citations` to be an array of url strings"));
                };
                if self.listed.iter().any(|l| l == url) {
                    continue;
                }
                self.listed.push(url.to_owned());
                fresh.push(url_source(url, None).with_label(label));
            }
        }
        if !fresh.is_empty() {
            out.push(ProviderEvent::Sources {
                query: None,
                sources: fresh,
            });
        }
        Ok(())
    }

    /// A Chat Completions annotation not read before: `{"type": "url_citation",
    /// "url_citation": {start_index, end_index, url, title}}` (offsets in characters of the
    /// message content).
    fn annotation(&mut self, a: &Annotation<'_>) -> Result<Option<ProviderCitation>, Problem> {
        if a.kind.get() != Some("url_citation") {
            return Ok(None);
        }
        if let Some(c) = a.url_citation.get() {
            if let Some(url) = c.url.get() {
                let seen = Seen {
                    url: url.to_owned(),
                    title: c.title.get().map(str::to_owned),
                    start: c.start_index.get(),
                    end: c.end_index.get(),
                };
                if self.seen_annotations.contains(&seen) {
                    return Ok(None);
                }
                self.seen_annotations.push(seen);
            }
        }
        let c = a.url_citation.req("url_citation")?;
        let Some(url) = c.url.opt("url")? else {
            return Err(shape("`url_citation.url` to be a string"));
        };
        let placement = match (
            c.start_index.opt("start_index")?,
            c.end_index.opt("end_index")?,
        ) {
            (Some(start), Some(end)) if end > start => Placement::Span {
                start,
                end,
                unit: Unit::Chars,
            },
            _ => Placement::Unplaced,
        };
        Ok(Some(ProviderCitation {
            source: url_source(url, c.title.opt("title")?),
            quote: None,
            placement,
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::provider::ProviderStream;
    use crate::{Event, Numbering, Settings, Source, Sources};

    #[test]
    fn perplexity_ranks_name_its_own_list_after_the_callers_sources() {
        let mine = Sources::from_vec(vec![Source::new("book_1"), Source::new("book_2")]).unwrap();
        let mut ps = ProviderStream::new(Settings::default(), mine, Numbering::new());
        ps.write(
            br#"{"citations":["https://a.example/","https://b.example/"],"choices":[{"index":0,"delta":{"content":"Yes[2]."}}]}
"#,
        )
        .unwrap();
        ps.end().unwrap();
        let events: Vec<Event> = std::iter::from_fn(|| ps.poll_event()).collect();
        let Some(Event::Done { sources, .. }) = events.last() else {
            panic!("{events:?}")
        };
        let urls: Vec<_> = sources.iter().map(|s| s.source.url.as_deref()).collect();
        assert_eq!(urls, [Some("https://b.example/")]);
        assert_eq!(sources[0].number, 1);
    }
}
