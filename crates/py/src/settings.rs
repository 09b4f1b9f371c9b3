//! `Settings`: the core's settings with Pythonic keyword arguments.

use std::str::FromStr;

use citeflow_core as core;
use pyo3::prelude::*;

use crate::convert::repr_str;
use crate::errors::settings_err;
use crate::types::{from_json, to_json};

/// Keyword arguments shared by `Settings(...)` and `Session(...)`; `None` keeps the base value.
#[derive(Default)]
pub(crate) struct SettingsArgs {
    pub(crate) syntaxes: Option<Vec<String>>,
    pub(crate) id_pattern: Option<String>,
    pub(crate) rank: Option<String>,
    pub(crate) unknown: Option<String>,
    pub(crate) style: Option<String>,
    pub(crate) max_pending_bytes: Option<usize>,
    pub(crate) invalid_utf8: Option<String>,
    pub(crate) number_source: Option<String>,
    pub(crate) dedupe: Option<bool>,
    pub(crate) skip_code: Option<bool>,
    pub(crate) anchors: Option<bool>,
    pub(crate) max_anchor_source_bytes: Option<usize>,
}

impl SettingsArgs {
    /// The core's typed `SettingsPatch` of these arguments: each name read by the core's
    /// names (`FromStr`, the enums' serde names), so names and errors are the core's, as in
    /// the CLI, the server and WASM. The first bad name is the error, in the order of the
    /// fields.
    pub(crate) fn into_patch(self) -> Result<core::SettingsPatch, core::SettingsError> {
        fn parse<T: FromStr<Err = core::SettingsError>>(
            name: Option<String>,
        ) -> Result<Option<T>, core::SettingsError> {
            name.map(|n| n.parse()).transpose()
        }
        let mut patch = core::SettingsPatch::default();
        patch.syntaxes = self
            .syntaxes
            .map(|names| names.iter().map(|n| n.parse()).collect())
            .transpose()?;
        patch.id_pattern = parse(self.id_pattern)?;
        patch.rank = parse(self.rank)?;
        patch.unknown = parse(self.unknown)?;
        patch.style = parse(self.style)?;
        patch.max_pending_bytes = self.max_pending_bytes;
        patch.invalid_utf8 = parse(self.invalid_utf8)?;
        patch.number_source = parse(self.number_source)?;
        patch.dedupe = self.dedupe;
        patch.skip_code = self.skip_code;
        patch.anchors = self.anchors;
        patch.max_anchor_source_bytes = self.max_anchor_source_bytes;
        Ok(patch)
    }

    /// Applies the given arguments to `base` through the core's `SettingsPatch`.
    pub(crate) fn apply(self, py: Python<'_>, base: core::Settings) -> PyResult<core::Settings> {
        self.into_patch()
            .and_then(|patch| patch.apply(base))
            .map_err(|e| settings_err(py, e))
    }
}

/// Everything that decides how a stream is rewritten.
///
/// Every keyword is optional; the defaults are the core's:
///
/// - `syntaxes`: marker syntaxes to recognise, from `double_bracket` (`[[source_3]]`),
///   `cite_colon` (`<cite:source_3>`), `cite_tag` (`<cite id="source_3"/>`), `single_bracket`
///   (`[source_3]`, `【source_3】`) and `bare_id`. Default: all but `bare_id`.
/// - `id_pattern`: shape of ids in ambiguous markers, `PREFIX<digits>` or `PREFIX<word>`.
///   Default: `source_<digits>`.
/// - `rank`: whether `[2]`/`【2】` cite the 2nd source shown: `off`, `renumber` or `keep`.
///   Default: `off`.
/// - `unknown`: unknown ids and out-of-range ranks: `mark` (`[?]`), `drop` or `keep`.
///   Default: `mark`.
/// - `style`: `brackets`, `markdown_link`, `full_width`, `html`, `footnote`, or
///   `template:TEXT` with `{n}`, `{id}`, `{url}`, `{title}`. Default: `brackets`.
/// - `max_pending_bytes`: hold-back cap in UTF-8 bytes (minimum 16). Default: 64.
/// - `invalid_utf8`: `replace` or `error`. Default: `replace`.
/// - `number_source`: `local` or `external` (a shared store answers `NumberNeededEvent`).
///   Default: `local`.
/// - `dedupe`: sources with the same canonical key share one number. Default: `True`.
/// - `skip_code`: leave markers in code spans and fences alone. Default: `True`.
/// - `anchors`: after each citation, once the answer's sentence that holds it is complete, an
///   `AnchorEvent`: the sentence of the cited source's text that supports it, with a support
///   score and verdict. Default: `False`.
/// - `max_anchor_source_bytes`: how much of a source's text (UTF-8 bytes) anchoring searches;
///   a longer text is anchored over its first part and its quotes say `truncated`. From 1024
///   to 64 MiB. Default: 1048576 (1 MiB).
///
/// Raises `SettingsError` with the core's message for an unknown name or a bad value.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct Settings {
    pub(crate) inner: core::Settings,
}

#[pymethods]
impl Settings {
    #[new]
    #[pyo3(signature = (*, syntaxes=None, id_pattern=None, rank=None, unknown=None, style=None, max_pending_bytes=None, invalid_utf8=None, number_source=None, dedupe=None, skip_code=None, anchors=None, max_anchor_source_bytes=None))]
    #[expect(clippy::too_many_arguments, reason = "one keyword per setting")]
    fn new(
        py: Python<'_>,
        syntaxes: Option<Vec<String>>,
        id_pattern: Option<String>,
        rank: Option<String>,
        unknown: Option<String>,
        style: Option<String>,
        max_pending_bytes: Option<usize>,
        invalid_utf8: Option<String>,
        number_source: Option<String>,
        dedupe: Option<bool>,
        skip_code: Option<bool>,
        anchors: Option<bool>,
        max_anchor_source_bytes: Option<usize>,
    ) -> PyResult<Self> {
        let args = SettingsArgs {
            syntaxes,
            id_pattern,
            rank,
            unknown,
            style,
            max_pending_bytes,
            invalid_utf8,
            number_source,
            dedupe,
            skip_code,
            anchors,
            max_anchor_source_bytes,
        };
        Ok(Settings {
            inner: args.apply(py, core::Settings::default())?,
        })
    }

    /// A copy with the given settings changed.
    #[pyo3(signature = (*, syntaxes=None, id_pattern=None, rank=None, unknown=None, style=None, max_pending_bytes=None, invalid_utf8=None, number_source=None, dedupe=None, skip_code=None, anchors=None, max_anchor_source_bytes=None))]
    #[expect(clippy::too_many_arguments, reason = "one keyword per setting")]
    fn replace(
        &self,
        py: Python<'_>,
        syntaxes: Option<Vec<String>>,
        id_pattern: Option<String>,
        rank: Option<String>,
        unknown: Option<String>,
        style: Option<String>,
        max_pending_bytes: Option<usize>,
        invalid_utf8: Option<String>,
        number_source: Option<String>,
        dedupe: Option<bool>,
        skip_code: Option<bool>,
        anchors: Option<bool>,
        max_anchor_source_bytes: Option<usize>,
    ) -> PyResult<Self> {
        let args = SettingsArgs {
            syntaxes,
            id_pattern,
            rank,
            unknown,
            style,
            max_pending_bytes,
            invalid_utf8,
            number_source,
            dedupe,
            skip_code,
            anchors,
            max_anchor_source_bytes,
        };
        Ok(Settings {
            inner: args.apply(py, self.inner.clone())?,
        })
    }

    /// Settings from the core's JSON form (missing fields take their defaults).
    ///
    /// Raises `RestoreError` for invalid JSON or values.
    #[staticmethod]
    fn from_json(py: Python<'_>, json: &str) -> PyResult<Self> {
        Ok(Settings {
            inner: from_json(py, json, "settings")?,
        })
    }

    /// The core's JSON form.
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        to_json(py, &self.inner)
    }

    /// The recognised syntaxes.
    #[getter]
    fn syntaxes(&self) -> Vec<String> {
        self.inner
            .syntaxes()
            .into_iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// The id shape as `PREFIX<digits>` or `PREFIX<word>`.
    #[getter]
    fn id_pattern(&self) -> String {
        self.inner.id_shape().to_string()
    }

    /// The rank mode: `off`, `renumber` or `keep`.
    #[getter]
    fn rank(&self) -> String {
        self.inner.rank().to_string()
    }

    /// The unknown-id policy: `mark`, `drop` or `keep`.
    #[getter]
    fn unknown(&self) -> String {
        self.inner.unknown().to_string()
    }

    /// The number style, as `Settings(style=...)` accepts it.
    #[getter]
    fn style(&self) -> String {
        self.inner.style().to_string()
    }

    /// The hold-back cap in UTF-8 bytes.
    #[getter]
    fn max_pending_bytes(&self) -> usize {
        self.inner.max_pending_bytes()
    }

    /// The invalid UTF-8 policy: `replace` or `error`.
    #[getter]
    fn invalid_utf8(&self) -> String {
        self.inner.invalid_utf8().to_string()
    }

    /// Where numbers come from: `local` or `external`.
    #[getter]
    fn number_source(&self) -> String {
        self.inner.number_source().to_string()
    }

    /// Whether canonical keys merge sources.
    #[getter]
    fn dedupe(&self) -> bool {
        self.inner.is_dedupe()
    }

    /// Whether markers in code are left alone.
    #[getter]
    fn skip_code(&self) -> bool {
        self.inner.is_skip_code()
    }

    /// Whether citations are anchored (`AnchorEvent`).
    #[getter]
    fn anchors(&self) -> bool {
        self.inner.has_anchors()
    }

    /// How much of a source's text anchoring searches, in UTF-8 bytes.
    #[getter]
    fn max_anchor_source_bytes(&self) -> usize {
        self.inner.max_anchor_source_bytes()
    }

    fn __repr__(&self) -> String {
        format!(
            "Settings(syntaxes=[{}], id_pattern={}, rank={}, unknown={}, style={}, max_pending_bytes={}, invalid_utf8={}, number_source={}, dedupe={}, skip_code={}, anchors={}, max_anchor_source_bytes={})",
            self.syntaxes()
                .iter()
                .map(|s| repr_str(s))
                .collect::<Vec<_>>()
                .join(", "),
            repr_str(&self.id_pattern()),
            repr_str(&self.rank()),
            repr_str(&self.unknown()),
            repr_str(&self.style()),
            self.max_pending_bytes(),
            repr_str(&self.invalid_utf8()),
            repr_str(&self.number_source()),
            if self.dedupe() { "True" } else { "False" },
            if self.skip_code() { "True" } else { "False" },
            if self.anchors() { "True" } else { "False" },
            self.max_anchor_source_bytes(),
        )
    }
}
