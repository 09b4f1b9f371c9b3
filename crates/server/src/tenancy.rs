//! Who may see a book: books belong to the API key that uploaded them; books of the index
//! with a shared key (loaded at start-up by `citeflow serve --book` or `citeflow ingest
//! --index`, or uploaded by a citeflow older than this rule) are shared, read-only.
//!
//! The owner is encoded in the key, so no separate table can drift from the index: an
//! uploaded book's key is its title's slug and 64 bits of SHA-256 over the owner, the
//! package identifier and the title ([`owned_book_key`]); a shared key is
//! [`citeflow_index::book_key`] (6 hex digits). A key is visible to an owner when it is one
//! of the two keys its book's identifier and title give for that owner ([`is_visible`]).
//! Any other key is answered as if absent (404 `book_not_found`).

use citeflow_index::{book_key, BookInfo, BookPassage};
use sha2::{Digest, Sha256};

/// Who makes a request: the hash of their API key, or empty without keys (the extractor is in
/// `auth.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner(pub(crate) String);

/// Hex digits of hash in the key of an uploaded book (64 bits: a collision between two
/// books is not a concern below billions of books).
const OWNED_HASH_HEX: usize = 16;

/// The key of a book uploaded by `owner`: the slug of [`book_key`], a `-` and
/// [`OWNED_HASH_HEX`] hex digits of SHA-256 over a domain tag, the owner, the identifier
/// and the title (`alice-s-adve-0123456789abcdef`).
pub(crate) fn owned_book_key(owner: &Owner, book_id: &str, title: &str) -> String {
    let shared = book_key(book_id, title);
    let slug = shared.rsplit_once('-').map_or("b", |(slug, _)| slug);
    let mut h = Sha256::new();
    h.update(b"citeflow book key v2\0");
    h.update(owner.0.as_bytes());
    h.update([0]);
    h.update(book_id.trim().as_bytes());
    h.update([0]);
    h.update(title.as_bytes());
    let digest = h.finalize();
    let hex: String = digest[..OWNED_HASH_HEX / 2]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{slug}-{hex}")
}

/// The shared key of a book (start-up books, and uploads of older versions).
pub(crate) fn shared_book_key(book_id: &str, title: &str) -> String {
    book_key(book_id, title)
}

/// Whether `owner` may see book `info`: a shared book, or one it uploaded.
pub(crate) fn is_visible(owner: &Owner, info: &BookInfo) -> bool {
    info.key == shared_book_key(&info.book_id, &info.title)
        || info.key == owned_book_key(owner, &info.book_id, &info.title)
}

/// Gives passages cut by [`BookPassage::from_book`] (keyed by the shared key) the key `key`:
/// their `book_key`, their ids (`<key>#p<n>`), and the url or title that fell back on the key.
pub(crate) fn rekey(passages: &mut [BookPassage], key: &str) {
    for p in passages {
        let old = std::mem::replace(&mut p.book_key, key.to_owned());
        p.id = format!("{key}#p{}", p.passage_index);
        if p.url == format!("book:{old}") {
            p.url = format!("book:{key}");
        }
        if p.title == old {
            p.title = key.to_owned();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(s: &str) -> Owner {
        Owner(s.to_owned())
    }

    #[test]
    fn owned_keys_differ_by_owner_and_carry_64_bits() {
        let a = owned_book_key(&owner("key:a"), "urn:x", "Alice's Adventures in Wonderland");
        let b = owned_book_key(&owner("key:b"), "urn:x", "Alice's Adventures in Wonderland");
        assert_ne!(a, b);
        assert!(a.starts_with("alice-s-adve-"), "{a}");
        let hash = a.rsplit_once('-').unwrap().1;
        assert_eq!(hash.len(), 16, "{a}");
        assert!(hash.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
        // Stable, and different from the shared key.
        assert_eq!(
            a,
            owned_book_key(&owner("key:a"), "urn:x", "Alice's Adventures in Wonderland")
        );
        assert_ne!(
            a,
            shared_book_key("urn:x", "Alice's Adventures in Wonderland")
        );
        // The title is hashed too: a second book with the same identifier is another key.
        assert_ne!(a, owned_book_key(&owner("key:a"), "urn:x", "Another"));
        assert!(owned_book_key(&owner(""), "", "草枕").starts_with("b-"));
    }

    #[test]
    fn a_book_is_visible_to_its_owner_and_shared_ones_to_all() {
        // `BookInfo` is non-exhaustive: built from its JSON form.
        let info = |key: String| -> BookInfo {
            serde_json::from_value(serde_json::json!({
                "key": key, "title": "T", "book_id": "urn:t", "url": "book:urn:t",
                "fingerprint": "", "passages": 1, "chapters": [],
            }))
            .unwrap()
        };
        let shared = info(shared_book_key("urn:t", "T"));
        let mine = info(owned_book_key(&owner("key:a"), "urn:t", "T"));
        assert!(is_visible(&owner("key:a"), &shared));
        assert!(is_visible(&owner("key:b"), &shared));
        assert!(is_visible(&owner("key:a"), &mine));
        assert!(!is_visible(&owner("key:b"), &mine));
        assert!(!is_visible(&owner(""), &mine));
    }
}
