//! [`SettingsPatch`]: settings by name, as the adapters receive them.

use crate::error::SettingsError;
use crate::settings::{
    IdShape, InvalidUtf8, NumberSource, RankMode, Settings, Syntax, UnknownPolicy,
};
use crate::style::Style;

/// Changes to [`Settings`], every one optional and named as the settings enums' `name`s and
/// [`FromStr`](core::str::FromStr) read them: what the CLI's flags, the server's JSON, Python's
/// keywords and WASM's options translate into. [`SettingsPatch::apply`] checks and applies them.
///
/// With serde, unknown fields are refused (`{"styel": …}` is an error, not a silent default).
///
/// ```
/// use citeflow_core::{Settings, SettingsPatch, Style};
///
/// let mut patch = SettingsPatch::default();
/// patch.style = Some("full_width".into());
/// patch.syntaxes = Some(vec!["double_bracket".into(), "single_bracket".into()]);
/// let settings = patch.apply(Settings::default())?;
/// assert_eq!(settings.style(), &Style::FullWidth);
/// # Ok::<(), citeflow_core::SettingsError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct SettingsPatch {
    /// Marker syntaxes to recognise ([`Syntax`] names).
    pub syntaxes: Option<Vec<String>>,
    /// Shape of ids in ambiguous markers ([`IdShape`]: `prefix<digits>` or `prefix<word>`).
    pub id_pattern: Option<String>,
    /// [`RankMode`] name.
    pub rank: Option<String>,
    /// [`UnknownPolicy`] name.
    pub unknown: Option<String>,
    /// [`Style`] name (`template:…` and `html_template:…` included).
    pub style: Option<String>,
    /// Hold-back cap in UTF-8 bytes.
    pub max_pending_bytes: Option<usize>,
    /// Most provider text a possible link citation holds back, in UTF-8 bytes.
    pub max_link_hold_bytes: Option<usize>,
    /// [`InvalidUtf8`] name.
    pub invalid_utf8: Option<String>,
    /// [`NumberSource`] name.
    pub number_source: Option<String>,
    /// Sources with the same canonical key share one number.
    pub dedupe: Option<bool>,
    /// Leave markers in code spans and fences alone.
    pub skip_code: Option<bool>,
}

impl SettingsPatch {
    /// `base` with every given field changed; a field left `None` keeps `base`'s value.
    ///
    /// # Errors
    /// The first field that is not valid, in the order of the fields:
    /// [`SettingsError::UnknownName`] for a name that does not exist,
    /// [`SettingsError::InvalidIdPattern`] or [`SettingsError::InvalidIdPrefix`] for the id
    /// pattern, [`SettingsError::TemplateTooLong`] and
    /// [`SettingsError::PendingCapTooSmall`] as their setters.
    pub fn apply(&self, base: Settings) -> Result<Settings, SettingsError> {
        let mut s = base;
        if let Some(names) = &self.syntaxes {
            let syntaxes = names
                .iter()
                .map(|n| n.parse())
                .collect::<Result<Vec<Syntax>, _>>()?;
            s = s.with_syntaxes(&syntaxes);
        }
        if let Some(p) = &self.id_pattern {
            s = s.with_id_shape(p.parse::<IdShape>()?);
        }
        if let Some(r) = &self.rank {
            s = s.with_rank(r.parse::<RankMode>()?);
        }
        if let Some(u) = &self.unknown {
            s = s.with_unknown(u.parse::<UnknownPolicy>()?);
        }
        if let Some(st) = &self.style {
            s = s.with_style(st.parse::<Style>()?);
        }
        if let Some(b) = self.max_pending_bytes {
            s = s.with_max_pending_bytes(b)?;
        }
        if let Some(b) = self.max_link_hold_bytes {
            s = s.with_max_link_hold_bytes(b);
        }
        if let Some(p) = &self.invalid_utf8 {
            s = s.with_invalid_utf8(p.parse::<InvalidUtf8>()?);
        }
        if let Some(n) = &self.number_source {
            s = s.with_number_source(n.parse::<NumberSource>()?);
        }
        if let Some(d) = self.dedupe {
            s = s.with_dedupe(d);
        }
        if let Some(k) = self.skip_code {
            s = s.with_skip_code(k);
        }
        Ok(s)
    }
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

    #[cfg(feature = "serde")]
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
        patch.rank = Some("keep".into());
        patch.invalid_utf8 = Some("error".into());
        let s = patch.apply(Settings::default()).unwrap();
        assert_eq!(s.rank(), RankMode::Keep);
        assert_eq!(s.invalid_utf8(), InvalidUtf8::Error);
        assert_eq!(s.style(), Settings::default().style());
        patch.unknown = Some("nope".into());
        assert_eq!(
            patch.apply(Settings::default()),
            Err(SettingsError::UnknownName {
                what: "unknown policy",
                value: "nope".into()
            })
        );
    }

    #[cfg(feature = "serde")]
    #[test]
    fn a_patch_refuses_unknown_fields() {
        let p: SettingsPatch =
            serde_json::from_str(r#"{"style": "html", "dedupe": false}"#).unwrap();
        assert_eq!(p.style.as_deref(), Some("html"));
        assert!(serde_json::from_str::<SettingsPatch>(r#"{"styel": "html"}"#).is_err());
    }
}
