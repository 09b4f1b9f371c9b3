//! Indexing fixture books and searching them.

use citeflow_core::{Source, Sources};
use citeflow_epub::ChunkSettings;
use citeflow_index::{fingerprint, Index, IndexError};

use crate::{book_bytes, passages};

const KUSAMAKURA: &str = "kusamakura-japanese-vertical-writing.epub";

#[test]
fn japanese_query_finds_the_opening_of_kusamakura() {
    let mut index = Index::in_memory().unwrap();
    let ps = passages(KUSAMAKURA);
    index.add_book(&ps, "k").unwrap();
    let hits = index.search("智に働けば角が立つ", 3).unwrap();
    assert!(!hits.is_empty());
    let top = &hits[0].passage;
    assert!(top.text.contains("智に働けば角が立つ"), "{}", top.text);
    assert!(top.id.ends_with(&format!("#p{}", top.passage_index)));
    assert!(top.cfi.starts_with("epubcfi(/6/"), "{}", top.cfi);
    assert!(top.chapter_title.is_some());
}

#[test]
fn english_query_finds_alice_and_hits_are_sources() {
    let mut index = Index::in_memory().unwrap();
    index.add_book(&passages("alice.epub"), "a").unwrap();
    index.add_book(&passages(KUSAMAKURA), "k").unwrap();
    let hits = index
        .search("the Rabbit took a watch out of its waistcoat-pocket", 5)
        .unwrap();
    assert!(!hits.is_empty());
    let top = &hits[0].passage;
    assert!(top.book_title.contains("Alice"), "{}", top.book_title);
    assert!(top.text.contains("waistcoat-pocket"), "{}", top.text);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    // Ready core sources: distinct numbering keys, locator with chapter and CFI.
    let sources: Vec<Source> = hits.iter().map(|h| h.passage.to_source()).collect();
    let keys: std::collections::HashSet<String> =
        sources.iter().map(|s| Sources::key_of(s, true)).collect();
    assert_eq!(keys.len(), sources.len());
    let loc = sources[0].locator.as_ref().unwrap();
    assert_eq!(loc.cfi.as_deref(), Some(top.cfi.as_str()));
    assert_eq!(loc.chapter_title, top.chapter_title);
    Sources::from_vec(sources).unwrap();
}

#[test]
fn search_book_stays_in_one_book() {
    let mut index = Index::in_memory().unwrap();
    let alice = passages("alice.epub");
    let key = alice[0].book_key.clone();
    index.add_book(&alice, "a").unwrap();
    index.add_book(&passages("wasteland.epub"), "w").unwrap();
    let hits = index
        .search_book(&key, "April is the cruellest month", 10)
        .unwrap();
    assert!(hits.iter().all(|h| h.passage.book_key == key));
    let all = index.search("April is the cruellest month", 1).unwrap();
    assert!(all[0].passage.book_title.contains("Waste Land"));
}

#[test]
fn record_json_reads_as_a_core_source() {
    let p = &passages("alice.epub")[3];
    let json = serde_json::to_string(p).unwrap();
    let source: Source = serde_json::from_str(&json).unwrap();
    assert_eq!(source, p.to_source());
    let back: citeflow_index::BookPassage = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, p);
}

#[test]
fn adding_a_book_again_replaces_it_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = book_bytes("wasteland.epub");
    let ps = passages("wasteland.epub");
    let key = ps[0].book_key.clone();
    let fp = fingerprint(&bytes, &ChunkSettings::default());
    {
        let mut index = Index::open_or_create(dir.path()).unwrap();
        assert_eq!(index.fingerprint(&key).unwrap(), None);
        index.add_book(&ps, &fp).unwrap();
        index.add_book(&ps, &fp).unwrap();
        assert_eq!(index.len(), ps.len() as u64);
    }
    let index = Index::open_or_create(dir.path()).unwrap();
    assert_eq!(index.len(), ps.len() as u64);
    assert_eq!(
        index.fingerprint(&key).unwrap().as_deref(),
        Some(fp.as_str())
    );
    assert_ne!(
        fp,
        fingerprint(&bytes, &ChunkSettings::default().with_target_chars(300))
    );
}

#[test]
fn empty_query_gives_no_hits_and_bad_dir_is_an_error() {
    let index = Index::in_memory().unwrap();
    assert!(index.search("... !!", 5).unwrap().is_empty());
    let file = tempfile::NamedTempFile::new().unwrap();
    let err = Index::open_or_create(file.path()).unwrap_err();
    assert!(matches!(err, IndexError::Open { .. }), "{err}");
}

#[test]
fn books_lists_each_book_with_its_passages_and_chapters() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = Index::open_or_create(dir.path()).unwrap();
    assert!(index.books().unwrap().is_empty());
    let alice = passages("alice.epub");
    let kusa = passages(KUSAMAKURA);
    index.add_book(&alice, "fa").unwrap();
    index.add_book(&kusa, "fk").unwrap();
    // Replacing a book keeps one entry with the new passage count.
    index.add_book(&alice, "fa2").unwrap();
    let books = index.books().unwrap();
    assert_eq!(books.len(), 2, "{books:?}");
    for (ps, fp) in [(&alice, "fa2"), (&kusa, "fk")] {
        let b = books
            .iter()
            .find(|b| b.key == ps[0].book_key)
            .expect("listed");
        assert_eq!(b.title, ps[0].book_title);
        assert_eq!(b.url, ps[0].url);
        assert_eq!(b.fingerprint, fp);
        assert_eq!(b.passages, ps.len());
        let mut chapters: Vec<(usize, Option<String>)> = ps
            .iter()
            .map(|p| (p.chapter_index, p.chapter_title.clone()))
            .collect();
        chapters.dedup();
        let listed: Vec<(usize, Option<String>)> = b
            .chapters
            .iter()
            .map(|c| (c.index, c.title.clone()))
            .collect();
        assert_eq!(listed, chapters);
        let counted: usize = b.chapters.iter().map(|c| c.passages).sum();
        assert_eq!(counted, ps.len());
    }
    // Ordered by title: "Alice's…" before "草枕".
    assert!(books[0].title.starts_with("Alice"), "{}", books[0].title);

    // Another handle on the same directory sees a book added there after reload().
    let other = Index::open_or_create(dir.path()).unwrap();
    assert_eq!(other.books().unwrap().len(), 2);
    index.add_book(&passages("wasteland.epub"), "fw").unwrap();
    assert_eq!(other.books().unwrap().len(), 2);
    other.reload().unwrap();
    assert_eq!(other.books().unwrap().len(), 3);
}

#[test]
fn a_book_file_is_kept_with_the_index_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = book_bytes("wasteland.epub");
    let key = passages("wasteland.epub")[0].book_key.clone();
    {
        let index = Index::open_or_create(dir.path()).unwrap();
        assert_eq!(index.epub(&key).unwrap(), None);
        assert!(!index.has_epub(&key));
        index.keep_epub(&key, b"old").unwrap();
        assert!(index.has_epub(&key));
        index.keep_epub(&key, &bytes).unwrap();
    }
    // A second handle (another process, or after a restart) reads the same bytes.
    let index = Index::open_or_create(dir.path()).unwrap();
    assert_eq!(index.epub(&key).unwrap().as_deref(), Some(&bytes[..]));
    assert!(dir
        .path()
        .join("epub")
        .join(format!("{key}.epub"))
        .is_file());
    // Keys that could name another file are refused, and never found.
    let err = index.keep_epub("../escape", &bytes).unwrap_err();
    assert!(matches!(err, IndexError::Write { .. }), "{err}");
    assert_eq!(index.epub("../escape").unwrap(), None);

    let memory = Index::in_memory().unwrap();
    assert_eq!(memory.epub(&key).unwrap(), None);
    assert!(!memory.has_epub(&key));
    memory.keep_epub(&key, &bytes).unwrap();
    assert!(memory.has_epub(&key));
    assert!(!index.has_epub("../escape"));
    assert_eq!(memory.epub(&key).unwrap().as_deref(), Some(&bytes[..]));
}

#[test]
fn remove_book_takes_out_its_passages_and_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let settings = ChunkSettings::default();
    let mut on_disk = Index::open_or_create(dir.path()).unwrap();
    let mut memory = Index::in_memory().unwrap();
    let alice = passages("alice.epub")[0].book_key.clone();
    let alice_file = dir.path().join("epub").join(format!("{alice}.epub"));
    for index in [&mut on_disk, &mut memory] {
        for name in ["alice.epub", KUSAMAKURA] {
            let p = passages(name);
            index
                .add_book(&p, &fingerprint(&book_bytes(name), &settings))
                .unwrap();
            index.keep_epub(&p[0].book_key, &book_bytes(name)).unwrap();
        }
        index.remove_book(&alice).unwrap();
        let titles: Vec<String> = index
            .books()
            .unwrap()
            .into_iter()
            .map(|b| b.title)
            .collect();
        assert_eq!(titles, ["草枕"]);
        assert!(!index.has_epub(&alice));
        assert_eq!(index.fingerprint(&alice).unwrap(), None);
        assert!(index.search_book(&alice, "rabbit", 3).unwrap().is_empty());
        // A book it does not hold is no error.
        index.remove_book(&alice).unwrap();
    }
    assert!(!alice_file.exists());
    let kusamakura = passages(KUSAMAKURA)[0].book_key.clone();
    assert!(on_disk.has_epub(&kusamakura));
}

// https://github.com/citeflow/citeflow/issues/38
#[test]
fn regression_38_writers_of_one_book_file_at_once_each_write_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = book_bytes("wasteland.epub");
    let key = passages("wasteland.epub")[0].book_key.clone();
    // Two handles, as two processes sharing the directory would have; eight writers each,
    // every one writing a different version of the file.
    let handles = [
        Index::open_or_create(dir.path()).unwrap(),
        Index::open_or_create(dir.path()).unwrap(),
    ];
    let version = |i: usize| {
        let mut b = bytes.clone();
        b.push(u8::try_from(i).unwrap());
        b
    };
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..16)
            .map(|i| {
                let (index, key, b) = (&handles[i % 2], &key, version(i));
                s.spawn(move || (0..5).try_for_each(|_| index.keep_epub(key, &b)))
            })
            .collect();
        for w in writers {
            assert_eq!(w.join().unwrap(), Ok(()));
        }
    });
    // One whole version is kept, and no temporary file is left beside it.
    let kept = handles[0].epub(&key).unwrap().unwrap();
    assert!((0..16).any(|i| kept[..] == version(i)[..]), "a mixed file");
    let files: Vec<String> = std::fs::read_dir(dir.path().join("epub"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, [format!("{key}.epub")]);
}
