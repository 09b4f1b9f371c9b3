//! Sentence boundaries, for a source's text and for the streamed answer alike: `.` `!` `?`
//! followed by a space (not after an abbreviation or an initial), `。` `！` `？` `．` anywhere,
//! and line ends. A sentence longer than the cap is cut at a space near the cap (or at a
//! character boundary when it has none), so no sentence is unbounded.

/// Whether `c` ends a sentence without a following space (CJK full stops).
#[inline]
pub(crate) fn is_cjk_end(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '．')
}

/// Whether `c` ends a sentence when a space follows.
#[inline]
pub(crate) fn is_latin_end(c: char) -> bool {
    matches!(c, '.' | '!' | '?')
}

/// Closing quotes and brackets that stay with the sentence they end (`."`, `。」`).
#[inline]
pub(crate) fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | ')' | ']' | '”' | '’' | '」' | '』' | '）' | '】' | '》' | '〉'
    )
}

/// Whether the `.` that ends `before` is an abbreviation's or an initial's, not a sentence end.
pub(crate) fn is_abbreviation(before: &str) -> bool {
    let word: &str = before
        .rsplit(|c: char| c.is_whitespace() || c == '(' || c == '"')
        .next()
        .unwrap_or("");
    let word = word.trim_end_matches('.');
    if word.is_empty() {
        return false;
    }
    // An initial (J. R. R. Tolkien), or dotted letters (U.S., e.g.).
    let letters = word.split('.').all(|p| p.chars().count() == 1);
    if letters && word.chars().next().is_some_and(char::is_alphabetic) {
        return true;
    }
    let lower = word.to_ascii_lowercase();
    ABBREVIATIONS.binary_search(&lower.as_str()).is_ok()
}

/// Abbreviations that end in a period inside a sentence (sorted, lowercase).
const ABBREVIATIONS: &[&str] = &[
    "al", "apr", "aug", "ave", "bros", "capt", "cf", "co", "col", "corp", "dec", "dept", "dr",
    "e.g", "est", "etc", "feb", "fig", "gen", "gov", "i.e", "inc", "jan", "jr", "jul", "jun", "lt",
    "ltd", "mar", "mr", "mrs", "ms", "mt", "no", "nov", "oct", "op", "pp", "prof", "rev", "sen",
    "sep", "sept", "sgt", "sr", "st", "vol", "vs",
];

/// The sentences of `text` as byte ranges, trimmed of surrounding whitespace, none empty and
/// none longer than `max_bytes` (cut near the cap).
pub(crate) fn split(text: &str, max_bytes: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let end = i + c.len_utf8();
        let boundary = if c == '\n' || c == '\r' {
            Some(i)
        } else if is_cjk_end(c) || (is_latin_end(c) && latin_ends(text, start, i, end)) {
            // Closers and repeated end marks stay with the sentence.
            let mut e = end;
            while let Some(&(j, n)) = iter.peek() {
                if is_closer(n) || is_latin_end(n) || is_cjk_end(n) {
                    e = j + n.len_utf8();
                    iter.next();
                } else {
                    break;
                }
            }
            Some(e)
        } else if end - start > max_bytes && i > start {
            // This character would pass the cap: cut before it (at a space if there is one).
            Some(cut_point(text, start, i))
        } else {
            None
        };
        if let Some(b) = boundary {
            push(text, start, b, &mut out);
            start = b;
        }
    }
    push(text, start, text.len(), &mut out);
    out
}

/// A `.` `!` `?` at `i` ends the sentence when a space or the end follows and (for `.`) it
/// ends no abbreviation, and the next word does not start in lowercase.
fn latin_ends(text: &str, start: usize, i: usize, end: usize) -> bool {
    let rest = &text[end..];
    let after = rest.trim_start_matches(|c: char| is_closer(c));
    let Some(next) = after.chars().next() else {
        return true;
    };
    if !next.is_whitespace() {
        return false;
    }
    if text.as_bytes()[i] != b'.' {
        return true;
    }
    if is_abbreviation(&text[start..i + 1]) {
        return false;
    }
    let word = after.trim_start();
    !word.chars().next().is_some_and(char::is_lowercase)
}

/// Where to cut a sentence that outgrew the cap: after its last space, else at `end`.
fn cut_point(text: &str, start: usize, end: usize) -> usize {
    let s = &text[start..end];
    match s.rfind(char::is_whitespace) {
        Some(sp) if sp > s.len() / 2 => start + sp + 1,
        _ => end,
    }
}

fn push(text: &str, start: usize, end: usize, out: &mut Vec<(usize, usize)>) {
    let s = &text[start..end];
    let lead = s.len() - s.trim_start().len();
    let t = s.trim();
    if !t.is_empty() {
        out.push((start + lead, start + lead + t.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentences(text: &str) -> Vec<&str> {
        split(text, 1000)
            .iter()
            .map(|&(a, b)| &text[a..b])
            .collect()
    }

    #[test]
    fn abbreviations_are_sorted() {
        assert!(ABBREVIATIONS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn english_sentences() {
        assert_eq!(
            sentences("Mr. Smith went to the U.S. in 1990. He stayed (a while). Did he?\nYes"),
            vec![
                "Mr. Smith went to the U.S. in 1990.",
                "He stayed (a while).",
                "Did he?",
                "Yes"
            ]
        );
        assert_eq!(
            sentences("It is 3.5 m long. J. R. R. Tolkien wrote it."),
            vec!["It is 3.5 m long.", "J. R. R. Tolkien wrote it."]
        );
    }

    #[test]
    fn cjk_sentences() {
        assert_eq!(
            sentences("吾輩は猫である。名前はまだ無い。「どこで生れたか」とんと見当がつかぬ！"),
            vec![
                "吾輩は猫である。",
                "名前はまだ無い。",
                "「どこで生れたか」とんと見当がつかぬ！"
            ]
        );
        assert_eq!(
            sentences("巴黎是法国的首都。塞纳河流经巴黎？"),
            vec!["巴黎是法国的首都。", "塞纳河流经巴黎？"]
        );
    }

    #[test]
    fn long_sentences_are_cut() {
        let text = "word ".repeat(1000);
        let s = split(&text, 100);
        assert!(s.iter().all(|&(a, b)| b - a <= 100));
        let text = "字".repeat(1000);
        let s = split(&text, 100);
        assert!(s.iter().all(|&(a, b)| b - a <= 100));
        assert_eq!(s.iter().map(|&(a, b)| b - a).sum::<usize>(), text.len());
    }
}
