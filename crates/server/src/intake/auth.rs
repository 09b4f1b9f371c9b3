//! Bearer API keys and the owner they stand for: the [`Owner`] extractor (and
//! [`AnthropicOwner`], which also reads `x-api-key`).

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::settings::ServerSettings;
use crate::tenancy::Owner;

/// Who makes the request, from its `Authorization: Bearer` key: 401 `invalid_api_key`
/// when the server has keys and this is none of them. It reads only the settings (a
/// substate of the router's state, as axum's `FromRef` gives it).
impl<S> FromRequestParts<S> for Owner
where
    Arc<ServerSettings>: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        owner_of(
            &Arc::<ServerSettings>::from_ref(state),
            bearer(&parts.headers),
        )
    }
}

/// [`Owner`] for the Anthropic-shaped routes: without an `Authorization` header,
/// `x-api-key` counts as the bearer key.
pub(crate) struct AnthropicOwner(pub(crate) Owner);

impl<S> FromRequestParts<S> for AnthropicOwner
where
    Arc<ServerSettings>: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let headers = &parts.headers;
        let key = if headers.contains_key(axum::http::header::AUTHORIZATION) {
            bearer(headers)
        } else {
            headers
                .get("x-api-key")
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
        };
        owner_of(&Arc::<ServerSettings>::from_ref(state), key).map(AnthropicOwner)
    }
}

/// The key of `Authorization: Bearer KEY`.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// The owner of `key`: anyone when the server has no keys, else the hash of a known key.
fn owner_of(settings: &ServerSettings, key: Option<&str>) -> Result<Owner, ApiError> {
    if settings.api_keys.is_empty() {
        return Ok(Owner(String::new()));
    }
    let key = key.ok_or(ApiError::Unauthorized)?;
    let known = settings
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
