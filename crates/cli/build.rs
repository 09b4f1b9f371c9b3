//! Links the `citeflow` binary as a fixed-address executable (non-PIE) on Linux.
//!
//! As a position-independent executable, the dynamic loader applies about 43,000 relative
//! relocations at every start (vtables, string tables: 760 KB of `.data.rel.ro`), which
//! costs each run about 190 page faults and 0.6 ms of CPU, a third of an empty
//! `citeflow render`'s. Linked at a fixed address, the linker resolves them once
//! (`docs/benchmarks.md`, the CLI start-up row). The shared libraries stay randomized; the
//! executable's own addresses do not.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
