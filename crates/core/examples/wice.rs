//! Claim anchors on WiCE claims, through the core alone (the tuning loop; the whole-process
//! evaluation is `scripts/anchor-eval.py`): the answer is the claim's context and the claim
//! citing `[[source_1]]` before its final period, source_1's text the evidence sentences
//! joined with "\n". Prints hit@1 (the quote overlaps a gold supporting sentence), the support
//! AUROC (supported vs not_supported), and with `--features` one line of features a claim.
//!
//! `cargo run --release -p citeflow-core --example wice -- ../shared/fixtures/wice/dev.jsonl`

use citeflow_core::{Event, Numbering, Rewriter, Settings, Source, Sources};
use serde_json::Value;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: wice DEV.jsonl [--features]");
    let features = std::env::args().any(|a| a == "--features");
    let data = std::fs::read_to_string(&path).expect("read the split");
    let (mut hits, mut first_hits, mut with_gold, mut sentences) = (0, 0, 0, 0usize);
    let mut scored: Vec<(f32, bool)> = Vec::new();
    let mut no_quote = 0;
    for line in data.lines() {
        let v: Value = serde_json::from_str(line).expect("json");
        let evidence: Vec<&str> = v["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        let text = evidence.join("\n");
        let mut starts = Vec::new();
        let mut at = 0;
        for s in &evidence {
            starts.push((at, at + s.len()));
            at += s.len() + 1;
        }
        let claim = v["claim"].as_str().unwrap();
        let context = v["meta"]["claim_context"].as_str().unwrap_or("");
        let body = claim.strip_suffix('.').unwrap_or(claim);
        let sep = if context.is_empty() || context.ends_with(char::is_whitespace) {
            ""
        } else {
            " "
        };
        let answer = format!("{context}{sep}{body} [[source_1]].");
        let sources =
            Sources::from_vec(vec![Source::new("source_1").with_text(text.clone())]).unwrap();
        let mut rw = Rewriter::new(
            Settings::default().with_anchors(true),
            sources,
            Numbering::new(),
        );
        rw.write(&answer).unwrap();
        rw.end().unwrap();
        let mut anchor = None;
        while let Some(e) = rw.poll_event() {
            if let Event::Anchor(a) = e {
                anchor = Some(a);
            }
        }
        let anchor = anchor.expect("an anchor");
        let label = v["label"].as_str().unwrap();
        let gold: Vec<usize> = v["supporting_sentences"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|set| {
                set.as_array()
                    .unwrap()
                    .iter()
                    .map(|i| i.as_u64().unwrap() as usize)
            })
            .collect();
        let overlaps =
            |a: usize, b: usize| gold.iter().any(|&g| starts[g].0 < b && a < starts[g].1);
        if label != "not_supported" && !gold.is_empty() {
            with_gold += 1;
            if let Some(q) = &anchor.quote {
                let r = q.range.unwrap();
                let (a, b) = (r.byte_start as usize, r.byte_end as usize);
                if overlaps(a, b) {
                    hits += 1;
                }
                let first = starts
                    .iter()
                    .find(|s| s.0 <= a && a < s.1.max(s.0 + 1))
                    .copied()
                    .unwrap_or((a, b));
                if overlaps(first.0, first.1) {
                    first_hits += 1;
                }
                sentences += starts.iter().filter(|s| s.0 < b && a < s.1).count();
            } else {
                no_quote += 1;
            }
        }
        let s = anchor.support.value();
        if label == "supported" {
            scored.push((s, true));
        } else if label == "not_supported" {
            scored.push((s, false));
        }
        if features {
            println!(
                "{label}\t{s:.3}\t{}",
                anchor
                    .quote
                    .as_ref()
                    .map_or("", |q| q.text.as_str())
                    .chars()
                    .take(80)
                    .collect::<String>()
            );
        }
    }
    let pos: Vec<f32> = scored.iter().filter(|x| x.1).map(|x| x.0).collect();
    let neg: Vec<f32> = scored.iter().filter(|x| !x.1).map(|x| x.0).collect();
    let mut wins = 0.0;
    for p in &pos {
        for n in &neg {
            wins += if p > n {
                1.0
            } else if p == n {
                0.5
            } else {
                0.0
            };
        }
    }
    let auroc = wins / (pos.len() * neg.len()) as f64;
    let mut sorted = pos.clone();
    sorted.sort_by(f32::total_cmp);
    let t = sorted[sorted.len() / 10];
    let flagged = neg.iter().filter(|&&n| n < t).count() as f64 / neg.len() as f64;
    println!(
        "hit@1 {:.3} (first sentence {:.3}; {} of {} without a quote; {:.2} sentences a quote)  AUROC {:.3}  flagged at 90% pass {:.3} (threshold {:.3})",
        hits as f64 / with_gold as f64,
        first_hits as f64 / with_gold as f64,
        no_quote,
        with_gold,
        sentences as f64 / (with_gold - no_quote) as f64,
        auroc,
        flagged,
        t
    );
}
