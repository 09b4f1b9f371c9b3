//! Gemini Interactions API events: `step.delta` text and `text_annotation_delta`
//! (`url_citation` spans in UTF-8 bytes of the step's text), search calls and results.

use serde::Deserialize;

use super::json::{Doc, Lax, List, Obj, Problem, ReadResult, Str, U64};
use super::read::{url_source, Placement, ProviderCitation, ProviderEvent, Unit};

/// An event: only the fields read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event<'a> {
    #[serde(borrow)]
    event_type: Str<'a>,
    #[serde(borrow)]
    step: Obj<Step<'a>>,
    #[serde(borrow)]
    delta: Obj<Delta<'a>>,
}

/// A started step.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Step<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
}

/// A step's delta: text, annotations, a search call or its results.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
    #[serde(borrow)]
    annotations: List<Lax<Annotation<'a>>>,
    #[serde(borrow)]
    arguments: Lax<Arguments<'a>>,
    #[serde(borrow)]
    result: List<Lax<SearchResult<'a>>>,
}

/// A `url_citation` annotation (UTF-8 byte offsets).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Annotation<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    title: Str<'a>,
    start_index: U64,
    end_index: U64,
}

/// A search call's arguments.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Arguments<'a> {
    #[serde(borrow)]
    queries: List<Str<'a>>,
}

/// A search result.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SearchResult<'a> {
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    title: Str<'a>,
}

/// Interactions stream state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Interactions {
    /// Whether the open step is model output.
    in_output: bool,
    /// The last search's queries.
    query: Option<String>,
}

impl Interactions {
    pub(crate) fn read(
        &mut self,
        doc: Doc<'_>,
        out: &mut Vec<ProviderEvent>,
        unknown: &mut Option<String>,
    ) -> ReadResult {
        let v: Event<'_> = doc.parse()?;
        match v.event_type.req("event_type")? {
            "step.start" => {
                let step = v.step.req("step")?;
                self.in_output = step.kind.get() == Some("model_output");
                if self.in_output {
                    out.push(ProviderEvent::PartStart);
                }
            }
            "step.delta" => {
                let d = v.delta.req("delta")?;
                match d.kind.req("type")? {
                    "text" => {
                        let t = d.text.req("text")?;
                        if !t.is_empty() {
                            if !self.in_output {
                                self.in_output = true;
                                out.push(ProviderEvent::PartStart);
                            }
                            out.push(ProviderEvent::Text { text: t.to_owned() });
                        }
                    }
                    "text_annotation_delta" => {
                        for a in d.annotations.req("annotations")? {
                            if a.kind.get() != Some("url_citation") {
                                continue;
                            }
                            let url = a.url.req("url")?;
                            let placement = match (
                                a.start_index.opt("start_index")?,
                                a.end_index.opt("end_index")?,
                            ) {
                                (Some(start), Some(end)) if end > start => Placement::Span {
                                    start,
                                    end,
                                    unit: Unit::Bytes,
                                },
                                _ => Placement::Unplaced,
                            };
                            out.push(ProviderEvent::Citation(Box::new(ProviderCitation {
                                source: url_source(url, a.title.opt("title")?),
                                quote: None,
                                placement,
                            })));
                        }
                    }
                    "google_search_call" => {
                        let queries: Vec<&str> = d
                            .arguments
                            .queries
                            .get()
                            .iter()
                            .filter_map(Str::get)
                            .collect();
                        self.query = (!queries.is_empty()).then(|| queries.join("; "));
                    }
                    "google_search_result" => {
                        let mut sources = Vec::new();
                        for r in d.result.req("result")? {
                            if let Some(url) = r.url.opt("url")?.filter(|u| !u.is_empty()) {
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
                    "thought_signature"
                    | "thought"
                    | "thought_summary"
                    | "function_call"
                    | "code_execution_call"
                    | "code_execution_result"
                    | "url_context_call"
                    | "url_context_result" => {}
                    other => *unknown = Some(format!("step.delta/{other}")),
                }
            }
            "step.stop" => {
                if std::mem::take(&mut self.in_output) {
                    out.push(ProviderEvent::PartEnd);
                }
            }
            "error" | "interaction.failed" => return Err(Problem::Upstream(doc.to_json()?)),
            "interaction.created" | "interaction.status_update" | "interaction.completed" => {}
            other => *unknown = Some(other.to_owned()),
        }
        Ok(())
    }
}
