//! `citeflow epub`: inspect a book's text nodes and chapters.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use citeflow_epub::CfiFlavor;
use clap::{Args, Subcommand};

use crate::book::open_book;
use crate::progress::Progress;

/// Arguments of `citeflow epub`.
#[derive(Debug, Args)]
pub(crate) struct EpubArgs {
    #[command(subcommand)]
    command: EpubCommand,
}

#[derive(Debug, Subcommand)]
enum EpubCommand {
    /// One JSON line per non-whitespace text node under <body> of every spine document:
    /// {"spine_index","href","node_ordinal","text","cfi"} with the CFI of its first character.
    Nodes {
        /// The .epub file.
        book: PathBuf,
        /// Print each node's whole text (default: whitespace collapsed, first 40 characters,
        /// as in the CFI oracle file).
        #[arg(long)]
        full_text: bool,
        /// How the CFIs are written: 'spec' (EPUB CFI 1.1) or 'epubjs' (as epub.js 0.3.93
        /// writes them).
        #[arg(long, default_value = "spec", value_name = "FLAVOR")]
        cfi_flavor: CfiFlavor,
    },
    /// One JSON line per chapter (from the table of contents): index, title, depth, spine
    /// index and href.
    Chapters {
        /// The .epub file.
        book: PathBuf,
    },
}

/// The oracle's form of a node's text: whitespace runs collapsed to one space, trimmed, cut
/// to its first 40 characters (Unicode scalar values).
pub(crate) fn short_text(text: &str) -> String {
    let mut out = String::new();
    let mut count = 0;
    'words: for word in text.split_whitespace() {
        if count > 0 {
            if count == 40 {
                break;
            }
            out.push(' ');
            count += 1;
        }
        for c in word.chars() {
            if count == 40 {
                break 'words;
            }
            out.push(c);
            count += 1;
        }
    }
    out
}

#[derive(serde::Serialize)]
struct NodeLine<'a> {
    spine_index: usize,
    href: &'a str,
    node_ordinal: usize,
    text: String,
    cfi: String,
}

#[derive(serde::Serialize)]
struct ChapterLine<'a> {
    index: usize,
    title: Option<&'a str>,
    depth: usize,
    spine_index: usize,
    href: &'a str,
}

/// Writes `value` as one JSON line (I/O errors stay `io::Error`, so a closed pipe is seen).
pub(crate) fn write_json_line(out: &mut impl Write, value: &impl serde::Serialize) -> Result<()> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    out.write_all(&line)?;
    Ok(())
}

pub(crate) fn run(args: EpubArgs) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.command {
        EpubCommand::Nodes {
            book,
            full_text,
            cfi_flavor,
        } => {
            let b = open_book(&book, &Progress::hidden())?.book;
            for n in b.text_nodes_as(cfi_flavor) {
                let line = NodeLine {
                    spine_index: n.spine_index,
                    href: n.href,
                    node_ordinal: n.node_ordinal,
                    text: if full_text {
                        n.text.to_owned()
                    } else {
                        short_text(n.text)
                    },
                    cfi: n.cfi.to_string(),
                };
                write_json_line(&mut out, &line)?;
            }
        }
        EpubCommand::Chapters { book } => {
            let b = open_book(&book, &Progress::hidden())?.book;
            for c in b.chapters() {
                let line = ChapterLine {
                    index: c.index,
                    title: c.title.as_deref(),
                    depth: c.depth,
                    spine_index: c.spine_index,
                    href: b.spine().get(c.spine_index).map_or("", |s| s.href.as_str()),
                };
                write_json_line(&mut out, &line)?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::short_text;

    #[test]
    fn short_text_collapses_and_cuts_at_forty_chars() {
        assert_eq!(short_text("  a \n\t b  "), "a b");
        let long = "x".repeat(50);
        assert_eq!(short_text(&long).chars().count(), 40);
        let cut = short_text(&format!("{} yy", "z".repeat(39)));
        assert_eq!(cut, format!("{} ", "z".repeat(39)));
        assert_eq!(short_text("草枕　夏目漱石"), "草枕 夏目漱石");
    }
}
