//! chapters tests
