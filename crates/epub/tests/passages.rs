//! passages tests
