//! Integration tests of citeflow-llm: the HTTP layer over a scripted model, and (with the
//! `local-model` feature and a GGUF file) the real model end to end through the proxy.

mod http;
#[cfg(feature = "local-model")]
mod real;
mod support;
mod tools;
