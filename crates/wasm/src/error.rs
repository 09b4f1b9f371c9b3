//! Core errors as JS `Error`s with a `name` (the error family) and a stable snake_case `code`.

use citeflow_core::provider::ProviderError;
use citeflow_core::sse::SseError;
use citeflow_core::{NumberingError, RestoreError, RewriteError, SettingsError, SourceError};

/// An error on its way to JS: thrown as an `Error` whose `name`, `code` and `message` are these.
///
/// The message is the core's message unchanged; the binding only picks the family and code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingError {
    /// The error family: `SettingsError`, `SourceError`, `NumberingError`, `RewriteError`,
    /// `RestoreError`, `ProviderError` or `TypeError`.
    pub name: &'static str,
    /// Stable snake_case code, e.g. `unknown_name`, `invalid_utf8`, `ended`.
    pub code: &'static str,
    /// What went wrong, with the offending value.
    pub message: String,
}

impl BindingError {
    pub(crate) fn new(name: &'static str, code: &'static str, message: impl Into<String>) -> Self {
        BindingError {
            name,
            code,
            message: message.into(),
        }
    }

    /// Settings or options that are not valid JSON of the documented shape.
    pub(crate) fn invalid_settings(e: impl std::fmt::Display) -> Self {
        BindingError::new("SettingsError", "invalid_settings", e.to_string())
    }

    /// Sources (or source lists) that are not valid JSON of the documented shape.
    pub(crate) fn invalid_sources(e: impl std::fmt::Display) -> Self {
        BindingError::new("SourceError", "invalid_sources", e.to_string())
    }

    /// An argument of the wrong JS type.
    pub(crate) fn type_error(code: &'static str, message: impl Into<String>) -> Self {
        BindingError::new("TypeError", code, message)
    }
}

impl std::fmt::Display for BindingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.name, self.code, self.message)
    }
}

impl std::error::Error for BindingError {}

impl From<SettingsError> for BindingError {
    fn from(e: SettingsError) -> Self {
        let code = match &e {
            SettingsError::UnknownName { .. } => "unknown_name",
            SettingsError::InvalidIdPrefix { .. } => "invalid_id_prefix",
            SettingsError::InvalidIdPattern { .. } => "invalid_id_pattern",
            SettingsError::PendingCapTooSmall { .. } => "pending_cap_too_small",
            SettingsError::AnchorSourceCap { .. } => "anchor_source_cap",
            _ => "invalid_settings",
        };
        BindingError::new("SettingsError", code, e.to_string())
    }
}

impl From<SourceError> for BindingError {
    fn from(e: SourceError) -> Self {
        let code = match &e {
            SourceError::EmptyId { .. } => "empty_id",
            SourceError::DuplicateId { .. } => "duplicate_id",
            _ => "invalid_sources",
        };
        BindingError::new("SourceError", code, e.to_string())
    }
}

impl From<NumberingError> for BindingError {
    fn from(e: NumberingError) -> Self {
        let code = match &e {
            NumberingError::Conflict { .. } => "conflict",
            NumberingError::Zero { .. } => "zero",
            _ => "invalid_numbering",
        };
        BindingError::new("NumberingError", code, e.to_string())
    }
}

impl From<RewriteError> for BindingError {
    fn from(e: RewriteError) -> Self {
        let code = match &e {
            RewriteError::InvalidUtf8 { .. } => "invalid_utf8",
            RewriteError::Gap { .. } => "gap",
            RewriteError::Ended => "ended",
            RewriteError::NotAwaiting { .. } => "not_awaiting",
            RewriteError::Numbering(_) => "numbering",
            RewriteError::Verification(_) => "verification",
            RewriteError::Failed(_) => "failed",
            _ => "rewrite_error",
        };
        BindingError::new("RewriteError", code, e.to_string())
    }
}

impl From<RestoreError> for BindingError {
    fn from(e: RestoreError) -> Self {
        let code = match &e {
            RestoreError::Version { .. } => "version",
            _ => "invalid_snapshot",
        };
        BindingError::new("RestoreError", code, e.to_string())
    }
}

impl From<ProviderError> for BindingError {
    fn from(e: ProviderError) -> Self {
        let code = match &e {
            ProviderError::Rewrite(inner) => return inner.clone().into(),
            ProviderError::Source(inner) => return inner.clone().into(),
            ProviderError::Sse(SseError::LineTooLong { .. }) => "sse_line_too_long",
            ProviderError::Sse(SseError::InvalidUtf8 { .. }) => "sse_invalid_utf8",
            ProviderError::InvalidUtf8 { .. } => "invalid_utf8",
            ProviderError::LineTooLong { .. } => "line_too_long",
            ProviderError::Json { .. } => "invalid_json",
            ProviderError::UnknownDialect { .. } => "unknown_dialect",
            ProviderError::Shape { .. } => "unexpected_shape",
            ProviderError::Upstream { .. } => "upstream_error",
            ProviderError::NoText { .. } => "no_text",
            _ => "provider",
        };
        BindingError::new("ProviderError", code, e.to_string())
    }
}

impl From<BindingError> for wasm_bindgen::JsValue {
    fn from(e: BindingError) -> Self {
        let err = js_sys::Error::new(&e.message);
        err.set_name(e.name);
        // Setting a property on a fresh Error object cannot fail.
        let _ = js_sys::Reflect::set(&err, &"code".into(), &e.code.into());
        err.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_errors_keep_their_message_and_get_a_code() {
        let e: BindingError = RewriteError::Ended.into();
        assert_eq!(
            (e.name, e.code, e.message.as_str()),
            ("RewriteError", "ended", "the stream has already ended")
        );
        let e: BindingError = SettingsError::PendingCapTooSmall { bytes: 3, min: 16 }.into();
        assert_eq!(e.code, "pending_cap_too_small");
        assert_eq!(e.message, "max_pending_bytes 3 is below the minimum 16");
    }
}
