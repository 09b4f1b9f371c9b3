//! [`BookPassage`]: a passage of a book as ingested, stored and cited (defined in
//! `citeflow-epub`, so that the Python and npm packages write the very same records), and the
//! [`fingerprint`] that tells the index when to re-ingest a book.

use citeflow_epub::ChunkSettings;
pub use citeflow_epub::{book_key, BookPassage};

/// A fingerprint of a book file and the chunk settings its passages were cut with: the
/// index re-ingests a book whose fingerprint changed.
pub fn fingerprint(epub_bytes: &[u8], settings: &ChunkSettings) -> String {
    let mut h = fnv1a(epub_bytes);
    for n in [
        settings.target_chars() as u64,
        settings.overlap_chars() as u64,
        u64::from(settings.ruby_text()),
    ] {
        h = fnv1a_continue(h, &n.to_le_bytes());
    }
    format!("{h:016x}-{}", epub_bytes.len())
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_continue(FNV_OFFSET, bytes)
}

fn fnv1a_continue(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn book_keys_are_short_slugs_with_a_hash() {
        let k = book_key("urn:x", "Alice's Adventures in Wonderland");
        assert!(k.starts_with("alice-s-adv"), "{k}");
        assert!(k.len() <= 19, "{k}");
        assert_eq!(k, book_key("urn:x", "Alice's Adventures in Wonderland"));
        assert_ne!(k, book_key("urn:y", "Alice's Adventures in Wonderland"));
        assert!(book_key("", "草枕").starts_with("b-"));
        assert_ne!(book_key("", "草枕"), book_key("", "坊っちゃん"));
    }
}
