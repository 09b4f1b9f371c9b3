//! Integration tests for citeflow-epub.

mod support;

mod cfi_flavor;
mod chapters;
mod errors;
mod hostile;
mod oracle;
mod passages;
mod progress;
mod quote;
mod reading;
mod vectors;
