//! vectors tests
