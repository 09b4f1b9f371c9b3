//! EPUB Canonical Fragment Identifiers (EPUB CFI 1.1).
//!
//! A [`Cfi`] is either a point (`epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/3:10)`)
//! or a range (`epubcfi(P,S,E)`: a common parent path `P` and two local
//! paths `S` and `E` relative to it).
//!
//! - [`Cfi::parse`] reads the textual form and reports malformed input with
//!   the byte position of the problem ([`CfiParseError`]).
//! - [`Display`](std::fmt::Display) writes the canonical form, escaping
//!   `[ ] ( ) , ; = ^` with `^` inside assertions.
//! - [`Cfi::compare`] orders two CFIs by the specification's sorting rules.
//! - [`Book::resolve`](crate::Book::resolve) turns a CFI into a position in
//!   a book.
//!
//! Step indexes follow the specification: even indexes (`/2`, `/4`, …) name
//! element children (child *n* is `/2n`), odd indexes name the runs of
//! character data between them ("chunks"), and character offsets count
//! UTF-16 code units inside a chunk. Comments and processing instructions
//! are ignored; CDATA sections are character data.
//!
//! epub.js writes some of these CFIs differently; [`CfiFlavor`] and the
//! [`epubjs`] module generate and read its flavour.

mod compare;
pub mod epubjs;
mod flavor;
mod parse;

use std::fmt;

pub use flavor::{CfiFlavor, CfiFlavorError};
pub use parse::CfiParseError;

/// A parsed EPUB CFI: a point or a range.
///
/// Equality is structural (ids and assertions included); use
/// [`Cfi::compare`] for document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cfi {
    path: Path,
    range: Option<(Path, Path)>,
}

/// A sequence of steps, possibly ending in an offset.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Path {
    steps: Vec<Step>,
    offset: Option<Offset>,
    offset_redirected: bool,
}

/// One `/N[assertion]` step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    index: u32,
    assertion: Option<IdAssertion>,
    redirected: bool,
}

/// The `[id;param=value]` assertion of a step.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdAssertion {
    id: String,
    params: Vec<Param>,
}

/// A `;name=value,value` assertion parameter, such as the side bias `;s=b`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    name: String,
    values: Vec<String>,
}

/// The terminal offset of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Offset {
    /// `:N[before,after;params]`: a character offset in UTF-16 code units.
    Character {
        /// Offset in UTF-16 code units from the start of the chunk.
        utf16_offset: u32,
        /// The optional text-location assertion.
        assertion: Option<TextAssertion>,
    },
    /// `@x:y`: a spatial position in an image or video, in percent.
    Spatial {
        /// Horizontal position as written.
        x: Number,
        /// Vertical position as written.
        y: Number,
    },
    /// `~t` or `~t@x:y`: a temporal (and optional spatial) position.
    Temporal {
        /// Time in seconds as written.
        seconds: Number,
        /// The optional spatial position.
        spatial: Option<(Number, Number)>,
    },
}

/// A text-location assertion: the text before and after a point.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TextAssertion {
    before: String,
    after: Option<String>,
    params: Vec<Param>,
}

/// A decimal number as written in a CFI (kept as text for exact round trips).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Number(String);

impl Number {
    /// The number's text as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The number's value.
    pub fn value(&self) -> f64 {
        self.0.parse().unwrap_or(0.0)
    }
}

impl Cfi {
    /// Parses a CFI.
    ///
    /// Accepts `epubcfi(…)`, a bare path starting with `/` (as some readers
    /// store them), and `anything#epubcfi(…)` (an intra-publication
    /// reference; the part before `#` is dropped). Percent-encoding is not
    /// decoded: use [`Cfi::parse_percent_encoded`] for CFIs taken from URLs.
    ///
    /// # Errors
    ///
    /// [`CfiParseError`] with the byte position of the first problem.
    pub fn parse(input: &str) -> Result<Cfi, CfiParseError> {
        parse::parse(input)
    }

    /// Decodes `%XX` escapes (as in an `href`) and parses the result.
    ///
    /// # Errors
    ///
    /// [`CfiParseError`] if the decoded text is not a valid CFI, or the
    /// escapes do not decode to UTF-8.
    pub fn parse_percent_encoded(input: &str) -> Result<Cfi, CfiParseError> {
        let decoded = percent_decode(input).ok_or_else(|| CfiParseError::BadPercentEncoding {
            input: input.to_owned(),
        })?;
        parse::parse(&decoded)
    }

    pub(crate) fn point(path: Path) -> Cfi {
        Cfi { path, range: None }
    }

    /// Builds the range between two points, factoring out their common
    /// steps as the parent path.
    pub(crate) fn range_between(start: &Path, end: &Path) -> Cfi {
        let max = start.steps.len().min(end.steps.len()).saturating_sub(1);
        let common = start
            .steps
            .iter()
            .zip(&end.steps)
            .take(max)
            .take_while(|(a, b)| a.index == b.index && a.redirected == b.redirected)
            .count();
        let parent = Path {
            steps: start.steps[..common].to_vec(),
            offset: None,
            offset_redirected: false,
        };
        let local = |p: &Path| Path {
            steps: p.steps[common..].to_vec(),
            offset: p.offset.clone(),
            offset_redirected: p.offset_redirected,
        };
        Cfi {
            path: parent,
            range: Some((local(start), local(end))),
        }
    }

    /// Prefixes a document-relative CFI with the path of the item that
    /// holds the document, joined by an indirection `!`: `epubcfi(/4/2/1:3)`
    /// on base `epubcfi(/6/4[chap01ref])` gives
    /// `epubcfi(/6/4[chap01ref]!/4/2/1:3)`. The base's offset, if any, is
    /// dropped.
    pub fn with_base(&self, base: &Cfi) -> Cfi {
        let base = base.start().path;
        let base = Path {
            steps: base.steps,
            offset: None,
            offset_redirected: false,
        };
        match &self.range {
            None => Cfi::point(base.redirect_to(self.path.clone())),
            Some((s, e)) if self.path.steps.is_empty() => Cfi {
                path: base.clone(),
                range: Some((
                    Path::new().redirect_to(s.clone()),
                    Path::new().redirect_to(e.clone()),
                )),
            },
            Some((s, e)) => Cfi {
                path: base.redirect_to(self.path.clone()),
                range: Some((s.clone(), e.clone())),
            },
        }
    }

    /// The range from the start of `start` to the end of `end`, with their
    /// common steps factored out as the parent path (each local path keeps
    /// at least one step).
    pub fn range_from(start: &Cfi, end: &Cfi) -> Cfi {
        Cfi::range_between(&start.start().path, &end.end().path)
    }

    /// Whether this is a range CFI (`epubcfi(P,S,E)`).
    pub fn is_range(&self) -> bool {
        self.range.is_some()
    }

    /// The path (the parent path of a range).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The start and end local paths of a range.
    pub fn range_paths(&self) -> Option<(&Path, &Path)> {
        self.range.as_ref().map(|(s, e)| (s, e))
    }

    /// The start point: the CFI itself for a point, parent + start for a
    /// range.
    pub fn start(&self) -> Cfi {
        match &self.range {
            None => self.clone(),
            Some((s, _)) => Cfi::point(self.path.join(s)),
        }
    }

    /// The end point: the CFI itself for a point, parent + end for a range.
    pub fn end(&self) -> Cfi {
        match &self.range {
            None => self.clone(),
            Some((_, e)) => Cfi::point(self.path.join(e)),
        }
    }

    /// Orders two CFIs by document position (EPUB CFI 1.1 sorting rules).
    ///
    /// Steps are compared by index, ignoring assertions; a path that is a
    /// prefix of another sorts first; a missing character offset equals
    /// `:0`; temporal offsets sort before spatial ones. A range sorts by its
    /// start; two ranges with equal starts sort by their ends. Returns
    /// `None` when the two cannot be compared (one redirects where the
    /// other has an offset, or offsets of different kinds meet).
    pub fn compare(&self, other: &Cfi) -> Option<std::cmp::Ordering> {
        compare::compare(self, other)
    }
}

impl Path {
    pub(crate) fn new() -> Path {
        Path::default()
    }

    pub(crate) fn push(&mut self, index: u32, id: Option<&str>, redirected: bool) {
        self.steps.push(Step {
            index,
            assertion: id.filter(|i| !i.is_empty()).map(|i| IdAssertion {
                id: i.to_owned(),
                params: Vec::new(),
            }),
            redirected,
        });
    }

    #[cfg(test)]
    pub(crate) fn with_char_offset(mut self, utf16_offset: u32) -> Path {
        self.set_char_offset(utf16_offset);
        self
    }

    pub(crate) fn set_char_offset(&mut self, utf16_offset: u32) {
        self.offset = Some(Offset::Character {
            utf16_offset,
            assertion: None,
        });
    }

    pub(crate) fn reserve(&mut self, steps: usize) {
        self.steps.reserve(steps);
    }

    /// `self` + `!` + `local`: continues into the document `self` names.
    pub(crate) fn redirect_to(&self, local: Path) -> Path {
        let mut steps = self.steps.clone();
        let redirect_offset = local.steps.is_empty();
        for (i, mut s) in local.steps.into_iter().enumerate() {
            if i == 0 {
                s.redirected = true;
            }
            steps.push(s);
        }
        Path {
            steps,
            offset: local.offset,
            offset_redirected: local.offset_redirected || redirect_offset,
        }
    }

    fn join(&self, local: &Path) -> Path {
        let mut steps = self.steps.clone();
        steps.extend(local.steps.iter().cloned());
        Path {
            steps,
            offset: local.offset.clone(),
            offset_redirected: local.offset_redirected,
        }
    }

    /// The steps in order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The terminal offset, if any.
    pub fn offset(&self) -> Option<&Offset> {
        self.offset.as_ref()
    }

    /// Whether the offset follows an indirection (`…!:10`).
    pub fn is_offset_redirected(&self) -> bool {
        self.offset_redirected
    }
}

impl Step {
    /// The step's index (even: element, odd: character data).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The id assertion, if present and not empty.
    pub fn id(&self) -> Option<&str> {
        self.assertion
            .as_ref()
            .map(|a| a.id.as_str())
            .filter(|i| !i.is_empty())
    }

    /// The full `[…]` assertion, if present.
    pub fn assertion(&self) -> Option<&IdAssertion> {
        self.assertion.as_ref()
    }

    /// Whether an indirection `!` precedes this step.
    pub fn is_redirected(&self) -> bool {
        self.redirected
    }
}

impl IdAssertion {
    /// The asserted id (may be empty when only parameters are given).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The parameters.
    pub fn params(&self) -> &[Param] {
        &self.params
    }
}

impl Param {
    /// The parameter's name, such as `s`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parameter's values, such as `["b"]`.
    pub fn values(&self) -> &[String] {
        &self.values
    }
}

impl TextAssertion {
    /// Text asserted to precede the point.
    pub fn before(&self) -> &str {
        &self.before
    }

    /// Text asserted to follow the point, if given.
    pub fn after(&self) -> Option<&str> {
        self.after.as_deref()
    }

    /// The parameters (such as side bias `s=b`).
    pub fn params(&self) -> &[Param] {
        &self.params
    }
}

/// Characters that must be escaped with `^` inside assertions.
fn is_special(c: char) -> bool {
    matches!(c, '[' | ']' | '(' | ')' | ',' | ';' | '=' | '^')
}

/// Writes `s` with the special characters escaped.
fn write_escaped(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    if !s.chars().any(is_special) {
        return f.write_str(s);
    }
    for c in s.chars() {
        if is_special(c) {
            f.write_str("^")?;
        }
        fmt::Write::write_char(f, c)?;
    }
    Ok(())
}

/// Writes a number without going through the formatting machinery.
fn write_u32(f: &mut fmt::Formatter<'_>, mut n: u32) -> fmt::Result {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    f.write_str(std::str::from_utf8(&buf[i..]).unwrap_or("0"))
}

/// Escapes the special characters of a CFI assertion value with `^`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_special(c) {
            out.push('^');
        }
        out.push(c);
    }
    out
}

fn write_params(f: &mut fmt::Formatter<'_>, params: &[Param]) -> fmt::Result {
    for p in params {
        f.write_str(";")?;
        write_escaped(f, &p.name)?;
        f.write_str("=")?;
        for (i, v) in p.values.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write_escaped(f, v)?;
        }
    }
    Ok(())
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.steps {
            if s.redirected {
                f.write_str("!")?;
            }
            f.write_str("/")?;
            write_u32(f, s.index)?;
            if let Some(a) = &s.assertion {
                f.write_str("[")?;
                write_escaped(f, &a.id)?;
                write_params(f, &a.params)?;
                f.write_str("]")?;
            }
        }
        if let Some(o) = &self.offset {
            if self.offset_redirected {
                f.write_str("!")?;
            }
            match o {
                Offset::Character {
                    utf16_offset,
                    assertion,
                } => {
                    f.write_str(":")?;
                    write_u32(f, *utf16_offset)?;
                    if let Some(a) = assertion {
                        f.write_str("[")?;
                        write_escaped(f, &a.before)?;
                        if let Some(after) = &a.after {
                            f.write_str(",")?;
                            write_escaped(f, after)?;
                        }
                        write_params(f, &a.params)?;
                        f.write_str("]")?;
                    }
                }
                Offset::Spatial { x, y } => write!(f, "@{}:{}", x.0, y.0)?,
                Offset::Temporal { seconds, spatial } => {
                    write!(f, "~{}", seconds.0)?;
                    if let Some((x, y)) = spatial {
                        write!(f, "@{}:{}", x.0, y.0)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for Cfi {
    /// Writes the canonical `epubcfi(…)` form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "epubcfi({}", self.path)?;
        if let Some((s, e)) = &self.range {
            write!(f, ",{s},{e}")?;
        }
        f.write_str(")")
    }
}

impl std::str::FromStr for Cfi {
    type Err = CfiParseError;
    fn from_str(s: &str) -> Result<Cfi, CfiParseError> {
        Cfi::parse(s)
    }
}

/// Decodes `%XX` escapes; `None` if the result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_handles_edges() {
        assert_eq!(percent_decode("a%20b%5B%5d").as_deref(), Some("a b[]"));
        assert_eq!(percent_decode("50%").as_deref(), Some("50%"));
        assert_eq!(percent_decode("%zz%2").as_deref(), Some("%zz%2"));
        assert_eq!(percent_decode("%ff"), None);
    }

    #[test]
    fn range_between_keeps_a_step_in_each_local_path() {
        let mut a = Path::new();
        a.push(4, Some("b"), false);
        a.push(2, None, false);
        a.push(3, None, false);
        let b = a.clone().with_char_offset(7);
        let a = a.with_char_offset(3);
        assert_eq!(
            Cfi::range_between(&a, &b).to_string(),
            "epubcfi(/4[b]/2,/3:3,/3:7)"
        );
    }
}
