//! Bearer API keys and the owner they stand for.

use axum::http::HeaderMap;
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::state::AppState;

/// Who makes a request: the hash of their API key, or empty without keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner(pub(crate) String);

pub(crate) fn owner(state: &AppState, headers: &HeaderMap) -> Result<Owner, ApiError> {
    if state.settings.api_keys.is_empty() {
        return Ok(Owner(String::new()));
    }
    let key = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or(ApiError::Unauthorized)?;
    let known = state
        .settings
        .api_keys
        .iter()
        .any(|k| constant_time_eq(k.as_bytes(), key.as_bytes()));
    if !known {
        return Err(ApiError::Unauthorized);
    }
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    Ok(Owner(format!("key:{hex}")))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
