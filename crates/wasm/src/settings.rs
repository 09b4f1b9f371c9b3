//! JS settings (camelCase keys) to and from the core's [`Settings`].
//!
//! Values keep the core's serde names (`"full_width"`, `"renumber"`, `{"template": "…"}`); only
//! the keys change case. A JS `Settings` object becomes the core's typed [`SettingsPatch`],
//! which applies it, as the CLI, the server and Python do.

use citeflow_core::{
    IdBody, IdShape, InvalidUtf8, NumberEntry, NumberSource, RankMode, Settings, SettingsPatch,
    Style, Syntax, UnknownPolicy,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::BindingError;

/// The JS `Settings` object as it comes in: every key optional, unknown keys rejected, the
/// values typed as the core's [`SettingsPatch`] holds them. The names are read with the core's
/// serde names, so a misspelt one is an `invalid_settings` error naming the names there are
/// (a style or id pattern given as a string: the core's `SettingsError`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SettingsIn {
    syntaxes: Option<Vec<Syntax>>,
    /// `"source_<digits>"` or `{ prefix, body }`.
    id_shape: Option<Value>,
    rank: Option<RankMode>,
    unknown: Option<UnknownPolicy>,
    /// A style name (`"brackets"`, `"template:<{n}>"`, …) or `{ template }`.
    style: Option<Value>,
    max_pending_bytes: Option<usize>,
    invalid_utf8: Option<InvalidUtf8>,
    number_source: Option<NumberSource>,
    dedupe: Option<bool>,
    skip_code: Option<bool>,
    anchors: Option<bool>,
    max_anchor_source_bytes: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdShapeParts {
    prefix: String,
    body: IdBody,
}

impl SettingsIn {
    /// The core's patch for these keys, typed: the string forms of `idShape` and `style` are
    /// read by the core's names (`FromStr`), their object forms by serde.
    fn into_patch(self) -> Result<SettingsPatch, BindingError> {
        let id_pattern = match self.id_shape {
            None => None,
            Some(Value::String(pattern)) => Some(pattern.parse::<IdShape>()?),
            Some(other) => {
                let parts: IdShapeParts = serde_json::from_value(other).map_err(|e| {
                    BindingError::invalid_settings(format!(
                        "idShape: {e} (expected \"prefix<digits>\", \"prefix<word>\" or {{ prefix, body }})"
                    ))
                })?;
                Some(IdShape::new(parts.prefix, parts.body)?)
            }
        };
        let style = match self.style {
            None => None,
            Some(Value::String(name)) => Some(name.parse::<Style>()?),
            Some(other) => Some(serde_json::from_value::<Style>(other).map_err(|e| {
                BindingError::invalid_settings(format!(
                    "style: {e} (expected a style name or {{ template }})"
                ))
            })?),
        };
        let mut patch = SettingsPatch::default();
        patch.syntaxes = self.syntaxes;
        patch.id_pattern = id_pattern;
        patch.rank = self.rank;
        patch.unknown = self.unknown;
        patch.style = style;
        patch.max_pending_bytes = self.max_pending_bytes;
        patch.invalid_utf8 = self.invalid_utf8;
        patch.number_source = self.number_source;
        patch.dedupe = self.dedupe;
        patch.skip_code = self.skip_code;
        patch.anchors = self.anchors;
        patch.max_anchor_source_bytes = self.max_anchor_source_bytes;
        Ok(patch)
    }

    /// Applies the given keys on top of `base` through the core's [`SettingsPatch`].
    pub(crate) fn apply(self, base: Settings) -> Result<Settings, BindingError> {
        Ok(self.into_patch()?.apply(base)?)
    }
}

/// Settings from the JSON text of a JS `Settings` object (`None`: the defaults).
pub(crate) fn settings_from_json(json: Option<&str>) -> Result<Settings, BindingError> {
    match json {
        None => Ok(Settings::default()),
        Some(json) => serde_json::from_str::<Option<SettingsIn>>(json)
            .map_err(BindingError::invalid_settings)?
            .unwrap_or_default()
            .apply(Settings::default()),
    }
}

/// The JS `Settings` object of `settings`, every key present.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SettingsOut<'a> {
    syntaxes: Vec<Syntax>,
    id_shape: &'a IdShape,
    rank: RankMode,
    unknown: UnknownPolicy,
    style: &'a Style,
    max_pending_bytes: usize,
    invalid_utf8: InvalidUtf8,
    number_source: NumberSource,
    dedupe: bool,
    skip_code: bool,
    anchors: bool,
    max_anchor_source_bytes: usize,
}

impl<'a> From<&'a Settings> for SettingsOut<'a> {
    fn from(s: &'a Settings) -> Self {
        SettingsOut {
            syntaxes: s.syntaxes(),
            id_shape: s.id_shape(),
            rank: s.rank(),
            unknown: s.unknown(),
            style: s.style(),
            max_pending_bytes: s.max_pending_bytes(),
            invalid_utf8: s.invalid_utf8(),
            number_source: s.number_source(),
            dedupe: s.is_dedupe(),
            skip_code: s.is_skip_code(),
            anchors: s.has_anchors(),
            max_anchor_source_bytes: s.max_anchor_source_bytes(),
        }
    }
}

/// The JS `RewriterOptions` object.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct OptionsIn {
    settings: Option<SettingsIn>,
    /// The numbering to continue (the session's), as `NumberEntry` records.
    numbering: Option<Vec<NumberEntry>>,
}

/// Settings and numbering from the JSON text of a JS `RewriterOptions` object.
pub(crate) fn options_from_json(
    json: Option<&str>,
) -> Result<(Settings, citeflow_core::Numbering), BindingError> {
    let opts = match json {
        None => OptionsIn::default(),
        Some(json) => serde_json::from_str::<Option<OptionsIn>>(json)
            .map_err(BindingError::invalid_settings)?
            .unwrap_or_default(),
    };
    let settings = opts
        .settings
        .unwrap_or_default()
        .apply(Settings::default())?;
    let numbering = citeflow_core::Numbering::from_entries(opts.numbering.unwrap_or_default())?;
    Ok((settings, numbering))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_keys_reach_the_core_setters() {
        let s = settings_from_json(Some(
            r#"{"style":"full_width","rank":"renumber","maxPendingBytes":32,
                "idShape":"doc-<word>","syntaxes":["double_bracket","bare_id"],
                "skipCode":false,"numberSource":"external","invalidUtf8":"error","dedupe":false,
                "unknown":"keep","anchors":true,"maxAnchorSourceBytes":4096}"#,
        ))
        .unwrap();
        let want = Settings::default()
            .with_style(Style::FullWidth)
            .with_rank(RankMode::Renumber)
            .with_max_pending_bytes(32)
            .unwrap()
            .with_id_shape(IdShape::new("doc-", IdBody::Word).unwrap())
            .with_syntaxes(&[Syntax::DoubleBracket, Syntax::BareId])
            .with_skip_code(false)
            .with_number_source(NumberSource::External)
            .with_invalid_utf8(InvalidUtf8::Error)
            .with_dedupe(false)
            .with_unknown(UnknownPolicy::Keep)
            .with_anchors(true)
            .with_max_anchor_source_bytes(4096)
            .unwrap();
        assert_eq!(s, want);
    }

    #[test]
    fn settings_out_reads_back_in() {
        let s = Settings::default()
            .with_style(Style::Template("<{n}>".into()))
            .with_id_shape(IdShape::new("ref", IdBody::Word).unwrap());
        let json = serde_json::to_string(&SettingsOut::from(&s)).unwrap();
        assert!(json.contains("\"maxPendingBytes\":64"), "{json}");
        assert!(
            json.contains("\"anchors\":false,\"maxAnchorSourceBytes\":1048576"),
            "{json}"
        );
        assert_eq!(settings_from_json(Some(&json)).unwrap(), s);
    }

    #[test]
    fn bad_settings_name_the_value() {
        let e = settings_from_json(Some(r#"{"style":"bold"}"#)).unwrap_err();
        assert_eq!((e.name, e.code), ("SettingsError", "unknown_name"));
        assert!(e.message.contains("bold"), "{}", e.message);
        let e = settings_from_json(Some(r#"{"max_pending_bytes":32}"#)).unwrap_err();
        assert_eq!(e.code, "invalid_settings");
        assert!(e.message.contains("max_pending_bytes"), "{}", e.message);
        let e = settings_from_json(Some(r#"{"maxPendingBytes":3}"#)).unwrap_err();
        assert_eq!(e.code, "pending_cap_too_small");
        let e =
            settings_from_json(Some(r#"{"idShape":{"prefix":"a b","body":"word"}}"#)).unwrap_err();
        assert_eq!(e.code, "invalid_id_prefix");
        let e = settings_from_json(Some(r#"{"maxAnchorSourceBytes":10}"#)).unwrap_err();
        assert_eq!((e.name, e.code), ("SettingsError", "anchor_source_cap"));
        assert!(e.message.contains("10"), "{}", e.message);
    }

    #[test]
    fn null_and_missing_mean_defaults() {
        assert_eq!(settings_from_json(None).unwrap(), Settings::default());
        assert_eq!(
            settings_from_json(Some("null")).unwrap(),
            Settings::default()
        );
        let (s, n) = options_from_json(Some(
            r#"{"numbering":[{"number":2,"key":"id:a","source_id":"a"}]}"#,
        ))
        .unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(n.get("id:a"), Some(2));
        let e = options_from_json(Some(
            r#"{"numbering":[{"number":0,"key":"id:a","source_id":"a"}]}"#,
        ))
        .unwrap_err();
        assert_eq!((e.name, e.code), ("NumberingError", "zero"));
    }
}
