//! [`Library`]: the book index a server answers from (`citeflow-index`), behind a lock, with
//! a cache of opened books and a bounded pool of uploads being read ([`Ingest`]). Its calls
//! block: the routes (`books.rs`) run them in `spawn_blocking`. Searches share a read lock;
//! adding a book takes the write lock only for the index writes (its passages, then its kept
//! file), after the book was read and cut, and looks the book up again under it, so
//! uploads of one book at once add it once. Errors are [`LibraryError`] (in `error.rs`, which answers them as an `ApiError`).

use std::path::{Path as FsPath, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use citeflow_core::Source;
use citeflow_epub::{Book, ChunkSettings, ControlFlow, OpenError, Progress};
use citeflow_index::{fingerprint, BookInfo, BookPassage, Index, IndexError};

use axum::body::{Body, HttpBody as _};
use futures_util::StreamExt as _;
use tokio::io::AsyncWriteExt as _;

use crate::error::{ApiError, LibraryError};
use crate::settings::Limits;
use crate::tenancy::{is_visible, owned_book_key, rekey, shared_book_key, Owner};

/// The book index a server answers from.
pub(crate) struct Library {
    index: RwLock<Index>,
    /// Where uploads are written as they arrive ([`Spool`]): `uploads/` in the index
    /// directory.
    uploads: PathBuf,
    /// Books opened for reading, newest first: (key, fingerprint, book).
    opened: Mutex<Vec<(String, String, Arc<Book>)>>,
    /// Uploads being read and cut at once ([`Limits::max_concurrent_ingests`]).
    ingests: Arc<tokio::sync::Semaphore>,
    /// Upload writes running at once ([`SPOOL_WRITES`]).
    spool_writes: tokio::sync::Semaphore,
}

/// One upload's reading and cutting: stopped at its deadline or when its client leaves (the
/// request future that holds [`Ingest::new`]'s guard is dropped).
pub(crate) struct Ingest {
    deadline: Instant,
    timeout_ms: u64,
    /// Set when the request is dropped (the client left).
    gone: Arc<AtomicBool>,
}

impl Ingest {
    /// A job stopped after `timeout_ms`, or when the returned guard is dropped.
    pub(crate) fn new(timeout_ms: u64) -> (Ingest, impl Drop) {
        let gone = Arc::new(AtomicBool::new(false));
        let guard = SetOnDrop(Arc::clone(&gone));
        let job = Ingest {
            deadline: Instant::now() + Duration::from_millis(timeout_ms),
            timeout_ms,
            gone,
        };
        (job, guard)
    }

    fn check(&self, _: Progress<'_>) -> ControlFlow<()> {
        if self.gone.load(Ordering::Relaxed) || Instant::now() >= self.deadline {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// The error for a job its check stopped before `what`.
    fn stopped(&self, what: &str) -> LibraryError {
        if self.gone.load(Ordering::Relaxed) {
            return LibraryError::ClientLeft;
        }
        LibraryError::TooSlow {
            timeout_ms: self.timeout_ms,
            before: what.to_owned(),
        }
    }
}

/// Sets its flag when dropped: an upload whose request future is dropped stops its job.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The folder of the index directory that holds uploads being received.
const UPLOADS_DIR: &str = "uploads";

/// The end of the name of an upload's file in [`UPLOADS_DIR`].
const SPOOL_SUFFIX: &str = ".part";

/// Upload writes ([`Library::spool`]) running at once, each on a blocking thread.
const SPOOL_WRITES: usize = 4;

/// An upload's body in a file of its own ([`Library::spool`]), removed when this is dropped.
/// The file is locked (`flock`, exclusive) while this lives, so that [`Library::open`] can
/// tell the files of uploads being received (by another server sharing the index) from those
/// a stopped server left.
pub(crate) struct Spool {
    path: PathBuf,
    bytes: usize,
    /// The file, open and locked (`None` until it is created).
    _lock: Option<std::fs::File>,
}

impl Spool {
    /// The size of the body in bytes.
    pub(crate) fn len(&self) -> usize {
        self.bytes
    }

    /// The body, read into memory (blocks: call it off the async threads).
    pub(crate) fn read(&self) -> Result<Vec<u8>, LibraryError> {
        std::fs::read(&self.path).map_err(|e| LibraryError::Spool {
            path: self.path.clone(),
            reason: e.to_string(),
        })
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// How many opened books [`Library::open_book`] keeps.
const OPENED_BOOKS: usize = 4;

impl Library {
    /// Opens (or creates) the index in `dir`.
    pub(crate) fn open(dir: &FsPath, limits: &Limits) -> Result<Library, IndexError> {
        let index = Index::open_or_create(dir)?;
        let uploads = dir.join(UPLOADS_DIR);
        std::fs::create_dir_all(&uploads).map_err(|e| IndexError::Open {
            path: uploads.clone(),
            reason: e.to_string(),
        })?;
        remove_left_uploads(&uploads);
        Ok(Library {
            index: RwLock::new(index),
            uploads,
            opened: Mutex::new(Vec::new()),
            spool_writes: tokio::sync::Semaphore::new(SPOOL_WRITES),
            ingests: Arc::new(tokio::sync::Semaphore::new(
                limits.max_concurrent_ingests.max(1),
            )),
        })
    }

    /// A place in the pool of uploads being read ([`Limits::max_concurrent_ingests`]); it
    /// goes with the job, so a job whose client left still counts until it stops.
    pub(crate) async fn ingest_permit(
        &self,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, LibraryError> {
        Ok(Arc::clone(&self.ingests).acquire_owned().await?)
    }

    /// Writes an upload's body to a file of its own in `uploads/` as it arrives, so that an
    /// upload waiting for its place in the pool holds no more than the chunk being written;
    /// refused past `max_bytes`. The file is removed when the [`Spool`] is dropped (the
    /// book was read, or the client left, or the body was refused).
    ///
    /// The writes (`tokio::fs`, each on a blocking thread) run at most [`SPOOL_WRITES`] at
    /// once for the whole server: unbounded, 24 uploads at once grew the process to 74
    /// threads and 4.3 GB of address space (each thread's stack and allocator heap), past
    /// `test-hostile.sh`'s cap of 4 GiB.
    /// `on_error` says what a failed body read means (a body too slow, or too large).
    pub(crate) async fn spool(
        &self,
        body: Body,
        max_bytes: usize,
        on_error: impl Fn(axum::Error) -> ApiError,
    ) -> Result<Spool, ApiError> {
        let too_large = || ApiError::BodyTooLarge { max_bytes };
        let declared = body.size_hint().lower();
        if usize::try_from(declared).map_or(true, |n| n > max_bytes) {
            return Err(too_large());
        }
        let path = self.uploads.join(format!(
            "{}{SPOOL_SUFFIX}",
            crate::ids::random_id("upload-")
        ));
        let mut spool = Spool {
            path: path.clone(),
            bytes: 0,
            _lock: None,
        };
        let file_err = |e: std::io::Error| write_error(&e, &path);
        let created = std::fs::File::create(&path).and_then(|f| {
            f.try_lock().map_err(std::io::Error::from)?;
            Ok(f)
        });
        let lock = created.map_err(file_err)?;
        let mut file = tokio::fs::File::from_std(lock.try_clone().map_err(file_err)?);
        spool._lock = Some(lock);
        let mut data = body.into_data_stream();
        while let Some(chunk) = data.next().await {
            let chunk = chunk.map_err(&on_error)?;
            spool.bytes += chunk.len();
            if spool.bytes > max_bytes {
                return Err(too_large());
            }
            // The write and its flush under the permit: the blocking operation is over when
            // the permit goes back.
            let _permit = self
                .spool_writes
                .acquire()
                .await
                .map_err(|e| ApiError::Internal(format!("upload writes: {e}")))?;
            file.write_all(&chunk).await.map_err(file_err)?;
            file.flush().await.map_err(file_err)?;
        }
        Ok(spool)
    }

    fn read(&self) -> RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Book `key` as `owner` may see it: a book of another key is answered as if absent.
    /// `param` is the request field that named the book, for the `book_not_found` error
    /// (`None`: the path).
    fn info(
        &self,
        index: &Index,
        owner: &Owner,
        key: &str,
        param: Option<&'static str>,
    ) -> Result<BookInfo, LibraryError> {
        let find = || -> Result<Option<BookInfo>, LibraryError> {
            Ok(index.books()?.into_iter().find(|b| b.key == key))
        };
        let found = match find()? {
            Some(info) => Some(info),
            None => {
                // Another process may have added it since: look again.
                index.reload()?;
                find()?
            }
        };
        found
            .filter(|info| is_visible(owner, info))
            .ok_or_else(|| LibraryError::BookNotFound {
                key: key.to_owned(),
                param,
            })
    }

    /// The passages of book `key` that best match `query`, as sources.
    pub(crate) fn retrieve(
        &self,
        owner: &Owner,
        key: &str,
        query: &str,
        k: usize,
        param: Option<&'static str>,
    ) -> Result<Vec<Source>, LibraryError> {
        let index = self.read();
        self.info(&index, owner, key, param)?;
        Ok(index
            .search_book(key, query, k)?
            .iter()
            .map(|h| h.passage.to_source())
            .collect())
    }

    /// The books `owner` may see: the shared ones and its own.
    pub(crate) fn books(&self, owner: &Owner) -> Result<Vec<BookInfo>, LibraryError> {
        let index = self.read();
        index.reload()?;
        let mut books = index.books()?;
        books.retain(|b| is_visible(owner, b));
        Ok(books)
    }

    /// Reads an EPUB and adds it as `owner`'s, unless a shared book or one of `owner`'s holds
    /// it already as it is. Returns the book, whether it was added, and the reader's
    /// warnings. It never replaces a book of another key, nor a shared one: `owner`'s copy
    /// has a key of its own (see [`owned_book_key`]).
    pub(crate) fn add(
        &self,
        owner: &Owner,
        bytes: &[u8],
        job: &Ingest,
    ) -> Result<(BookInfo, bool, Vec<String>), LibraryError> {
        let book = Book::open_checked(bytes, &citeflow_epub::Limits::default(), &mut |p| {
            job.check(p)
        })
        .map_err(|e| match e {
            OpenError::Stopped { path } => job.stopped(&path),
            e => LibraryError::Unreadable(e),
        })?;
        let warnings: Vec<String> = book.warnings().iter().map(ToString::to_string).collect();
        let meta = book.metadata();
        let (id, title) = (
            meta.identifier.as_deref().unwrap_or(""),
            meta.title.as_deref().unwrap_or(""),
        );
        let settings = ChunkSettings::default();
        let print = fingerprint(bytes, &settings);
        let shared = shared_book_key(id, title);
        let key = if self.read().fingerprint(&shared)?.as_deref() == Some(print.as_str()) {
            // A shared book as it is (a start-up book): every key reads it already.
            shared
        } else {
            owned_book_key(owner, id, title)
        };
        let held = |index: &Index| -> Result<bool, LibraryError> {
            Ok(index.fingerprint(&key)?.as_deref() == Some(print.as_str()))
        };
        let passages = if held(&self.read())? {
            None
        } else {
            let mut passages =
                BookPassage::from_book_checked(&book, &settings, &mut |p| job.check(p))
                    .ok_or_else(|| job.stopped("cutting it into passages"))?;
            rekey(&mut passages, &key);
            if passages.is_empty() {
                return Err(LibraryError::NoText);
            }
            Some(passages)
        };
        // The writes, under the write lock: the book's passages and its kept file. Another
        // upload of the same book may have added it while this one was cut (issue 38): it is
        // looked up again here, so one upload adds it and the others find it.
        let mut index = self.index.write().unwrap_or_else(|e| e.into_inner());
        let added = match passages {
            Some(passages) if !held(&index)? => {
                index.add_book(&passages, &print)?;
                true
            }
            _ => false,
        };
        if added || !index.has_epub(&key) {
            if let Err(e) = index.keep_epub(&key, bytes) {
                // No book without its file: the passages just added go again (the file's
                // temporary copy is gone, so a full disk has room for that).
                if added {
                    if let Err(undo) = index.remove_book(&key) {
                        tracing::error!(book = %key, error = %undo,
                            "a book whose file could not be kept could not be removed again");
                    }
                }
                return Err(e.into());
            }
        }
        let info = index
            .books()?
            .into_iter()
            .find(|b| b.key == key)
            .ok_or(LibraryError::MissingAfterAdd { key })?;
        Ok((info, added, warnings))
    }

    /// Book `key` opened from the file the index keeps (re-used while its fingerprint holds).
    pub(crate) fn open_book(
        &self,
        owner: &Owner,
        key: &str,
    ) -> Result<(Arc<Book>, BookInfo), LibraryError> {
        let index = self.read();
        let info = self.info(&index, owner, key, None)?;
        {
            let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = opened
                .iter()
                .position(|(k, f, _)| k == key && *f == info.fingerprint)
            {
                let entry = opened.remove(i);
                let book = Arc::clone(&entry.2);
                opened.insert(0, entry);
                return Ok((book, info));
            }
        }
        // Not open yet: read it without holding the cache, so other books are served meanwhile.
        let bytes = index.epub(key)?.ok_or_else(|| LibraryError::FileMissing {
            key: key.to_owned(),
        })?;
        drop(index);
        let book = Book::open(&bytes, &citeflow_epub::Limits::default()).map_err(|source| {
            LibraryError::KeptFile {
                key: key.to_owned(),
                source,
            }
        })?;
        let book = Arc::new(book);
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        opened.retain(|(k, _, _)| k != key);
        opened.insert(
            0,
            (key.to_owned(), info.fingerprint.clone(), Arc::clone(&book)),
        );
        opened.truncate(OPENED_BOOKS);
        Ok((book, info))
    }
}

/// A failed write of an upload's file: `store_unavailable` (logged) when the disk is full or
/// the quota spent, as for the index; else an internal error.
fn write_error(e: &std::io::Error, path: &FsPath) -> ApiError {
    if matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    ) {
        tracing::error!(file = %path.display(), error = %e, "upload file: the disk is full");
        ApiError::StoreUnavailable
    } else {
        ApiError::Internal(format!("{}: {e}", path.display()))
    }
}

/// Removes the upload files ([`Spool`]) in `uploads` that no server is writing: those whose
/// lock can be taken, left by a server that stopped (or crashed) while it received them.
/// Another server sharing the index holds the lock of the ones it is receiving.
fn remove_left_uploads(uploads: &FsPath) {
    let mut removed = 0_usize;
    for entry in std::fs::read_dir(uploads).into_iter().flatten().flatten() {
        if !entry.file_name().to_string_lossy().ends_with(SPOOL_SUFFIX) {
            continue;
        }
        let path = entry.path();
        let unused = std::fs::File::open(&path).is_ok_and(|f| f.try_lock().is_ok());
        if unused && std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::info!(
            removed,
            dir = %uploads.display(),
            "removed the files of uploads a stopped server was receiving"
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::error::{ApiError, LibraryError};

    #[test]
    fn library_errors_answer_with_the_api_codes_and_messages() {
        let answer = |e: LibraryError| {
            let e = ApiError::from(e);
            (e.status().as_u16(), e.code(), e.to_string())
        };
        assert_eq!(
            answer(LibraryError::TooSlow {
                timeout_ms: 5,
                before: "cutting it into passages".into()
            }),
            (
                413,
                "invalid_epub",
                "the EPUB exceeds the limit ingest_timeout_ms: the book took longer than 5 ms to \
                 read and cut (stopped before cutting it into passages); --ingest-timeout-ms \
                 sets the limit"
                    .into()
            )
        );
        assert_eq!(
            answer(LibraryError::NoText),
            (
                400,
                "invalid_epub",
                "not a readable EPUB: the book has no text to index".into()
            )
        );
        assert_eq!(
            answer(LibraryError::ClientLeft),
            (
                400,
                "invalid_request",
                "the client left during the upload".into()
            )
        );
        assert_eq!(
            answer(LibraryError::BookNotFound {
                key: "k".into(),
                param: Some("citeflow.book")
            }),
            (
                404,
                "book_not_found",
                "book \"k\" not found: GET /v1/books lists the books of this server".into()
            )
        );
        assert_eq!(
            answer(LibraryError::MissingAfterAdd { key: "k".into() }),
            (500, "internal_error", "internal error".into())
        );
    }
}
