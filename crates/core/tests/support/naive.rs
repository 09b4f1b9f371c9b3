//! A naive whole-string oracle, written apart from the streaming scanner: it masks code with a
//! line pass, then tries anchored regular expressions at every position, left to right.
//! It renders numbers in the `[n]` style with the `[?]` policy and a fresh numbering.

use std::collections::HashMap;

use citeflow_core::{RankMode, Settings, Sources, Syntax};
use regex::Regex;

pub(crate) fn oracle(text: &str, settings: &Settings, sources: &Sources) -> String {
    let code = code_mask(text, settings.is_skip_code());
    let rank = settings.rank() != RankMode::Off;
    let single = settings.has_syntax(Syntax::SingleBracket);
    let double = settings.has_syntax(Syntax::DoubleBracket);
    let colon = settings.has_syntax(Syntax::CiteColon);
    let tag = settings.has_syntax(Syntax::CiteTag);
    let bare = settings.has_syntax(Syntax::BareId);
    let openai = settings.has_syntax(Syntax::OpenaiCite);
    let assistants = settings.has_syntax(Syntax::AssistantsCite);
    let footnote = settings.has_syntax(Syntax::Footnote);
    let cap = settings.max_pending_bytes();
    let shape = settings.id_shape();
    let ids: Vec<&str> = sources.iter().map(|s| s.id.as_str()).collect();
    let body = match shape.body() {
        citeflow_core::IdBody::Digits => "[0-9]+",
        _ => "[A-Za-z0-9_-]+",
    };
    let shape_re = Regex::new(&format!("^{}{}$", regex::escape(shape.prefix()), body)).unwrap();
    let bare_re = Regex::new(&format!("^{}{}", regex::escape(shape.prefix()), body)).unwrap();
    let double_re = Regex::new(r"^\[\[([^\[\]<>`\n\r]*)\]\]").unwrap();
    let colon_re = Regex::new(r"^<cite:([^\[\]<>`\n\r]*)>").unwrap();
    let tag_res = [
        Regex::new(r#"^<cite[ \t]+id[ \t]*=[ \t]*"([^"\[\]<>`\n\r]*)"[ \t]*(/>|></cite>)"#)
            .unwrap(),
        Regex::new(r#"^<cite[ \t]+id[ \t]*=[ \t]*'([^'\[\]<>`\n\r]*)'[ \t]*(/>|></cite>)"#)
            .unwrap(),
    ];
    let single_re = Regex::new(r"^\[([^\]\n]*)\]").unwrap();
    let footnote_re = Regex::new(r"^\[\^([^\]\n,、，]*)\]").unwrap();
    let assistants_re = Regex::new(r"^【([0-9]{1,6}(?::[0-9]{1,6})?)†[^】【\n\r`]+】").unwrap();
    let openai_re =
        Regex::new("^\u{e200}(?:cite|filecite)\u{e202}([^\u{e200}\u{e201}\n\r\\[\\]<>`]*)\u{e201}")
            .unwrap();

    let rank_of = |s: &str| -> Option<u32> {
        let n = s.chars().count();
        if n == 0 || n > 4 {
            return None;
        }
        s.chars().try_fold(0u32, |acc, c| {
            let d = if c.is_ascii_digit() {
                c as u32 - '0' as u32
            } else if ('０'..='９').contains(&c) {
                c as u32 - '０' as u32
            } else {
                return None;
            };
            Some(acc * 10 + d)
        })
    };
    let valid_item = |s: &str| -> bool {
        (rank && rank_of(s).is_some()) || (single && (shape_re.is_match(s) || ids.contains(&s)))
    };
    // Items of an ambiguous group, or None.
    let group = |content: &str| -> Option<Vec<String>> {
        let mut items = Vec::new();
        let mut first = true;
        for part in content.split([',', '、', '，']) {
            let item = if first {
                part
            } else {
                part.trim_start_matches(' ')
            };
            first = false;
            if item.is_empty() || !valid_item(item) {
                return None;
            }
            items.push(item.to_owned());
        }
        Some(items)
    };
    let explicit = |content: &str| -> Vec<String> {
        content
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };

    let mut out = String::new();
    let mut numbers: HashMap<String, u32> = HashMap::new();
    let mut i = 0;
    let mut last_marker_end = usize::MAX;
    while i < text.len() {
        let ch = text[i..].chars().next().unwrap();
        if code[i] {
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        let rest = &text[i..];
        let prev = if i == 0 {
            b'\n'
        } else {
            text.as_bytes()[i - 1]
        };
        let backslashes = text[..i].bytes().rev().take_while(|&b| b == b'\\').count();
        let escaped = backslashes % 2 == 1 && !code[i - 1];
        let line = &text[text[..i].rfind('\n').map_or(0, |p| p + 1)..i];
        let indent: usize = line.chars().map(|c| if c == '\t' { 4 } else { 1 }).sum();
        let at_line_start = line.chars().all(|c| matches!(c, ' ' | '\t' | '\r')) && indent <= 3;
        let after_plain = prev == b']' && last_marker_end != i;
        // (len, items, needs lookahead, items are ids even when they are digits)
        let mut found: Option<(usize, Vec<String>, bool, bool)> = None;
        if !escaped {
            if rest.starts_with("[[") && (double || rank) {
                if let Some(m) = double_re.captures(rest) {
                    let items = explicit(&m[1]);
                    let all_ranks = items
                        .iter()
                        .all(|s| rank && rank_of(s).is_some() && !ids.contains(&s.as_str()));
                    if !items.is_empty() && (double || all_ranks) {
                        found = Some((m[0].len(), items, false, false));
                    }
                }
            } else if rest.starts_with('[') && (single || rank || footnote) {
                if let Some(m) = footnote_re.captures(rest).filter(|_| footnote) {
                    let len = m[0].len();
                    let next = rest[len..].chars().next();
                    let link = next == Some('(') || (next == Some(':') && at_line_start);
                    let item = &m[1];
                    let valid = (rank && rank_of(item).is_some())
                        || shape_re.is_match(item)
                        || ids.contains(&item);
                    if valid && !link && !after_plain {
                        found = Some((len, vec![item.to_owned()], true, false));
                    }
                }
                if let Some(m) = single_re
                    .captures(rest)
                    .filter(|_| found.is_none() && (single || rank))
                {
                    let len = m[0].len();
                    let next = rest[len..].chars().next();
                    let link = next == Some('(') || (next == Some(':') && at_line_start);
                    if let Some(items) = group(&m[1]).filter(|_| !link && !after_plain) {
                        found = Some((len, items, true, false));
                    }
                }
            } else if rest.starts_with('<') {
                if colon {
                    if let Some(m) = colon_re.captures(rest) {
                        let items = explicit(&m[1]);
                        if !items.is_empty() {
                            found = Some((m[0].len(), items, false, false));
                        }
                    }
                }
                if tag && found.is_none() {
                    for re in &tag_res {
                        if let Some(m) = re.captures(rest) {
                            let items = explicit(&m[1]);
                            if !items.is_empty() {
                                found = Some((m[0].len(), items, false, false));
                            }
                        }
                    }
                }
            } else if rest.starts_with('\u{e200}') && openai {
                if let Some(m) = openai_re.captures(rest) {
                    let items: Vec<String> = m[1]
                        .split('\u{e202}')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect();
                    if !items.is_empty() {
                        found = Some((m[0].len(), items, false, true));
                    }
                }
            } else if rest.starts_with('【') && assistants && assistants_re.is_match(rest) {
                let m = assistants_re.captures(rest).unwrap();
                found = Some((m[0].len(), vec![m[1].to_owned()], false, true));
            } else if (rest.starts_with('【') || rest.starts_with('［')) && (single || rank) {
                let close = if rest.starts_with('【') {
                    "】"
                } else {
                    "］"
                };
                let open = &rest[..3];
                let doubled = rest[3..].starts_with(open);
                if doubled {
                    // `【【…】】`: one marker when the inner group is valid.
                    if let Some(end) = rest[6..].find(close) {
                        if rest[6 + end + 3..].starts_with(close) {
                            if let Some(items) = group(&rest[6..6 + end]) {
                                found = Some((6 + end + 6, items, false, false));
                            }
                        }
                    }
                }
                if found.is_none() {
                    if let Some(end) = rest[3..].find(close) {
                        if let Some(items) = group(&rest[3..3 + end]) {
                            found = Some((3 + end + 3, items, false, false));
                        }
                    }
                }
            } else if bare && !(prev.is_ascii_alphanumeric() || prev == b'_') {
                if let Some(m) = bare_re.find(rest) {
                    let next = rest.as_bytes().get(m.end());
                    if !next.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
                        found = Some((m.end(), vec![m.as_str().to_owned()], true, false));
                    }
                }
            }
        }
        if let Some((len, items, lookahead, ids_only)) = found {
            let extra = if lookahead {
                rest[len..].chars().next().map_or(0, char::len_utf8)
            } else {
                0
            };
            if len + extra <= cap {
                let mut shown = Vec::new();
                for item in items {
                    let source = match rank_of(&item)
                        .filter(|_| rank && !ids_only && !ids.contains(&item.as_str()))
                    {
                        Some(n) => sources.by_rank(n),
                        None => sources.get(&item),
                    };
                    let rendered = match source {
                        Some(s) => {
                            let key = Sources::key_of(s, settings.is_dedupe());
                            let next = numbers.len() as u32 + 1;
                            let n = *numbers.entry(key).or_insert(next);
                            if shown.contains(&n) {
                                continue;
                            }
                            shown.push(n);
                            format!("[{n}]")
                        }
                        None => "[?]".to_owned(),
                    };
                    out.push_str(&rendered);
                }
                i += len;
                last_marker_end = i;
                continue;
            }
        }
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// Marks every byte inside a fenced code block or an inline code span.
fn code_mask(text: &str, skip_code: bool) -> Vec<bool> {
    let b = text.as_bytes();
    let mut mask = vec![false; b.len()];
    if !skip_code {
        return mask;
    }
    let line_start_ok = |i: usize| -> bool {
        let line = &text[text[..i].rfind('\n').map_or(0, |p| p + 1)..i];
        let indent: usize = line.chars().map(|c| if c == '\t' { 4 } else { 1 }).sum();
        line.chars().all(|c| matches!(c, ' ' | '\t' | '\r')) && indent <= 3
    };
    let run_len = |i: usize, c: u8| b[i..].iter().take_while(|&&x| x == c).count();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if (c == b'`' || c == b'~') && line_start_ok(i) && run_len(i, c) >= 3 {
            // Fence: to the end of a closing fence line, or the end.
            let n = run_len(i, c);
            let mut j = text[i..].find('\n').map_or(b.len(), |p| i + p + 1);
            let mut end = b.len();
            while j < b.len() {
                let line_end = text[j..].find('\n').map(|p| j + p);
                let line = &text[j..line_end.unwrap_or(b.len())];
                let trimmed = line.trim_start_matches(' ');
                let indent = line.len() - trimmed.len();
                let run = trimmed.bytes().take_while(|&x| x == c).count();
                let closes = indent <= 3
                    && run >= n
                    && trimmed[run..]
                        .bytes()
                        .all(|x| matches!(x, b' ' | b'\t' | b'\r'));
                if let (true, Some(e)) = (closes, line_end) {
                    end = e + 1;
                    break;
                }
                j = line_end.map_or(b.len(), |p| p + 1);
            }
            mask[i..end].iter_mut().for_each(|m| *m = true);
            i = end;
        } else if c == b'`' {
            let n = run_len(i, c);
            // Code span: to the closing run of exactly n, or through the blank line that ends
            // the paragraph, or the end.
            let mut j = i + n;
            let mut end = b.len();
            let mut blank = false;
            while j < b.len() {
                match b[j] {
                    b'`' => {
                        let m = run_len(j, b'`');
                        if m == n {
                            end = j + m;
                            break;
                        }
                        blank = false;
                        j += m;
                        continue;
                    }
                    b'\n' if blank => {
                        end = j + 1;
                        break;
                    }
                    b'\n' => blank = true,
                    b' ' | b'\t' | b'\r' => {}
                    _ => blank = false,
                }
                j += 1;
            }
            mask[i..end].iter_mut().for_each(|m| *m = true);
            i = end;
        } else {
            i += 1;
        }
    }
    mask
}
