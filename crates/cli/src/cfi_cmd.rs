//! `citeflow cfi`: parse, compare and resolve EPUB CFIs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use citeflow_epub::cfi::{Offset, Param, Path as CfiPath, Step};
use citeflow_epub::{Book, Cfi, CfiFlavor, FlavorReading, Location, Point, Resolved};
use clap::{Args, Subcommand};

use crate::book::open_book;
use crate::progress::Progress;

/// Arguments of `citeflow cfi`.
#[derive(Debug, Args)]
pub(crate) struct CfiArgs {
    #[command(subcommand)]
    command: CfiCommand,
}

#[derive(Debug, Subcommand)]
enum CfiCommand {
    /// Print a CFI's structure as JSON (steps, id assertions, offset, range parts).
    Parse {
        /// The CFI, e.g. 'epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/3:10)'.
        cfi: String,
        /// The CFI is percent-encoded, as in an href (%20 for a space): decode it first.
        #[arg(long)]
        percent_encoded: bool,
    },
    /// Order two CFIs by the specification: prints -1, 0, 1, or "incomparable".
    Compare {
        /// The first CFI.
        a: String,
        /// The second CFI.
        b: String,
        /// The CFIs are percent-encoded, as in an href: decode them first.
        #[arg(long)]
        percent_encoded: bool,
    },
    /// Find what a CFI points at in a book: prints spine index, href, chapter and text as
    /// JSON.
    Resolve {
        /// The .epub file.
        book: PathBuf,
        /// The CFI (a point or a range).
        cfi: String,
        /// For a point: how many characters of text to print before and from it.
        #[arg(long, default_value_t = 200)]
        chars: usize,
        /// Print the text with its whitespace as written (default: runs of whitespace become
        /// one space).
        #[arg(long)]
        raw: bool,
        /// The CFI is percent-encoded, as in an href: decode it first.
        #[arg(long)]
        percent_encoded: bool,
        /// How the CFI is written: 'spec' (EPUB CFI 1.1, the default), 'epubjs' (as epub.js
        /// 0.3.93 writes it) or 'auto' (read both ways; an error when they point at different
        /// text). With this flag the output adds cfi_flavor (the flavour read, or "both"),
        /// cfi_spec and cfi_epubjs (the same place written each way).
        #[arg(long, value_name = "FLAVOR")]
        cfi_flavor: Option<String>,
    },
}

pub(crate) fn run(args: CfiArgs) -> Result<ExitCode> {
    match args.command {
        CfiCommand::Parse {
            cfi,
            percent_encoded,
        } => {
            let c = parse(&cfi, percent_encoded)?;
            println!("{}", serde_json::to_string(&cfi_json(&c))?);
        }
        CfiCommand::Compare {
            a,
            b,
            percent_encoded,
        } => {
            let (ca, cb) = (parse(&a, percent_encoded)?, parse(&b, percent_encoded)?);
            match ca.compare(&cb) {
                Some(o) => println!("{}", o as i8),
                None => println!("incomparable"),
            }
        }
        CfiCommand::Resolve {
            book,
            cfi,
            chars,
            raw,
            percent_encoded,
            cfi_flavor,
        } => {
            let c = parse(&cfi, percent_encoded)?;
            let b = open_book(&book, &Progress::hidden())?.book;
            let (r, read_as) = resolve_flavored(&b, &c, cfi_flavor.as_deref())
                .with_context(|| format!("cannot resolve {cfi} in {}", book.display()))?;
            // The same place written in each flavour (only with --cfi-flavor).
            let written = |to: CfiFlavor| {
                let (_, from) = read_as?;
                b.convert_cfi(&c, from, to).ok().map(|c| c.to_string())
            };
            let (text, before) = if r.end.is_some() {
                (b.text_of(&r), None)
            } else {
                (
                    b.text_after(&r.start, chars),
                    Some(b.text_before(&r.start, chars)),
                )
            };
            let squash = |t: String| {
                if raw {
                    t
                } else {
                    t.split_whitespace().collect::<Vec<_>>().join(" ")
                }
            };
            let href = b
                .spine()
                .get(r.start.spine_index)
                .map_or("", |s| s.href.as_str());
            let chapter = chapter_at(&b, &r.start).and_then(|i| b.chapters().get(i));
            let out = ResolveJson {
                cfi: c.to_string(),
                kind: if c.is_range() { "range" } else { "point" },
                spine_index: r.start.spine_index,
                href,
                chapter_index: chapter.map(|c| c.index),
                chapter_title: chapter.and_then(|c| c.title.as_deref()),
                text_before: before.map(squash),
                text: squash(text),
                cfi_flavor: read_as.map(|(name, _)| name),
                cfi_spec: written(CfiFlavor::Spec),
                cfi_epubjs: written(CfiFlavor::Epubjs),
            };
            println!("{}", serde_json::to_string(&out)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolves `c` as `flavor` (`None`: spec, as without the flag; `auto`: both ways). Returns
/// the place and, with a flavour given, the name to report and the flavour it was read as.
fn resolve_flavored(
    b: &Book,
    c: &Cfi,
    flavor: Option<&str>,
) -> Result<(Resolved, Option<(&'static str, CfiFlavor)>)> {
    let Some(name) = flavor else {
        return Ok((b.resolve(c)?, None));
    };
    if name != "auto" {
        let f = name
            .parse::<CfiFlavor>()
            .map_err(|_| anyhow!("unknown cfi flavor {name:?} (expected spec, epubjs or auto)"))?;
        return Ok((b.resolve_as(c, f)?, Some((f.name(), f))));
    }
    let text = |r: &Resolved| {
        let t = b.text_after(&r.start, 40);
        t.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    match b.resolve_any(c)? {
        FlavorReading::Same(r) => Ok((r, Some(("both", CfiFlavor::Spec)))),
        FlavorReading::Only(f, r) => Ok((r, Some((f.name(), f)))),
        FlavorReading::Ambiguous { spec, epubjs } => bail!(
            "the cfi reads as two places: as spec at {:?}, as epubjs at {:?}; give \
             --cfi-flavor spec or epubjs",
            text(&spec),
            text(&epubjs)
        ),
        _ => bail!("the cfi cannot be read in any known flavour"),
    }
}

/// Parses a CFI; the error shows the input with a caret under the problem.
fn parse(input: &str, percent_encoded: bool) -> Result<Cfi> {
    if percent_encoded {
        return Ok(Cfi::parse_percent_encoded(input)?);
    }
    Cfi::parse(input).map_err(|e| match e.position() {
        Some(pos) => {
            let width = input
                .get(..pos)
                .map_or(pos, |before| before.chars().count());
            anyhow!("{e}\n  {input}\n  {}^", " ".repeat(width))
        }
        None => anyhow!(e),
    })
}

/// The chapter holding a resolved point.
fn chapter_at(book: &Book, p: &Point) -> Option<usize> {
    let node = match p.location? {
        Location::Element(n) => n,
        Location::Text { node, .. } => node,
        Location::EmptyChunk { parent, .. } => parent,
        _ => return None,
    };
    Some(book.chapter_index_at(p.spine_index, node))
}

/// `citeflow cfi resolve` output.
#[derive(serde::Serialize)]
struct ResolveJson<'a> {
    cfi: String,
    kind: &'static str,
    spine_index: usize,
    href: &'a str,
    chapter_index: Option<usize>,
    chapter_title: Option<&'a str>,
    /// For a point: the text just before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    text_before: Option<String>,
    /// For a point: the text from it on; for a range: the text it covers.
    text: String,
    /// With --cfi-flavor: the flavour the CFI was read as (`both` when they agree).
    #[serde(skip_serializing_if = "Option::is_none")]
    cfi_flavor: Option<&'static str>,
    /// With --cfi-flavor: the place as a spec CFI.
    #[serde(skip_serializing_if = "Option::is_none")]
    cfi_spec: Option<String>,
    /// With --cfi-flavor: the place as epub.js writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    cfi_epubjs: Option<String>,
}

/// `citeflow cfi parse` output, fields in reading order.
#[derive(serde::Serialize)]
struct CfiJson {
    cfi: String,
    kind: &'static str,
    path: PathJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    range_start: Option<PathJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    range_end: Option<PathJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end: Option<String>,
}

#[derive(serde::Serialize)]
struct PathJson {
    steps: Vec<StepJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<OffsetJson>,
}

#[derive(serde::Serialize)]
struct StepJson {
    index: u32,
    kind: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    indirection: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    params: Vec<ParamJson>,
}

#[derive(serde::Serialize)]
struct ParamJson {
    name: String,
    values: Vec<String>,
}

#[derive(serde::Serialize)]
struct OffsetJson {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    indirection: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    utf16_offset: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seconds: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    y: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    assertion: Option<AssertionJson>,
}

#[derive(serde::Serialize)]
struct AssertionJson {
    before: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    after: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    params: Vec<ParamJson>,
}

fn cfi_json(c: &Cfi) -> CfiJson {
    let range = c.range_paths();
    CfiJson {
        cfi: c.to_string(),
        kind: if c.is_range() { "range" } else { "point" },
        path: path_json(c.path()),
        range_start: range.map(|(s, _)| path_json(s)),
        range_end: range.map(|(_, e)| path_json(e)),
        start: range.map(|_| c.start().to_string()),
        end: range.map(|_| c.end().to_string()),
    }
}

fn params_json(params: &[Param]) -> Vec<ParamJson> {
    params
        .iter()
        .map(|p| ParamJson {
            name: p.name().to_owned(),
            values: p.values().to_vec(),
        })
        .collect()
}

fn step_json(s: &Step) -> StepJson {
    StepJson {
        index: s.index(),
        kind: if s.index().is_multiple_of(2) {
            "element"
        } else {
            "text"
        },
        indirection: s.is_redirected(),
        id: s.assertion().map(|a| a.id().to_owned()),
        params: s
            .assertion()
            .map_or_else(Vec::new, |a| params_json(a.params())),
    }
}

fn path_json(p: &CfiPath) -> PathJson {
    let offset = p.offset().map(|o| {
        let mut j = OffsetJson {
            kind: "other",
            indirection: p.is_offset_redirected(),
            utf16_offset: None,
            seconds: None,
            x: None,
            y: None,
            assertion: None,
        };
        match o {
            Offset::Character {
                utf16_offset,
                assertion,
            } => {
                j.kind = "character";
                j.utf16_offset = Some(*utf16_offset);
                j.assertion = assertion.as_ref().map(|a| AssertionJson {
                    before: a.before().to_owned(),
                    after: a.after().map(str::to_owned),
                    params: params_json(a.params()),
                });
            }
            Offset::Spatial { x, y } => {
                j.kind = "spatial";
                j.x = Some(x.as_str().to_owned());
                j.y = Some(y.as_str().to_owned());
            }
            Offset::Temporal { seconds, spatial } => {
                j.kind = "temporal";
                j.seconds = Some(seconds.as_str().to_owned());
                if let Some((x, y)) = spatial {
                    j.x = Some(x.as_str().to_owned());
                    j.y = Some(y.as_str().to_owned());
                }
            }
            _ => {}
        }
        j
    });
    PathJson {
        steps: p.steps().iter().map(step_json).collect(),
        offset,
    }
}
