//! [`Index`]: the tantivy index of book passages.

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tantivy::collector::TopDocs;
use tantivy::directory::MmapDirectory;
use tantivy::index::SegmentId;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, INDEXED, STORED,
    STRING,
};
use tantivy::{IndexReader, IndexWriter, Opstamp, ReloadPolicy, TantivyDocument, Term};

use crate::catalog::{Catalog, RecordHead};
use crate::tokenizer::{analyzer, tokens, TOKENIZER_NAME};
use crate::{BookInfo, BookPassage, IndexError};

/// Memory budget of the index writer (one thread).
const WRITER_BYTES: usize = 32 * 1024 * 1024;

/// Weight of a match in the chapter title against a match in the passage text.
const CHAPTER_BOOST: f32 = 0.3;

/// A full-text index of book passages.
///
/// Open one with [`Index::open_or_create`] (a directory) or [`Index::in_memory`], add books
/// with [`Index::add_book`], and query with [`Index::search`] or [`Index::search_book`]. Each
/// hit carries the stored [`BookPassage`], so [`BookPassage::to_source`] gives a ready core
/// source. Text is tokenized by [`CjkBigramTokenizer`](crate::CjkBigramTokenizer) (bigrams
/// for Chinese, Japanese and Korean, words elsewhere) and ranked with BM25.
pub struct Index {
    index: tantivy::Index,
    reader: IndexReader,
    fields: Fields,
    path: Option<PathBuf>,
    /// The last [`Index::books`] answer and the segments (with their delete opstamps) it
    /// was read from.
    catalog: Mutex<Option<(Segments, Vec<BookInfo>)>>,
    /// The book files of an index in memory (a directory index keeps them in `epub/`).
    epubs: Mutex<HashMap<String, Arc<[u8]>>>,
}

/// The folder of a directory index that holds a copy of each book's file.
const EPUB_DIR: &str = "epub";

type Segments = BTreeMap<SegmentId, Option<Opstamp>>;

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("path", &self.path).finish()
    }
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    text: Field,
    chapter: Field,
    book: Field,
    fingerprint: Field,
    passage: Field,
    record: Field,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Hit {
    /// The BM25 score (higher is better).
    pub score: f32,
    /// The stored passage.
    pub passage: BookPassage,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let indexed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        text: b.add_text_field("text", indexed.clone()),
        chapter: b.add_text_field("chapter", indexed),
        book: b.add_text_field("book", STRING | STORED),
        fingerprint: b.add_text_field("fingerprint", STRING | STORED),
        passage: b.add_u64_field("passage", INDEXED | STORED | FAST),
        record: b.add_text_field("record", STORED),
    };
    (b.build(), fields)
}

impl Index {
    /// Opens the index in `dir`, creating the directory and an empty index if they do not
    /// exist.
    ///
    /// # Errors
    ///
    /// [`IndexError::Open`] when the directory cannot be created or read, or holds an index
    /// with another schema.
    pub fn open_or_create(dir: impl AsRef<Path>) -> Result<Index, IndexError> {
        let dir = dir.as_ref();
        let open_err = |reason: String| IndexError::Open {
            path: dir.to_path_buf(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
        let directory = MmapDirectory::open(dir).map_err(|e| open_err(e.to_string()))?;
        let (schema, fields) = schema();
        let index = tantivy::Index::open_or_create(directory, schema)
            .map_err(|e| open_err(e.to_string()))?;
        Index::wrap(index, fields, Some(dir.to_path_buf())).map_err(|e| open_err(e.to_string()))
    }

    /// An index held in memory only.
    ///
    /// # Errors
    ///
    /// [`IndexError::Open`] if tantivy cannot open a reader on it.
    pub fn in_memory() -> Result<Index, IndexError> {
        let (schema, fields) = schema();
        let index = tantivy::Index::create_in_ram(schema);
        Index::wrap(index, fields, None).map_err(|e| IndexError::Open {
            path: PathBuf::from(":memory:"),
            reason: e.to_string(),
        })
    }

    fn wrap(
        index: tantivy::Index,
        fields: Fields,
        path: Option<PathBuf>,
    ) -> tantivy::Result<Index> {
        index.tokenizers().register(TOKENIZER_NAME, analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(Index {
            index,
            reader,
            fields,
            path,
            catalog: Mutex::new(None),
            epubs: Mutex::new(HashMap::new()),
        })
    }

    /// The directory of the index (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Number of passages in the index.
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Whether the index holds no passage.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds passages, replacing every passage already indexed for the books they belong to
    /// (by [`BookPassage::book_key`]), and commits. `fingerprint` (see
    /// [`fingerprint`](crate::fingerprint)) is stored with them, so a caller can tell
    /// whether a book is already indexed as it is now. Returns the number of passages added.
    ///
    /// # Errors
    ///
    /// [`IndexError::StorageFull`] when the disk is full, [`IndexError::Write`] when the index
    /// cannot be written otherwise (another process is writing to it, or the disk fails);
    /// either way nothing of the call is committed.
    pub fn add_book(
        &mut self,
        passages: &[BookPassage],
        fingerprint: &str,
    ) -> Result<usize, IndexError> {
        let mut writer: IndexWriter<TantivyDocument> = self
            .index
            .writer_with_num_threads(1, WRITER_BYTES)
            .map_err(tantivy_write_err)?;
        let mut keys: Vec<&str> = passages.iter().map(|p| p.book_key.as_str()).collect();
        keys.sort_unstable();
        keys.dedup();
        for key in keys {
            writer.delete_term(Term::from_field_text(self.fields.book, key));
        }
        let f = self.fields;
        for p in passages {
            let record = serde_json::to_string(p).map_err(|e| IndexError::Write {
                reason: e.to_string(),
            })?;
            let mut doc = TantivyDocument::new();
            doc.add_text(f.text, &p.text);
            if let Some(c) = &p.chapter_title {
                doc.add_text(f.chapter, c);
            }
            doc.add_text(f.book, &p.book_key);
            doc.add_text(f.fingerprint, fingerprint);
            doc.add_u64(f.passage, p.passage_index as u64);
            doc.add_text(f.record, &record);
            writer.add_document(doc).map_err(tantivy_write_err)?;
        }
        writer.commit().map_err(tantivy_write_err)?;
        writer.wait_merging_threads().map_err(tantivy_write_err)?;
        self.reader.reload().map_err(tantivy_write_err)?;
        Ok(passages.len())
    }

    /// Keeps a copy of a book's `.epub` file with the index (in `epub/<book_key>.epub` of
    /// the directory, or in memory), so the book can be opened again at a cited place
    /// ([`Index::epub`]). Replaces an earlier copy; the file is written whole under a
    /// temporary name of its own in the same folder, then renamed, so a reader, or another
    /// writer of the same book, never sees a part of it.
    ///
    /// # Errors
    ///
    /// [`IndexError::StorageFull`] when the disk is full (the temporary file is removed),
    /// [`IndexError::Write`] when the file cannot be written otherwise, or `book_key` is not
    /// a key made by [`book_key`](crate::book_key) (ASCII letters, digits and `-`).
    pub fn keep_epub(&self, book_key: &str, bytes: &[u8]) -> Result<(), IndexError> {
        let Some(dir) = &self.path else {
            self.epubs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(book_key.to_owned(), Arc::from(bytes));
            return Ok(());
        };
        let file = epub_path(dir, book_key)?;
        let write_err = |e: std::io::Error| io_write_err(&e, &file);
        std::fs::create_dir_all(dir.join(EPUB_DIR)).map_err(write_err)?;
        // A temporary name of this call's own in the same folder: writers of the same book at
        // once (threads, or processes sharing the index) each rename a whole file of their
        // own, and the last rename wins. One shared name let a writer rename the file another
        // was still writing, and the other's rename then found nothing (issue 38).
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        let tmp = file.with_extension(format!("epub.{}-{n}.tmp", std::process::id()));
        let written = std::fs::File::create(&tmp).and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        });
        if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, &file)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(write_err(e));
        }
        Ok(())
    }

    /// Removes a book: its passages (committed) and the copy of its file. A book the index
    /// does not hold is no error.
    ///
    /// # Errors
    ///
    /// As [`Index::add_book`], and [`IndexError::Write`] when the file cannot be removed.
    pub fn remove_book(&mut self, book_key: &str) -> Result<(), IndexError> {
        let mut writer: IndexWriter<TantivyDocument> = self
            .index
            .writer_with_num_threads(1, WRITER_BYTES)
            .map_err(tantivy_write_err)?;
        writer.delete_term(Term::from_field_text(self.fields.book, book_key));
        writer.commit().map_err(tantivy_write_err)?;
        writer.wait_merging_threads().map_err(tantivy_write_err)?;
        self.reader.reload().map_err(tantivy_write_err)?;
        let Some(dir) = &self.path else {
            let mut kept = self.epubs.lock().unwrap_or_else(|e| e.into_inner());
            kept.remove(book_key);
            return Ok(());
        };
        let file = epub_path(dir, book_key)?;
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_write_err(&e, &file)),
            _ => Ok(()),
        }
    }

    /// The copy of a book's `.epub` file kept by [`Index::keep_epub`], or `None` if there is
    /// none (the book is not in the index, or was added without its file).
    ///
    /// # Errors
    ///
    /// [`IndexError::Search`] when the file exists but cannot be read.
    pub fn epub(&self, book_key: &str) -> Result<Option<Arc<[u8]>>, IndexError> {
        let Some(dir) = &self.path else {
            let kept = self.epubs.lock().unwrap_or_else(|e| e.into_inner());
            return Ok(kept.get(book_key).cloned());
        };
        let Ok(file) = epub_path(dir, book_key) else {
            return Ok(None);
        };
        match std::fs::read(&file) {
            Ok(bytes) => Ok(Some(Arc::from(bytes))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(IndexError::Search {
                reason: format!("{}: {e}", file.display()),
            }),
        }
    }

    /// Whether a copy of a book's file is kept ([`Index::keep_epub`]), without reading it.
    pub fn has_epub(&self, book_key: &str) -> bool {
        let Some(dir) = &self.path else {
            let kept = self.epubs.lock().unwrap_or_else(|e| e.into_inner());
            return kept.contains_key(book_key);
        };
        epub_path(dir, book_key).is_ok_and(|file| file.is_file())
    }

    /// The fingerprint stored with a book's passages, or `None` if the book is not indexed.
    ///
    /// # Errors
    ///
    /// [`IndexError::Search`] when the index cannot be read.
    pub fn fingerprint(&self, book_key: &str) -> Result<Option<String>, IndexError> {
        let searcher = self.reader.searcher();
        let q = TermQuery::new(
            Term::from_field_text(self.fields.book, book_key),
            IndexRecordOption::Basic,
        );
        let top = searcher
            .search(&q, &TopDocs::with_limit(1))
            .map_err(search_err)?;
        let Some((_, addr)) = top.first() else {
            return Ok(None);
        };
        let doc: TantivyDocument = searcher.doc(*addr).map_err(search_err)?;
        Ok(doc
            .get_first(self.fields.fingerprint)
            .and_then(|v| v.as_str())
            .map(str::to_owned))
    }

    /// Picks up what other writers (another process with the same directory) committed
    /// since this index was opened or last reloaded. [`Index::add_book`] reloads by itself.
    ///
    /// # Errors
    ///
    /// [`IndexError::Search`] when the index cannot be read.
    pub fn reload(&self) -> Result<(), IndexError> {
        self.reader.reload().map_err(search_err)
    }

    /// The books in the index, ordered by title: key, title, identifier, url, fingerprint,
    /// passage count and the chapters that have passages (index, title, passage count).
    ///
    /// The first call reads every stored passage; the answer is kept until the index
    /// changes (a book added or replaced, or picked up by [`Index::reload`]).
    ///
    /// # Errors
    ///
    /// [`IndexError::Search`] when the index cannot be read, [`IndexError::Corrupt`] when a
    /// stored passage cannot be decoded.
    pub fn books(&self) -> Result<Vec<BookInfo>, IndexError> {
        let searcher = self.reader.searcher();
        let segments = searcher.generation().segments().clone();
        let mut cache = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((seen, books)) = cache.as_ref() {
            if *seen == segments {
                return Ok(books.clone());
            }
        }
        let f = self.fields;
        let mut catalog = Catalog::default();
        for segment in searcher.segment_readers() {
            let store = segment
                .get_store_reader(4)
                .map_err(|e| IndexError::Search {
                    reason: e.to_string(),
                })?;
            for doc in store.iter::<TantivyDocument>(segment.alive_bitset()) {
                let doc = doc.map_err(search_err)?;
                let json = doc
                    .get_first(f.record)
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| IndexError::Corrupt {
                        reason: "a document has no stored passage".to_owned(),
                    })?;
                let head: RecordHead =
                    serde_json::from_str(json).map_err(|e| IndexError::Corrupt {
                        reason: format!("stored passage is not valid: {e}"),
                    })?;
                let fingerprint = doc
                    .get_first(f.fingerprint)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default();
                catalog.add(head, fingerprint);
            }
        }
        let books = catalog.finish();
        *cache = Some((segments, books.clone()));
        Ok(books)
    }

    /// The `k` passages that best match `query`, best first, from every book.
    ///
    /// The query is free text (no query syntax): it is tokenized like the passages and any
    /// token may match. A query with no searchable token gives no hits.
    ///
    /// # Errors
    ///
    /// [`IndexError::Search`] when the index cannot be read, [`IndexError::Corrupt`] when a
    /// stored passage cannot be decoded.
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<Hit>, IndexError> {
        self.run(None, query, k)
    }

    /// Like [`Index::search`], restricted to the book with this key.
    ///
    /// # Errors
    ///
    /// As [`Index::search`].
    pub fn search_book(
        &self,
        book_key: &str,
        query: &str,
        k: usize,
    ) -> Result<Vec<Hit>, IndexError> {
        self.run(Some(book_key), query, k)
    }

    fn run(&self, book: Option<&str>, query: &str, k: usize) -> Result<Vec<Hit>, IndexError> {
        let mut terms = tokens(query);
        terms.sort_unstable();
        terms.dedup();
        if terms.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let f = self.fields;
        let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(terms.len() * 2);
        for t in &terms {
            should.push((
                Occur::Should,
                Box::new(TermQuery::new(
                    Term::from_field_text(f.text, t),
                    IndexRecordOption::WithFreqs,
                )),
            ));
            should.push((
                Occur::Should,
                Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_text(f.chapter, t),
                        IndexRecordOption::WithFreqs,
                    )),
                    CHAPTER_BOOST,
                )),
            ));
        }
        let text_query: Box<dyn Query> = Box::new(BooleanQuery::new(should));
        let query: Box<dyn Query> = match book {
            Some(key) => Box::new(BooleanQuery::new(vec![
                (
                    Occur::Must,
                    Box::new(TermQuery::new(
                        Term::from_field_text(f.book, key),
                        IndexRecordOption::Basic,
                    )) as Box<dyn Query>,
                ),
                (Occur::Must, text_query),
            ])),
            None => text_query,
        };
        let searcher = self.reader.searcher();
        let top = searcher
            .search(&query, &TopDocs::with_limit(k))
            .map_err(search_err)?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let doc: TantivyDocument = searcher.doc(addr).map_err(search_err)?;
            let json = doc
                .get_first(f.record)
                .and_then(|v| v.as_str())
                .ok_or_else(|| IndexError::Corrupt {
                    reason: format!("document {addr:?} has no stored passage"),
                })?;
            let passage: BookPassage =
                serde_json::from_str(json).map_err(|e| IndexError::Corrupt {
                    reason: format!("stored passage is not valid: {e}"),
                })?;
            hits.push(Hit { score, passage });
        }
        Ok(hits)
    }
}

/// Whether an I/O error says the disk is full or the quota spent (`ENOSPC`, `EDQUOT`).
fn is_full(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

/// A failed write of `file`: [`IndexError::StorageFull`] on a full disk, else
/// [`IndexError::Write`].
fn io_write_err(e: &std::io::Error, file: &Path) -> IndexError {
    let reason = format!("{}: {e}", file.display());
    if is_full(e) {
        IndexError::StorageFull { reason }
    } else {
        IndexError::Write { reason }
    }
}

/// A failed write of tantivy's: [`IndexError::StorageFull`] when its I/O error says the disk
/// is full (tantivy passes some on as text only, such as its merge threads' errors), else
/// [`IndexError::Write`].
fn tantivy_write_err(e: tantivy::TantivyError) -> IndexError {
    use tantivy::directory::error::OpenWriteError;
    use tantivy::TantivyError;
    let full = match &e {
        TantivyError::IoError(io) => is_full(io),
        TantivyError::OpenWriteError(OpenWriteError::IoError { io_error, .. }) => is_full(io_error),
        other => {
            let text = other.to_string();
            [
                "(os error 28)",
                "(os error 122)",
                "StorageFull",
                "QuotaExceeded",
            ]
            .iter()
            .any(|t| text.contains(t))
        }
    };
    let reason = e.to_string();
    if full {
        IndexError::StorageFull { reason }
    } else {
        IndexError::Write { reason }
    }
}

fn search_err(e: tantivy::TantivyError) -> IndexError {
    IndexError::Search {
        reason: e.to_string(),
    }
}

/// Where a directory index keeps a book's file; refuses keys that could leave the folder.
fn epub_path(dir: &Path, book_key: &str) -> Result<PathBuf, IndexError> {
    let valid = !book_key.is_empty()
        && book_key.len() <= 64
        && book_key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !valid {
        return Err(IndexError::Write {
            reason: format!("{book_key:?} is not a book key"),
        });
    }
    Ok(dir.join(EPUB_DIR).join(format!("{book_key}.epub")))
}
