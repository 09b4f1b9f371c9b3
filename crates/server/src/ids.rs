//! Random ids: streams, sessions, upload files. A leaf: it imports no other module.

/// A random id: `prefix` + 32 hex digits (128 random bits).
pub(crate) fn random_id(prefix: &str) -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS random source works");
    let mut s = String::with_capacity(prefix.len() + 32);
    s.push_str(prefix);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}
