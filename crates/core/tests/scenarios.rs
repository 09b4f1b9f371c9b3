//! The seed scenarios, each run under every chunking.

use citeflow_core::{
    Event, InvalidUtf8, Numbering, RankMode, RewriteError, Rewriter, Settings, Source, Sources,
    Style, UnknownPolicy, UnresolvedReason,
};

use crate::support::{assert_chunk_invariant, naive::oracle, run_chunks};

fn sources() -> Sources {
    Sources::from_vec(vec![
        Source::new("source_3")
            .with_title("France")
            .with_url("https://en.wikipedia.org/wiki/France"),
        Source::new("source_7")
            .with_title("Paris — Wikipedia")
            .with_url("https://en.wikipedia.org/wiki/Paris"),
        Source::new("source_12").with_title("Seine"),
    ])
    .unwrap()
}

fn numbers(events: &[Event]) -> Vec<(u32, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Citation {
                number, source_id, ..
            } => Some((*number, source_id.clone())),
            _ => None,
        })
        .collect()
}

fn done(events: &[Event]) -> (&[citeflow_core::ListedSource], &citeflow_core::Report) {
    match events.last() {
        Some(Event::Done {
            sources, report, ..
        }) => (sources, report),
        other => panic!("last event is not done: {other:?}"),
    }
}

#[test]
fn repeats_reuse_numbers_in_first_appearance_order() {
    let input = "A [[source_3]] B [[source_7]] C [[source_3]].";
    let run = assert_chunk_invariant(input, &Settings::default(), &sources());
    assert_eq!(run.text, "A [1] B [2] C [1].");
    assert_eq!(
        numbers(&run.events),
        [
            (1, "source_3".into()),
            (2, "source_7".into()),
            (1, "source_3".into())
        ]
    );
    let (list, report) = done(&run.events);
    let ids: Vec<_> = list
        .iter()
        .map(|l| (l.number, l.source.id.as_str()))
        .collect();
    assert_eq!(ids, [(1, "source_3"), (2, "source_7")]);
    assert!(report.verified);
    assert_eq!(report.numbers_in_body, [1, 2]);
    assert_eq!(oracle(input, &Settings::default(), &sources()), run.text);
}

#[test]
fn marker_split_in_id_is_held_back_then_shown_once() {
    let mut rw = Rewriter::new(Settings::default(), sources(), Numbering::new());
    rw.write("Paris is the capital [[sou").unwrap();
    let mut seen = Vec::new();
    while let Some(e) = rw.poll_event() {
        seen.push(e);
    }
    assert_eq!(
        seen,
        [Event::Text {
            text: "Paris is the capital ".into()
        }]
    );
    assert_eq!(rw.held_bytes(), "[[sou".len());
    rw.write("rce_7]] and").unwrap();
    let kinds: Vec<_> = std::iter::from_fn(|| rw.poll_event()).collect();
    assert!(
        matches!(&kinds[0], Event::Source { number: 1, source, is_new: true, .. } if source.id == "source_7")
    );
    assert!(matches!(
        &kinds[1],
        Event::Citation {
            number: 1,
            byte_offset: 21,
            ..
        }
    ));
    assert_eq!(
        kinds[2],
        Event::Text {
            text: "[1] and".into()
        }
    );
}

#[test]
fn source_event_comes_before_the_text_that_shows_the_number() {
    let run = assert_chunk_invariant("x [[source_12]] y", &Settings::default(), &sources());
    let kinds: Vec<_> = run.events.iter().map(Event::kind).collect();
    assert_eq!(kinds, ["text", "source", "citation", "text", "done"]);
}

#[test]
fn unknown_ids_never_use_a_number() {
    let input = "a [[source_99]] b [[source_7]] c <cite:source_14> d [[source_3]]";
    let run = assert_chunk_invariant(input, &Settings::default(), &sources());
    assert_eq!(run.text, "a [?] b [1] c [?] d [2]");
    let unresolved: Vec<_> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Unresolved {
                reference, reason, ..
            } => Some((reference.as_str(), *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(
        unresolved,
        [
            ("source_99", UnresolvedReason::UnknownId),
            ("source_14", UnresolvedReason::UnknownId)
        ]
    );
    assert_eq!(done(&run.events).1.unresolved, 2);
    assert_eq!(run.numbering.len(), 2);
}

#[test]
fn unknown_policy_drop_and_keep() {
    let input = "a [[source_99]] b [[source_7, source_98]].";
    let drop = assert_chunk_invariant(
        input,
        &Settings::default().with_unknown(UnknownPolicy::Drop),
        &sources(),
    );
    assert_eq!(drop.text, "a  b [1].");
    let keep = assert_chunk_invariant(
        input,
        &Settings::default().with_unknown(UnknownPolicy::Keep),
        &sources(),
    );
    assert_eq!(keep.text, "a [[source_99]] b [1][source_98].");
}

#[test]
fn several_ids_in_one_marker() {
    let input = "x [[source_3, source_7]] y [source_12][source_3] z [[source_7,source_7]]";
    let run = assert_chunk_invariant(input, &Settings::default(), &sources());
    assert_eq!(run.text, "x [1][2] y [3][1] z [2]");
    assert_eq!(oracle(input, &Settings::default(), &sources()), run.text);
}

#[test]
fn every_marker_syntax_resolves() {
    let input =
        "a <cite:source_3> b <cite id=\"source_7\"/> c <cite id='source_12'></cite> d [source_3]";
    let run = assert_chunk_invariant(input, &Settings::default(), &sources());
    assert_eq!(run.text, "a [1] b [2] c [3] d [1]");
}

#[test]
fn text_without_markers_is_byte_identical() {
    let input = "Plain **markdown** with [a link](http://x), [ref][1], `code`, 【1904年】, [cite source_2], [FB_SHOP] and 漢字 😀.\n[1]: http://x\n";
    let run = assert_chunk_invariant(input, &Settings::default(), &sources());
    assert_eq!(run.text, input);
    let ranked = assert_chunk_invariant(
        input,
        &Settings::default().with_rank(RankMode::Renumber),
        &sources(),
    );
    assert_eq!(ranked.text, input);
}

#[test]
fn markers_in_code_are_left_alone() {
    let input =
        "see `[[source_3]]` and\n```md\n[[source_7]]\n```\nthen [[source_12]] ~~~ [[source_3]]";
    let run = assert_chunk_invariant(input, &Settings::default(), &sources());
    assert_eq!(
        run.text,
        "see `[[source_3]]` and\n```md\n[[source_7]]\n```\nthen [1] ~~~ [2]"
    );
}

#[test]
fn rank_mode_renumbers_by_first_appearance() {
    let input = "Population **[3][2]**, again [2] and 【3】 or ［1］, [2, 9].";
    let settings = Settings::default().with_rank(RankMode::Renumber);
    let run = assert_chunk_invariant(input, &settings, &sources());
    assert_eq!(
        run.text,
        "Population **[1][2]**, again [2] and [1] or [3], [2][?]."
    );
    assert_eq!(oracle(input, &settings, &sources()), run.text);
    let keep = assert_chunk_invariant(
        input,
        &Settings::default().with_rank(RankMode::Keep),
        &sources(),
    );
    assert_eq!(
        keep.text,
        "Population **[3][2]**, again [2] and [3] or [1], [2][?]."
    );
}

#[test]
fn full_width_style_and_cjk_text() {
    let input = "漱石は1867年に生まれた【source_3】。代表作は『こゝろ』[[source_7]]。";
    let settings = Settings::default().with_style(Style::FullWidth);
    let run = assert_chunk_invariant(input, &settings, &sources());
    assert_eq!(
        run.text,
        "漱石は1867年に生まれた【1】。代表作は『こゝろ』【2】。"
    );
}

#[test]
fn same_document_under_two_ids_shares_a_number() {
    let s = Sources::from_vec(vec![
        Source::new("source_1").with_url("https://e.x/doc"),
        Source::new("source_2").with_url("https://E.x/doc/"),
    ])
    .unwrap();
    let input = "a [[source_1]] b [[source_2]]";
    assert_eq!(
        assert_chunk_invariant(input, &Settings::default(), &s).text,
        "a [1] b [1]"
    );
    assert_eq!(
        assert_chunk_invariant(input, &Settings::default().with_dedupe(false), &s).text,
        "a [1] b [2]"
    );
}

#[test]
fn session_numbering_continues_across_answers_and_rounds() {
    let mut s = Sources::new();
    s.append_round(
        Some("capital of France".into()),
        vec![Source::new("source_3"), Source::new("source_7")],
    )
    .unwrap();
    let first = run_chunks(
        &[b"[[source_7]] [[source_3]]"],
        &Settings::default(),
        &s,
        Numbering::new(),
    );
    assert_eq!(first.text, "[1] [2]");
    s.append_round(
        Some("population".into()),
        vec![Source::new("source_12"), Source::new("source_7")],
    )
    .unwrap();
    let second = run_chunks(
        &[b"[[source_12]] [[source_7]]"],
        &Settings::default(),
        &s,
        first.numbering.clone(),
    );
    assert_eq!(second.text, "[3] [1]");
    assert!(second.numbering.extends(&first.numbering));
    let is_new: Vec<_> = second
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Source {
                number,
                is_new,
                round,
                ..
            } => Some((*number, *is_new, *round)),
            _ => None,
        })
        .collect();
    assert_eq!(is_new, [(3, true, Some(2)), (1, false, Some(1))]);
}

#[test]
fn hold_back_cap_releases_long_tails_verbatim() {
    let input = format!("a [[{}", "x".repeat(100));
    let run = assert_chunk_invariant(&input, &Settings::default(), &sources());
    assert_eq!(run.text, input);
    assert_eq!(done(&run.events).1.released_holdbacks, 1);
    let mut rw = Rewriter::new(Settings::default(), sources(), Numbering::new());
    rw.write(&input).unwrap();
    assert!(rw.held_bytes() <= 64, "held {}", rw.held_bytes());
}

#[test]
fn retransmitted_chunks_change_nothing() {
    let chunks: [&[u8]; 4] = [b"a [[sour", b"ce_3]] b ", b"[[source_7]]", b" c"];
    let mut rw = Rewriter::new(Settings::default(), sources(), Numbering::new());
    let mut text = String::new();
    let order = [0, 1, 1, 0, 2, 1, 3, 3];
    for &i in &order {
        rw.write_seq(i as u64, chunks[i]).unwrap();
        while let Some(e) = rw.poll_event() {
            if let Event::Text { text: t } = e {
                text.push_str(&t);
            }
        }
    }
    let gap = rw.write_seq(9, b"zzz").unwrap_err();
    assert_eq!(gap.to_string(), "chunk gap: expected sequence 4, got 9");
    rw.end().unwrap();
    while let Some(e) = rw.poll_event() {
        if let Event::Text { text: t } = e {
            text.push_str(&t);
        }
    }
    assert_eq!(text, "a [1] b [2] c");
}

#[test]
fn byte_offsets_make_overlapping_chunks_idempotent() {
    let input = b"one [[source_3]] two [[source_7]] three";
    let mut rw = Rewriter::new(Settings::default(), sources(), Numbering::new());
    let mut text = String::new();
    for (start, end) in [(0, 10), (0, 10), (5, 20), (12, 25), (20, 39), (39, 39)] {
        rw.write_at(start as u64, &input[start..end]).unwrap();
    }
    assert!(rw.write_at(50, b"x").is_err());
    rw.end().unwrap();
    while let Some(e) = rw.poll_event() {
        if let Event::Text { text: t } = e {
            text.push_str(&t);
        }
    }
    assert_eq!(text, "one [1] two [2] three");
}

#[test]
fn invalid_utf8_is_replaced_or_an_error() {
    let input: &[u8] = b"ok \xFF [[source_3]] \xE3\x80";
    let run = run_chunks(
        &[&input[..5], &input[5..]],
        &Settings::default(),
        &sources(),
        Numbering::new(),
    );
    assert_eq!(run.text, "ok \u{FFFD} [1] \u{FFFD}");
    let mut rw = Rewriter::new(
        Settings::default().with_invalid_utf8(InvalidUtf8::Error),
        sources(),
        Numbering::new(),
    );
    rw.write(b"ok [[source_3]]").unwrap();
    let e = rw.write(b" \xFF more").unwrap_err();
    assert_eq!(e, RewriteError::InvalidUtf8 { byte_offset: 16 });
    let texts: String = std::iter::from_fn(|| rw.poll_event())
        .filter_map(|e| match e {
            Event::Text { text } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(
        texts, "ok [1] ",
        "what was accepted before the error is kept"
    );
    assert!(matches!(rw.write(b"x"), Err(RewriteError::Failed(_))));
}

#[test]
fn styles_render_numbers() {
    let s = Sources::from_vec(vec![Source::new("source_1").with_url("https://e.x")]).unwrap();
    for (style, want) in [
        (Style::MarkdownLink, "a [[1]](https://e.x) [?]"),
        (Style::Footnote, "a [^1] [^?]"),
        (Style::Html, "a <sup class=\"citeflow-cite\"><a href=\"https://e.x\">1</a></sup> <sup class=\"citeflow-unresolved\">?</sup>"),
        (Style::Template("({n})".into()), "a (1) (?)"),
    ] {
        let run = assert_chunk_invariant("a [[source_1]] [[source_2]]", &Settings::default().with_style(style), &s);
        assert_eq!(run.text, want);
    }
}

fn source_events(events: &[Event]) -> Vec<(u32, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Source { number, is_new, .. } => Some((*number, *is_new)),
            _ => None,
        })
        .collect()
}

/// Asserts that every chunking of `input`, continuing `numbering`, gives the same run.
fn assert_chunk_invariant_from(
    input: &str,
    settings: &Settings,
    sources: &Sources,
    numbering: &Numbering,
) -> crate::support::Run {
    let whole = run_chunks(&[input.as_bytes()], settings, sources, numbering.clone());
    for ch in crate::support::chunkings(input, 0x5EED) {
        let got = run_chunks(
            &ch.split(input.as_bytes()),
            settings,
            sources,
            numbering.clone(),
        );
        assert_eq!(got, whole, "chunking {ch:?} of {input:?} differs");
    }
    whole
}

// Issue 18 (local tracker: `issues show 18`), bug 1.
#[test]
fn regression_18_rank_keep_reports_new_numbers_and_keeps_them_in_the_session() {
    let settings = Settings::default().with_rank(RankMode::Keep);
    let first = assert_chunk_invariant("First [1], again [1], then 【3】.", &settings, &sources());
    assert_eq!(first.text, "First [1], again [1], then [3].");
    assert_eq!(source_events(&first.events), [(1, true), (3, true)]);
    let (list, report) = done(&first.events);
    assert!(report.verified);
    assert_eq!(report.new_numbers, 2);
    assert_eq!(list.len(), 2);
    let kept: Vec<_> = first
        .numbering
        .entries()
        .iter()
        .map(|e| (e.number, e.key.as_str(), e.source_id.as_str()))
        .collect();
    assert_eq!(
        kept,
        [(1, "rank:1", "source_3"), (3, "rank:3", "source_12")]
    );
    // The next answer of the session: 1 and 3 were shown before, 2 is new.
    let second =
        assert_chunk_invariant_from("[3] and [2][1].", &settings, &sources(), &first.numbering);
    assert_eq!(second.text, "[3] and [2][1].");
    assert_eq!(
        source_events(&second.events),
        [(3, false), (2, true), (1, false)]
    );
    assert!(second.numbering.extends(&first.numbering));
    assert_eq!(done(&second.events).1.new_numbers, 1);
    assert!(done(&second.events).1.verified);
}

// Issue 18 (local tracker: `issues show 18`), bug 2.
#[test]
fn regression_18_doubled_full_width_brackets_are_one_marker() {
    let settings = Settings::default().with_rank(RankMode::Renumber);
    let input = "東京【【1】】、パリ［［２］］、セーヌ【【source_12】】。【【注意】】";
    let run = assert_chunk_invariant(input, &settings, &sources());
    assert_eq!(run.text, "東京[1]、パリ[2]、セーヌ[3]。【【注意】】");
    assert_eq!(oracle(input, &settings, &sources()), run.text);
    let full = assert_chunk_invariant(input, &settings.with_style(Style::FullWidth), &sources());
    assert_eq!(full.text, "東京【1】、パリ【2】、セーヌ【3】。【【注意】】");
}

fn provider_sources() -> Sources {
    Sources::from_vec(vec![
        Source::new("turn0search1").with_url("https://e.x/a"),
        Source::new("turn0news3").with_url("https://e.x/b"),
        Source::new("4:0").with_title("report.pdf"),
        Source::new("source_1"),
    ])
    .unwrap()
}

// Issue 14 §7: marker syntaxes seen in the wild.
#[test]
fn openai_private_use_markers_resolve_ids() {
    let input = "Paris\u{e200}cite\u{e202}turn0search1\u{e202}turn0news3\u{e201}. Again\u{e200}cite\u{e202}turn0news3\u{e201}, unknown\u{e200}cite\u{e202}turn9search9\u{e201}, list\u{e200}navlist\u{e202}x\u{e201}.";
    let run = assert_chunk_invariant(input, &Settings::default(), &provider_sources());
    assert_eq!(
        run.text,
        "Paris[1][2]. Again[2], unknown[?], list\u{e200}navlist\u{e202}x\u{e201}."
    );
    assert_eq!(
        numbers(&run.events),
        [
            (1, "turn0search1".into()),
            (2, "turn0news3".into()),
            (2, "turn0news3".into())
        ]
    );
    let keep = assert_chunk_invariant(
        input,
        &Settings::default().with_unknown(UnknownPolicy::Keep),
        &provider_sources(),
    );
    assert!(keep
        .text
        .contains("unknown\u{e200}cite\u{e202}turn9search9\u{e201},"));
}

#[test]
fn assistants_annotations_resolve_by_index() {
    let input = "Revenue grew【4:0†source】 and fell【4:1†source】 [[source_1]]【4:0†report.pdf】.";
    let settings = Settings::default().with_rank(RankMode::Renumber);
    let run = assert_chunk_invariant(input, &settings, &provider_sources());
    assert_eq!(run.text, "Revenue grew[1] and fell[?] [2][1].");
    assert_eq!(oracle(input, &settings, &provider_sources()), run.text);
}

#[test]
fn footnote_references_are_citations_only_when_enabled() {
    let input = "Claim[^source_1] and[^turn0search1][^2].\n\n[^1]: a real footnote\n";
    let off = assert_chunk_invariant(input, &Settings::default(), &provider_sources());
    assert_eq!(off.text, input);
    let settings = Settings::default()
        .with_syntaxes(&[citeflow_core::Syntax::Footnote])
        .with_rank(RankMode::Renumber);
    let on = assert_chunk_invariant(input, &settings, &provider_sources());
    assert_eq!(on.text, "Claim[1] and[2][3].\n\n[^1]: a real footnote\n");
    assert_eq!(oracle(input, &settings, &provider_sources()), on.text);
}

// Issue 18 §3: remove mode.
#[test]
fn remove_mode_takes_markers_out_and_repairs_spaces() {
    let input = "Text [[source_3]]. A [[source_7]] b [[source_3]][[source_12]], end [[source_99]]\n[[source_7]] Line start. 東京[[source_3]]、パリ [[source_12]]";
    let settings = Settings::default().with_style(Style::Remove);
    let run = assert_chunk_invariant(input, &settings, &sources());
    assert_eq!(run.text, "Text. A b, end\nLine start. 東京、パリ");
    assert_eq!(
        numbers(&run.events)
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>(),
        [1, 2, 1, 3, 2, 1, 3]
    );
    let (list, report) = done(&run.events);
    assert_eq!(list.len(), 3);
    assert_eq!((report.citations, report.unresolved), (7, 1));
    assert!(report.verified);
    // Each citation points where its marker was: right after the word it cites.
    let offsets: Vec<u64> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Citation { byte_offset, .. } => Some(*byte_offset),
            _ => None,
        })
        .collect();
    assert_eq!(&run.text[..offsets[0] as usize], "Text");
    assert_eq!(&run.text[..offsets[1] as usize], "Text. A");
    let keep = assert_chunk_invariant(
        "a [[source_99]] b [[source_3]] [[source_98]].",
        &settings.clone().with_unknown(UnknownPolicy::Keep),
        &sources(),
    );
    assert_eq!(keep.text, "a [[source_99]] b [[source_98]].");
}

// Issue 18 §4: keep-as-written mode.
#[test]
fn as_written_mode_keeps_resolved_markers_verbatim() {
    let input = "x [[source_3]] y [source_7, source_12] z 【source_3】 w [[source_99]] v [[source_3, source_98]].";
    let settings = Settings::default().with_style(Style::AsWritten);
    let run = assert_chunk_invariant(input, &settings, &sources());
    assert_eq!(
        run.text,
        "x [[source_3]] y [source_7, source_12] z 【source_3】 w [?] v [[source_3, source_98]]."
    );
    let cites: Vec<(u32, u64)> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Citation {
                number,
                byte_offset,
                ..
            } => Some((*number, *byte_offset)),
            _ => None,
        })
        .collect();
    assert_eq!(cites, [(1, 2), (2, 17), (3, 17), (1, 41), (1, 64)]);
    let (list, report) = done(&run.events);
    assert_eq!(list.len(), 3);
    assert_eq!(report.unresolved, 2);
    let ranks = assert_chunk_invariant(
        "a [1, 2] b 【3】 c [[2]] d [9]",
        &settings.with_rank(RankMode::Renumber),
        &sources(),
    );
    assert_eq!(ranks.text, "a [1, 2] b 【3】 c [[2]] d [?]");
}

// Issue 18 §5: labels instead of positions.
#[test]
fn rank_numbers_are_labels_when_sources_have_them() {
    let labelled = Sources::from_vec(vec![
        Source::new("a").with_label(101).with_url("https://e.x/a"),
        Source::new("b").with_label(0),
        Source::new("c").with_label(20417),
    ])
    .unwrap();
    let input = "x [101] y 【0】 z [20417][101] w [1] v [2, 0].";
    let renumber = Settings::default().with_rank(RankMode::Renumber);
    let run = assert_chunk_invariant(input, &renumber, &labelled);
    assert_eq!(run.text, "x [1] y [2] z [3][1] w [?] v [?][2].");
    assert_eq!(
        numbers(&run.events),
        [
            (1, "a".into()),
            (2, "b".into()),
            (3, "c".into()),
            (1, "a".into()),
            (2, "b".into())
        ]
    );
    let keep = assert_chunk_invariant(
        "x [101] z [20417] w [7]",
        &Settings::default()
            .with_rank(RankMode::Keep)
            .with_unknown(UnknownPolicy::Keep),
        &labelled,
    );
    assert_eq!(keep.text, "x [101] z [20417] w [7]");
    assert_eq!(
        keep.numbering
            .entries()
            .iter()
            .map(|e| (e.number, e.source_id.as_str()))
            .collect::<Vec<_>>(),
        [(101, "a"), (20417, "c")]
    );
    // Without labels, positions; five digits are not a rank.
    let plain = assert_chunk_invariant("[1] [3] [20417]", &renumber, &sources());
    assert_eq!(plain.text, "[1] [2] [20417]");
}

// Issue 18 §6: retrieved but not cited.
#[test]
fn uncited_sources_are_the_rest_in_registration_order() {
    let s = Sources::from_vec(vec![
        Source::new("source_1").with_url("https://e.x/doc"),
        Source::new("source_2").with_url("https://e.x/other"),
        Source::new("source_3").with_url("https://E.x/doc/"),
        Source::new("source_4"),
    ])
    .unwrap();
    let mut rw = Rewriter::new(Settings::default(), s, Numbering::new());
    rw.write("a [[source_1]] b").unwrap();
    rw.end().unwrap();
    let ids: Vec<String> = rw.uncited_sources().into_iter().map(|s| s.id).collect();
    assert_eq!(ids, ["source_2", "source_4"]);
}
