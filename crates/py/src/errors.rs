//! Python exceptions: `CiteflowError` and one subclass per error family of the core.
//!
//! Every exception carries the core's message unchanged and a stable snake_case `code`
//! naming the variant, so callers can tell a recoverable chunk gap from a fatal error.

use citeflow_core as core;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::PyTypeInfo;

pyo3::create_exception!(
    citeflow._citeflow,
    CiteflowError,
    PyException,
    "Base class of every error raised by citeflow. `code` is a stable snake_case name of the cause."
);
pyo3::create_exception!(
    citeflow._citeflow,
    SettingsError,
    CiteflowError,
    "Invalid settings: an unknown name, a bad id pattern, a hold-back cap below the minimum."
);
pyo3::create_exception!(
    citeflow._citeflow,
    SourceError,
    CiteflowError,
    "A source set that cannot be registered (empty or duplicate id, malformed source)."
);
pyo3::create_exception!(
    citeflow._citeflow,
    NumberingError,
    CiteflowError,
    "A numbering table that would break its invariants (a key or number given twice)."
);
pyo3::create_exception!(
    citeflow._citeflow,
    RewriteError,
    CiteflowError,
    "A failure while rewriting a stream. `code` 'chunk_gap' and 'not_awaiting' reject one call \
     and change nothing; every other code is fatal and later calls raise code 'failed'."
);
pyo3::create_exception!(
    citeflow._citeflow,
    RestoreError,
    CiteflowError,
    "A snapshot (or saved JSON state) that cannot be restored."
);
pyo3::create_exception!(
    citeflow._citeflow,
    SseError,
    CiteflowError,
    "A malformed Server-Sent Events stream."
);
pyo3::create_exception!(
    citeflow._citeflow,
    ProviderError,
    CiteflowError,
    "A provider stream that cannot be read: a payload that is not JSON, of no known provider API \
     or not of its API's shape, an error the provider reported, or a stream without answer text. \
     The message names the line. Framing errors raise `SseError`, the rewriter's `RewriteError`, \
     a provider source that cannot be registered `SourceError`."
);

/// Builds an exception of type `T` with `message` and `code`.
pub(crate) fn raise<T: PyTypeInfo>(py: Python<'_>, code: &str, message: String) -> PyErr {
    let err = PyErr::new::<T, _>(message);
    // Setting an attribute on a fresh exception instance cannot fail in practice; if it did,
    // the class attribute `code` still answers.
    let _ = err.value(py).setattr("code", code);
    err
}

pub(crate) fn settings_err(py: Python<'_>, e: core::SettingsError) -> PyErr {
    let code = match &e {
        core::SettingsError::UnknownName { .. } => "unknown_name",
        core::SettingsError::InvalidIdPrefix { .. } => "invalid_id_prefix",
        core::SettingsError::InvalidIdPattern { .. } => "invalid_id_pattern",
        core::SettingsError::PendingCapTooSmall { .. } => "pending_cap_too_small",
        core::SettingsError::AnchorSourceCap { .. } => "anchor_source_cap",
        _ => "settings",
    };
    raise::<SettingsError>(py, code, e.to_string())
}

pub(crate) fn source_err(py: Python<'_>, e: core::SourceError) -> PyErr {
    let code = match &e {
        core::SourceError::EmptyId { .. } => "empty_id",
        core::SourceError::DuplicateId { .. } => "duplicate_id",
        _ => "source",
    };
    raise::<SourceError>(py, code, e.to_string())
}

fn numbering_code(e: &core::NumberingError) -> &'static str {
    match e {
        core::NumberingError::Conflict { .. } => "numbering_conflict",
        core::NumberingError::Zero { .. } => "numbering_zero",
        _ => "numbering",
    }
}

pub(crate) fn numbering_err(py: Python<'_>, e: core::NumberingError) -> PyErr {
    raise::<NumberingError>(py, numbering_code(&e), e.to_string())
}

pub(crate) fn rewrite_err(py: Python<'_>, e: core::RewriteError) -> PyErr {
    let code = match &e {
        core::RewriteError::InvalidUtf8 { .. } => "invalid_utf8",
        core::RewriteError::Gap { .. } => "chunk_gap",
        core::RewriteError::Ended => "ended",
        core::RewriteError::NotAwaiting { .. } => "not_awaiting",
        core::RewriteError::Numbering(n) => numbering_code(n),
        core::RewriteError::Verification(_) => "verification_failed",
        core::RewriteError::Failed(_) => "failed",
        _ => "rewrite",
    };
    raise::<RewriteError>(py, code, e.to_string())
}

pub(crate) fn restore_err(py: Python<'_>, e: core::RestoreError) -> PyErr {
    let code = match &e {
        core::RestoreError::Version { .. } => "snapshot_version",
        _ => "restore",
    };
    raise::<RestoreError>(py, code, e.to_string())
}

pub(crate) fn sse_err(py: Python<'_>, e: core::sse::SseError) -> PyErr {
    let code = match &e {
        core::sse::SseError::LineTooLong { .. } => "sse_line_too_long",
        core::sse::SseError::InvalidUtf8 { .. } => "sse_invalid_utf8",
        _ => "sse",
    };
    raise::<SseError>(py, code, e.to_string())
}

/// A provider stream error as the exception of its family: `SseError`, `RewriteError` and
/// `SourceError` for the core errors it wraps, `ProviderError` for the rest.
pub(crate) fn provider_err(py: Python<'_>, e: core::provider::ProviderError) -> PyErr {
    use core::provider::ProviderError as E;
    let code = match &e {
        E::Sse(inner) => return sse_err(py, inner.clone()),
        E::Rewrite(inner) => return rewrite_err(py, inner.clone()),
        E::Source(inner) => return source_err(py, inner.clone()),
        E::InvalidUtf8 { .. } => "invalid_utf8",
        E::LineTooLong { .. } => "line_too_long",
        E::Json { .. } => "invalid_json",
        E::UnknownDialect { .. } => "unknown_dialect",
        E::Shape { .. } => "unexpected_shape",
        E::Upstream { .. } => "upstream_error",
        E::NoText { .. } => "no_text",
        _ => "provider",
    };
    raise::<ProviderError>(py, code, e.to_string())
}

/// Registers the exception classes on the module, with a class-level default `code`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let classes = [
        ("CiteflowError", CiteflowError::type_object(py), "error"),
        ("SettingsError", SettingsError::type_object(py), "settings"),
        ("SourceError", SourceError::type_object(py), "source"),
        (
            "NumberingError",
            NumberingError::type_object(py),
            "numbering",
        ),
        ("RewriteError", RewriteError::type_object(py), "rewrite"),
        ("RestoreError", RestoreError::type_object(py), "restore"),
        ("SseError", SseError::type_object(py), "sse"),
        ("ProviderError", ProviderError::type_object(py), "provider"),
    ];
    for (name, ty, code) in classes {
        ty.setattr("code", code)?;
        m.add(name, ty)?;
    }
    Ok(())
}
