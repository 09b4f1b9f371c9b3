//! The sources a measuring example shows the model (shared by `cite_rate` and
//! `record_streams`, each of which includes this file as a module).

use citeflow_core::{PromptMarker, Source};

/// The retrieved passages as the sources of a prompt, renamed `source_n` for the
/// single-bracket form (whose scanner only takes ids shaped `source_<digits>`; book ids hold
/// `#`).
pub(crate) fn sources_for(passages: &[Source], marker: PromptMarker) -> Vec<Source> {
    passages
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut s = s.clone();
            if marker == PromptMarker::SingleBracket {
                s.id = format!("source_{}", i + 1);
            }
            s
        })
        .collect()
}
