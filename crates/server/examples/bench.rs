//! Load benchmark (see crates/server/README.md).

fn main() {}
