//! Fuzzes the EPUB reader's inputs: CFI strings, content documents and archives. Nothing may
//! panic; a CFI that parses prints as a CFI that parses to the same value; the CFI generated for
//! every text node of a parsed document parses and resolves to a character position in it.
#![no_main]

use citeflow_epub::{Book, Cfi, Document, Limits, Location};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Archives: any bytes are either a book or an OpenError.
    if data.starts_with(b"PK") {
        let limits = Limits::default()
            .with_max_total_uncompressed_bytes(8 << 20)
            .with_max_entries(64);
        if let Ok(book) = Book::open(data, &limits) {
            for n in book.text_nodes().take(64) {
                let _ = book.resolve(&n.cfi);
            }
        }
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // CFI strings: parse, print, parse again.
    if let Ok(cfi) = Cfi::parse(text) {
        let printed = cfi.to_string();
        let again = Cfi::parse(&printed).expect("a printed cfi parses");
        assert_eq!(again, cfi, "{text} printed as {printed}");
        assert_eq!(again.to_string(), printed);
        assert!(cfi.compare(&again).is_some_and(|o| o.is_eq()));
    }
    // Content documents: every text node's CFI resolves to a place in the document.
    let doc = Document::parse(text);
    for node in doc.text_nodes().take(256) {
        let Some(cfi) = doc.cfi(node, Some(0)) else {
            continue;
        };
        let printed = cfi.to_string();
        let parsed = Cfi::parse(&printed).expect("a generated cfi parses");
        let (start, _) = doc
            .resolve(&parsed)
            .unwrap_or_else(|e| panic!("{printed} does not resolve: {e}"));
        assert!(
            matches!(start, Location::Text { .. } | Location::EmptyChunk { .. }),
            "{printed} resolves to {start:?}"
        );
    }
});
