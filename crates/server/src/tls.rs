//! The one TLS crypto provider of the process: ring.

/// Installs ring as rustls' process-wide crypto provider, unless one is installed already
/// (the Redis store installs the same): call it before building an HTTPS client. reqwest is
/// built without a provider of its own, so that aws-lc is not linked as a second one (its
/// tables and its start-up constructor cost every `citeflow` command, `docs/benchmarks.md`).
pub fn install_crypto_provider() {
    // `Err` only when a provider is installed already, which is what is wanted.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
