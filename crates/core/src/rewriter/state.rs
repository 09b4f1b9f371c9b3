//! What the rewriter can tell about itself: offsets, the sources listed and uncited, its
//! settings and tables, the verification at the end, and snapshots.

use super::{keys_of, Phase, Rewriter, Snapshot, SNAPSHOT_VERSION};
use crate::error::{RestoreError, RewriteError};
use crate::event::{Event, ListedSource, Report};
use crate::numbering::Numbering;
use crate::scan::ScanConfig;
use crate::settings::Settings;
use crate::source::{Source, Sources};

impl Rewriter {
    /// Where input byte `input_byte` (decoded input, as in [`Event::Citation`]'s
    /// `input_byte_offset`) is in the rendered output, in bytes; `None` when it has not been
    /// rendered yet. Call [`Rewriter::write_boundary`] first to render everything written.
    pub fn output_offset(&self, input_byte: u64) -> Option<u64> {
        let rendered_in = self.st.input_bytes - self.held_bytes() as u64;
        if input_byte > rendered_in {
            return None;
        }
        let i = self
            .st
            .anchors
            .partition_point(|&(inp, _)| inp <= input_byte);
        let (inp, out) = if i == 0 {
            (0, 0)
        } else {
            self.st.anchors[i - 1]
        };
        let at = out + (input_byte - inp);
        // A position inside the next marker maps no further than that marker's rendering.
        Some(match self.st.anchors.get(i) {
            Some(&(_, next_out)) => at.min(next_out),
            None => at,
        })
    }

    /// Rendered output so far (flushed and pending), in bytes.
    pub fn output_bytes(&self) -> u64 {
        self.st.flushed_bytes + self.st.text.len() as u64
    }

    /// The sources shown to the model (every registered round) that this stream has not cited,
    /// in registration order: the "more sources" a UI may list after the cited ones. A source
    /// whose document was cited under another id (same canonical key) is not among them.
    pub fn uncited_sources(&self) -> Vec<Source> {
        let st = &self.st;
        let mut seen: Vec<&String> = Vec::new();
        st.sources
            .iter()
            .zip(&self.keys)
            .filter(|(s, key)| {
                !st.shown
                    .iter()
                    .any(|sh| &sh.key == *key || sh.source_id == s.id)
            })
            .filter(|(_, key)| {
                let fresh = !seen.contains(key);
                seen.push(key);
                fresh
            })
            .map(|(s, _)| s.clone())
            .collect()
    }

    /// The cited sources by number; with `all`, every numbered source of the table.
    pub fn listed_sources(&self, all: bool) -> Vec<ListedSource> {
        let st = &self.st;
        let mut list: Vec<ListedSource> = st
            .shown
            .iter()
            .map(|s| ListedSource {
                number: s.number,
                source: st
                    .sources
                    .get(&s.source_id)
                    .cloned()
                    .unwrap_or_else(|| Source::new(s.source_id.as_str())),
                round: st.sources.round_of(&s.source_id),
                citations: s.citations,
                anchors: st
                    .anchored
                    .iter()
                    .filter(|a| a.number == s.number)
                    .cloned()
                    .collect(),
            })
            .collect();
        if all {
            for e in st.numbering.entries() {
                if list.iter().any(|l| l.number == e.number) {
                    continue;
                }
                if let Some(source) = st.sources.get(&e.source_id) {
                    list.push(ListedSource {
                        number: e.number,
                        source: source.clone(),
                        round: st.sources.round_of(&e.source_id),
                        citations: 0,
                        anchors: Vec::new(),
                    });
                }
            }
        }
        list.sort_by_key(|l| l.number);
        list
    }

    pub(super) fn finish_stream(&mut self) -> Result<(), RewriteError> {
        if self.is_remove() {
            self.st.repair.finish(&mut self.st.text);
        }
        self.flush_text();
        self.finish_claims();
        let sources = self.listed_sources(false);
        let st = &self.st;
        let numbers_in_body: Vec<u32> = st.shown.iter().map(|s| s.number).collect();
        let numbers_listed: Vec<u32> = sources.iter().map(|s| s.number).collect();
        let mut problems = Vec::new();
        let mut body_sorted = numbers_in_body.clone();
        body_sorted.sort_unstable();
        if body_sorted != numbers_listed {
            problems.push(format!(
                "body numbers {numbers_in_body:?} differ from list {numbers_listed:?}"
            ));
        }
        if st.numbering.len() < st.initial_numbers {
            problems.push("the numbering table shrank".to_owned());
        }
        for s in &st.shown {
            if !s.key.starts_with("rank:") && st.numbering.get(&s.key) != Some(s.number) {
                problems.push(format!("key {:?} no longer has number {}", s.key, s.number));
            }
        }
        let report = Report {
            citations: st.citations,
            unresolved: st.unresolved,
            released_holdbacks: st.scanner.overflows,
            input_bytes: st.input_bytes,
            output_bytes: st.flushed_bytes,
            new_numbers: st.new_numbers,
            numbers_in_body,
            numbers_listed,
            verified: problems.is_empty(),
        };
        self.st.events.push_back(Event::Done {
            sources,
            report: Box::new(report),
            text: None,
            uncited: self.uncited_sources(),
        });
        if problems.is_empty() {
            self.st.phase = Phase::Ended;
            Ok(())
        } else {
            Err(self.fail(RewriteError::Verification(problems.join("; "))))
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.st.settings
    }

    /// The sources.
    pub fn sources(&self) -> &Sources {
        &self.st.sources
    }

    /// The numbering table as it is now: save it to continue the numbering elsewhere.
    pub fn numbering(&self) -> &Numbering {
        &self.st.numbering
    }

    /// Takes the numbering table out.
    pub fn into_numbering(self) -> Numbering {
        self.st.numbering
    }

    /// Raw input bytes accepted so far (the next [`Rewriter::write_at`] offset).
    pub fn input_bytes(&self) -> u64 {
        self.st.input_bytes
    }

    /// The next [`Rewriter::write_seq`] sequence number.
    pub fn next_seq(&self) -> u64 {
        self.st.next_seq
    }

    /// Input bytes held back: an unfinished character or a possible marker.
    pub fn held_bytes(&self) -> usize {
        self.st.decoder.held_bytes() + self.st.scanner.held_bytes()
    }

    /// Whether an [`Event::NumberNeeded`] waits for its answer.
    pub fn is_awaiting_number(&self) -> bool {
        self.st.awaiting.is_some()
    }

    /// Whether [`Event::Done`] has been queued.
    pub fn is_ended(&self) -> bool {
        self.st.phase == Phase::Ended
    }

    /// The whole state, to restore in another process with [`Rewriter::from_snapshot`].
    #[cfg(feature = "serde")]
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            version: SNAPSHOT_VERSION,
            state: self.st.clone(),
        }
    }

    /// Restores a rewriter from a snapshot; it continues exactly where the snapshot was taken.
    ///
    /// # Errors
    /// [`RestoreError::Version`] for a snapshot of another format version.
    #[cfg(feature = "serde")]
    pub fn from_snapshot(snapshot: Snapshot) -> Result<Self, RestoreError> {
        if snapshot.version != SNAPSHOT_VERSION {
            return Err(RestoreError::Version {
                found: snapshot.version,
                expected: SNAPSHOT_VERSION,
            });
        }
        let mut st = snapshot.state;
        st.sources.reindex();
        let cfg = ScanConfig::for_sources(&st.settings, &st.sources);
        let keys = keys_of(&st.sources, &st.settings);
        Ok(Rewriter {
            st,
            cfg,
            keys,
            indexes: Default::default(),
        })
    }
}
