//! Property tests: any cut of any text gives the output of the whole text, which equals the
//! naive oracle; numbers are assigned in first-appearance order and never change.

use citeflow_core::{Event, RankMode, Settings, Source, Sources, Style, Syntax, UnknownPolicy};
use proptest::prelude::*;

use crate::support::{
    naive::oracle, run, run_chunks, run_chunks_into, run_chunks_through, Chunking,
};

const PIECES: &[&str] = &[
    "[[source_1]]",
    "[[source_2]]",
    "[[source_99]]",
    "[source_3]",
    "[source_",
    "source_2",
    "source_",
    "[[",
    "]]",
    "[",
    "]",
    "<cite:",
    "<cite:source_1>",
    "<cite id=\"source_2\"/>",
    "<cite id='",
    ">",
    "/>",
    "【",
    "】",
    "［",
    "］",
    "【1】",
    "【1904年】",
    "[2]",
    "[1, 3]",
    "[2][1]",
    "2",
    "12345",
    ",",
    ", ",
    "、",
    "`",
    "```",
    "```\n",
    "~~~\n",
    "\n",
    "\n\n",
    " ",
    "   ",
    "\t",
    "(",
    "(http://x)",
    ":",
    "\\",
    "x",
    "abc ",
    "年",
    "é",
    "😀",
    "doc-a",
    "[doc-a]",
    "[^1]",
    "[text][1]",
    "[FB_SHOP]",
    "[cite source_2]",
    "０",
    "\r\n",
    "\u{e200}cite\u{e202}",
    "\u{e200}filecite\u{e202}turn0file0\u{e201}",
    "\u{e200}",
    "\u{e201}",
    "\u{e202}",
    "turn0search1",
    "source_1\u{e201}",
    "【4:0†source】",
    "【1†",
    "†",
    "4:0",
    "[^",
    "[^source_2]",
    "[^2]",
];

fn text_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|v| v.concat())
}

fn sources() -> Sources {
    Sources::from_vec(vec![
        Source::new("source_1").with_url("https://e.x/1"),
        Source::new("source_2").with_url("https://e.x/2"),
        Source::new("source_3").with_url("https://e.x/1"),
        Source::new("doc-a"),
    ])
    .unwrap()
}

fn settings_strategy() -> impl Strategy<Value = Settings> {
    (0..6usize, any::<bool>()).prop_map(|(k, min_cap)| {
        let s = match k {
            0 => Settings::default(),
            1 => Settings::default().with_rank(RankMode::Renumber),
            2 => Settings::default().with_syntaxes(&[Syntax::BareId, Syntax::CiteColon]),
            3 => Settings::default()
                .with_syntaxes(&[Syntax::DoubleBracket])
                .with_rank(RankMode::Renumber),
            4 => Settings::default().with_skip_code(false).with_dedupe(false),
            _ => Settings::default()
                .with_syntaxes(&Syntax::ALL)
                .with_rank(RankMode::Renumber),
        };
        if min_cap {
            s.with_max_pending_bytes(citeflow_core::MIN_PENDING_BYTES)
                .unwrap()
        } else {
            s
        }
    })
}

fn first_appearance(events: &[Event]) -> Vec<u32> {
    let mut seen = Vec::new();
    for e in events {
        if let Event::Citation { number, .. } = e {
            if !seen.contains(number) {
                seen.push(*number);
            }
        }
    }
    seen
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn prop_any_cut_equals_whole_text(
        text in text_strategy(),
        settings in settings_strategy(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let src = sources();
        let whole = run(&text, &Chunking::Whole, &settings, &src);
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(text.len() + 1)).collect();
        at.sort_unstable();
        let cut = run(&text, &Chunking::Cuts(at.clone()), &settings, &src);
        prop_assert_eq!(&cut, &whole, "cuts {:?}", at);
        let bytes = run(&text, &Chunking::Bytes, &settings, &src);
        prop_assert_eq!(&bytes, &whole);
    }

    /// Polling into the caller's buffer gives the same text and events as polling owned
    /// events, under any cut and in every style (remove mode's whitespace repair included).
    #[test]
    fn prop_poll_event_into_equals_poll_event(
        text in text_strategy(),
        settings in settings_strategy(),
        remove in any::<bool>(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let src = sources();
        let settings = if remove { settings.with_style(Style::Remove) } else { settings };
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(text.len() + 1)).collect();
        at.sort_unstable();
        for chunking in [Chunking::Cuts(at), Chunking::Bytes] {
            let chunks = chunking.split(text.as_bytes());
            let owned = run_chunks(&chunks, &settings, &src, citeflow_core::Numbering::new());
            let into = run_chunks_into(&chunks, &settings, &src, citeflow_core::Numbering::new());
            prop_assert_eq!(&into, &owned);
        }
    }

    /// Text chunks written with `write_through` (a chunk it hands back counts as the text
    /// polled at once) give the same text and events as `write` and polling, under any cut,
    /// one byte at a time (the chunks that cut a character go through `write`), and in every
    /// style.
    #[test]
    fn prop_write_through_equals_write(
        text in text_strategy(),
        settings in settings_strategy(),
        remove in any::<bool>(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..24),
    ) {
        let src = sources();
        let settings = if remove { settings.with_style(Style::Remove) } else { settings };
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(text.len() + 1)).collect();
        at.sort_unstable();
        for chunking in [Chunking::Cuts(at), Chunking::Bytes] {
            let chunks = chunking.split(text.as_bytes());
            let owned = run_chunks(&chunks, &settings, &src, citeflow_core::Numbering::new());
            let through = run_chunks_through(&chunks, &settings, &src, citeflow_core::Numbering::new());
            prop_assert_eq!(&through, &owned);
        }
    }

    #[test]
    fn prop_whole_text_equals_naive_oracle(text in text_strategy(), settings in settings_strategy()) {
        let src = sources();
        let whole = run(&text, &Chunking::Whole, &settings, &src);
        prop_assert_eq!(whole.text, oracle(&text, &settings, &src));
    }

    #[test]
    fn prop_numbers_dense_in_first_appearance_order(text in text_strategy(), settings in settings_strategy()) {
        prop_assume!(settings.rank() != RankMode::Keep);
        let src = sources();
        let r = run(&text, &Chunking::Bytes, &settings, &src);
        let order = first_appearance(&r.events);
        let want: Vec<u32> = (1..=order.len() as u32).collect();
        prop_assert_eq!(&order, &want);
        match r.events.last() {
            Some(Event::Done { report, .. }) => prop_assert!(report.verified),
            other => prop_assert!(false, "no done: {:?}", other),
        }
    }

    #[test]
    fn prop_numbers_never_change_across_answers(a in text_strategy(), b in text_strategy()) {
        let src = sources();
        let s = Settings::default();
        let first = run_chunks(&[a.as_bytes()], &s, &src, citeflow_core::Numbering::new());
        let second = run_chunks(&Chunking::Bytes.split(b.as_bytes()), &s, &src, first.numbering.clone());
        prop_assert!(second.numbering.extends(&first.numbering));
    }

    #[test]
    fn prop_marker_free_text_is_identity(text in "[a-zA-Z0-9 .,!?\n漢字ひらがな😀éü*_()-]{0,200}") {
        let r = run(&text, &Chunking::Bytes, &Settings::default(), &sources());
        prop_assert_eq!(r.text, text);
    }

    #[test]
    fn prop_arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200), cut in 0usize..200) {
        let src = sources();
        let s = Settings::default().with_rank(RankMode::Renumber);
        let cut = cut.min(bytes.len());
        let a = run_chunks(&[&bytes], &s, &src, citeflow_core::Numbering::new());
        let b = run_chunks(&[&bytes[..cut], &bytes[cut..]], &s, &src, citeflow_core::Numbering::new());
        prop_assert_eq!(a, b);
    }

    #[test]
    fn prop_remove_mode_is_chunk_invariant_and_keeps_words_apart(
        text in text_strategy(),
        rank in any::<bool>(),
        keep_unknown in any::<bool>(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let src = sources();
        let mut settings = Settings::default().with_style(Style::Remove);
        if rank {
            settings = settings.with_rank(RankMode::Renumber);
        }
        if keep_unknown {
            settings = settings.with_unknown(UnknownPolicy::Keep);
        }
        let whole = run(&text, &Chunking::Whole, &settings, &src);
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(text.len() + 1)).collect();
        at.sort_unstable();
        let cut = run(&text, &Chunking::Cuts(at.clone()), &settings, &src);
        prop_assert_eq!(&cut, &whole, "cuts {:?}", at);
        let bytes = run(&text, &Chunking::Bytes, &settings, &src);
        prop_assert_eq!(&bytes, &whole);
        if !keep_unknown {
            // The text with every marker replaced by nothing, spaces untouched.
            let bare = settings
                .clone()
                .with_style(Style::Template(String::new()))
                .with_unknown(UnknownPolicy::Drop);
            let reference = run(&text, &Chunking::Whole, &bare, &src).text;
            let words = |s: &str| -> Vec<String> {
                s.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_owned)
                    .collect()
            };
            let visible = |s: &str| -> String { s.chars().filter(|c| !c.is_whitespace()).collect() };
            prop_assert_eq!(words(&whole.text), words(&reference), "words joined or split");
            prop_assert_eq!(visible(&whole.text), visible(&reference), "only whitespace may go");
            prop_assert!(!whole.text.contains("  ") || reference.contains("  "), "new double space");
        }
    }
}
