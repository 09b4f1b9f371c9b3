//! How a citation number is written into the text.

use crate::error::SettingsError;
#[cfg(feature = "serde")]
use crate::names;
use crate::source::Source;

/// The longest template ([`Style::Template`], [`Style::HtmlTemplate`]) a [`Settings`](crate::Settings) takes,
/// in bytes: [`FromStr`](core::str::FromStr) and deserialisation refuse a longer one with
/// [`SettingsError::TemplateTooLong`], and one built directly renders as `[n]`. With the
/// per-source limits on titles and urls this bounds what one citation renders to.
pub const MAX_TEMPLATE_BYTES: usize = 1024;

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
    /// A markdown link to the source: `[[1]](https://…)` (`[1]` when the source has no url, or
    /// a url that is not http(s) or relative: see [`link_url`]). Also named `markdown`.
    #[cfg_attr(feature = "serde", serde(alias = "markdown"))]
    MarkdownLink,
    /// Full-width `【1】`. Also named `fullwidth`.
    #[cfg_attr(feature = "serde", serde(alias = "fullwidth"))]
    FullWidth,
    /// `<sup><a href="https://…">1</a></sup>` (the link goes to `#cite-1` without a url, or
    /// with a url that is not http(s) or relative: see [`link_url`]). The url is escaped for
    /// the attribute.
    Html,
    /// A markdown footnote reference `[^1]`.
    Footnote,
    /// A template: `{n}`, `{id}`, `{url}` and `{title}` are replaced (`{{` and `}}` are braces).
    /// `{number}` is the same as `{n}` (command-line help cannot show `{n}`: clap prints it as
    /// a line break).
    ///
    /// `{url}` is the source's url filtered by [`link_url`] (`#cite-<n>` when it is not http(s)
    /// or relative), with quotes, angle brackets, spaces and parentheses percent-encoded, so it
    /// cannot end an attribute or a markdown link. `{id}` and `{title}` are inserted as they
    /// are: use [`Style::HtmlTemplate`] for a template that produces HTML. A template longer
    /// than [`MAX_TEMPLATE_BYTES`] is refused by [`FromStr`](core::str::FromStr) and by
    /// deserialisation;
    /// one built directly renders as [`Style::Brackets`].
    Template(String),
    /// A template that produces HTML: as [`Style::Template`], and `{id}`, `{title}` and
    /// `{url}` are HTML-escaped.
    HtmlTemplate(String),
    /// Markers are taken out of the text; citations are still tracked and reported (events,
    /// list, report). The spaces around a removed marker are repaired: `Text [1].` →
    /// `Text.`, `a [1] b` → `a b`; text without spaces (CJK) is left as it is. Unresolved
    /// markers are removed too, unless the unknown policy is
    /// [`UnknownPolicy::Keep`](crate::UnknownPolicy::Keep).
    Remove,
    /// Resolved markers stay exactly as the model wrote them (`[1, 2]`, `【1】`, `[[1]]`);
    /// citations are tracked and reported as usual. A marker none of whose citations resolve
    /// follows the unknown policy. [`Style::render_number`] alone, which does not know the
    /// marker, writes `[n]`. Also named `as-written`.
    #[cfg_attr(feature = "serde", serde(alias = "as-written"))]
    AsWritten,
}

impl Style {
    /// This style, or [`SettingsError::TemplateTooLong`] for a template over
    /// [`MAX_TEMPLATE_BYTES`].
    pub(crate) fn checked(self) -> Result<Self, SettingsError> {
        match &self {
            Style::Template(t) | Style::HtmlTemplate(t) if t.len() > MAX_TEMPLATE_BYTES => {
                Err(SettingsError::TemplateTooLong {
                    bytes: t.len(),
                    max: MAX_TEMPLATE_BYTES,
                })
            }
            _ => Ok(self),
        }
    }

    /// Appends the rendering of `number` for `source` to `out`.
    pub fn render_number(&self, number: u32, source: &Source, out: &mut String) {
        use std::fmt::Write;
        // Checked and copied only by the styles that link (most render a bare number).
        let url = || source.url.as_deref().and_then(link_url);
        // Writing to a String cannot fail.
        let _ = match self {
            Style::Brackets | Style::AsWritten => {
                out.push('[');
                push_number(out, number);
                out.push(']');
                Ok(())
            }
            Style::Remove => Ok(()),
            Style::MarkdownLink => match url() {
                Some(url) => write!(out, "[[{number}]]({url})"),
                None => write!(out, "[{number}]"),
            },
            Style::FullWidth => write!(out, "【{number}】"),
            Style::Html => match url() {
                Some(url) => write!(
                    out,
                    "<sup class=\"citeflow-cite\"><a href=\"{}\">{number}</a></sup>",
                    escape_html(&url)
                ),
                None => write!(
                    out,
                    "<sup class=\"citeflow-cite\"><a href=\"#cite-{number}\">{number}</a></sup>"
                ),
            },
            Style::Footnote => write!(out, "[^{number}]"),
            Style::Template(t) | Style::HtmlTemplate(t) if t.len() > MAX_TEMPLATE_BYTES => {
                Style::Brackets.render_number(number, source, out);
                Ok(())
            }
            Style::Template(t) | Style::HtmlTemplate(t) => {
                let html = matches!(self, Style::HtmlTemplate(_));
                let url = url().unwrap_or_else(|| format!("#cite-{number}"));
                let title = source.title.as_deref().unwrap_or("");
                let (id, title, url) = if html {
                    (
                        escape_html(&source.id),
                        escape_html(title),
                        escape_html(&url),
                    )
                } else {
                    (source.id.clone(), title.to_owned(), url)
                };
                fill_template(t, &number.to_string(), &id, &url, &title, out);
                Ok(())
            }
        };
    }

    /// Appends the mark for an unresolved citation (`[?]` in this style's brackets) to `out`.
    pub fn render_unresolved(&self, out: &mut String) {
        match self {
            Style::Brackets | Style::MarkdownLink | Style::AsWritten => out.push_str("[?]"),
            Style::Remove => {}
            Style::Footnote => out.push_str("[^?]"),
            Style::FullWidth => out.push_str("【?】"),
            Style::Html => out.push_str("<sup class=\"citeflow-unresolved\">?</sup>"),
            Style::Template(t) | Style::HtmlTemplate(t) if t.len() > MAX_TEMPLATE_BYTES => {
                out.push_str("[?]");
            }
            Style::Template(t) | Style::HtmlTemplate(t) => fill_template(t, "?", "", "", "", out),
        }
    }
}

/// The url as it may stand in a generated link, or `None` when it must not be linked.
///
/// Allowed: absolute `http:` and `https:` urls (scheme in any case) and relative urls (`/a`,
/// `#x`, `?q`, `./a`, `a/b`; a relative url starting with a letter must have no `:` or `&`
/// in its first segment, so that neither a scheme nor an entity such as `&colon;` can hide
/// in it). Refused: every other scheme (`javascript:`, `data:`, `vbscript:`, `file:`, …),
/// urls with control characters, and urls starting with anything else. Leading and trailing
/// whitespace is dropped. In the result, space, `"`, `'`, `<`, `>`, `` ` ``, `(`, `)` and
/// `\` are percent-encoded, so it cannot end an attribute or a markdown link.
pub fn link_url(url: &str) -> Option<String> {
    let u = url.trim_matches(|c: char| c.is_ascii_whitespace() || c.is_control());
    if u.is_empty() || u.chars().any(char::is_control) {
        return None;
    }
    let first_segment_end = u.find(['/', '?', '#']).unwrap_or(u.len());
    let first_segment = &u[..first_segment_end];
    let allowed = match first_segment.find(':') {
        Some(colon) => {
            let scheme = &first_segment[..colon];
            scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
        }
        None => match u.as_bytes()[0] {
            b'/' | b'#' | b'?' | b'.' => true,
            b if b.is_ascii_alphanumeric() => !first_segment.contains('&'),
            _ => false,
        },
    };
    if !allowed {
        return None;
    }
    let mut out = String::with_capacity(u.len());
    for c in u.chars() {
        match c {
            ' ' => out.push_str("%20"),
            '"' => out.push_str("%22"),
            '\'' => out.push_str("%27"),
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            '`' => out.push_str("%60"),
            '(' => out.push_str("%28"),
            ')' => out.push_str("%29"),
            '\\' => out.push_str("%5C"),
            c => out.push(c),
        }
    }
    Some(out)
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
        } else if rest.starts_with("{number}") {
            (n, 8)
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

/// Parses a style by name: the serde name of a style without a template (`brackets`,
/// `markdown_link` or `markdown`, `full_width` or `fullwidth`, `html`, `footnote`, `remove`,
/// `as_written` or `as-written`), `template:<text>` or `html_template:<text>`.
///
/// # Errors
/// [`SettingsError::UnknownName`] for anything else; [`SettingsError::TemplateTooLong`] for a
/// template over [`MAX_TEMPLATE_BYTES`].
#[cfg(feature = "serde")]
impl core::str::FromStr for Style {
    type Err = SettingsError;

    fn from_str(name: &str) -> Result<Self, SettingsError> {
        if let Some(t) = name.strip_prefix("template:") {
            return Style::Template(t.to_owned()).checked();
        }
        if let Some(t) = name.strip_prefix("html_template:") {
            return Style::HtmlTemplate(t.to_owned()).checked();
        }
        names::parse("style", name)
    }
}

/// The name [`FromStr`](core::str::FromStr) reads back: the serde name of a style without a
/// template, `template:<text>` or `html_template:<text>`.
#[cfg(feature = "serde")]
impl core::fmt::Display for Style {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Style::Template(t) => write!(f, "template:{t}"),
            Style::HtmlTemplate(t) => write!(f, "html_template:{t}"),
            unit => f.write_str(names::name_of(unit).unwrap_or_default()),
        }
    }
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
        out.clear();
        Style::Template("[{number}]{{number}}{num}".into()).render_number(12, &s, &mut out);
        assert_eq!(out, "[12]{number}{num}");
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
                "<sup class=\"citeflow-cite\"><a href=\"https://e.x/a%20b\">2</a></sup>",
            ),
            (Style::Footnote, "[^2]"),
        ];
        for (style, want) in cases {
            let mut out = String::new();
            style.render_number(2, &s, &mut out);
            assert_eq!(out, want, "{style:?}");
        }
    }

    #[test]
    fn link_url_allows_http_and_relative_only() {
        for ok in [
            "https://e.x/a",
            "HTTP://e.x",
            "  https://e.x/  ",
            "/wiki/Paris",
            "//e.x/a",
            "#cite-1",
            "?q=1&r=2",
            "./a:b",
            "docs/a.html",
            "https://e.x/?a=1&b=2",
        ] {
            assert!(link_url(ok).is_some(), "{ok:?} refused");
        }
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            " javascript:alert(1)",
            "java\tscript:alert(1)",
            "java\nscript:alert(1)",
            "\u{1}javascript:alert(1)",
            "data:text/html,<script>",
            "vbscript:x",
            "file:///etc/passwd",
            "mailto:a@e.x",
            "javascript&colon;alert(1)",
            "&#106;avascript:alert(1)",
            "\\\\e.x\\a",
            "",
            "   ",
        ] {
            assert_eq!(link_url(bad), None, "{bad:?} allowed");
        }
        assert_eq!(
            link_url("https://e.x/a b\"c'd<e>f`g(h)i\\j").as_deref(),
            Some("https://e.x/a%20b%22c%27d%3Ce%3Ef%60g%28h%29i%5Cj")
        );
    }

    fn render(style: &Style, source: &Source) -> String {
        let mut out = String::new();
        style.render_number(3, source, &mut out);
        out
    }

    #[test]
    fn unsafe_urls_are_not_linked_in_any_style() {
        let s = Source::new("a")
            .with_url("javascript:alert(1)")
            .with_title("T");
        let cases = [
            (Style::Brackets, "[3]"),
            (Style::MarkdownLink, "[3]"),
            (Style::FullWidth, "【3】"),
            (
                Style::Html,
                "<sup class=\"citeflow-cite\"><a href=\"#cite-3\">3</a></sup>",
            ),
            (Style::Footnote, "[^3]"),
            (
                Style::Template("<a href=\"{url}\">{n}</a>".into()),
                "<a href=\"#cite-3\">3</a>",
            ),
            (
                Style::HtmlTemplate("<a href=\"{url}\">{n}</a>".into()),
                "<a href=\"#cite-3\">3</a>",
            ),
        ];
        for (style, want) in cases {
            assert_eq!(render(&style, &s), want, "{style:?}");
        }
    }

    #[test]
    fn quotes_in_urls_and_titles_cannot_break_out() {
        let s = Source::new("x\"><b>")
            .with_url("https://e.x/\" onmouseover=\"alert(1)")
            .with_title("<script>alert('t')</script> & \"q\"");
        assert_eq!(
            render(&Style::Html, &s),
            "<sup class=\"citeflow-cite\"><a href=\"https://e.x/%22%20onmouseover=%22alert%281%29\">3</a></sup>"
        );
        assert_eq!(
            render(&Style::MarkdownLink, &s),
            "[[3]](https://e.x/%22%20onmouseover=%22alert%281%29)"
        );
        let t = "<a href=\"{url}\" title=\"{title}\" data-id=\"{id}\">{n}</a>";
        assert_eq!(
            render(&Style::HtmlTemplate(t.into()), &s),
            "<a href=\"https://e.x/%22%20onmouseover=%22alert%281%29\" title=\"&lt;script&gt;alert(&#39;t&#39;)&lt;/script&gt; &amp; &quot;q&quot;\" data-id=\"x&quot;&gt;&lt;b&gt;\">3</a>"
        );
        // A plain template inserts the title as it is, but the url stays inside its quotes.
        let plain = render(&Style::Template("<a href=\"{url}\">{title}</a>".into()), &s);
        assert!(
            plain.starts_with("<a href=\"https://e.x/%22%20onmouseover=%22alert%281%29\">"),
            "{plain}"
        );
        let mut amp = Source::new("a").with_url("https://e.x/?a=1&b=2");
        assert_eq!(
            render(&Style::Html, &amp),
            "<sup class=\"citeflow-cite\"><a href=\"https://e.x/?a=1&amp;b=2\">3</a></sup>"
        );
        amp.url = None;
        assert_eq!(render(&Style::MarkdownLink, &amp), "[3]");
    }

    #[cfg(feature = "serde")]
    #[test]
    fn templates_are_capped() {
        let long = "x".repeat(MAX_TEMPLATE_BYTES + 1);
        assert_eq!(
            format!("template:{long}").parse::<Style>(),
            Err(SettingsError::TemplateTooLong {
                bytes: MAX_TEMPLATE_BYTES + 1,
                max: MAX_TEMPLATE_BYTES
            })
        );
        assert!(format!("html_template:{long}").parse::<Style>().is_err());
        let at_cap = "x".repeat(MAX_TEMPLATE_BYTES);
        assert_eq!(
            format!("template:{at_cap}").parse::<Style>(),
            Ok(Style::Template(at_cap))
        );
        // Built directly, an over-long template renders as brackets.
        assert_eq!(render(&Style::Template(long), &Source::new("a")), "[3]");
    }

    #[cfg(feature = "serde")]
    #[test]
    fn deserialised_settings_refuse_long_templates() {
        let long = "x".repeat(MAX_TEMPLATE_BYTES + 1);
        let json = format!("{{\"style\": {{\"template\": \"{long}\"}}}}");
        let err = serde_json::from_str::<crate::Settings>(&json).unwrap_err();
        assert!(err.to_string().contains("longer than the limit"), "{err}");
        let ok: crate::Settings =
            serde_json::from_str("{\"style\": {\"html_template\": \"<i>{n}</i>\"}}").unwrap();
        assert_eq!(ok.style(), &Style::HtmlTemplate("<i>{n}</i>".into()));
    }
}
