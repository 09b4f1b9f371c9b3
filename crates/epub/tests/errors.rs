//! errors tests
