//! Integration tests of citeflow-core.
