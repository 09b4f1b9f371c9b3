//! [`Progress`]: where a long job on a book is, for a caller that shows it or stops it.
//!
//! [`Book::open_checked`](crate::Book::open_checked) and
//! [`Book::passages_checked`](crate::Book::passages_checked) call the caller's check before each
//! spine document they read or cut; a check that returns [`ControlFlow::Break`] stops the job
//! there (a deadline passed, the client left). The reader stays I/O-free: it never looks at
//! a clock itself.
//!
//! ```no_run
//! use std::ops::ControlFlow;
//! use std::time::{Duration, Instant};
//!
//! let bytes = std::fs::read("book.epub")?;
//! let deadline = Instant::now() + Duration::from_secs(60);
//! let mut check = |p: citeflow_epub::Progress<'_>| {
//!     eprintln!("{:?} {}/{} {}", p.stage, p.done, p.total, p.path);
//!     if Instant::now() < deadline { ControlFlow::Continue(()) } else { ControlFlow::Break(()) }
//! };
//! let book = citeflow_epub::Book::open_checked(&bytes, &Default::default(), &mut check)?;
//! let passages = book.passages_checked(&Default::default(), &mut check);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use std::ops::ControlFlow;

/// The stage of a job on a book.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage {
    /// Reading and parsing the spine documents ([`Book::open_checked`](crate::Book::open_checked)).
    Reading,
    /// Cutting them into passages ([`Book::passages_checked`](crate::Book::passages_checked)).
    Cutting,
}

/// Where a job is: about to work on spine document `done` (0-based) of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress<'a> {
    /// What the job does.
    pub stage: Stage,
    /// Spine documents done so far.
    pub done: usize,
    /// Spine documents in all.
    pub total: usize,
    /// The path of the document about to be worked on.
    pub path: &'a str,
}

/// The caller's check: called before each spine document.
pub type Check<'c> = dyn FnMut(Progress<'_>) -> ControlFlow<()> + 'c;
