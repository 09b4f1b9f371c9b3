//! Integration tests of citeflow-llm: the HTTP layer over a scripted model. The real model end
//! to end through the proxy is tested in citeflow-cli (`tests/real_model.rs`), whose release
//! build is the one `scripts/run.sh` makes.

mod http;
mod support;
mod tools;
