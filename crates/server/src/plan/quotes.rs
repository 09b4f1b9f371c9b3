//! [`BookQuotes`]: the CFI of a quoted sentence in its book, for the anchors of book passages
//! (issue 43). With `citeflow.settings.anchors`, an anchor whose source is a passage of a book
//! this server holds (a `book:` url and a `locator.cfi`, as `citeflow.book`, the search route
//! and session rounds give them) gets `quote.cfi`: the range CFI of the quoted sentence,
//! which `GET /v1/books/{key}/read` opens with exactly that sentence marked. The mapping is
//! `citeflow_epub::Book::passage_range_cfi`; this module only finds the book and fills the
//! field.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use citeflow_core::anchor::Anchor;
use citeflow_core::{Event, Settings, Sources};
use citeflow_epub::{Book, Cfi, ChunkSettings};

use crate::state::AppState;
use crate::tenancy::Owner;

/// A passage a quote may be in: its book, its range CFI and its text.
struct Passage {
    book: Arc<Book>,
    cfi: Cfi,
    text: String,
}

/// The book passages among an answer's sources, with their books opened.
pub(crate) struct BookQuotes {
    /// By source id.
    passages: HashMap<String, Passage>,
    /// Quote CFIs already made, by `(source id, char_start, char_end)`: the `done` event's
    /// list repeats the anchors.
    made: Mutex<HashMap<(String, u64, u64), Option<String>>>,
}

impl BookQuotes {
    /// The book passages of `sources` when `settings` anchor citations and the server holds
    /// their books; `None` otherwise. A book that cannot be opened (its file is missing, the
    /// owner may not see it) is logged and its passages get no CFI.
    pub(crate) async fn open(
        state: &AppState,
        owner: &Owner,
        settings: &Settings,
        sources: &Sources,
    ) -> Option<Arc<BookQuotes>> {
        if !settings.has_anchors() {
            return None;
        }
        let lib = state.books.clone()?;
        let wanted: Vec<(String, String, Cfi, String)> = sources
            .iter()
            .filter_map(|s| {
                let url = s.url.as_deref().filter(|u| u.starts_with("book:"))?;
                let cfi = Cfi::parse(s.locator.as_ref()?.cfi.as_deref()?).ok()?;
                Some((s.id.clone(), url.to_owned(), cfi, s.text.clone()?))
            })
            .collect();
        if wanted.is_empty() {
            return None;
        }
        let owner = owner.clone();
        let opened = tokio::task::spawn_blocking(move || {
            let books = match lib.books(&owner) {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot list books for quote cfis");
                    return HashMap::new();
                }
            };
            let mut by_url: HashMap<String, Option<Arc<Book>>> = HashMap::new();
            let mut passages = HashMap::new();
            for (id, url, cfi, text) in wanted {
                let book = by_url.entry(url.clone()).or_insert_with(|| {
                    let key = &books.iter().find(|b| b.url == url)?.key;
                    lib.open_book(&owner, key)
                        .map_err(|e| tracing::warn!(book = %key, error = %e, "no quote cfis"))
                        .ok()
                        .map(|(book, _)| book)
                });
                if let Some(book) = book {
                    let book = Arc::clone(book);
                    passages.insert(id, Passage { book, cfi, text });
                }
            }
            passages
        })
        .await
        .ok()?;
        (!opened.is_empty()).then(|| {
            Arc::new(BookQuotes {
                passages: opened,
                made: Mutex::new(HashMap::new()),
            })
        })
    }

    /// Fills `quote.cfi` of an anchor event, and of the anchors in a `done` event's list.
    pub(crate) fn fill(&self, event: &mut Event) {
        match event {
            Event::Anchor(a) => self.fill_anchor(a),
            Event::Done { sources, .. } => {
                for a in sources.iter_mut().flat_map(|l| l.anchors.iter_mut()) {
                    self.fill_anchor(a);
                }
            }
            _ => {}
        }
    }

    fn fill_anchor(&self, a: &mut Anchor) {
        let Some(p) = self.passages.get(&a.source_id) else {
            return;
        };
        let Some(quote) = a.quote.as_mut().filter(|q| q.cfi.is_none()) else {
            return;
        };
        let Some(range) = quote.range else { return };
        let key = (a.source_id.clone(), range.char_start, range.char_end);
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        quote.cfi = made
            .entry(key)
            .or_insert_with(|| {
                let chars = range.char_start as usize..range.char_end as usize;
                // The server's books are cut with the default settings (library.rs).
                p.book
                    .passage_range_cfi(&p.cfi, &p.text, chars, &ChunkSettings::default())
                    .map_err(|e| tracing::warn!(source = %a.source_id, error = %e, "no quote cfi"))
                    .ok()
                    .map(|c| c.to_string())
            })
            .clone();
    }
}
