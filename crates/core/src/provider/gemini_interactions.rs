//! Gemini Interactions API events: `step.delta` text and `text_annotation_delta`
//! (`url_citation` spans in UTF-8 bytes of the step's text), search calls and results.

use serde_json::Value;

use super::json::{arr, obj, opt_str, opt_u64, str_field, Doc, Problem, ReadResult};
use super::read::{url_source, Placement, ProviderCitation, ProviderEvent, Unit};

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
        let v = doc.tree()?;
        let v = &*v;
        match str_field(v, "event_type")? {
            "step.start" => {
                let step = obj(v, "step")?;
                self.in_output = step.get("type").and_then(Value::as_str) == Some("model_output");
                if self.in_output {
                    out.push(ProviderEvent::PartStart);
                }
            }
            "step.delta" => {
                let d = obj(v, "delta")?;
                match str_field(d, "type")? {
                    "text" => {
                        let t = str_field(d, "text")?;
                        if !t.is_empty() {
                            if !self.in_output {
                                self.in_output = true;
                                out.push(ProviderEvent::PartStart);
                            }
                            out.push(ProviderEvent::Text { text: t.to_owned() });
                        }
                    }
                    "text_annotation_delta" => {
                        for a in arr(d, "annotations")? {
                            if a.get("type").and_then(Value::as_str) != Some("url_citation") {
                                continue;
                            }
                            let url = str_field(a, "url")?;
                            let placement =
                                match (opt_u64(a, "start_index")?, opt_u64(a, "end_index")?) {
                                    (Some(start), Some(end)) if end > start => Placement::Span {
                                        start,
                                        end,
                                        unit: Unit::Bytes,
                                    },
                                    _ => Placement::Unplaced,
                                };
                            out.push(ProviderEvent::Citation(Box::new(ProviderCitation {
                                source: url_source(url, opt_str(a, "title")?),
                                quote: None,
                                placement,
                            })));
                        }
                    }
                    "google_search_call" => {
                        let queries: Vec<&str> = d
                            .get("arguments")
                            .and_then(|a| a.get("queries"))
                            .and_then(Value::as_array)
                            .map(|q| q.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default();
                        self.query = (!queries.is_empty()).then(|| queries.join("; "));
                    }
                    "google_search_result" => {
                        let mut sources = Vec::new();
                        for r in arr(d, "result")? {
                            if let Some(url) = opt_str(r, "url")?.filter(|u| !u.is_empty()) {
                                sources.push(url_source(url, opt_str(r, "title")?));
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
            "error" | "interaction.failed" => return Err(Problem::Upstream(v.to_string())),
            "interaction.created" | "interaction.status_update" | "interaction.completed" => {}
            other => *unknown = Some(other.to_owned()),
        }
        Ok(())
    }
}
