//! What a request passes before a route reads it: the connection's limits ([`conn`]), the
//! browser guard ([`guard`]), the request id ([`request_id`]), the API key ([`auth`]) and the
//! JSON body ([`body`]) under the shared memory budget ([`crate::budget`]).

pub(crate) mod auth;
pub(crate) mod body;
pub(crate) mod conn;
pub(crate) mod guard;
pub(crate) mod request_id;
