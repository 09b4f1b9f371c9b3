//! Prints, for every non-whitespace text node of the given books, its CFI in
//! both flavours: one JSON line per node with `book` (file name),
//! `spine_index`, `href`, `node_ordinal`, `is_cdata`, `text` (whole),
//! `cfi` (epub.js flavour) and `cfi_spec`. With `--passages` first: one
//! line per passage (default cutting, ruby readings kept in the text) with
//! `book`, `spine_index`, `index`, `text`, `cfi` (epub.js flavour range) and
//! `cfi_spec`. With `--sentences` first: one line per sentence of each
//! passage (cut as with `--passages`), with `book`, `spine_index`, `index`
//! (the passage's), `text` (the sentence) and `cfi` (its epub.js-flavoured
//! range, `Book::passage_range_cfi`: what a citation's quote carries). The
//! input of the epub.js browser test (`scripts/test-epubjs.sh`).
//!
//! ```sh
//! cargo run -p citeflow-epub --example epubjs_cfis -- ../shared/fixtures/epub/*.epub
//! cargo run -p citeflow-epub --example epubjs_cfis -- --passages ../shared/fixtures/epub/*.epub
//! cargo run -p citeflow-epub --example epubjs_cfis -- --sentences ../shared/fixtures/epub/kusamakura-japanese-vertical-writing.epub
//! ```

use std::io::Write;

use citeflow_epub::{Book, CfiFlavor, ChunkSettings, Limits};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let mut paths: Vec<String> = std::env::args().skip(1).collect();
    let passages = paths.first().is_some_and(|a| a == "--passages");
    let sentences = paths.first().is_some_and(|a| a == "--sentences");
    if passages || sentences {
        paths.remove(0);
    }
    if paths.is_empty() {
        return Err("usage: epubjs_cfis BOOK.epub...".into());
    }
    for path in paths {
        let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let book = Book::open(&bytes, &Limits::default())?;
        let name = std::path::Path::new(&path)
            .file_name()
            .map_or(path.clone(), |n| n.to_string_lossy().into_owned());
        if sentences {
            let settings = ChunkSettings::new()
                .with_ruby_text(true)
                .with_cfi_flavor(CfiFlavor::Epubjs);
            for p in book.passages(&settings) {
                let chars: Vec<char> = p.text.chars().collect();
                for (a, b) in sentence_ranges(&chars) {
                    let cfi = book.passage_range_cfi(&p.cfi, &p.text, a..b, &settings)?;
                    let line = serde_json::json!({
                        "book": name,
                        "spine_index": p.spine_index,
                        "index": p.index,
                        "text": chars[a..b].iter().collect::<String>(),
                        "cfi": cfi.to_string(),
                        "cfi_spec": cfi.to_string(),
                    });
                    serde_json::to_writer(&mut out, &line)?;
                    out.write_all(b"\n")?;
                }
            }
            continue;
        }
        if passages {
            let settings = ChunkSettings::new()
                .with_ruby_text(true)
                .with_cfi_flavor(CfiFlavor::Epubjs);
            for p in book.passages(&settings) {
                let line = serde_json::json!({
                    "book": name,
                    "spine_index": p.spine_index,
                    "index": p.index,
                    "text": p.text,
                    "cfi": p.cfi.to_string(),
                    "cfi_spec": p.cfi_spec.as_ref().map(ToString::to_string),
                });
                serde_json::to_writer(&mut out, &line)?;
                out.write_all(b"\n")?;
            }
            continue;
        }
        for (s, e) in book.text_nodes().zip(book.text_nodes_as(CfiFlavor::Epubjs)) {
            let line = serde_json::json!({
                "book": name,
                "spine_index": s.spine_index,
                "href": s.href,
                "node_ordinal": s.node_ordinal,
                "is_cdata": s.is_cdata,
                "text": s.text,
                "cfi": e.cfi.to_string(),
                "cfi_spec": s.cfi.to_string(),
            });
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()?;
    Ok(())
}

/// The sentences of a passage's text as character ranges: each ends after `。！？` (or `.!?`
/// before a space) and the closing brackets after it.
fn sentence_ranges(chars: &[char]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < chars.len() {
        let end = matches!(chars[i], '。' | '！' | '？')
            || (matches!(chars[i], '.' | '!' | '?')
                && chars.get(i + 1).is_none_or(|c| c.is_whitespace()));
        i += 1;
        if end {
            while i < chars.len() && matches!(chars[i], '」' | '』' | '）' | '"' | '”' | '’')
            {
                i += 1;
            }
            out.push((start, i));
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            start = i;
        }
    }
    if start < chars.len() {
        out.push((start, chars.len()));
    }
    out
}
