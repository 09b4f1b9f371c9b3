//! Inline markdown links (`[label](url)`, `([label](url))`): OpenAI's web search writes the
//! cited url as one, and the link is then the citation's marker.

/// Longest label and url considered; longer text is not held as a link.
const MAX_LABEL: usize = 512;
const MAX_URL: usize = 4096;

/// How far a link starting at `text[at..]` (at a `[`) gets.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    /// Complete, ending at this byte index (exclusive).
    Complete(usize),
    /// Could still become a link when more text comes.
    Open,
    /// Not a link.
    No,
}

fn shape_at(text: &str, at: usize) -> Shape {
    let b = text.as_bytes();
    debug_assert_eq!(b.get(at), Some(&b'['));
    let mut i = at + 1;
    // Label.
    loop {
        match b.get(i) {
            None => return Shape::Open,
            Some(b']') => break,
            Some(b'\n' | b'[') => return Shape::No,
            Some(_) => {}
        }
        i += 1;
        if i - at > MAX_LABEL {
            return Shape::No;
        }
    }
    if i == at + 1 {
        return Shape::No;
    }
    i += 1;
    match b.get(i) {
        None => return Shape::Open,
        Some(b'(') => {}
        Some(_) => return Shape::No,
    }
    i += 1;
    let url_start = i;
    loop {
        match b.get(i) {
            None => return Shape::Open,
            Some(b')') => break,
            Some(c) if c.is_ascii_whitespace() => return Shape::No,
            Some(_) => {}
        }
        i += 1;
        if i - url_start > MAX_URL {
            return Shape::No;
        }
    }
    if i == url_start {
        return Shape::No;
    }
    Shape::Complete(i + 1)
}

/// The first link at or after `from` that is complete or may still become one: its start (the
/// `[`, or the `(` right before it) and, when complete, its end (after the `)`, and after a
/// second `)` that closes the opening one). Text before the start cannot be part of a link.
pub(crate) fn first_candidate(text: &str, from: usize) -> Option<(usize, Option<usize>)> {
    let mut i = from;
    while let Some(off) = memchr::memchr(b'[', &text.as_bytes()[i..]) {
        let at = i + off;
        let wrapped = at > from && text.as_bytes()[at - 1] == b'(';
        let start = if wrapped { at - 1 } else { at };
        match shape_at(text, at) {
            Shape::No => i = at + 1,
            Shape::Open => return Some((start, None)),
            Shape::Complete(end) if wrapped => match text.as_bytes().get(end) {
                Some(b')') => return Some((start, Some(end + 1))),
                // The closing parenthesis may still come.
                None => return Some((start, None)),
                Some(_) => return Some((start, Some(end))),
            },
            Shape::Complete(end) => return Some((start, Some(end))),
        }
    }
    // A `(` that ends the text may open a wrapped link: `([site](url))`.
    (text.len() > from && text.ends_with('(')).then(|| (text.len() - 1, None))
}

/// The url of `span` when it is exactly one inline link, optionally wrapped in parentheses.
pub(crate) fn link_url(span: &str) -> Option<&str> {
    let inner = match span.strip_prefix('(') {
        Some(rest) => rest.strip_suffix(')')?,
        None => span,
    };
    if !inner.starts_with('[') {
        return None;
    }
    match shape_at(inner, 0) {
        Shape::Complete(end) if end == inner.len() => {
            let open = inner.find("](")?;
            Some(&inner[open + 2..inner.len() - 1])
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_their_prefixes_are_candidates() {
        assert_eq!(
            first_candidate("see ([a.com](https://a.com/x)) ok", 0),
            Some((4, Some(30)))
        );
        assert_eq!(first_candidate("see ([a](u)", 0), Some((4, None)));
        assert_eq!(first_candidate("see [a.c", 0), Some((4, None)));
        assert_eq!(first_candidate("see [a](", 0), Some((4, None)));
        assert_eq!(first_candidate("a [1] b [x] (y)", 0), None);
        assert_eq!(first_candidate("[a] [b](u", 0), Some((4, None)));
        assert_eq!(first_candidate("list [\n] end", 0), None);
        assert_eq!(first_candidate("see (", 0), Some((4, None)));
        assert_eq!(first_candidate("see (x", 0), None);
    }

    #[test]
    fn a_span_that_is_one_link_gives_its_url() {
        assert_eq!(
            link_url("([a.com](https://a.com/x))"),
            Some("https://a.com/x")
        );
        assert_eq!(
            link_url("[Straits Times](https://st.com/a)"),
            Some("https://st.com/a")
        );
        assert_eq!(link_url("text [a](u)"), None);
        assert_eq!(link_url("[a](u) and more"), None);
    }
}
