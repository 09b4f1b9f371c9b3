//! How a citation number is written into the text.

use crate::error::SettingsError;
use crate::source::Source;

/// The rendering style of a number in the text.
///
/// ### Default
/// [`Style::Brackets`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Style {
    /// `[1]`.
    #[default]
    Brackets,
    /// A markdown link to the source: `[[1]](https://…)` (`[1]` when the source has no url).
    MarkdownLink,
    /// Full-width `【1】`.
    FullWidth,
    /// `<sup><a href="https://…">1</a></sup>` (the link goes to `#cite-1` without a url).
    Html,
    /// A markdown footnote reference `[^1]`.
    Footnote,
    /// A template: `{n}`, `{id}`, `{url}` and `{title}` are replaced (`{{` and `}}` are braces).
    Template(String),
}

impl Style {
    /// Parses `brackets`, `markdown`, `fullwidth`, `html`, `footnote`, or `template:<text>`.
    ///
    /// # Errors
    /// [`SettingsError::UnknownName`] for anything else.
    pub fn from_name(name: &str) -> Result<Self, SettingsError> {
        if let Some(t) = name.strip_prefix("template:") {
            return Ok(Style::Template(t.to_owned()));
        }
        match name {
            "brackets" => Ok(Style::Brackets),
            "markdown" | "markdown_link" => Ok(Style::MarkdownLink),
            "fullwidth" | "full_width" => Ok(Style::FullWidth),
            "html" => Ok(Style::Html),
            "footnote" => Ok(Style::Footnote),
            _ => Err(SettingsError::UnknownName {
                what: "style",
                value: name.to_owned(),
            }),
        }
    }

    /// Appends the rendering of `number` for `source` to `out`.
    pub fn render_number(&self, number: u32, source: &Source, out: &mut String) {
        use std::fmt::Write;
        let url = source.url.as_deref().unwrap_or("");
        // Writing to a String cannot fail.
        let _ = match self {
            Style::Brackets => {
                out.push('[');
                push_number(out, number);
                out.push(']');
                Ok(())
            }
            Style::MarkdownLink if url.is_empty() => write!(out, "[{number}]"),
            Style::MarkdownLink => write!(out, "[[{number}]]({})", url.replace(' ', "%20")),
            Style::FullWidth => write!(out, "【{number}】"),
            Style::Html if url.is_empty() => write!(
                out,
                "<sup class=\"citeflow-cite\"><a href=\"#cite-{number}\">{number}</a></sup>"
            ),
            Style::Html => write!(
                out,
                "<sup class=\"citeflow-cite\"><a href=\"{}\">{number}</a></sup>",
                escape_html(url)
            ),
            Style::Footnote => write!(out, "[^{number}]"),
            Style::Template(t) => {
                fill_template(
                    t,
                    &number.to_string(),
                    &source.id,
                    url,
                    source.title.as_deref().unwrap_or(""),
                    out,
                );
                Ok(())
            }
        };
    }

    /// Appends the mark for an unresolved citation (`[?]` in this style's brackets) to `out`.
    pub fn render_unresolved(&self, out: &mut String) {
        match self {
            Style::Brackets | Style::MarkdownLink => out.push_str("[?]"),
            Style::Footnote => out.push_str("[^?]"),
            Style::FullWidth => out.push_str("【?】"),
            Style::Html => out.push_str("<sup class=\"citeflow-unresolved\">?</sup>"),
            Style::Template(t) => fill_template(t, "?", "", "", "", out),
        }
    }
}

/// Appends the decimal digits of `n` without going through the formatter.
fn push_number(out: &mut String, mut n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        out.push(char::from(d));
    }
}

fn fill_template(t: &str, n: &str, id: &str, url: &str, title: &str, out: &mut String) {
    let mut rest = t;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let (put, len) = if rest.starts_with("{{") {
            ("{", 2)
        } else if rest.starts_with("}}") {
            ("}", 2)
        } else if rest.starts_with("{n}") {
            (n, 3)
        } else if rest.starts_with("{id}") {
            (id, 4)
        } else if rest.starts_with("{url}") {
            (url, 5)
        } else if rest.starts_with("{title}") {
            (title, 7)
        } else {
            (&rest[..1], 1)
        };
        out.push_str(put);
        rest = &rest[len..];
    }
    out.push_str(rest);
}

/// Escapes `&`, `<`, `>`, `"` and `'` for HTML text and attributes.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_replaces_fields_and_braces() {
        let s = Source::new("source_3")
            .with_title("T")
            .with_url("https://x");
        let mut out = String::new();
        Style::Template("{{<{n}|{id}|{url}|{title}|{x}>}}".into()).render_number(4, &s, &mut out);
        assert_eq!(out, "{<4|source_3|https://x|T|{x}>}");
    }

    #[test]
    fn every_style_renders() {
        let s = Source::new("a").with_url("https://e.x/a b");
        let cases = [
            (Style::Brackets, "[2]"),
            (Style::MarkdownLink, "[[2]](https://e.x/a%20b)"),
            (Style::FullWidth, "【2】"),
            (
                Style::Html,
                "<sup class=\"citeflow-cite\"><a href=\"https://e.x/a b\">2</a></sup>",
            ),
            (Style::Footnote, "[^2]"),
        ];
        for (style, want) in cases {
            let mut out = String::new();
            style.render_number(2, &s, &mut out);
            assert_eq!(out, want, "{style:?}");
        }
    }
}
