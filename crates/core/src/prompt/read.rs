//! Reading a sources block back: the passages a prompt shows under markers, one a line, as
//! [`context_block`](super::context_block) writes them (`[[id]] …`, `<cite:id> …`,
//! `<cite id="id"/> …`, `[id] …`, `[n] …`, `【n】 …`), for a caller that receives them as
//! text (an agent's tool results) and must cite them.

use super::PromptMarker;
use crate::source::Source;

/// The passages shown under markers in `texts`, in order of first appearance, and their
/// marker form (the first marked line's; lines of another form are skipped, as is a repeated
/// id). Rank markers are sorted by rank and must be exactly `1..=n`. `None` when no line
/// starts with a marker, or when the ranks have a gap.
///
/// ```
/// use citeflow_core::{read_context_block, PromptMarker};
/// let (form, sources) = read_context_block(["[[p1]] The Rabbit.\n[[p2]] A well."]).unwrap();
/// assert_eq!((form, sources[1].id.as_str()), (PromptMarker::DoubleBracket, "p2"));
/// ```
pub fn read_context_block<'a>(
    texts: impl IntoIterator<Item = &'a str>,
) -> Option<(PromptMarker, Vec<Source>)> {
    let mut form = None;
    let mut found: Vec<(String, &str)> = Vec::new();
    for text in texts {
        for line in text.lines() {
            let Some((f, id, rest)) = line_marker(line) else {
                continue;
            };
            if *form.get_or_insert(f) != f || found.iter().any(|(i, _)| i == id) {
                continue;
            }
            found.push((id.to_owned(), rest));
        }
    }
    let form = form?;
    if form.is_rank() {
        found.sort_by_key(|(id, _)| id.parse::<usize>().unwrap_or(usize::MAX));
        // Ranks are shown as 1..n (`PromptMarker::marker` numbers by position).
        let gap = found
            .iter()
            .enumerate()
            .any(|(i, (id, _))| id.parse::<usize>().ok() != Some(i + 1));
        if gap {
            return None;
        }
    }
    let sources = found
        .into_iter()
        .map(|(id, text)| Source::new(id).with_text(text))
        .collect();
    Some((form, sources))
}

/// The marker a line starts with (after blanks): its form, id, and the rest of the line.
fn line_marker(line: &str) -> Option<(PromptMarker, &str, &str)> {
    let line = line.trim_start();
    let split = |open: &str, close: &str| -> Option<(&str, &str)> {
        let rest = line.strip_prefix(open)?;
        let end = rest.find(close)?;
        let id = &rest[..end];
        let id_ok = !id.is_empty()
            && !id
                .chars()
                .any(|c| c.is_whitespace() || "[]<>\"【】".contains(c));
        id_ok.then(|| (id, rest[end + close.len()..].trim_start()))
    };
    let digits = |id: &str| id.bytes().all(|b| b.is_ascii_digit());
    if let Some((id, rest)) = split("[[", "]]") {
        return Some((PromptMarker::DoubleBracket, id, rest));
    }
    if let Some((id, rest)) = split("<cite id=\"", "\"/>") {
        return Some((PromptMarker::CiteTag, id, rest));
    }
    if let Some((id, rest)) = split("<cite:", ">") {
        return Some((PromptMarker::CiteColon, id, rest));
    }
    if let Some((id, rest)) = split("【", "】") {
        return digits(id).then_some((PromptMarker::RankFullWidth, id, rest));
    }
    let (id, rest) = split("[", "]")?;
    let form = if digits(id) {
        PromptMarker::Rank
    } else {
        PromptMarker::SingleBracket
    };
    Some((form, id, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::context_block;
    use crate::source::Sources;

    const FORMS: [PromptMarker; 6] = [
        PromptMarker::DoubleBracket,
        PromptMarker::CiteColon,
        PromptMarker::CiteTag,
        PromptMarker::SingleBracket,
        PromptMarker::Rank,
        PromptMarker::RankFullWidth,
    ];

    #[test]
    fn a_context_block_reads_back_as_its_sources_in_every_form() {
        let sources = Sources::from_vec(vec![
            Source::new("web-seine").with_text("The Seine flows\nthrough Paris."),
            Source::new("doc_2")
                .with_title("Rabbit")
                .with_text("白兎が走った。"),
            Source::new("x3").with_text("A well."),
        ])
        .unwrap();
        for form in FORMS {
            let block = context_block(&sources, form, 400);
            let (f, read) = read_context_block([block.as_str()]).unwrap();
            assert_eq!(f, form, "{block}");
            let ids: Vec<&str> = read.iter().map(|s| s.id.as_str()).collect();
            let want: Vec<String> = if form.is_rank() {
                (1..=3).map(|n| n.to_string()).collect()
            } else {
                sources.iter().map(|s| s.id.clone()).collect()
            };
            assert_eq!(ids, want, "{block}");
            let texts: Vec<&str> = read.iter().filter_map(|s| s.text.as_deref()).collect();
            assert_eq!(
                texts,
                [
                    "The Seine flows through Paris.",
                    "Rabbit: 白兎が走った。",
                    "A well."
                ],
                "{block}"
            );
        }
    }

    #[test]
    fn lines_without_a_marker_of_the_first_form_are_skipped() {
        let (f, s) =
            read_context_block(["intro\n<cite:a> one\n[[b]] other form\n<cite:a> again"]).unwrap();
        assert_eq!(f, PromptMarker::CiteColon);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].text.as_deref(), Some("one"));
        // Ranks out of order are sorted; a gap is no block.
        let (_, s) = read_context_block(["[2] b", "[1] a"]).unwrap();
        assert_eq!(s[0].text.as_deref(), Some("a"));
        assert_eq!(read_context_block(["[2] only the second"]), None);
        assert_eq!(read_context_block(["【1】 a\n【3】 c"]), None);
        // Not markers: an empty id, an id with a space, text before the marker.
        assert_eq!(read_context_block(["[] a\n[a b] c\nsee [[x]]"]), None);
        assert_eq!(read_context_block(["plain"]), None);
    }
}
