//! Integration tests of citeflow-server: the real router on a loopback port against a real
//! replaying upstream on another.

mod anchors;
mod api;
mod books;
mod chat_annotations;
mod conn;
mod failures;
mod forward_key;
mod guard;
mod hostile;
mod intake;
mod metrics;
mod prop_upstream;
mod provider_books;
mod recorded;
mod resume;
mod settings_patch;
mod store_failure;
mod store_full;
mod support;
mod tenancy;
