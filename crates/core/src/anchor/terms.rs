//! Terms of a text for anchoring: words for scripts that put spaces between words (lowercased,
//! English stop words dropped, a light English stemmer), numbers, and character bigrams (with
//! Han unigrams) for Chinese, Japanese and Korean; full-width ASCII is read as ASCII.

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

/// What a term is: it decides the term's weight and the checks it takes part in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A word of an alphabetic script, stemmed.
    Word,
    /// A number (digits, with `,` thousands and `.` decimals joined).
    Number,
    /// A number that reads as a year (1000 to 2199).
    Year,
    /// Two adjacent CJK characters.
    CjkPair,
    /// One Han character.
    Han,
    /// Two adjacent content words (a phrase).
    Phrase,
}

impl Kind {
    /// The weight of a term of this kind in ranking and coverage.
    pub(crate) fn weight(self) -> f32 {
        match self {
            Kind::Word | Kind::Number | Kind::Year | Kind::CjkPair => 1.0,
            Kind::Han => 0.5,
            Kind::Phrase => 0.5,
        }
    }
}

/// One term: its hash and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Term {
    pub(crate) hash: u64,
    pub(crate) kind: Kind,
}

/// What [`terms_of`] found beside the terms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Traits {
    /// The text negates (`not`, `never`, `n't`, `不`, `没`, `ない`, …).
    pub(crate) negated: bool,
}

/// Appends the terms of `text` to `out` (in text order) and says what else it found.
pub(crate) fn terms_of(text: &str, out: &mut Vec<Term>) -> Traits {
    let mut traits = Traits::default();
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    let mut prev_word: Option<u64> = None;
    let mut chars = text.chars().peekable();
    while let Some(raw) = chars.next() {
        let c = narrow(raw);
        if is_cjk(c) {
            flush_word(&mut word, out, &mut prev_word, &mut traits);
            cjk.push(c);
            continue;
        }
        flush_cjk(&mut cjk, out, &mut traits);
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if (c == '\'' || c == '’') && !word.is_empty() {
            word.push('\'');
        } else if (c == ',' || c == '.')
            && word.bytes().last().is_some_and(|b| b.is_ascii_digit())
            && chars.peek().is_some_and(|n| narrow(*n).is_ascii_digit())
        {
            // 1,000 and 3.5 stay one number.
            word.push(c);
        } else {
            flush_word(&mut word, out, &mut prev_word, &mut traits);
            if !c.is_whitespace() && c != '-' {
                prev_word = None;
            }
        }
    }
    flush_word(&mut word, out, &mut prev_word, &mut traits);
    flush_cjk(&mut cjk, out, &mut traits);
    traits
}

/// Full-width ASCII (`Ａ`, `１`) as ASCII, the ideographic space as a space.
#[inline]
pub(crate) fn narrow(c: char) -> char {
    match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        '\u{3000}' => ' ',
        _ => c,
    }
}

/// Han ideographs, kana and Hangul: scripts written without spaces between words.
#[inline]
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF        // hiragana, katakana
        | 0x3005 | 0x3006      // 々 〆
        | 0x31F0..=0x31FF      // katakana extensions
        | 0x3400..=0x4DBF      // CJK extension A
        | 0x4E00..=0x9FFF      // CJK unified ideographs
        | 0xF900..=0xFAFF      // compatibility ideographs
        | 0xAC00..=0xD7AF      // Hangul syllables
        | 0xFF66..=0xFF9F      // half-width katakana
        | 0x20000..=0x2FFFF)
}

fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FFFF)
        || c == '々'
}

fn flush_cjk(run: &mut Vec<char>, out: &mut Vec<Term>, traits: &mut Traits) {
    if run.is_empty() {
        return;
    }
    if run
        .iter()
        .any(|c| matches!(c, '不' | '没' | '沒' | '無' | '无' | '未' | '非' | '否'))
        || contains_seq(run, &['な', 'い'])
        || contains_seq(run, &['ま', 'せ', 'ん'])
        || contains_seq(run, &['な', 'か', 'っ'])
    {
        traits.negated = true;
    }
    for (i, &c) in run.iter().enumerate() {
        if is_han(c) {
            out.push(Term {
                hash: hash_chars(&[c]),
                kind: Kind::Han,
            });
        }
        // Pairs within one script: Han with Han (Chinese words, Japanese compounds), katakana
        // with katakana (loan words), Hangul with Hangul. A pair across scripts (猫に, 前が)
        // mostly straddles a word and its particle, and two hiragana are mostly grammar.
        let next = run.get(i + 1).copied();
        match next {
            Some(n) if script(c) == script(n) && script(c) != Script::Hiragana => {
                out.push(Term {
                    hash: hash_chars(&[c, n]),
                    kind: Kind::CjkPair,
                });
            }
            _ => {
                let prev = i.checked_sub(1).map(|p| run[p]);
                let alone = prev.is_none_or(|p| script(p) != script(c));
                if alone && matches!(script(c), Script::Katakana | Script::Hangul) {
                    out.push(Term {
                        hash: hash_chars(&[c]),
                        kind: Kind::CjkPair,
                    });
                }
            }
        }
    }
    run.clear();
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Han,
    Hiragana,
    Katakana,
    Hangul,
}

fn script(c: char) -> Script {
    match c as u32 {
        0x3041..=0x309F => Script::Hiragana,
        0x30A0..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F => Script::Katakana,
        0xAC00..=0xD7AF => Script::Hangul,
        _ => Script::Han,
    }
}

fn contains_seq(run: &[char], seq: &[char]) -> bool {
    run.windows(seq.len()).any(|w| w == seq)
}

fn flush_word(word: &mut String, out: &mut Vec<Term>, prev: &mut Option<u64>, traits: &mut Traits) {
    if word.is_empty() {
        return;
    }
    let w = word.trim_end_matches('\'');
    if w.ends_with("n't") || is_negation(w) {
        traits.negated = true;
    }
    let w = w.strip_suffix("'s").unwrap_or(w);
    let w = w.strip_suffix("n't").unwrap_or(w);
    let cleaned: String = w.chars().filter(|&c| c != '\'').collect();
    word.clear();
    if cleaned.starts_with(|c: char| c.is_ascii_digit()) {
        // 1990, 3.5, 1990s, 5th, 20km: the number.
        let raw: String = cleaned
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
            .collect();
        let raw = raw.trim_end_matches(['.', ',']);
        let number: String = raw.chars().filter(|&c| c != ',').collect();
        let year = raw.len() == 4
            && (raw.starts_with('1') || raw.starts_with("20") || raw.starts_with("21"));
        out.push(Term {
            hash: hash_str(number.trim_start_matches('0').max("0")),
            kind: if year { Kind::Year } else { Kind::Number },
        });
        *prev = None;
        return;
    }
    if cleaned.bytes().any(|b| b.is_ascii_digit()) {
        // A code or name with digits (A320, word49999): one term as it is.
        out.push(Term {
            hash: hash_str(&cleaned),
            kind: Kind::Word,
        });
        *prev = None;
        return;
    }
    if cleaned.chars().count() < 2 || is_stop_word(&cleaned) {
        *prev = None;
        return;
    }
    let stem = stem(&cleaned);
    let hash = hash_str(stem);
    out.push(Term {
        hash,
        kind: Kind::Word,
    });
    if let Some(p) = prev.replace(hash) {
        out.push(Term {
            hash: p.rotate_left(17) ^ hash ^ 0x9E37_79B9_7F4A_7C15,
            kind: Kind::Phrase,
        });
    }
}

fn hash_str(s: &str) -> u64 {
    let mut h = FxHasher::default();
    s.hash(&mut h);
    h.finish()
}

fn hash_chars(cs: &[char]) -> u64 {
    let mut h = FxHasher::default();
    cs.hash(&mut h);
    h.finish() ^ 0x5bd1_e995
}

fn is_negation(w: &str) -> bool {
    matches!(
        w,
        "not" | "no" | "never" | "none" | "nor" | "neither" | "without" | "cannot" | "nothing"
    )
}

/// A light English stemmer: plural, past and gerund endings and `-ly` removed, so that
/// `published`, `publishing` and `publishes` meet. Words of other languages rarely carry these
/// endings and pass unchanged.
pub(crate) fn stem(w: &str) -> &str {
    let n = w.len();
    if !w.is_ascii() || n <= 3 {
        return w;
    }
    if let Some(s) = w.strip_suffix("ies") {
        if n > 4 {
            return s; // studies -> stud (as study -> stud below)
        }
    }
    if let Some(s) = w.strip_suffix('y') {
        if n > 4 {
            return s;
        }
    }
    if w.ends_with("ss") || w.ends_with("us") || w.ends_with("is") {
        return w;
    }
    if let Some(s) = w.strip_suffix("ing") {
        if n > 5 {
            return s.strip_suffix('e').unwrap_or(s);
        }
    }
    if let Some(s) = w.strip_suffix("ed") {
        if n > 4 {
            return s.strip_suffix('e').unwrap_or(s);
        }
    }
    if let Some(s) = w.strip_suffix("es") {
        if n > 4 && (s.ends_with(['s', 'x', 'z']) || s.ends_with("ch") || s.ends_with("sh")) {
            return s;
        }
    }
    if let Some(s) = w.strip_suffix('s') {
        return s.strip_suffix('e').filter(|_| n > 4).unwrap_or(s);
    }
    if let Some(s) = w.strip_suffix('e') {
        if n > 4 {
            return s;
        }
    }
    w
}

fn is_stop_word(w: &str) -> bool {
    STOP_WORDS.binary_search(&w).is_ok()
}

/// English stop words (sorted): function words that say nothing about what a sentence claims.
const STOP_WORDS: &[&str] = &[
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "became",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "however",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "since",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Kind> {
        let mut out = Vec::new();
        terms_of(text, &mut out);
        out.iter().map(|t| t.kind).collect()
    }

    #[test]
    fn stop_words_are_sorted() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn stems_meet() {
        assert_eq!(stem("published"), stem("publishing"));
        assert_eq!(stem("publishes"), stem("publish"));
        assert_eq!(stem("studies"), stem("study"));
        assert_eq!(stem("rabbits"), "rabbit");
    }

    #[test]
    fn words_numbers_and_cjk() {
        assert_eq!(kinds("The 1,000 rabbits"), vec![Kind::Number, Kind::Word]);
        let mut a = Vec::new();
        let mut b = Vec::new();
        terms_of("１９９０年", &mut a);
        terms_of("1990年", &mut b);
        assert_eq!(a, b);
        assert!(terms_of("彼は来なかった", &mut Vec::new()).negated);
        assert!(terms_of("He didn't go", &mut Vec::new()).negated);
        assert!(!terms_of("He went", &mut Vec::new()).negated);
    }
}
