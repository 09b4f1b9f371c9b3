//! A book's passages for a question: how many ([`top_k`]) and which ([`retrieve`], from the
//! book index, off the async threads by [`blocking`]). `citeflow.book` and
//! `POST /v1/books/{key}/search` both ask here.

use citeflow_core::Source;

use crate::error::ApiError;
use crate::settings::Limits;
use crate::state::AppState;
use crate::tenancy::Owner;

/// Runs blocking library work off the async threads.
pub(crate) async fn blocking<T: Send + 'static, E: Into<ApiError> + Send + 'static>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(format!("book index task: {e}")))?
        .map_err(Into::into)
}

/// Passages retrieved from a book when `top_k` is not given.
const DEFAULT_TOP_K: usize = 6;

/// How many passages to retrieve: `top_k` or the default, refused outside 1 to
/// `max_top_k` (`field` names the request field in the error).
pub(crate) fn top_k(
    top_k: Option<usize>,
    limits: &Limits,
    field: &'static str,
) -> Result<usize, ApiError> {
    let k = top_k.unwrap_or(DEFAULT_TOP_K);
    if k == 0 || k > limits.max_top_k {
        return Err(ApiError::invalid(
            format!("{field} {k} is out of range (1 to {})", limits.max_top_k),
            Some(field),
        ));
    }
    Ok(k)
}

/// The passages of book `key` that best match `query` (at most `k`), as sources. A key the
/// index does not hold, or a server without an index, gives `book_not_found` naming
/// `param`, the request field that named the book (`None`: the path).
pub(crate) async fn retrieve(
    state: &AppState,
    owner: &Owner,
    key: &str,
    query: &str,
    k: usize,
    param: Option<&'static str>,
) -> Result<Vec<Source>, ApiError> {
    let Some(lib) = state.books.clone() else {
        return Err(ApiError::BookNotFound {
            key: key.to_owned(),
            param,
        });
    };
    let (owner, key, query) = (owner.clone(), key.to_owned(), query.to_owned());
    blocking(move || lib.retrieve(&owner, &key, &query, k, param)).await
}
