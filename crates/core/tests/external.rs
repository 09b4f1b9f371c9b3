//! Numbers handed out by a shared store: the rewriter asks, the caller answers.

use citeflow_core::{
    Event, NumberSource, Numbering, RewriteError, Rewriter, Settings, Source, Sources,
};

fn sources() -> Sources {
    Sources::from_vec(vec![Source::new("source_1"), Source::new("source_2")]).unwrap()
}

#[test]
fn external_numbers_are_asked_for_before_the_text_that_shows_them() {
    let settings = Settings::default().with_number_source(NumberSource::External);
    let mut rw = Rewriter::new(settings, sources(), Numbering::new());
    rw.write("a [[source_2]] b [[source_1]] c [[source_2]]")
        .unwrap();
    let mut events = Vec::new();
    // A store shared with other servers: numbers 1..=6 already went elsewhere.
    let mut next = 7;
    loop {
        while let Some(e) = rw.poll_event() {
            events.push(e);
        }
        if rw.is_ended() {
            break;
        }
        match events.iter().rev().find_map(|e| match e {
            Event::NumberNeeded { key, .. } if rw.is_awaiting_number() => Some(key.clone()),
            _ => None,
        }) {
            Some(key) => {
                rw.provide_number(&key, next).unwrap();
                next += 1;
            }
            None => rw.end().unwrap(),
        }
    }
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "a [7] b [8] c [7]");
    let kinds: Vec<_> = events.iter().map(Event::kind).collect();
    assert_eq!(
        kinds,
        [
            "text",
            "number_needed",
            "source",
            "citation",
            "text",
            "number_needed",
            "source",
            "citation",
            "text",
            "citation",
            "text",
            "done"
        ]
    );
}

#[test]
fn input_written_while_waiting_is_kept() {
    let settings = Settings::default().with_number_source(NumberSource::External);
    let mut rw = Rewriter::new(settings, sources(), Numbering::new());
    rw.write("[[source_1]] x").unwrap();
    rw.write(" y [[source_1]]").unwrap();
    rw.end().unwrap();
    assert!(!rw.is_ended());
    let e = rw.provide_number("id:source_2", 3).unwrap_err();
    assert!(matches!(e, RewriteError::NotAwaiting { .. }));
    rw.provide_number("id:source_1", 3).unwrap();
    assert!(rw.is_ended());
    let text: String = std::iter::from_fn(|| rw.poll_event())
        .filter_map(|e| match e {
            Event::Text { text } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(text, "[3] x y [3]");
}

#[test]
fn conflicting_store_numbers_are_fatal() {
    let mut table = Numbering::new();
    table
        .insert(1, "id:source_2".into(), "source_2".into())
        .unwrap();
    let settings = Settings::default().with_number_source(NumberSource::External);
    let mut rw = Rewriter::new(settings, sources(), table);
    rw.write("[[source_1]]").unwrap();
    let e = rw.provide_number("id:source_1", 1).unwrap_err();
    assert!(matches!(e, RewriteError::Numbering(_)), "{e}");
    assert!(matches!(rw.write("x"), Err(RewriteError::Failed(_))));
}
