//! A caller's check sees every spine document in order and can stop a job at any of them.

use citeflow_epub::{Book, ChunkSettings, ControlFlow, Limits, OpenError, Stage};

use crate::support::read;

#[test]
fn a_check_sees_each_spine_document_and_can_stop_reading_and_cutting() {
    let bytes = read("epub/alice.epub");
    let mut seen = Vec::new();
    let book = Book::open_checked(&bytes, &Limits::default(), &mut |p| {
        seen.push((p.stage, p.done, p.total, p.path.to_owned()));
        ControlFlow::Continue(())
    })
    .expect("alice opens");
    let paths: Vec<String> = book.spine().iter().map(|s| s.path.clone()).collect();
    assert!(paths.len() > 3, "{paths:?}");
    let expected: Vec<_> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| (Stage::Reading, i, paths.len(), p.clone()))
        .collect();
    assert_eq!(seen, expected);

    // Stopped before the third document: the error names it.
    let mut calls = 0;
    let e = Book::open_checked(&bytes, &Limits::default(), &mut |_| {
        calls += 1;
        if calls == 3 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap_err();
    assert_eq!(
        e,
        OpenError::Stopped {
            path: paths[2].clone()
        }
    );
    assert_eq!(
        e.to_string(),
        format!("stopped by the caller before reading {}", paths[2])
    );
    assert_eq!(e.limit(), None);

    // Cutting: the same passages as `passages` when never stopped; None when stopped.
    let settings = ChunkSettings::default();
    let mut cut = Vec::new();
    let all = book
        .passages_checked(&settings, &mut |p| {
            cut.push((p.stage, p.done));
            ControlFlow::Continue(())
        })
        .expect("not stopped");
    assert_eq!(all, book.passages(&settings));
    assert!(!all.is_empty());
    assert_eq!(cut.len(), paths.len());
    assert!(cut.iter().all(|(s, _)| *s == Stage::Cutting));
    let stopped = book.passages_checked(&settings, &mut |p| {
        if p.done == 1 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    assert_eq!(stopped, None);
}
