//! OpenAI Chat Completions chunks (and completions, and compatible servers): `delta.content`,
//! `delta.annotations` (`url_citation`), Perplexity's top-level `citations` and
//! `search_results`.

use serde_json::Value;

use super::json::{arr, obj, opt_str, opt_u64, shape, Problem, ReadResult};
use super::read::{url_source, Placement, ProviderCitation, ProviderEvent, Unit};

/// Chat stream state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chat {
    /// Urls of the `citations` / `search_results` lists registered so far.
    listed: Vec<String>,
    /// Annotations already read (gateways repeat them in later chunks).
    seen_annotations: Vec<Value>,
}

impl Chat {
    pub(crate) fn read(&mut self, v: &Value, out: &mut Vec<ProviderEvent>) -> ReadResult {
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            return Err(Problem::Upstream(e.to_string()));
        }
        self.read_listed(v, out)?;
        let choices = arr(v, "choices")?;
        // Choice 0 is the answer; with n > 1 the others are other answers, not this one.
        let Some(choice) = choices
            .iter()
            .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        if !choice.is_object() {
            return Err(shape("`choices[0]` to be an object"));
        }
        let delta = match choice.get("delta").or_else(|| choice.get("message")) {
            None | Some(Value::Null) => None,
            Some(d) if d.is_object() => Some(d),
            Some(_) => return Err(shape("`choices[0].delta` to be an object")),
        };
        let text = match delta {
            Some(d) => opt_str(d, "content")?,
            None => opt_str(choice, "text")?,
        };
        if let Some(t) = text.filter(|t| !t.is_empty()) {
            out.push(ProviderEvent::Text { text: t.to_owned() });
        }
        if let Some(d) = delta {
            for a in arr(d, "annotations")? {
                if self.seen_annotations.contains(a) {
                    continue;
                }
                self.seen_annotations.push(a.clone());
                if let Some(c) = annotation(a)? {
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
    fn read_listed(&mut self, v: &Value, out: &mut Vec<ProviderEvent>) -> ReadResult {
        let results = arr(v, "search_results")?;
        let citations = arr(v, "citations")?;
        let mut fresh = Vec::new();
        if !results.is_empty() {
            for (label, r) in (1u32..).zip(results) {
                let url = match opt_str(r, "url")? {
                    Some(u) if !u.trim().is_empty() => u,
                    _ => continue,
                };
                if self.listed.iter().any(|l| l == url) {
                    continue;
                }
                self.listed.push(url.to_owned());
                let mut s = url_source(url, opt_str(r, "title")?).with_label(label);
                if let Some(snippet) = opt_str(r, "snippet")? {
                    s.snippet = Some(snippet.to_owned());
                }
                fresh.push(s);
            }
        } else {
            for (label, c) in (1u32..).zip(citations) {
                let Some(url) = c.as_str().filter(|u| !u.trim().is_empty()) else {
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
}

/// A Chat Completions annotation: `{"type": "url_citation", "url_citation": {start_index,
/// end_index, url, title}}` (offsets in characters of the message content).
fn annotation(a: &Value) -> Result<Option<ProviderCitation>, Problem> {
    if a.get("type").and_then(Value::as_str) != Some("url_citation") {
        return Ok(None);
    }
    let c = obj(a, "url_citation")?;
    let Some(url) = opt_str(c, "url")? else {
        return Err(shape("`url_citation.url` to be a string"));
    };
    let placement = match (opt_u64(c, "start_index")?, opt_u64(c, "end_index")?) {
        (Some(start), Some(end)) if end > start => Placement::Span {
            start,
            end,
            unit: Unit::Chars,
        },
        _ => Placement::Unplaced,
    };
    Ok(Some(ProviderCitation {
        source: url_source(url, opt_str(c, "title")?),
        quote: None,
        placement,
    }))
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
