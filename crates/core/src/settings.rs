//! Settings of a [`Rewriter`](crate::Rewriter): which markers to recognise and how to render them.

use crate::error::SettingsError;
#[cfg(feature = "serde")]
use crate::names;
use crate::style::Style;

/// A marker syntax the scanner recognises.
///
/// Explicit syntaxes ([`Syntax::DoubleBracket`], [`Syntax::CiteColon`], [`Syntax::CiteTag`],
/// [`Syntax::OpenaiCite`], [`Syntax::AssistantsCite`]) are always markers, whatever their id
/// (an unknown id is unresolved). Ambiguous ones ([`Syntax::SingleBracket`],
/// [`Syntax::BareId`], [`Syntax::Footnote`]) are markers only when every id in them has the
/// configured [`IdShape`] or is a registered source id (or is a rank, in rank mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Syntax {
    /// `[[source_3]]`, `[[source_1, source_3]]`.
    DoubleBracket,
    /// `<cite:source_7>`.
    CiteColon,
    /// `<cite id="source_7"/>` (also `<cite id='…' />` and `<cite id="…"></cite>`).
    CiteTag,
    /// `[source_3]`, `[source_1, source_3]`, `【source_3】`, `［source_3］`.
    SingleBracket,
    /// A bare id such as `source_3` between word boundaries. Off by default.
    BareId,
    /// OpenAI's private-use citation markers as ChatGPT-style answers carry them:
    /// `\u{e200}cite\u{e202}turn0search1\u{e201}`, several ids separated by `\u{e202}`
    /// (`filecite` as well as `cite`). Each id (`turn0search1`) is a source id. Other
    /// private-use blocks (`navlist`, `entity`, …) are not citations and pass through. On by
    /// default: these characters never occur in ordinary text.
    OpenaiCite,
    /// The OpenAI Assistants file-search annotation `【4:0†source】` (also `【4†file.pdf】`):
    /// the id is the index before `†` (`4:0`), the text after it (a file name or `source`) is
    /// not used. On by default: the `†` between an index and `】` does not occur in ordinary
    /// text.
    AssistantsCite,
    /// A markdown footnote reference used as a citation: `[^source_3]`, `[^2]` (rank mode).
    /// Ambiguous like [`Syntax::SingleBracket`]; a definition `[^1]: …` at line start is not a
    /// marker. Off by default: answers with real footnotes would lose them.
    Footnote,
}

impl Syntax {
    /// Every syntax, in a stable order.
    pub const ALL: [Syntax; 8] = [
        Syntax::DoubleBracket,
        Syntax::CiteColon,
        Syntax::CiteTag,
        Syntax::SingleBracket,
        Syntax::BareId,
        Syntax::OpenaiCite,
        Syntax::AssistantsCite,
        Syntax::Footnote,
    ];

    /// The syntaxes on by default: all but [`Syntax::BareId`] and [`Syntax::Footnote`].
    pub const DEFAULT: [Syntax; 6] = [
        Syntax::DoubleBracket,
        Syntax::CiteColon,
        Syntax::CiteTag,
        Syntax::SingleBracket,
        Syntax::OpenaiCite,
        Syntax::AssistantsCite,
    ];

    pub(crate) fn bit(self) -> u16 {
        match self {
            Syntax::DoubleBracket => 1,
            Syntax::CiteColon => 2,
            Syntax::CiteTag => 4,
            Syntax::SingleBracket => 8,
            Syntax::BareId => 16,
            Syntax::OpenaiCite => 32,
            Syntax::AssistantsCite => 64,
            Syntax::Footnote => 128,
        }
    }
}

/// What the body of an id looks like after its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum IdBody {
    /// One or more ASCII digits.
    Digits,
    /// One or more ASCII letters, digits, `_` or `-`.
    Word,
}

/// The shape an ambiguous marker's content must have to count as an id: a literal prefix
/// followed by a body.
///
/// ### Default
/// `source_` followed by digits (`source_3`, `source_12`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct IdShape {
    prefix: String,
    body: IdBody,
}

impl Default for IdShape {
    fn default() -> Self {
        IdShape {
            prefix: "source_".to_owned(),
            body: IdBody::Digits,
        }
    }
}

impl IdShape {
    /// A shape with this prefix and body.
    ///
    /// # Errors
    /// [`SettingsError::InvalidIdPrefix`] when the prefix is empty or holds a character that
    /// cannot stand in a marker (whitespace, brackets, `<`, `>`, `,`, backtick, quotes).
    pub fn new(prefix: impl Into<String>, body: IdBody) -> Result<Self, SettingsError> {
        let prefix = prefix.into();
        let bad = prefix.chars().find(|c| {
            c.is_whitespace() || matches!(c, '[' | ']' | '<' | '>' | ',' | '`' | '"' | '\'')
        });
        if prefix.is_empty() || bad.is_some() {
            return Err(SettingsError::InvalidIdPrefix { prefix });
        }
        Ok(IdShape { prefix, body })
    }

    /// The literal prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The body after the prefix.
    pub fn body(&self) -> IdBody {
        self.body
    }

    /// Parses `prefix<digits>` or `prefix<word>`, the form the CLI and the server accept.
    ///
    /// # Errors
    /// [`SettingsError::InvalidIdPattern`] for anything else.
    pub fn parse(pattern: &str) -> Result<Self, SettingsError> {
        let (prefix, body) = if let Some(p) = pattern.strip_suffix("<digits>") {
            (p, IdBody::Digits)
        } else if let Some(p) = pattern.strip_suffix("<word>") {
            (p, IdBody::Word)
        } else {
            return Err(SettingsError::InvalidIdPattern {
                pattern: pattern.to_owned(),
            });
        };
        IdShape::new(prefix, body)
    }

    /// The pattern [`IdShape::parse`] reads: `prefix<digits>` or `prefix<word>`.
    pub fn name(&self) -> String {
        let body = match self.body {
            IdBody::Digits => "<digits>",
            IdBody::Word => "<word>",
        };
        format!("{}{body}", self.prefix)
    }

    pub(crate) fn body_byte(&self, b: u8) -> bool {
        match self.body {
            IdBody::Digits => b.is_ascii_digit(),
            IdBody::Word => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
        }
    }

    /// Whether `s` is a whole id of this shape.
    pub fn matches(&self, s: &str) -> bool {
        match s.strip_prefix(self.prefix.as_str()) {
            Some(rest) => !rest.is_empty() && rest.bytes().all(|b| self.body_byte(b)),
            None => false,
        }
    }

    /// Whether `s` could still grow into an id of this shape.
    pub(crate) fn is_prefix(&self, s: &str) -> bool {
        if s.len() <= self.prefix.len() {
            self.prefix.as_bytes().starts_with(s.as_bytes())
        } else {
            s.starts_with(self.prefix.as_str())
                && s.as_bytes()[self.prefix.len()..]
                    .iter()
                    .all(|&b| self.body_byte(b))
        }
    }
}

/// What happens to a marker whose id is unknown or whose rank is out of range.
///
/// Whatever the policy, the marker never uses up a number and is reported in an
/// [`Event::Unresolved`](crate::Event::Unresolved).
///
/// ### Default
/// [`UnknownPolicy::Mark`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum UnknownPolicy {
    /// Render `[?]` (in the chosen style's brackets).
    #[default]
    Mark,
    /// Render nothing.
    Drop,
    /// Keep the marker as the model wrote it.
    Keep,
}

/// Whether numbers in markers (`[2]`, `【2】`) refer to the n-th source as the model was shown
/// them, and how they are displayed.
///
/// ### Default
/// [`RankMode::Off`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum RankMode {
    /// Numbers are not citations (`[2]` passes through).
    #[default]
    Off,
    /// Ranks are citations, renumbered by first appearance like ids.
    Renumber,
    /// Ranks are citations and keep the model's number (validated against the source count).
    Keep,
}

/// What to do with bytes that are not valid UTF-8.
///
/// ### Default
/// [`InvalidUtf8::Replace`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum InvalidUtf8 {
    /// Replace each maximal invalid sequence with U+FFFD, as `String::from_utf8_lossy` does.
    #[default]
    Replace,
    /// Fail with [`RewriteError::InvalidUtf8`](crate::RewriteError::InvalidUtf8).
    Error,
}

/// Where numbers come from.
///
/// ### Default
/// [`NumberSource::Local`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum NumberSource {
    /// The rewriter's own [`Numbering`](crate::Numbering) hands out the next number.
    #[default]
    Local,
    /// A shared store hands out numbers: the rewriter yields
    /// [`Event::NumberNeeded`](crate::Event::NumberNeeded) and waits for
    /// [`Rewriter::provide_number`](crate::Rewriter::provide_number).
    External,
}

#[cfg(feature = "serde")]
names::by_serde_name!(
    Syntax => "syntax",
    UnknownPolicy => "unknown policy",
    RankMode => "rank mode",
    InvalidUtf8 => "invalid utf-8 policy",
    NumberSource => "number source",
);

impl core::str::FromStr for IdShape {
    type Err = SettingsError;

    /// As [`IdShape::parse`].
    fn from_str(pattern: &str) -> Result<Self, SettingsError> {
        IdShape::parse(pattern)
    }
}

impl core::fmt::Display for IdShape {
    /// As [`IdShape::name`].
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.name())
    }
}

/// How many bytes of provider text a link that may still be cited holds by default (see
/// [`Settings::with_max_link_hold_bytes`]).
pub const DEFAULT_LINK_HOLD_BYTES: usize = 4096;

/// The smallest hold-back cap [`Settings::with_max_pending_bytes`] accepts.
pub const MIN_PENDING_BYTES: usize = 16;

/// Everything that decides how a stream is rewritten. Fields are private; build with
/// [`Settings::default`] and the consuming `with_*` setters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct Settings {
    #[cfg_attr(feature = "serde", serde(with = "syntax_list"))]
    syntaxes: u16,
    id_shape: IdShape,
    rank: RankMode,
    unknown: UnknownPolicy,
    #[cfg_attr(feature = "serde", serde(deserialize_with = "checked_style"))]
    style: Style,
    #[cfg_attr(feature = "serde", serde(deserialize_with = "pending_cap"))]
    max_pending_bytes: usize,
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "is_default_link_hold"))]
    max_link_hold_bytes: usize,
    invalid_utf8: InvalidUtf8,
    number_source: NumberSource,
    dedupe: bool,
    skip_code: bool,
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "std::ops::Not::not"))]
    anchors: bool,
    #[cfg_attr(
        feature = "serde",
        serde(
            skip_serializing_if = "is_default_anchor_cap",
            deserialize_with = "anchor_cap"
        )
    )]
    max_anchor_source_bytes: usize,
}

/// Snapshots leave the anchor cap out at its default.
#[cfg(feature = "serde")]
fn is_default_anchor_cap(bytes: &usize) -> bool {
    *bytes == crate::anchor::DEFAULT_MAX_SOURCE_BYTES
}

#[cfg(feature = "serde")]
fn anchor_cap<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let bytes = <usize as serde::Deserialize>::deserialize(d)?;
    check_anchor_cap(bytes).map_err(serde::de::Error::custom)
}

fn check_anchor_cap(bytes: usize) -> Result<usize, SettingsError> {
    use crate::anchor::{MAX_SOURCE_BYTES_LIMIT, MIN_SOURCE_BYTES};
    if (MIN_SOURCE_BYTES..=MAX_SOURCE_BYTES_LIMIT).contains(&bytes) {
        Ok(bytes)
    } else {
        Err(SettingsError::AnchorSourceCap {
            bytes,
            min: MIN_SOURCE_BYTES,
            max: MAX_SOURCE_BYTES_LIMIT,
        })
    }
}

/// Snapshots leave the link hold out at its default (they stay as small as before).
#[cfg(feature = "serde")]
fn is_default_link_hold(bytes: &usize) -> bool {
    *bytes == DEFAULT_LINK_HOLD_BYTES
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            syntaxes: Syntax::DEFAULT.iter().fold(0, |acc, s| acc | s.bit()),
            id_shape: IdShape::default(),
            rank: RankMode::Off,
            unknown: UnknownPolicy::Mark,
            style: Style::default(),
            max_pending_bytes: 64,
            max_link_hold_bytes: DEFAULT_LINK_HOLD_BYTES,
            invalid_utf8: InvalidUtf8::Replace,
            number_source: NumberSource::Local,
            dedupe: true,
            skip_code: true,
            anchors: false,
            max_anchor_source_bytes: crate::anchor::DEFAULT_MAX_SOURCE_BYTES,
        }
    }
}

impl Settings {
    /// Recognise exactly these syntaxes.
    ///
    /// ### Default
    /// [`Syntax::DEFAULT`]: all but bare ids and footnotes.
    pub fn with_syntaxes(mut self, syntaxes: &[Syntax]) -> Self {
        self.syntaxes = syntaxes.iter().fold(0, |acc, s| acc | s.bit());
        self
    }

    /// The shape of ids in ambiguous markers.
    ///
    /// ### Default
    /// [`IdShape::default`]: `source_<digits>`.
    pub fn with_id_shape(mut self, shape: IdShape) -> Self {
        self.id_shape = shape;
        self
    }

    /// Whether bare numbers are ranks, and how they show.
    ///
    /// ### Default
    /// [`RankMode::Off`].
    pub fn with_rank(mut self, rank: RankMode) -> Self {
        self.rank = rank;
        self
    }

    /// The policy for unknown ids and out-of-range ranks.
    ///
    /// ### Default
    /// [`UnknownPolicy::Mark`].
    pub fn with_unknown(mut self, unknown: UnknownPolicy) -> Self {
        self.unknown = unknown;
        self
    }

    /// How numbers are rendered in the text. A template over [`MAX_TEMPLATE_BYTES`](crate::MAX_TEMPLATE_BYTES) renders as
    /// `[n]` (parsing a style by name refuses it with an error).
    ///
    /// ### Default
    /// [`Style::Brackets`]: `[1]`.
    pub fn with_style(mut self, style: Style) -> Self {
        self.style = style;
        self
    }

    /// The hold-back cap: a possible marker longer than this many bytes is released as text.
    ///
    /// ### Default
    /// 64 bytes.
    ///
    /// # Errors
    /// [`SettingsError::PendingCapTooSmall`] below [`MIN_PENDING_BYTES`].
    pub fn with_max_pending_bytes(mut self, bytes: usize) -> Result<Self, SettingsError> {
        if bytes < MIN_PENDING_BYTES {
            return Err(SettingsError::PendingCapTooSmall {
                bytes,
                min: MIN_PENDING_BYTES,
            });
        }
        self.max_pending_bytes = bytes;
        Ok(self)
    }

    /// How much provider text a model-written link that may still be cited holds back
    /// (OpenAI Responses and Chat Completions, Azure, xAI): the link, and the text after it,
    /// wait for the citation that replaces the link by its number, or for the end of the
    /// content part, or until more than this many bytes are held; then the link is shown as
    /// written, and a citation that comes for it later is bound late, in the final text only.
    /// `0` holds nothing.
    ///
    /// ### Default
    /// [`DEFAULT_LINK_HOLD_BYTES`] (4096 bytes): the recorded OpenAI streams send each
    /// citation 0 to 44 characters after its link.
    pub fn with_max_link_hold_bytes(mut self, bytes: usize) -> Self {
        self.max_link_hold_bytes = bytes;
        self
    }

    /// What to do with invalid UTF-8.
    ///
    /// ### Default
    /// [`InvalidUtf8::Replace`].
    pub fn with_invalid_utf8(mut self, policy: InvalidUtf8) -> Self {
        self.invalid_utf8 = policy;
        self
    }

    /// Where numbers come from.
    ///
    /// ### Default
    /// [`NumberSource::Local`].
    pub fn with_number_source(mut self, source: NumberSource) -> Self {
        self.number_source = source;
        self
    }

    /// Whether two ids naming the same document (same canonical key) share one number.
    ///
    /// ### Default
    /// `true`.
    pub fn with_dedupe(mut self, dedupe: bool) -> Self {
        self.dedupe = dedupe;
        self
    }

    /// Whether markers inside fenced code blocks and inline code spans are left as they are.
    ///
    /// ### Default
    /// `true`.
    pub fn with_skip_code(mut self, skip: bool) -> Self {
        self.skip_code = skip;
        self
    }

    /// Whether each citation gets an [`Event::Anchor`](crate::Event::Anchor): the sentence of
    /// its source that supports the sentence of the answer it ends, with a support score (see
    /// [`anchor`](crate::anchor)).
    ///
    /// ### Default
    /// `false`.
    pub fn with_anchors(mut self, anchors: bool) -> Self {
        self.anchors = anchors;
        self
    }

    /// How much of a source's text anchoring indexes: a longer text is anchored over its first
    /// part, and its quotes say so ([`Quote::truncated`](crate::anchor::Quote::truncated)).
    ///
    /// ### Default
    /// [`DEFAULT_MAX_SOURCE_BYTES`](crate::anchor::DEFAULT_MAX_SOURCE_BYTES) (1 MiB).
    ///
    /// # Errors
    /// [`SettingsError::AnchorSourceCap`] outside
    /// [`MIN_SOURCE_BYTES`](crate::anchor::MIN_SOURCE_BYTES)..=[`MAX_SOURCE_BYTES_LIMIT`](crate::anchor::MAX_SOURCE_BYTES_LIMIT).
    pub fn with_max_anchor_source_bytes(mut self, bytes: usize) -> Result<Self, SettingsError> {
        self.max_anchor_source_bytes = check_anchor_cap(bytes)?;
        Ok(self)
    }

    /// Whether citations are anchored.
    pub fn has_anchors(&self) -> bool {
        self.anchors
    }

    /// The anchor indexing cap in bytes.
    pub fn max_anchor_source_bytes(&self) -> usize {
        self.max_anchor_source_bytes
    }

    /// Whether `syntax` is recognised.
    pub fn has_syntax(&self, syntax: Syntax) -> bool {
        self.syntaxes & syntax.bit() != 0
    }

    /// The recognised syntaxes.
    pub fn syntaxes(&self) -> Vec<Syntax> {
        Syntax::ALL
            .into_iter()
            .filter(|s| self.has_syntax(*s))
            .collect()
    }

    /// The id shape.
    pub fn id_shape(&self) -> &IdShape {
        &self.id_shape
    }

    /// The rank mode.
    pub fn rank(&self) -> RankMode {
        self.rank
    }

    /// The unknown-id policy.
    pub fn unknown(&self) -> UnknownPolicy {
        self.unknown
    }

    /// The number style.
    pub fn style(&self) -> &Style {
        &self.style
    }

    /// The hold-back cap in bytes.
    pub fn max_pending_bytes(&self) -> usize {
        self.max_pending_bytes
    }

    /// The most provider text a possible link citation holds back, in bytes.
    pub fn max_link_hold_bytes(&self) -> usize {
        self.max_link_hold_bytes
    }

    /// The invalid UTF-8 policy.
    pub fn invalid_utf8(&self) -> InvalidUtf8 {
        self.invalid_utf8
    }

    /// Where numbers come from.
    pub fn number_source(&self) -> NumberSource {
        self.number_source
    }

    /// Whether canonical keys merge sources.
    pub fn is_dedupe(&self) -> bool {
        self.dedupe
    }

    /// Whether code is skipped.
    pub fn is_skip_code(&self) -> bool {
        self.skip_code
    }
}

#[cfg(feature = "serde")]
mod syntax_list {
    //! Serialises the syntax bit set as a list of names.
    use super::Syntax;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(bits: &u16, s: S) -> Result<S::Ok, S::Error> {
        let list: Vec<Syntax> = Syntax::ALL
            .into_iter()
            .filter(|x| bits & x.bit() != 0)
            .collect();
        list.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
        let list = Vec::<Syntax>::deserialize(d)?;
        Ok(list.iter().fold(0, |acc, x| acc | x.bit()))
    }
}

#[cfg(feature = "serde")]
fn checked_style<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Style, D::Error> {
    use serde::Deserialize;
    Style::deserialize(d)?
        .checked()
        .map_err(serde::de::Error::custom)
}

#[cfg(feature = "serde")]
fn pending_cap<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    use serde::Deserialize;
    let bytes = usize::deserialize(d)?;
    if bytes < MIN_PENDING_BYTES {
        return Err(serde::de::Error::custom(
            SettingsError::PendingCapTooSmall {
                bytes,
                min: MIN_PENDING_BYTES,
            },
        ));
    }
    Ok(bytes)
}
