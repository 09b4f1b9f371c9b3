//! Claim anchors: the quote each citation stands on, in English, Japanese and Chinese; emitted
//! as soon as the sentence closes; the same under any chunking; provider quotes kept.

use citeflow_core::anchor::{find_quote, Anchor, QuoteOrigin, Verdict, DEFAULT_MAX_SOURCE_BYTES};
use citeflow_core::provider::ProviderStream;
use citeflow_core::{Event, Numbering, Rewriter, Settings, SettingsPatch, Source, Sources};
use proptest::prelude::*;

use crate::support::{run_chunks, run_chunks_into, Chunking};

const PARIS: &str = "Paris is the capital of France. The Seine flows through the city and into \
the English Channel. The Eiffel Tower was finished in 1889 for the World's Fair. The Louvre is \
the most visited museum in the world.";
const NEKO: &str = "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。\
何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。";
const ROME: &str =
    "Rome is the capital of Italy. The Colosseum is an amphitheatre in the centre of Rome.";
const BALI: &str = "巴黎是法国的首都。塞纳河流经巴黎市中心。埃菲尔铁塔建于1889年。卢浮宫是世界上最大的博物馆之一。";

fn sources() -> Sources {
    Sources::from_vec(vec![
        Source::new("source_1").with_title("Paris").with_text(PARIS),
        Source::new("source_2")
            .with_title("吾輩は猫である")
            .with_text(NEKO),
        Source::new("source_3").with_title("巴黎").with_text(BALI),
        Source::new("source_4").with_title("No text"),
        Source::new("source_5").with_title("Rome").with_text(ROME),
    ])
    .unwrap()
}

fn settings() -> Settings {
    Settings::default().with_anchors(true)
}

fn anchors(events: &[Event]) -> Vec<Anchor> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Anchor(a) => Some((**a).clone()),
            _ => None,
        })
        .collect()
}

fn anchors_of(answer: &str) -> (String, Vec<Anchor>) {
    let run = run_chunks(
        &[answer.as_bytes()],
        &settings(),
        &sources(),
        Numbering::new(),
    );
    (run.text, anchors(&run.events))
}

/// `text[char_start..char_end]`, in code points as Python slices.
fn chars(text: &str, start: u64, end: u64) -> String {
    text.chars()
        .skip(start as usize)
        .take((end - start) as usize)
        .collect()
}

fn quote_of(a: &Anchor) -> &str {
    a.quote.as_ref().map_or("", |q| q.text.as_str())
}

#[test]
fn english_claims_anchor_to_the_sentence_that_says_them() {
    let (text, a) = anchors_of(
        "The Eiffel Tower was completed in 1889 [[source_1]]. The river Seine flows into the \
         English Channel [[source_1]]. Rome has the Colosseum [[source_1]].",
    );
    assert_eq!(a.len(), 3);
    assert_eq!(
        quote_of(&a[0]),
        "The Eiffel Tower was finished in 1889 for the World's Fair."
    );
    assert_eq!(
        quote_of(&a[1]),
        "The Seine flows through the city and into the English Channel."
    );
    assert_eq!(a[0].verdict, Verdict::Supported);
    assert_eq!(a[1].verdict, Verdict::Supported);
    // Nothing in the source says it.
    assert_eq!(a[2].verdict, Verdict::Unsupported);
    // The claim is the sentence that holds the marker, in every unit.
    let c = a[1].claim;
    assert_eq!(
        &text[c.byte_start as usize..c.byte_end as usize],
        "The river Seine flows into the English Channel [1]."
    );
    assert_eq!(
        chars(&text, c.char_start, c.char_end),
        "The river Seine flows into the English Channel [1]."
    );
    // The quote's offsets point into the source's text in every unit.
    for a in &a[..2] {
        let q = a.quote.as_ref().unwrap();
        let r = q.range.unwrap();
        assert_eq!(&PARIS[r.byte_start as usize..r.byte_end as usize], q.text);
        assert_eq!(chars(PARIS, r.char_start, r.char_end), q.text);
        assert_eq!(q.origin, QuoteOrigin::Source);
        assert!(!q.truncated);
    }
}

#[test]
fn japanese_claims_anchor_to_exactly_the_paraphrased_sentence() {
    let (text, a) = anchors_of(
        "猫にはまだ名前がない[[source_2]]。彼は薄暗い所で泣いていたことだけを記憶している[[source_2]]。",
    );
    assert_eq!(
        text,
        "猫にはまだ名前がない[1]。彼は薄暗い所で泣いていたことだけを記憶している[1]。"
    );
    assert_eq!(a.len(), 2);
    assert_eq!(quote_of(&a[0]), "名前はまだ無い。");
    assert_eq!(
        quote_of(&a[1]),
        "何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。"
    );
    let q = a[0].quote.as_ref().unwrap().range.unwrap();
    assert_eq!(chars(NEKO, q.char_start, q.char_end), "名前はまだ無い。");
    assert_eq!(
        chars(&text, a[1].claim.char_start, a[1].claim.char_end),
        "彼は薄暗い所で泣いていたことだけを記憶している[1]。"
    );
    assert!(a.iter().all(|a| a.verdict != Verdict::Unsupported), "{a:?}");
}

#[test]
fn chinese_claims_anchor_to_exactly_the_paraphrased_sentence() {
    let (_, a) = anchors_of("埃菲尔铁塔是在1889年建成的[[source_3]]。塞纳河穿过巴黎[[source_3]]。");
    assert_eq!(a.len(), 2);
    assert_eq!(quote_of(&a[0]), "埃菲尔铁塔建于1889年。");
    assert_eq!(quote_of(&a[1]), "塞纳河流经巴黎市中心。");
    // Full-width digits are digits.
    let (_, b) = anchors_of("埃菲尔铁塔是在１８８９年建成的[[source_3]]。");
    assert_eq!(quote_of(&b[0]), "埃菲尔铁塔建于1889年。");
    assert_eq!(a[0].support, b[0].support);
}

#[test]
fn a_number_or_a_negation_the_quote_lacks_lowers_the_support() {
    let (_, a) = anchors_of(
        "The Eiffel Tower was finished in 1889 [[source_1]]. The Eiffel Tower was finished in \
         1925 [[source_1]]. The Eiffel Tower was not finished in 1889 [[source_1]].",
    );
    assert_eq!(a[0].verdict, Verdict::Supported, "{a:?}");
    // The quote states another year: it contradicts the claim.
    assert_eq!(a[1].verdict, Verdict::Unsupported, "{a:?}");
    // Only the claim negates.
    assert_ne!(a[2].verdict, Verdict::Supported, "{a:?}");
    assert!(a[2].support < a[0].support, "{a:?}");
}

#[test]
fn no_anchor_for_a_source_without_text() {
    let (_, a) = anchors_of("Something [[source_4]]. Paris is the capital of France [[source_1]].");
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].source_id, "source_1");
}

#[test]
fn an_anchor_comes_as_soon_as_its_sentence_closes() {
    let mut rw = Rewriter::new(settings(), sources(), Numbering::new());
    rw.write("The Seine flows into the Channel [[source_1]].")
        .unwrap();
    // The end mark alone may still be "3.5" or "e.g.": nothing yet.
    assert!(anchors(&std::iter::from_fn(|| rw.poll_event()).collect::<Vec<_>>()).is_empty());
    rw.write(" The Louvre").unwrap();
    let events: Vec<Event> = std::iter::from_fn(|| rw.poll_event()).collect();
    let a = anchors(&events);
    assert_eq!(
        a.len(),
        1,
        "the anchor comes before the answer ends: {events:?}"
    );
    assert_eq!(
        quote_of(&a[0]),
        "The Seine flows through the city and into the English Channel."
    );
    // A CJK full stop closes at once.
    let mut rw = Rewriter::new(settings(), sources(), Numbering::new());
    rw.write("猫にはまだ名前がない[[source_2]]。").unwrap();
    rw.write("次").unwrap();
    assert_eq!(
        anchors(&std::iter::from_fn(|| rw.poll_event()).collect::<Vec<_>>()).len(),
        1
    );
}

#[test]
fn a_citation_after_the_end_mark_belongs_to_the_sentence_before() {
    let (text, a) = anchors_of(
        "The Eiffel Tower was finished in 1889. [[source_1]] The Louvre is a museum. [[source_1]]",
    );
    assert_eq!(
        text,
        "The Eiffel Tower was finished in 1889. [1] The Louvre is a museum. [1]"
    );
    assert_eq!(a.len(), 2);
    assert_eq!(
        quote_of(&a[0]),
        "The Eiffel Tower was finished in 1889 for the World's Fair."
    );
    assert_eq!(
        &text[a[0].claim.byte_start as usize..a[0].claim.byte_end as usize],
        "The Eiffel Tower was finished in 1889."
    );
    assert_eq!(
        quote_of(&a[1]),
        "The Louvre is the most visited museum in the world."
    );
}

#[test]
fn several_markers_closing_one_sentence_share_its_claim() {
    let (_, a) =
        anchors_of("The Seine flows through Paris, the capital [[source_1]] [[source_3]].");
    assert_eq!(a.len(), 2);
    assert_eq!(a[0].claim, a[1].claim);
    assert_eq!(a[1].source_id, "source_3");
}

#[test]
fn each_cited_clause_of_a_sentence_is_its_own_claim() {
    let (text, a) = anchors_of(
        "The Louvre is the most visited museum in the world [[source_1]], while the Colosseum \
         stands in the centre of Rome [[source_5]]. Paris [[source_1]] and Rome [[source_5]] are capitals.",
    );
    let claim =
        |a: &Anchor| text[a.claim.byte_start as usize..a.claim.byte_end as usize].to_owned();
    assert_eq!(
        claim(&a[0]),
        "The Louvre is the most visited museum in the world [1]"
    );
    assert_eq!(
        claim(&a[1]),
        "while the Colosseum stands in the centre of Rome [2]."
    );
    assert_eq!(
        quote_of(&a[1]),
        "The Colosseum is an amphitheatre in the centre of Rome."
    );
    assert_eq!(
        (a[0].verdict, a[1].verdict),
        (Verdict::Supported, Verdict::Supported)
    );
    // Parts too short to stand alone take the whole sentence.
    assert_eq!(claim(&a[2]), "Paris [1] and Rome [2] are capitals.");
    assert_eq!(a[2].claim, a[3].claim);
}

#[test]
fn the_done_list_carries_each_sources_anchors() {
    let run = run_chunks(
        &[b"The Seine flows through Paris [[source_1]]. The Louvre is a museum [[source_1]]."],
        &settings(),
        &sources(),
        Numbering::new(),
    );
    let Some(Event::Done { sources, .. }) = run.events.last() else {
        panic!("no done")
    };
    assert_eq!(sources[0].anchors, anchors(&run.events));
}

#[test]
fn find_quote_answers_one_claim() {
    let (q, s) = find_quote(
        "The Louvre is the most visited museum",
        PARIS,
        DEFAULT_MAX_SOURCE_BYTES,
    )
    .unwrap();
    assert_eq!(
        q.text,
        "The Louvre is the most visited museum in the world."
    );
    assert_eq!(s.verdict(), Verdict::Supported);
    assert!(find_quote("zzz", PARIS, DEFAULT_MAX_SOURCE_BYTES).is_none());
}

#[test]
fn bad_anchor_settings_are_clear_errors() {
    let e = Settings::default()
        .with_max_anchor_source_bytes(5)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "max_anchor_source_bytes 5 is outside 1024..=67108864"
    );
    let e = serde_json::from_str::<SettingsPatch>(r#"{"anchors": "yes"}"#).unwrap_err();
    assert!(
        e.to_string()
            .contains("invalid type: string \"yes\", expected a boolean"),
        "{e}"
    );
    let p: SettingsPatch =
        serde_json::from_str(r#"{"anchors": true, "max_anchor_source_bytes": 10}"#).unwrap();
    assert!(p
        .apply(Settings::default())
        .unwrap_err()
        .to_string()
        .contains("max_anchor_source_bytes 10"));
}

#[test]
fn snapshots_keep_the_open_sentence() {
    let mut rw = Rewriter::new(settings(), sources(), Numbering::new());
    rw.write("The Seine flows through Paris [[source_1]]")
        .unwrap();
    let mut events: Vec<Event> = std::iter::from_fn(|| rw.poll_event()).collect();
    let snap = serde_json::to_string(&rw.snapshot()).unwrap();
    let mut rw = Rewriter::from_snapshot(serde_json::from_str(&snap).unwrap()).unwrap();
    rw.write(". Next").unwrap();
    rw.end().unwrap();
    events.extend(std::iter::from_fn(|| rw.poll_event()));
    let (_, whole) = anchors_of("The Seine flows through Paris [[source_1]]. Next");
    assert_eq!(anchors(&events), whole);
}

/// The Anthropic recording's citations carry `cited_text`: the anchors keep the provider's
/// quote (its web results have no text to locate it in) and score it.
#[test]
fn provider_quotes_are_kept_and_scored() {
    let dir = std::env::var_os("CITEFLOW_SHARED_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared")
        });
    let bytes =
        std::fs::read(dir.join("fixtures/streams/anthropic-web-search-tool.1.chunks.txt")).unwrap();
    let run = |cut: usize| {
        let mut s = ProviderStream::new(settings(), Sources::new(), Numbering::new());
        let mut events = Vec::new();
        for chunk in bytes.chunks(cut) {
            s.write(chunk).unwrap();
            events.extend(std::iter::from_fn(|| s.poll_event()));
        }
        s.end().unwrap();
        events.extend(std::iter::from_fn(|| s.poll_event()));
        events
    };
    let events = run(bytes.len());
    let quotes: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Citation {
                provider: Some(d), ..
            } => d.quote.clone(),
            _ => None,
        })
        .collect();
    let a = anchors(&events);
    assert!(!a.is_empty());
    assert_eq!(a.len(), quotes.len());
    for (a, q) in a.iter().zip(&quotes) {
        let quote = a.quote.as_ref().unwrap();
        assert_eq!(&quote.text, q);
        assert_eq!(quote.origin, QuoteOrigin::Provider);
        assert!(quote.range.is_none());
    }
    assert!(a.iter().any(|a| a.verdict != Verdict::Unsupported), "{a:?}");
    for cut in [1, 7, 64] {
        assert_eq!(anchors(&run(cut)), a, "cut {cut}");
    }
}

fn not_text(events: &[Event]) -> Vec<&Event> {
    events
        .iter()
        .filter(|e| !matches!(e, Event::Text { .. }))
        .collect()
}

/// Each anchor comes after the text that closes its claim.
fn anchors_follow_their_sentence(events: &[Event]) -> bool {
    let mut shown = 0u64;
    events.iter().all(|e| match e {
        Event::Text { text } => {
            shown += text.len() as u64;
            true
        }
        Event::Anchor(a) => a.claim.byte_end <= shown,
        _ => true,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Any chunking (cuts inside markers and UTF-8 characters) gives the same text and the
    /// same events, anchors included, in the same order (texts merged).
    #[test]
    fn prop_anchors_are_the_same_under_any_chunking(cuts in proptest::collection::vec(0usize..400, 0..12)) {
        let answer = "The Eiffel Tower was finished in 1889 [[source_1]]. 猫にはまだ名前がない[[source_2]]。\
塞纳河穿过巴黎[[source_3]]。It is 3.5 km long. [[source_1]] E.g. the Louvre is a museum [[source_1]]!\n- a list item [[source_2]]\nEnd";
        let whole = run_chunks(&[answer.as_bytes()], &settings(), &sources(), Numbering::new());
        let mut cuts = cuts;
        cuts.sort_unstable();
        for chunking in [Chunking::Bytes, Chunking::Chars, Chunking::Cuts(cuts)] {
            let run = run_chunks(&chunking.split(answer.as_bytes()), &settings(), &sources(), Numbering::new());
            prop_assert_eq!(&run.text, &whole.text);
            // How much text comes before an anchor depends on the chunking; the other events
            // and their order do not.
            prop_assert_eq!(not_text(&run.events), not_text(&whole.events));
            prop_assert!(anchors_follow_their_sentence(&run.events));
            let into = run_chunks_into(&chunking.split(answer.as_bytes()), &settings(), &sources(), Numbering::new());
            prop_assert_eq!(&into.text, &whole.text);
            prop_assert_eq!(not_text(&into.events), not_text(&whole.events));
        }
        prop_assert_eq!(anchors(&whole.events).len(), 6);
    }
}

/// The events of a provider stream with anchors off, and with them on less the anchors (and
/// the done list's anchors): turning anchors on changes nothing else.
fn without_anchors(events: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    let mut out: Vec<serde_json::Value> = Vec::new();
    for mut v in events {
        if v["type"] == "anchor" {
            continue;
        }
        if let Some(list) = v.get_mut("sources").and_then(|s| s.as_array_mut()) {
            for s in list {
                if let Some(o) = s.as_object_mut() {
                    o.remove("anchors");
                }
            }
        }
        // Texts split by an anchor join again.
        if v["type"] == "text" {
            if let Some(last) = out.last_mut().filter(|l| l["type"] == "text") {
                let joined = format!(
                    "{}{}",
                    last["text"].as_str().unwrap(),
                    v["text"].as_str().unwrap()
                );
                last["text"] = serde_json::Value::String(joined);
                continue;
            }
        }
        out.push(v);
    }
    out
}

#[test]
fn every_recording_is_the_same_with_anchors_but_for_the_anchors() {
    for (name, data) in crate::provider::recordings() {
        for cuts in [
            vec![],
            vec![1, 100, 1000, 5000],
            (1..data.len()).step_by(97).collect::<Vec<_>>(),
        ] {
            let off = crate::provider::run_with(&Settings::default(), &data, &cuts);
            let on = crate::provider::run_with(&settings(), &data, &cuts);
            let citations = on
                .iter()
                .filter(|e| e["type"] == "citation" && e["provider"]["quote"].is_string())
                .count();
            let anchors = on.iter().filter(|e| e["type"] == "anchor").count();
            // Each citation that carries the provider's quote has its anchor (sources of
            // provider streams have no text of their own).
            assert_eq!(anchors, citations, "{name}");
            assert_eq!(without_anchors(on), off, "{name} cut at {cuts:?}");
        }
    }
}

#[test]
fn an_agents_later_round_is_anchored_in_its_own_text() {
    let mut rw = Rewriter::new(settings(), Sources::new(), Numbering::new());
    rw.write("Searching. ").unwrap();
    rw.append_sources(
        Some("cats".into()),
        vec![Source::new("doc-neko").with_text(NEKO)],
    )
    .unwrap();
    rw.write("猫にはまだ名前がない[[doc-neko]]。").unwrap();
    rw.append_sources(
        Some("paris".into()),
        vec![Source::new("doc-paris").with_text(PARIS)],
    )
    .unwrap();
    rw.write("The Louvre is the most visited museum [[doc-paris]].")
        .unwrap();
    rw.end().unwrap();
    let a = anchors(&std::iter::from_fn(|| rw.poll_event()).collect::<Vec<_>>());
    assert_eq!(a.len(), 2);
    assert_eq!((a[0].number, quote_of(&a[0])), (1, "名前はまだ無い。"));
    assert_eq!(
        (a[1].number, quote_of(&a[1])),
        (2, "The Louvre is the most visited museum in the world.")
    );
}
