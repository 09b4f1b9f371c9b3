//! [`SettingsPatch`]: settings by name, as the adapters receive them.

use crate::error::SettingsError;
use crate::settings::{
    IdShape, InvalidUtf8, NumberSource, RankMode, Settings, Syntax, UnknownPolicy,
};
use crate::style::Style;

/// Changes to [`Settings`], every one optional and typed: what the CLI's flags, the server's
/// JSON, Python's keywords and WASM's options become. [`SettingsPatch::apply`] applies them.
///
/// In JSON every setting is named by its serde name, the one table of names each enum derives
/// (`"rank": "renumber"`, `"syntaxes": ["double_bracket"]`); [`Style`] also takes
/// `template:<text>` and `html_template:<text>`, and `id_pattern` is `prefix<digits>` or
/// `prefix<word>` ([`IdShape::parse`]). An unknown name is an error naming the field, the
/// name and the names there are; unknown fields are refused (`{"styel": …}` is an error, not
/// a silent default).
///
/// ```
/// use citeflow_core::{RankMode, Settings, SettingsPatch, Style, Syntax};
///
/// let mut patch = SettingsPatch::default();
/// patch.style = Some(Style::FullWidth);
/// patch.syntaxes = Some(vec![Syntax::DoubleBracket, Syntax::SingleBracket]);
/// let settings = patch.apply(Settings::default())?;
/// assert_eq!(settings.style(), &Style::FullWidth);
///
/// let patch: SettingsPatch = serde_json::from_str(r#"{"rank": "keep", "style": "template:<{n}>"}"#)?;
/// assert_eq!(patch.rank, Some(RankMode::Keep));
/// assert_eq!(patch.style, Some(Style::Template("<{n}>".into())));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct SettingsPatch {
    /// Marker syntaxes to recognise.
    #[serde(deserialize_with = "by_name::syntaxes")]
    pub syntaxes: Option<Vec<Syntax>>,
    /// Shape of ids in ambiguous markers (in JSON `prefix<digits>` or `prefix<word>`).
    #[serde(
        serialize_with = "by_name::serialize",
        deserialize_with = "by_name::id_pattern"
    )]
    pub id_pattern: Option<IdShape>,
    /// Whether numbers in markers are ranks.
    #[serde(deserialize_with = "by_name::rank")]
    pub rank: Option<RankMode>,
    /// What happens to unknown ids and out-of-range ranks.
    #[serde(deserialize_with = "by_name::unknown")]
    pub unknown: Option<UnknownPolicy>,
    /// How numbers are written (in JSON a name, `template:…` or `html_template:…`).
    #[serde(
        serialize_with = "by_name::serialize",
        deserialize_with = "by_name::style"
    )]
    pub style: Option<Style>,
    /// Hold-back cap in UTF-8 bytes.
    pub max_pending_bytes: Option<usize>,
    /// Most provider text a possible link citation holds back, in UTF-8 bytes.
    pub max_link_hold_bytes: Option<usize>,
    /// What to do with bytes that are not valid UTF-8.
    #[serde(deserialize_with = "by_name::invalid_utf8")]
    pub invalid_utf8: Option<InvalidUtf8>,
    /// Where numbers come from.
    #[serde(deserialize_with = "by_name::number_source")]
    pub number_source: Option<NumberSource>,
    /// Sources with the same canonical key share one number.
    pub dedupe: Option<bool>,
    /// Leave markers in code spans and fences alone.
    pub skip_code: Option<bool>,
    /// Anchor each citation to the sentence of its source that supports it.
    pub anchors: Option<bool>,
    /// How much of a source's text anchoring indexes, in UTF-8 bytes.
    pub max_anchor_source_bytes: Option<usize>,
}

impl SettingsPatch {
    /// `base` with every given field changed; a field left `None` keeps `base`'s value.
    ///
    /// # Errors
    /// [`SettingsError::PendingCapTooSmall`] as [`Settings::with_max_pending_bytes`]. (Names
    /// are checked when the patch is built: by [`FromStr`](core::str::FromStr) or while
    /// deserialising it.)
    pub fn apply(&self, base: Settings) -> Result<Settings, SettingsError> {
        let mut s = base;
        if let Some(syntaxes) = &self.syntaxes {
            s = s.with_syntaxes(syntaxes);
        }
        if let Some(shape) = &self.id_pattern {
            s = s.with_id_shape(shape.clone());
        }
        if let Some(r) = self.rank {
            s = s.with_rank(r);
        }
        if let Some(u) = self.unknown {
            s = s.with_unknown(u);
        }
        if let Some(st) = &self.style {
            s = s.with_style(st.clone());
        }
        if let Some(b) = self.max_pending_bytes {
            s = s.with_max_pending_bytes(b)?;
        }
        if let Some(b) = self.max_link_hold_bytes {
            s = s.with_max_link_hold_bytes(b);
        }
        if let Some(p) = self.invalid_utf8 {
            s = s.with_invalid_utf8(p);
        }
        if let Some(n) = self.number_source {
            s = s.with_number_source(n);
        }
        if let Some(d) = self.dedupe {
            s = s.with_dedupe(d);
        }
        if let Some(k) = self.skip_code {
            s = s.with_skip_code(k);
        }
        if let Some(a) = self.anchors {
            s = s.with_anchors(a);
        }
        if let Some(b) = self.max_anchor_source_bytes {
            s = s.with_max_anchor_source_bytes(b)?;
        }
        Ok(s)
    }
}

/// The patch's fields read by name through [`FromStr`](core::str::FromStr) (itself the
/// enums' serde names), so that an error names the field as well as the name and the names
/// there are: `rank: unknown rank mode "often", expected one of off, renumber, keep`.
mod by_name {
    use core::fmt::Display;
    use core::str::FromStr;

    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::error::SettingsError;
    use crate::settings::{IdShape, InvalidUtf8, NumberSource, RankMode, UnknownPolicy};
    use crate::style::Style;
    use crate::Syntax;

    fn read<'de, D, T>(d: D, field: &str) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: FromStr<Err = SettingsError>,
    {
        let Some(name) = Option::<String>::deserialize(d)? else {
            return Ok(None);
        };
        name.parse()
            .map(Some)
            .map_err(|e| D::Error::custom(format_args!("{field}: {e}")))
    }

    /// A value by its name (`Display`).
    pub(super) fn serialize<S: Serializer, T: Display>(
        value: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => s.collect_str(v),
            None => s.serialize_none(),
        }
    }

    pub(super) fn syntaxes<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<Syntax>>, D::Error> {
        let Some(names) = Option::<Vec<String>>::deserialize(d)? else {
            return Ok(None);
        };
        let syntaxes = names.iter().map(|n| n.parse::<Syntax>());
        syntaxes
            .collect::<Result<_, _>>()
            .map(Some)
            .map_err(|e| D::Error::custom(format_args!("syntaxes: {e}")))
    }

    macro_rules! fields {
        ($($field:ident: $ty:ty),+ $(,)?) => {$(
            pub(super) fn $field<'de, D: Deserializer<'de>>(d: D) -> Result<Option<$ty>, D::Error> {
                read(d, stringify!($field))
            }
        )+};
    }

    fields!(
        id_pattern: IdShape,
        rank: RankMode,
        unknown: UnknownPolicy,
        style: Style,
        invalid_utf8: InvalidUtf8,
        number_source: NumberSource,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_enum_name_reads_back() {
        for s in Syntax::ALL {
            assert_eq!(s.to_string().parse::<Syntax>(), Ok(s));
        }
        for r in [RankMode::Off, RankMode::Renumber, RankMode::Keep] {
            assert_eq!(r.to_string().parse::<RankMode>(), Ok(r));
        }
        for u in [
            UnknownPolicy::Mark,
            UnknownPolicy::Drop,
            UnknownPolicy::Keep,
        ] {
            assert_eq!(u.to_string().parse::<UnknownPolicy>(), Ok(u));
        }
        for p in [InvalidUtf8::Replace, InvalidUtf8::Error] {
            assert_eq!(p.to_string().parse::<InvalidUtf8>(), Ok(p));
        }
        for n in [NumberSource::Local, NumberSource::External] {
            assert_eq!(n.to_string().parse::<NumberSource>(), Ok(n));
        }
        for st in [
            Style::Brackets,
            Style::MarkdownLink,
            Style::FullWidth,
            Style::Html,
            Style::Footnote,
            Style::Remove,
            Style::AsWritten,
            Style::Template("<{n}>".into()),
            Style::HtmlTemplate("<i>{n}</i>".into()),
        ] {
            assert_eq!(st.to_string().parse::<Style>(), Ok(st));
        }
        let shape = IdShape::default();
        assert_eq!(shape.to_string().parse::<IdShape>(), Ok(shape));
    }

    #[test]
    fn serde_names_are_the_display_names() {
        let json = serde_json::to_value((
            Syntax::CiteColon,
            RankMode::Renumber,
            UnknownPolicy::Drop,
            InvalidUtf8::Error,
            NumberSource::External,
            Style::AsWritten,
        ))
        .unwrap();
        let names = [
            Syntax::CiteColon.to_string(),
            RankMode::Renumber.to_string(),
            UnknownPolicy::Drop.to_string(),
            InvalidUtf8::Error.to_string(),
            NumberSource::External.to_string(),
            Style::AsWritten.to_string(),
        ];
        assert_eq!(json, serde_json::json!(names));
    }

    #[test]
    fn a_patch_changes_only_what_it_names() {
        let mut patch = SettingsPatch::default();
        assert_eq!(patch.apply(Settings::default()), Ok(Settings::default()));
        patch.rank = Some(RankMode::Keep);
        patch.invalid_utf8 = Some(InvalidUtf8::Error);
        let s = patch.apply(Settings::default()).unwrap();
        assert_eq!(s.rank(), RankMode::Keep);
        assert_eq!(s.invalid_utf8(), InvalidUtf8::Error);
        assert_eq!(s.style(), Settings::default().style());
        assert_eq!(
            "nope".parse::<UnknownPolicy>(),
            Err(SettingsError::UnknownName {
                what: "unknown policy",
                value: "nope".into(),
                expected: &["mark", "drop", "keep"],
            })
        );
    }

    #[test]
    fn a_patch_refuses_unknown_fields() {
        let p: SettingsPatch =
            serde_json::from_str(r#"{"style": "html", "dedupe": false}"#).unwrap();
        assert_eq!(p.style, Some(Style::Html));
        assert!(serde_json::from_str::<SettingsPatch>(r#"{"styel": "html"}"#).is_err());
    }

    #[test]
    fn a_patch_reads_every_name_the_string_fields_took() {
        let p: SettingsPatch = serde_json::from_str(
            r#"{"syntaxes": ["double_bracket", "footnote"], "id_pattern": "doc-<word>",
                "rank": "renumber", "unknown": "drop", "style": "fullwidth",
                "invalid_utf8": "error", "number_source": "external", "max_pending_bytes": 32}"#,
        )
        .unwrap();
        let want = Settings::default()
            .with_syntaxes(&[Syntax::DoubleBracket, Syntax::Footnote])
            .with_id_shape(IdShape::parse("doc-<word>").unwrap())
            .with_rank(RankMode::Renumber)
            .with_unknown(UnknownPolicy::Drop)
            .with_style(Style::FullWidth)
            .with_invalid_utf8(InvalidUtf8::Error)
            .with_number_source(NumberSource::External)
            .with_max_pending_bytes(32)
            .unwrap();
        assert_eq!(p.apply(Settings::default()), Ok(want));
        for (name, style) in [
            ("markdown", Style::MarkdownLink),
            ("markdown_link", Style::MarkdownLink),
            ("full_width", Style::FullWidth),
            ("as-written", Style::AsWritten),
            ("as_written", Style::AsWritten),
            (
                "html_template:<i>{n}</i>",
                Style::HtmlTemplate("<i>{n}</i>".into()),
            ),
        ] {
            let p: SettingsPatch =
                serde_json::from_value(serde_json::json!({"style": name})).unwrap();
            assert_eq!(p.style, Some(style), "{name}");
        }
        let p: SettingsPatch = serde_json::from_str(r#"{"rank": null}"#).unwrap();
        assert_eq!(p, SettingsPatch::default());
        let back: SettingsPatch =
            serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn a_bad_name_names_the_field_the_name_and_the_names_there_are() {
        let e = serde_json::from_str::<SettingsPatch>(r#"{"rank": "often"}"#).unwrap_err();
        assert!(
            e.to_string().starts_with(
                r#"rank: unknown rank mode "often", expected one of off, renumber, keep"#
            ),
            "{e}"
        );
        let e = serde_json::from_str::<SettingsPatch>(r#"{"syntaxes": ["cite", "bare_id"]}"#)
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with(r#"syntaxes: unknown syntax "cite", expected one of double_bracket,"#),
            "{e}"
        );
        let e = serde_json::from_str::<SettingsPatch>(r#"{"id_pattern": "x"}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(r#"id_pattern: invalid id pattern "x""#),
            "{e}"
        );
        let e = "bold".parse::<Style>().unwrap_err();
        assert!(
            e.to_string()
                .starts_with(r#"unknown style "bold", expected one of brackets, "#),
            "{e}"
        );
    }
}
