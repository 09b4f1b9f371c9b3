//! Running the server: the graceful shutdown ([`shutdown`]), and a response's feed cut short
//! by a signal ([`cut`]).

pub(crate) mod cut;
pub(crate) mod shutdown;
