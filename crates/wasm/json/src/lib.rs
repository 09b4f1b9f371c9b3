//! The JSON text of the core's events and numbering entries, for `citeflow-wasm` to hand to
//! JavaScript (`JSON.parse`).
//!
//! A crate of its own so that the serialisation (serde_json's writer and string escaping,
//! instantiated here for these types) can be compiled at a higher `opt-level` than the rest of
//! the size-optimised WASM build (`[profile.wasm-release.package.citeflow-wasm-json]`).

use citeflow_core::{Event, NumberEntry};

/// `events` as a JSON array.
///
/// # Errors
/// serde_json's (never for these types in practice).
pub fn events(events: &[Event]) -> serde_json::Result<String> {
    serde_json::to_string(events)
}

/// `entries` as a JSON array.
///
/// # Errors
/// serde_json's (never for these types in practice).
pub fn number_entries(entries: &[NumberEntry]) -> serde_json::Result<String> {
    serde_json::to_string(entries)
}
