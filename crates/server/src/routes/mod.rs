//! Every route of the server in one table, [`ROUTES`]: [`crate::router`] builds the service
//! from it and nothing else, so the table cannot drift from what is served; the OpenAPI
//! document lists the same rows (a test checks it) and `tests/api.rs` asks each row.
//!
//! A row is a method on a path, served by one of the server's handlers, or forwarded to the
//! upstream: the pass-through rows (`/v1/{resource}` and `/v1/{resource}/{*rest}`) are served
//! for each resource of [`FORWARDED`] only. Any other path answers 404 `unknown_route`, and a
//! path of the table asked with a method it does not serve answers 405 `method_not_allowed`
//! with `Allow` (both in [`ApiError`](crate::ApiError)'s envelope); nothing unknown reaches
//! the upstream.

pub(crate) mod books;
pub(crate) mod chat;
pub(crate) mod messages;
pub(crate) mod passthrough;
mod relay;
pub(crate) mod responses;
pub(crate) mod sessions;
pub(crate) mod web;

use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;

use crate::state::AppState;
use Verb::{Delete, Get, Post};

/// The upstream API's resources (under `/v1/`) that the pass-through forwards: the OpenAI
/// API's besides the three citeflow answers itself (chat completions, responses, messages),
/// as OpenAI-compatible servers (llama.cpp, vLLM, Ollama) serve them. Each is forwarded as
/// `/v1/{resource}` and everything under it, with `GET`, `POST` and `DELETE`.
pub const FORWARDED: &[&str] = &[
    "models",
    "embeddings",
    "files",
    "uploads",
    "batches",
    "completions",
    "moderations",
    "images",
    "audio",
    "fine_tuning",
    "vector_stores",
];

/// A method that a route serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Get,
    Post,
    Delete,
}

impl Verb {
    fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
            Verb::Delete => MethodFilter::DELETE,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Post => "post",
            Verb::Delete => "delete",
        }
    }
}

/// A handler of the server, for the method it is given.
type Handler = fn(MethodFilter) -> MethodRouter<AppState>;

/// What serves a route.
#[derive(Clone, Copy)]
enum Serve {
    /// One of the API's handlers.
    Api(Handler),
    /// A file of the chat page (not in the OpenAPI document).
    Page(Handler),
    /// The pass-through, for each resource of [`FORWARDED`].
    Forward,
}

/// One row of [`ROUTES`]: a method on a path, and what serves it.
#[derive(Clone, Copy)]
pub struct Route {
    verb: Verb,
    path: &'static str,
    serve: Serve,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.verb.as_str(), self.path)
    }
}

impl Route {
    const fn api(verb: Verb, path: &'static str, handler: Handler) -> Self {
        Route {
            verb,
            path,
            serve: Serve::Api(handler),
        }
    }

    const fn page(path: &'static str, handler: Handler) -> Self {
        Route {
            verb: Verb::Get,
            path,
            serve: Serve::Page(handler),
        }
    }

    const fn forward(verb: Verb, path: &'static str) -> Self {
        Route {
            verb,
            path,
            serve: Serve::Forward,
        }
    }

    /// The method, lower case as in the OpenAPI document (`get`, `post`, `delete`).
    pub fn method(&self) -> &'static str {
        self.verb.as_str()
    }

    /// The path as axum matches it: `{id}` is one segment, `{*rest}` the rest of the path;
    /// `{resource}` in a pass-through row is each of [`FORWARDED`].
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// The paths the router serves for this row: the path itself, or for a pass-through row
    /// one per resource of [`FORWARDED`].
    pub fn served_paths(&self) -> Vec<String> {
        match self.serve {
            Serve::Api(_) | Serve::Page(_) => vec![self.path.to_owned()],
            Serve::Forward => FORWARDED
                .iter()
                .map(|r| self.path.replace("{resource}", r))
                .collect(),
        }
    }

    /// Forwarded to the upstream (a pass-through row).
    pub fn is_forwarded(&self) -> bool {
        matches!(self.serve, Serve::Forward)
    }

    /// Listed in the OpenAPI document: every row but the chat page's files.
    pub fn is_documented(&self) -> bool {
        !matches!(self.serve, Serve::Page(_))
    }
}

/// Every route the server serves; [`crate::router`] is built from exactly these rows.
pub const ROUTES: &[Route] = &[
    Route::api(Get, "/", |m| on(m, crate::routes::web::index)),
    Route::page("/assets/{file}", |m| on(m, crate::routes::web::asset)),
    Route::page("/wasm/{file}", |m| on(m, crate::routes::web::wasm)),
    Route::api(Get, "/healthz", |m| on(m, crate::healthz)),
    Route::api(Get, "/readyz", |m| on(m, crate::readyz)),
    Route::api(Get, "/metrics", |m| on(m, crate::metrics)),
    Route::api(Get, "/openapi.json", |m| on(m, crate::openapi)),
    Route::api(Get, "/v1/books", |m| on(m, crate::routes::books::list)),
    Route::api(Post, "/v1/books", |m| on(m, crate::routes::books::upload)),
    Route::api(Get, "/v1/books/{key}/read", |m| {
        on(m, crate::routes::books::read)
    }),
    Route::api(Post, "/v1/books/{key}/search", |m| {
        on(m, crate::routes::books::search)
    }),
    Route::api(Post, "/v1/chat/completions", |m| {
        on(m, crate::routes::chat::completions)
    }),
    Route::api(Post, "/v1/sessions", |m| {
        on(m, crate::routes::sessions::create)
    }),
    Route::api(Get, "/v1/sessions/{id}", |m| {
        on(m, crate::routes::sessions::get)
    }),
    Route::api(Delete, "/v1/sessions/{id}", |m| {
        on(m, crate::routes::sessions::delete)
    }),
    Route::api(Post, "/v1/sessions/{id}/rounds", |m| {
        on(m, crate::routes::sessions::append_round)
    }),
    Route::api(Get, "/v1/streams/{id}", |m| {
        on(m, crate::routes::chat::resume)
    }),
    Route::api(Post, "/v1/responses", |m| {
        on(m, crate::routes::responses::create)
    }),
    Route::api(Get, "/v1/responses/{id}", |m| {
        on(m, crate::routes::responses::resume)
    }),
    Route::api(Post, "/v1/messages", |m| {
        on(m, crate::routes::messages::create)
    }),
    Route::api(Get, "/v1/messages/{id}", |m| {
        on(m, crate::routes::messages::resume)
    }),
    Route::forward(Get, "/v1/{resource}"),
    Route::forward(Post, "/v1/{resource}"),
    Route::forward(Delete, "/v1/{resource}"),
    Route::forward(Get, "/v1/{resource}/{*rest}"),
    Route::forward(Post, "/v1/{resource}/{*rest}"),
    Route::forward(Delete, "/v1/{resource}/{*rest}"),
];

/// `router` with every row of [`ROUTES`] added (rows of one path merge into one method
/// router, so a method the path does not serve meets the method-not-allowed fallback).
pub(crate) fn add_all(mut router: Router<AppState>) -> Router<AppState> {
    for r in ROUTES {
        let filter = r.verb.filter();
        match r.serve {
            Serve::Api(handler) | Serve::Page(handler) => {
                router = router.route(r.path, handler(filter));
            }
            Serve::Forward => {
                for path in r.served_paths() {
                    router = router.route(&path, on(filter, crate::routes::passthrough::forward));
                }
            }
        }
    }
    router
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_one_method_on_one_path() {
        let mut seen = std::collections::BTreeSet::new();
        for r in ROUTES {
            assert!(
                seen.insert((r.method(), r.path())),
                "{r:?} is in the table twice"
            );
            assert!(r.path().starts_with('/'), "{r:?}");
        }
        for resource in FORWARDED {
            assert!(
                !ROUTES
                    .iter()
                    .any(|r| !r.is_forwarded() && r.path().starts_with(&format!("/v1/{resource}"))),
                "{resource} is both forwarded and answered here"
            );
        }
    }
}
