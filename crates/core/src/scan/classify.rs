//! The marker grammar: [`classify`] decides whether a candidate is a marker, and of how many
//! bytes, one function per syntax. A child of the scanner, it reads the scanner's private types
//! ([`ScanConfig`]'s switches, [`Cand`], [`Verdict`]) directly.

use super::{Cand, Item, ScanConfig, Verdict};

/// Decides a candidate from its first bytes.
///
/// Contract: the verdict on a prefix that is not [`Verdict::More`] holds for every extension of
/// it, and with `eof` the verdict is never `More`.
#[inline(never)]
pub(super) fn classify(view: &str, eof: bool, c: Cand, cfg: &ScanConfig) -> Verdict {
    let more = if eof { Verdict::No } else { Verdict::More };
    let bytes = view.as_bytes();
    match bytes[0] {
        b'[' => match bytes.get(1) {
            None => more,
            Some(b'[') => classify_double(view, eof, cfg),
            Some(b'^') if cfg.footnote => match classify_footnote(view, eof, c, cfg) {
                Verdict::No if cfg.single || cfg.rank => classify_single(view, eof, c, cfg),
                v => v,
            },
            Some(_) if cfg.single || cfg.rank => classify_single(view, eof, c, cfg),
            Some(_) => Verdict::No,
        },
        b'<' => classify_cite(view, eof, cfg),
        0xE3 if cfg.assistants => match classify_assistants(view, eof) {
            Verdict::No => classify_fullwidth(view, "】", eof, cfg),
            v => v,
        },
        0xE3 => classify_fullwidth(view, "】", eof, cfg),
        0xEF => classify_fullwidth(view, "］", eof, cfg),
        0xEE => classify_openai(view, eof),
        _ => classify_bare(view, eof, cfg),
    }
}

/// `[[…]]`: explicit, so any content is a marker; only the brackets must be right.
fn classify_double(view: &str, eof: bool, cfg: &ScanConfig) -> Verdict {
    let more = if eof { Verdict::No } else { Verdict::More };
    let content = &view[2..];
    let Some(end) = content.find(|ch: char| !is_explicit_char(ch)) else {
        return more;
    };
    if content.as_bytes()[end] != b']' {
        return Verdict::No;
    }
    match content.as_bytes().get(end + 1) {
        None => return more,
        Some(b']') => {}
        Some(_) => return Verdict::No,
    }
    let items = explicit_items(&content[..end], cfg);
    let all_ranks = items.iter().all(|i| matches!(i, Item::Rank(_)));
    if items.is_empty() || (!cfg.double && !all_ranks) {
        return Verdict::No;
    }
    Verdict::Marker(2 + end + 2, items)
}

fn is_explicit_char(ch: char) -> bool {
    !matches!(ch, '[' | ']' | '<' | '>' | '`' | '\n' | '\r')
}

/// Items of an explicit marker: comma-separated, trimmed, empty ones skipped.
fn explicit_items(content: &str, cfg: &ScanConfig) -> Vec<Item> {
    content
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match cfg.rank_value(s) {
            Some(n) if cfg.rank && !cfg.is_registered_digits(s) => Item::Rank(n),
            _ => Item::Id(s.to_owned()),
        })
        .collect()
}

/// The value of 1 to `max_digits` (at most 9) ASCII or full-width digits.
pub(super) fn rank_value(s: &str, max_digits: u32) -> Option<u32> {
    let mut n = 0u32;
    let mut count = 0;
    for ch in s.chars() {
        let d = match ch {
            '0'..='9' => ch as u32 - '0' as u32,
            '０'..='９' => ch as u32 - '０' as u32,
            _ => return None,
        };
        n = n * 10 + d;
        count += 1;
        if count > max_digits {
            return None;
        }
    }
    (count > 0).then_some(n)
}

/// How far an item of an ambiguous marker is from being valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemCheck {
    Invalid,
    Prefix,
    Valid,
}

fn check_item(s: &str, ids: bool, cfg: &ScanConfig) -> ItemCheck {
    if cfg.rank && cfg.rank_value(s).is_some() {
        return ItemCheck::Valid;
    }
    if ids {
        if cfg.shape.matches(s) || cfg.is_registered(s) {
            return ItemCheck::Valid;
        }
        if cfg.shape.is_prefix(s) || cfg.is_registered_prefix(s) {
            return ItemCheck::Prefix;
        }
    }
    ItemCheck::Invalid
}

/// Checks the content of an ambiguous group such as `source_1, source_3` or `2、5`: items
/// separated by `,`, `、` or `，`, spaces allowed only after a separator. `complete` says the
/// closing bracket follows. `Ok(None)`: could still become valid; `Ok(Some)`: valid.
fn check_group(content: &str, complete: bool, cfg: &ScanConfig) -> Result<Option<Vec<Item>>, ()> {
    check_group_with(content, complete, cfg.single, cfg)
}

/// As [`check_group`]; `ids` says whether ids (not only ranks) may stand in the group.
fn check_group_with(
    content: &str,
    complete: bool,
    ids: bool,
    cfg: &ScanConfig,
) -> Result<Option<Vec<Item>>, ()> {
    let mut items = Vec::new();
    let mut src = content;
    loop {
        let sep = find_separator(src);
        let item = &src[..sep.unwrap_or(src.len())];
        let check = if item.is_empty() {
            ItemCheck::Invalid
        } else {
            check_item(item, ids, cfg)
        };
        if sep.is_none() && !complete {
            return match check {
                ItemCheck::Invalid if !item.is_empty() => Err(()),
                _ => Ok(None),
            };
        }
        if check != ItemCheck::Valid {
            return Err(());
        }
        items.push(match cfg.rank_value(item) {
            Some(n) if cfg.rank && !cfg.is_registered_digits(item) => Item::Rank(n),
            _ => Item::Id(item.to_owned()),
        });
        match sep {
            None => return Ok(Some(items)),
            Some(i) => {
                let sep_len = src[i..].chars().next().map_or(1, char::len_utf8);
                src = src[i + sep_len..].trim_start_matches(' ');
            }
        }
    }
}

/// The index of the first item separator (`,`, `、` or `，`) in `s`, byte by byte: the lead
/// bytes of `、` (E3) and `，` (EF) start a character wherever they are.
fn find_separator(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    b.iter().enumerate().find_map(|(i, &c)| {
        let found = match c {
            b',' => true,
            0xE3 => b[i..].starts_with("、".as_bytes()),
            0xEF => b[i..].starts_with("，".as_bytes()),
            _ => false,
        };
        found.then_some(i)
    })
}

/// `[source_3]`, `[2, 5]`: ambiguous; not a link `[x](…)`, a definition `[x]: …` at line start,
/// nor the label of a reference link `[text][x]`.
fn classify_single(view: &str, eof: bool, c: Cand, cfg: &ScanConfig) -> Verdict {
    let more = if eof { Verdict::No } else { Verdict::More };
    let content = &view[1..];
    // Both ASCII: found byte by byte (a `char` pattern decodes every character).
    let close = content.bytes().position(|b| b == b']' || b == b'\n');
    let Some(end) = close.filter(|&e| content.as_bytes()[e] == b']') else {
        if close.is_some() {
            return Verdict::No;
        }
        return match check_group(content, false, cfg) {
            Ok(_) => more,
            Err(()) => Verdict::No,
        };
    };
    let items = match check_group(&content[..end], true, cfg) {
        Ok(Some(items)) => items,
        _ => return Verdict::No,
    };
    if c.after_plain_bracket {
        return Verdict::No;
    }
    let len = 1 + end + 1;
    match view.as_bytes().get(len) {
        None if eof => Verdict::Marker(len, items),
        None => Verdict::More,
        Some(b'(') => Verdict::No,
        Some(b':') if c.at_line_start => Verdict::No,
        Some(_) => Verdict::Marker(len, items),
    }
}

/// `【2】`, `［2］`, `【source_3】`, and doubled `【【2】】`, `［［2］］` (one marker, as `[[2]]`
/// is; the content must still be a valid group, so `【【注意】】` stays text).
fn classify_fullwidth(view: &str, close: &str, eof: bool, cfg: &ScanConfig) -> Verdict {
    let more = if eof { Verdict::No } else { Verdict::More };
    let open = &view[..3];
    let content = &view[3..];
    if content.len() < 3 {
        if !content.is_empty() && open.as_bytes().starts_with(content.as_bytes()) {
            return more;
        }
    } else if content.starts_with(open) {
        return classify_fullwidth_double(&content[3..], close, eof, cfg);
    }
    match content.find(close) {
        Some(end) => match check_group(&content[..end], true, cfg) {
            Ok(Some(items)) => Verdict::Marker(3 + end + close.len(), items),
            _ => Verdict::No,
        },
        None => match check_group(content, false, cfg) {
            Ok(_) => more,
            Err(()) => Verdict::No,
        },
    }
}

/// The content of `【【…】】` or `［［…］］` after the two openers.
fn classify_fullwidth_double(content: &str, close: &str, eof: bool, cfg: &ScanConfig) -> Verdict {
    let more = if eof { Verdict::No } else { Verdict::More };
    let Some(end) = content.find(close) else {
        return match check_group(content, false, cfg) {
            Ok(_) => more,
            Err(()) => Verdict::No,
        };
    };
    let Ok(Some(items)) = check_group(&content[..end], true, cfg) else {
        return Verdict::No;
    };
    let after = &content[end + close.len()..];
    if after.len() < close.len() {
        if close.as_bytes().starts_with(after.as_bytes()) {
            return more;
        }
        return Verdict::No;
    }
    if !after.starts_with(close) {
        return Verdict::No;
    }
    Verdict::Marker(6 + end + 2 * close.len(), items)
}

/// `[^source_3]`, `[^2]`: a footnote reference used as a citation; ambiguous, one item. Not a
/// definition `[^1]: …` at line start, a link `[^1](…)`, nor a reference label `[x][^1]`.
fn classify_footnote(view: &str, eof: bool, c: Cand, cfg: &ScanConfig) -> Verdict {
    let more = if eof { Verdict::No } else { Verdict::More };
    let content = &view[2..];
    let close = content.find([']', '\n', ',', '、', '，']);
    let Some(end) = close.filter(|&e| content.as_bytes()[e] == b']') else {
        if close.is_some() {
            return Verdict::No;
        }
        return match check_group_with(content, false, true, cfg) {
            Ok(_) => more,
            Err(()) => Verdict::No,
        };
    };
    let Ok(Some(items)) = check_group_with(&content[..end], true, true, cfg) else {
        return Verdict::No;
    };
    if c.after_plain_bracket {
        return Verdict::No;
    }
    let len = 2 + end + 1;
    match view.as_bytes().get(len) {
        None if eof => Verdict::Marker(len, items),
        None => Verdict::More,
        Some(b'(') => Verdict::No,
        Some(b':') if c.at_line_start => Verdict::No,
        Some(_) => Verdict::Marker(len, items),
    }
}

/// The longest index part of an Assistants annotation (`12345:12345`).
const ASSISTANTS_MAX_DIGITS: usize = 6;

/// `【4:0†source】`, `【4†file.pdf】`: an Assistants file-search annotation; the id is the index.
fn classify_assistants(view: &str, eof: bool) -> Verdict {
    let more = if eof { Verdict::No } else { Verdict::More };
    let content = &view["【".len()..];
    let bytes = content.as_bytes();
    let mut i = 0;
    let mut colon = false;
    let mut digits = 0;
    loop {
        match bytes.get(i) {
            None => return more,
            Some(b) if b.is_ascii_digit() => {
                digits += 1;
                if digits > ASSISTANTS_MAX_DIGITS {
                    return Verdict::No;
                }
            }
            Some(b':') if !colon && digits > 0 => {
                colon = true;
                digits = 0;
            }
            Some(_) => break,
        }
        i += 1;
    }
    if digits == 0 {
        return Verdict::No;
    }
    let id = &content[..i];
    let rest = &content[i..];
    if rest.len() < '†'.len_utf8() {
        return if "†".as_bytes().starts_with(rest.as_bytes()) {
            more
        } else {
            Verdict::No
        };
    }
    let Some(label) = rest.strip_prefix('†') else {
        return Verdict::No;
    };
    let Some(end) = label.find(['】', '【', '\n', '\r', '`']) else {
        return more;
    };
    if !label[end..].starts_with('】') || end == 0 {
        return Verdict::No;
    }
    let len = "【".len() + i + '†'.len_utf8() + end + "】".len();
    Verdict::Marker(len, vec![Item::Id(id.to_owned())])
}

/// Opens OpenAI's private-use citation markers.
pub(super) const OPENAI_OPEN: &str = "\u{e200}";
/// Closes them.
const OPENAI_CLOSE: char = '\u{e201}';
/// Separates the kind and the ids.
const OPENAI_SEP: char = '\u{e202}';

/// `\u{e200}cite\u{e202}turn0search1\u{e202}turn0news3\u{e201}`: explicit; every id is
/// a source id.
fn classify_openai(view: &str, eof: bool) -> Verdict {
    let more = if eof { Verdict::No } else { Verdict::More };
    if !view.starts_with(OPENAI_OPEN) {
        return Verdict::No;
    }
    let rest = &view[OPENAI_OPEN.len()..];
    let mut body = None;
    let mut waiting = false;
    for kind in ["cite\u{e202}", "filecite\u{e202}"] {
        if let Some(b) = rest.strip_prefix(kind) {
            body = Some((kind.len(), b));
        } else if kind.starts_with(rest) {
            waiting = true;
        }
    }
    let Some((kind_len, body)) = body else {
        return if waiting { more } else { Verdict::No };
    };
    let Some(end) = body.find(|ch: char| {
        matches!(
            ch,
            OPENAI_CLOSE | '\u{e200}' | '\n' | '\r' | '[' | ']' | '<' | '>' | '`'
        )
    }) else {
        return more;
    };
    if !body[end..].starts_with(OPENAI_CLOSE) {
        return Verdict::No;
    }
    let items: Vec<Item> = body[..end]
        .split(OPENAI_SEP)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| Item::Id(s.to_owned()))
        .collect();
    if items.is_empty() {
        return Verdict::No;
    }
    Verdict::Marker(
        OPENAI_OPEN.len() + kind_len + end + OPENAI_CLOSE.len_utf8(),
        items,
    )
}

/// `<cite:ID>`, `<cite id="ID"/>`, `<cite id="ID"></cite>`: explicit.
fn classify_cite(view: &str, eof: bool, cfg: &ScanConfig) -> Verdict {
    let more = if eof { Verdict::No } else { Verdict::More };
    const OPEN: &str = "<cite";
    if view.len() < OPEN.len() {
        return if OPEN.starts_with(view) {
            more
        } else {
            Verdict::No
        };
    }
    if !view.starts_with(OPEN) {
        return Verdict::No;
    }
    let rest = &view[OPEN.len()..];
    match rest.as_bytes().first() {
        None => more,
        Some(b':') if cfg.colon => {
            let content = &rest[1..];
            let Some(end) = content.find(|ch: char| !is_explicit_char(ch)) else {
                return more;
            };
            if content.as_bytes()[end] != b'>' {
                return Verdict::No;
            }
            let items = explicit_items(&content[..end], cfg);
            if items.is_empty() {
                return Verdict::No;
            }
            Verdict::Marker(OPEN.len() + 1 + end + 1, items)
        }
        Some(b' ' | b'\t') if cfg.tag => classify_cite_tag(view, rest, eof, cfg),
        Some(_) => Verdict::No,
    }
}

fn classify_cite_tag(view: &str, rest: &str, eof: bool, cfg: &ScanConfig) -> Verdict {
    let more = if eof { Verdict::No } else { Verdict::More };
    let mut p = Cursor { s: rest, i: 0 };
    p.skip_ws();
    for want in [b'i', b'd'] {
        match p.peek() {
            None => return more,
            Some(b) if b == want => p.i += 1,
            Some(_) => return Verdict::No,
        }
    }
    p.skip_ws();
    match p.peek() {
        None => return more,
        Some(b'=') => p.i += 1,
        Some(_) => return Verdict::No,
    }
    p.skip_ws();
    let quote = match p.peek() {
        None => return more,
        Some(q @ (b'"' | b'\'')) => q,
        Some(_) => return Verdict::No,
    };
    p.i += 1;
    let value_start = p.i;
    let value = &p.s[value_start..];
    let Some(end) = value.find(|ch: char| ch == quote as char || !is_explicit_char(ch)) else {
        return more;
    };
    if value.as_bytes()[end] != quote {
        return Verdict::No;
    }
    let items = explicit_items(&value[..end], cfg);
    if items.is_empty() {
        return Verdict::No;
    }
    p.i = value_start + end + 1;
    p.skip_ws();
    let tail = &p.s[p.i..];
    for close in ["/>", "></cite>"] {
        if tail.len() >= close.len() {
            if tail.starts_with(close) {
                let len = view.len() - rest.len() + p.i + close.len();
                return Verdict::Marker(len, items);
            }
        } else if close.starts_with(tail) {
            return more;
        }
    }
    Verdict::No
}

struct Cursor<'a> {
    s: &'a str,
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }
}

/// A bare id between word boundaries.
fn classify_bare(view: &str, eof: bool, cfg: &ScanConfig) -> Verdict {
    let end = view
        .char_indices()
        .find(|&(i, ch)| !cfg.shape.is_prefix(&view[..i + ch.len_utf8()]))
        .map(|(i, _)| i);
    match end {
        None if !eof => Verdict::More,
        None if cfg.shape.matches(view) => {
            Verdict::Marker(view.len(), vec![Item::Id(view.to_owned())])
        }
        None => Verdict::No,
        Some(e) => {
            let next = view.as_bytes()[e];
            if cfg.shape.matches(&view[..e]) && !(next.is_ascii_alphanumeric() || next == b'_') {
                Verdict::Marker(e, vec![Item::Id(view[..e].to_owned())])
            } else {
                Verdict::No
            }
        }
    }
}
