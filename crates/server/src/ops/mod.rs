//! Running the server: the graceful shutdown ([`shutdown`]).

pub(crate) mod shutdown;
