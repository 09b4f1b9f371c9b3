//! Entity declarations of a DTD's internal subset, and inlining them for
//! the strict parser used on the package document (whose own expansion has
//! no budget and takes quadratic time).

use std::borrow::Cow;
use std::collections::HashMap;

use super::XmlLimits;
use crate::ParseError;

/// The end (one past `>`) of the `<!…>` declaration at `start`, and the
/// byte range of its internal subset (`[…]`) if it has one; `None` when it
/// is not terminated.
pub(crate) fn declaration_end(s: &str, start: usize) -> Option<(usize, Option<(usize, usize)>)> {
    let b = s.as_bytes();
    let mut i = start + 2;
    let mut bracket = 0usize;
    let mut subset_start = None;
    let mut subset_end = None;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
            }
            b'[' => {
                if bracket == 0 {
                    subset_start = Some(i + 1);
                }
                bracket += 1;
            }
            b']' => {
                bracket = bracket.saturating_sub(1);
                if bracket == 0 {
                    subset_end = Some(i);
                }
            }
            b'>' if bracket == 0 => {
                let subset = subset_start.zip(subset_end).filter(|(a, z)| a <= z);
                return Some((i + 1, subset));
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// General entities declared with a literal value in an internal subset,
/// in order (parameter and external entities are skipped, never fetched).
pub(crate) fn entity_decls(subset: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = subset;
    while let Some(p) = rest.find("<!ENTITY") {
        rest = &rest[p + 8..];
        let body = rest.trim_start();
        if body.starts_with('%') {
            continue;
        }
        let name_end = body.find(|c: char| c.is_whitespace()).unwrap_or(body.len());
        let name = &body[..name_end];
        let after = body[name_end..].trim_start();
        let Some(q) = after.chars().next().filter(|&c| c == '"' || c == '\'') else {
            continue;
        };
        if let Some(e) = after[1..].find(q) {
            out.push((name.to_owned(), after[1..1 + e].to_owned()));
        }
    }
    out
}

/// Prepares a document for a strict XML parser (`roxmltree`), which expands
/// entities with no budget and in quadratic time: replaces references to
/// entities declared in the internal subset by their values (one level, as
/// [`Dom`] does) and removes the DOCTYPE. The text is borrowed unchanged
/// when it declares no entities.
///
/// # Errors
///
/// [`ParseError::EntityExpansion`] (or the book variant) past the entity
/// budgets of `limits`.
pub(crate) fn inline_entities<'t>(
    text: &'t str,
    limits: &XmlLimits,
) -> Result<Cow<'t, str>, ParseError> {
    let Some(start) = text.find("<!DOCTYPE") else {
        return Ok(Cow::Borrowed(text));
    };
    let Some((end, Some((a, z)))) = declaration_end(text, start) else {
        return Ok(Cow::Borrowed(text));
    };
    let mut decls: HashMap<String, String> = HashMap::new();
    for (name, value) in entity_decls(&text[a..z]) {
        decls.entry(name).or_insert(value);
    }
    if decls.is_empty() {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..start]);
    let mut used = 0u64;
    let mut rest = &text[end..];
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let semi = rest.as_bytes()[1..]
            .iter()
            .take(40)
            .position(|&c| c == b';')
            .map(|p| p + 1);
        let value = semi.and_then(|semi| {
            let name = &rest[1..semi];
            let predefined = matches!(name, "lt" | "gt" | "amp" | "quot" | "apos");
            decls.get(name).filter(|_| !predefined).map(|v| (v, semi))
        });
        match value {
            Some((v, semi)) => {
                used = used.saturating_add(v.len() as u64);
                let line = || {
                    let pos = text.len() - rest.len();
                    1 + text.as_bytes()[..pos]
                        .iter()
                        .filter(|&&c| c == b'\n')
                        .count()
                };
                if used > limits.entity_bytes {
                    return Err(ParseError::EntityExpansion {
                        line: line(),
                        limit: limits.entity_bytes,
                    });
                }
                if let Some((left, limit)) = limits.book_entity {
                    if used > left {
                        return Err(ParseError::BookEntityExpansion {
                            line: line(),
                            limit,
                        });
                    }
                }
                out.push_str(v);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Ok(Cow::Owned(out))
}
