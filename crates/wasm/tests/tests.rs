//! Tests of citeflow-wasm. On wasm32 they run under Node through wasm-bindgen-test:
//! `CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner cargo test -p
//! citeflow-wasm --target wasm32-unknown-unknown`. On the host only the vector list check runs.

#[cfg(target_arch = "wasm32")]
mod api;
#[cfg(target_arch = "wasm32")]
mod support;
mod vectors;
