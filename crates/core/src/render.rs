//! Rendering the final source list as text, markdown, HTML or JSON.

use crate::event::ListedSource;
#[cfg(feature = "serde")]
use crate::names;
use crate::source::{Round, Source};
use crate::style::{escape_html, link_url};

/// The format of a rendered source list.
///
/// Named by its serde name: `text`, `markdown`, `footnotes`, `html` or `json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum ListFormat {
    /// `[1] Title <https://…>`, one line a source (what a terminal shows).
    Text,
    /// A markdown list: `1. [Title](https://…)`; footnote definitions for the footnote style.
    Markdown,
    /// Markdown footnote definitions: `[^1]: [Title](https://…)`.
    Footnotes,
    /// An HTML `<ol>` whose items have ids `cite-N`.
    Html,
    /// A JSON array of listed sources.
    #[cfg(feature = "serde")]
    Json,
}

/// Renders `list`. With `rounds`, sources are grouped under each round's query (markdown,
/// text and HTML).
pub fn render_list(list: &[ListedSource], format: ListFormat, rounds: Option<&[Round]>) -> String {
    #[cfg(feature = "serde")]
    if format == ListFormat::Json {
        return serde_json::to_string(list).unwrap_or_else(|_| "[]".to_owned());
    }
    let mut out = String::new();
    let groups: Vec<(Option<&Round>, Vec<&ListedSource>)> = match rounds {
        Some(rounds) if !rounds.is_empty() => {
            let mut g: Vec<(Option<&Round>, Vec<&ListedSource>)> =
                rounds.iter().map(|r| (Some(r), Vec::new())).collect();
            let mut other = Vec::new();
            for l in list {
                match l
                    .round
                    .and_then(|n| g.iter_mut().find(|(r, _)| r.is_some_and(|r| r.number == n)))
                {
                    Some((_, v)) => v.push(l),
                    None => other.push(l),
                }
            }
            g.retain(|(_, v)| !v.is_empty());
            if !other.is_empty() {
                g.push((None, other));
            }
            g
        }
        _ => vec![(None, list.iter().collect())],
    };
    let grouped = groups.len() > 1 || groups.first().is_some_and(|(r, _)| r.is_some());
    if format == ListFormat::Html {
        out.push_str("<div class=\"citeflow-sources\">\n");
    }
    for (round, items) in groups {
        if grouped {
            let head = match round {
                Some(r) => match &r.query {
                    Some(q) => format!("Round {}: {}", r.number, q),
                    None => format!("Round {}", r.number),
                },
                None => "Other".to_owned(),
            };
            match format {
                ListFormat::Html => {
                    out.push_str(&format!("<h4>{}</h4>\n", escape_html(&head)));
                }
                ListFormat::Markdown | ListFormat::Footnotes => {
                    out.push_str(&format!("**{head}**\n\n"));
                }
                _ => out.push_str(&format!("{head}\n")),
            }
        }
        if format == ListFormat::Html {
            out.push_str("<ol>\n");
        }
        for l in items {
            render_item(l, format, &mut out);
        }
        match format {
            ListFormat::Html => out.push_str("</ol>\n"),
            _ if grouped => out.push('\n'),
            _ => {}
        }
    }
    if format == ListFormat::Html {
        out.push_str("</div>\n");
    }
    out
}

fn locator_text(s: &Source) -> String {
    let Some(loc) = &s.locator else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(t) = &loc.chapter_title {
        parts.push(format!("chapter: {t}"));
    } else if let Some(i) = loc.chapter_index {
        parts.push(format!("chapter {i}"));
    }
    if let Some(p) = &loc.page {
        parts.push(format!("page {p}"));
    }
    if let Some(c) = &loc.cfi {
        parts.push(format!("CFI: {c}"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// The longest quote a list shows, in characters (the anchor event has it whole).
const LIST_QUOTE_CHARS: usize = 300;

/// Each distinct quote of the item's anchors under its line, with the verdict and score:
/// weak and unsupported citations are marked so a reader sees them.
fn render_anchors(l: &ListedSource, format: ListFormat, out: &mut String) {
    let mut seen: Vec<(Option<&str>, crate::anchor::Verdict)> = Vec::new();
    for a in &l.anchors {
        let quote = a.quote.as_ref().map(|q| q.text.as_str());
        if seen.contains(&(quote, a.verdict)) {
            continue;
        }
        seen.push((quote, a.verdict));
        let mark = format!("{} {:.2}", a.verdict.as_str(), a.support.value());
        let shown = quote.map(|q| {
            let flat: String = q.split_whitespace().collect::<Vec<_>>().join(" ");
            match flat.char_indices().nth(LIST_QUOTE_CHARS) {
                Some((i, _)) => format!("{}…", &flat[..i]),
                None => flat,
            }
        });
        match (format, shown) {
            (ListFormat::Text, Some(q)) => out.push_str(&format!("    \"{q}\" ({mark})\n")),
            (ListFormat::Text, None) => {
                out.push_str(&format!("    (no sentence of this source matches the claim: {mark})\n"))
            }
            (ListFormat::Markdown | ListFormat::Footnotes, Some(q)) => {
                out.push_str(&format!("    > {q} *({mark})*\n"))
            }
            (ListFormat::Markdown | ListFormat::Footnotes, None) => {
                out.push_str(&format!("    > *(no sentence of this source matches the claim: {mark})*\n"))
            }
            (ListFormat::Html, q) => out.push_str(&format!(
                "<blockquote class=\"citeflow-quote\" data-cite=\"{}\" data-verdict=\"{}\">{}</blockquote>\n",
                l.number,
                a.verdict.as_str(),
                escape_html(&q.unwrap_or_else(|| format!("({mark})")))
            )),
            #[cfg(feature = "serde")]
            (ListFormat::Json, _) => {}
        }
    }
}

fn render_item(l: &ListedSource, format: ListFormat, out: &mut String) {
    render_item_line(l, format, out);
    if !l.anchors.is_empty() {
        render_anchors(l, format, out);
    }
}

fn render_item_line(l: &ListedSource, format: ListFormat, out: &mut String) {
    let s = &l.source;
    let loc = locator_text(s);
    let n = l.number;
    // Links only to http(s) and relative urls (see `link_url`); a plain-text list shows the
    // url as it is.
    let url = match format {
        ListFormat::Text => s.url.clone(),
        _ => s.url.as_deref().and_then(link_url),
    };
    let url = url.as_deref();
    let Some(title) = s
        .title
        .as_deref()
        .or(url.is_none().then_some(s.id.as_str()))
    else {
        // Only a url: show it once.
        let u = url.unwrap_or_default();
        match format {
            ListFormat::Text => out.push_str(&format!("[{n}] <{u}>{loc}\n")),
            ListFormat::Markdown => out.push_str(&format!("{n}. <{u}>{loc}\n")),
            ListFormat::Footnotes => out.push_str(&format!("[^{n}]: <{u}>{loc}\n")),
            ListFormat::Html => out.push_str(&format!(
                "<li id=\"cite-{n}\" value=\"{n}\"><a href=\"{0}\">{0}</a>{1}</li>\n",
                escape_html(u),
                escape_html(&loc)
            )),
            #[cfg(feature = "serde")]
            ListFormat::Json => {}
        }
        return;
    };
    match (format, url) {
        (ListFormat::Text, Some(u)) => out.push_str(&format!("[{n}] {title} <{u}>{loc}\n")),
        (ListFormat::Text, None) => out.push_str(&format!("[{n}] {title}{loc}\n")),
        (ListFormat::Markdown, Some(u)) => out.push_str(&format!("{n}. [{title}]({u}){loc}\n")),
        (ListFormat::Markdown, None) => out.push_str(&format!("{n}. {title}{loc}\n")),
        (ListFormat::Footnotes, Some(u)) => out.push_str(&format!("[^{n}]: [{title}]({u}){loc}\n")),
        (ListFormat::Footnotes, None) => out.push_str(&format!("[^{n}]: {title}{loc}\n")),
        (ListFormat::Html, url) => {
            let title = escape_html(title);
            let body = match url {
                Some(u) => format!("<a href=\"{}\">{title}</a>", escape_html(u)),
                None => title,
            };
            out.push_str(&format!(
                "<li id=\"cite-{n}\" value=\"{n}\">{body}{}</li>\n",
                escape_html(&loc)
            ));
        }
        #[cfg(feature = "serde")]
        (ListFormat::Json, _) => {}
    }
}

#[cfg(feature = "serde")]
names::by_serde_name!(ListFormat => "list format");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Locator;

    fn listed(n: u32, round: u32) -> ListedSource {
        ListedSource {
            anchors: Vec::new(),
            number: n,
            source: Source::new(format!("s{n}"))
                .with_title(format!("T<{n}>"))
                .with_url(format!("https://e.x/{n}")),
            round: Some(round),
            citations: 1,
        }
    }

    #[test]
    fn text_list_shows_locator() {
        let mut l = listed(1, 1);
        l.source = l.source.with_locator(Locator {
            chapter_title: Some("Down the Rabbit-Hole".into()),
            cfi: Some("epubcfi(/6/4!/4/2/1:0)".into()),
            ..Locator::default()
        });
        assert_eq!(
            render_list(&[l], ListFormat::Text, None),
            "[1] T<1> <https://e.x/1> (chapter: Down the Rabbit-Hole, CFI: epubcfi(/6/4!/4/2/1:0))\n"
        );
    }

    #[test]
    fn markdown_groups_by_round() {
        let rounds = [
            Round {
                number: 1,
                query: Some("q one".into()),
                source_ids: vec![],
            },
            Round {
                number: 2,
                query: Some("q two".into()),
                source_ids: vec![],
            },
        ];
        let got = render_list(
            &[listed(1, 2), listed(2, 1)],
            ListFormat::Markdown,
            Some(&rounds),
        );
        assert_eq!(
            got,
            "**Round 1: q one**\n\n2. [T<2>](https://e.x/2)\n\n**Round 2: q two**\n\n1. [T<1>](https://e.x/1)\n\n"
        );
    }

    #[test]
    fn lists_link_only_safe_urls() {
        let mut l = listed(4, 1);
        l.source.url = Some("javascript:alert(1)".into());
        for (format, want) in [
            (ListFormat::Markdown, "4. T<4>\n"),
            (ListFormat::Footnotes, "[^4]: T<4>\n"),
            (
                ListFormat::Html,
                "<li id=\"cite-4\" value=\"4\">T&lt;4&gt;</li>\n",
            ),
        ] {
            let got = render_list(&[l.clone()], format, None);
            assert!(
                got.contains(want) && !got.contains("javascript"),
                "{format:?}: {got}"
            );
        }
        l.source.title = None;
        let md = render_list(&[l.clone()], ListFormat::Markdown, None);
        assert_eq!(md, "4. s4\n");
        l.source.url = Some("https://e.x/\"a b".into());
        let html = render_list(&[l], ListFormat::Html, None);
        assert!(
            html.contains("href=\"https://e.x/%22a%20b\">https://e.x/%22a%20b</a>"),
            "{html}"
        );
    }

    #[test]
    fn html_escapes() {
        let got = render_list(&[listed(3, 1)], ListFormat::Html, None);
        assert!(
            got.contains(
                "<li id=\"cite-3\" value=\"3\"><a href=\"https://e.x/3\">T&lt;3&gt;</a></li>"
            ),
            "{got}"
        );
    }
}
