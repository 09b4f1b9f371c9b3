"""citeflow.epub: books opened from a path or bytes, chapters, passages cut as `citeflow ingest`
cuts them (compared line for line with the CLI), reading views at CFIs, CFI parse / compare /
resolve, typed errors."""

from __future__ import annotations

import json
import os
import subprocess
from functools import cache
from pathlib import Path

import pytest

import citeflow
from citeflow.epub import Book, Cfi, CfiError, EpubError, Passage

from conftest import WORKSPACE, shared_dir

BOOKS = [
    "alice.epub",
    "cfi-spec-example.epub",
    "childrens-literature.epub",
    "georgia-cfi.epub",
    "kusamakura-japanese-vertical-writing.epub",
    "regime-anticancer-arabic.epub",
    "wasteland.epub",
]


def book_path(name: str) -> Path:
    p = shared_dir() / "fixtures" / "epub" / name
    if not p.is_file():
        pytest.fail(f"fixture book {p} is missing")
    return p


@cache
def book(name: str) -> Book:
    return Book.open(book_path(name))


def cli() -> list[str]:
    """The citeflow CLI: ``CITEFLOW_CLI`` (scripts/test-python.sh builds it), else ``cargo run``."""
    exe = os.environ.get("CITEFLOW_CLI")
    if exe:
        if not Path(exe).is_file():
            pytest.fail(f"CITEFLOW_CLI={exe} does not exist")
        return [exe]
    return ["cargo", "run", "-q", "-p", "citeflow-cli", "--"]


def test_alice_has_its_chapters_and_metadata() -> None:
    b = book("alice.epub")
    assert b.title == "Alice's Adventures in Wonderland"
    assert b.book_id == "edu.nyu.itp.future-of-publishing.alice-in-wonderland"
    assert b.book_key == "alice-s-adve-e50036"
    assert b.language == "en-US"
    assert b.creators == ["Lewis Carroll"]
    titles = [c.title for c in b.chapters]
    assert titles[:4] == [None, "Title Page", "Down The Rabbit-Hole", "The Pool Of Tears"]
    assert [c.index for c in b.chapters] == list(range(len(b.chapters)))
    ch = b.chapters[2]
    assert (ch.spine_index, ch.href, ch.cfi) == (3, "chapter_001.xhtml", "epubcfi(/6/8!/4)")
    # A chapter's CFI opens the book at that chapter.
    for c in b.chapters:
        if c.cfi is not None:
            r = b.reading(c.cfi)
            assert (r.chapter_index, r.chapter_title) == (c.index, c.title)
            # A point: an empty mark at the chapter's first character (a cover has no text).
            assert r.text == ""
            assert r.mark_start == r.mark_end == ((0, 0) if r.paragraphs else None), c


def test_passages_carry_text_chapter_cfi_language_and_ingest_ids() -> None:
    b = book("alice.epub")
    ps = b.passages()
    assert len(ps) == 92
    p = ps[3]
    assert p.id == "alice-s-adve-e50036#p3" and p.index == 3
    assert p.chapter_index == 2 and p.chapter_title == "Down The Rabbit-Hole"
    assert p.cfi == "epubcfi(/6/8!/4/2,/8/1:192,/12/3:565)"
    assert p.start_cfi == "epubcfi(/6/8!/4/2/8/1:192)"
    assert "took a watch out of its waistcoat-pocket" in p.text
    assert p.language == "en-US"
    assert (p.book_id, p.book_key, p.book_title) == (b.book_id, b.book_key, b.title)
    assert p.title == "Alice's Adventures in Wonderland — Down The Rabbit-Hole"
    assert p.url == "book:edu.nyu.itp.future-of-publishing.alice-in-wonderland"
    assert p.metadata() == {
        "passage_id": p.id,
        "passage_index": 3,
        "book_id": b.book_id,
        "book_key": "alice-s-adve-e50036",
        "book_title": b.title,
        "title": p.title,
        "url": p.url,
        "chapter_index": 2,
        "chapter_title": "Down The Rabbit-Hole",
        "cfi": p.cfi,
        "start_cfi": p.start_cfi,
        "spine_index": 3,
        "href": "chapter_001.xhtml",
        "language": "en-US",
    }
    # Untitled leading content: no chapter_title key (flat metadata has no None values).
    assert "chapter_title" not in ps[0].metadata() and ps[0].chapter_title is None
    # The settings are ingest's: smaller passages, more of them.
    small = b.passages(target_chars=300, overlap_chars=50)
    assert len(small) > len(ps) and max(len(x.text) for x in small) <= 300


def test_a_passage_is_a_citeflow_source() -> None:
    p = book("alice.epub").passages()[3]
    s = p.to_source()
    assert isinstance(s, citeflow.Source)
    assert (s.id, s.title, s.url, s.text) == (p.id, p.title, p.url, p.text)
    assert s.locator == citeflow.Locator(chapter_index=2, chapter_title="Down The Rabbit-Hole", cfi=p.cfi)
    # The ingest line reads as the same source.
    assert citeflow.Source.from_dict(p.to_dict()) == s
    assert json.loads(p.to_json()) == p.to_dict()
    out = citeflow.rewrite_str("It ran [[" + p.id + "]].", [s]).text
    assert out == "It ran [1]."


@pytest.mark.parametrize("name", BOOKS)
def test_passages_equal_citeflow_ingest_output(name: str) -> None:
    """Every passage's JSON is the line `citeflow ingest` writes, byte for byte, with the
    default options and with other ones (ruby readings kept for the Japanese book)."""
    options: list[tuple[list[str], dict[str, object]]] = [
        ([], {}),
        (["--target-chars", "300", "--overlap-chars", "40"], {"target_chars": 300, "overlap_chars": 40}),
    ]
    if name.startswith("kusamakura"):
        options.append((["--ruby"], {"ruby_text": True}))
    for args, kwargs in options:
        p = subprocess.run(
            cli() + ["ingest", "--format", "jsonl", *args, str(book_path(name))],
            capture_output=True,
            cwd=WORKSPACE,
            timeout=600,
        )
        assert p.returncode == 0, p.stderr.decode(errors="replace")
        ours = "".join(x.to_json() + "\n" for x in book(name).passages(**kwargs))  # type: ignore[arg-type]
        assert ours == p.stdout.decode(), f"{name} {args}"


@pytest.mark.parametrize("name", BOOKS)
def test_every_passage_cfi_reads_back_exactly_its_text(name: str) -> None:
    """As the Rust property test: `Book.reading(p.cfi).text == p.text` for every passage of every
    fixture book (with and without ruby readings for the Japanese one), in its chapter; the
    start CFI marks where the text starts; `resolve` of the start gives its first characters."""
    b = book(name)
    for ruby in [False, True] if name.startswith("kusamakura") else [False]:
        ps = b.passages(ruby_text=ruby)
        assert ps, name
        for p in ps:
            r = b.reading(p.cfi, ruby_text=ruby)
            assert r.text == p.text, f"{name} ruby={ruby} {p.cfi}"
            assert (r.chapter_index, r.chapter_title, r.spine_index, r.href) == (
                p.chapter_index,
                p.chapter_title,
                p.spine_index,
                p.href,
            )
            start = b.reading(Cfi(p.start_cfi), ruby_text=ruby)
            assert start.mark_start == start.mark_end == r.mark_start, p.start_cfi
            assert Cfi(p.start_cfi) == Cfi(p.cfi).start()
        # Passages come in reading order.
        starts = [Cfi(p.start_cfi) for p in ps]
        assert all(a <= c for a, c in zip(starts, starts[1:])), name


def test_cfis_parse_compare_and_resolve() -> None:
    b = book("cfi-spec-example.epub")
    spec = "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05],/2/1:1,/3:4)"
    c = Cfi.parse(spec)
    assert str(c) == spec and repr(c) == f"Cfi('{spec}')"
    assert c.is_range() and not c.start().is_range()
    assert str(c.start()) == "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/2/1:1)"
    assert str(c.end()) == "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/3:4)"
    assert b.resolve(c) == "yy0123"
    assert b.resolve(spec) == "yy0123"
    assert b.reading(spec).text == "yy0123"
    assert b.reading(spec).chapter_title == "Chapter 1"
    assert b.resolve("epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/3:2)", max_chars=5) == "23456"
    # Spec order: /6/2 < /6/4; a str is parsed.
    a, z = Cfi("epubcfi(/6/2)"), Cfi("epubcfi(/6/4)")
    assert a < z and z > a and a <= "epubcfi(/6/2)" and a != z
    assert a.compare(z) == -1 and z.compare(a) == 1 and a.compare("epubcfi(/6/2)") == 0
    assert Cfi("epubcfi(/6/2)") == Cfi("/6/2") and hash(Cfi("epubcfi(/6/2)")) == hash(Cfi("/6/2"))
    assert len({Cfi("epubcfi(/6/2)"), Cfi("epubcfi(/6/2)"), z}) == 2


def test_errors_are_typed() -> None:
    with pytest.raises(CfiError) as e:
        Cfi("epubcfi(/6/x)")
    assert e.value.code == "cfi_parse" and e.value.position == 11
    assert 'invalid cfi "epubcfi(/6/x)" at byte 11' in str(e.value)
    assert isinstance(e.value, citeflow.CiteflowError) and citeflow.CfiError is CfiError
    b = book("alice.epub")
    with pytest.raises(CfiError) as e:
        b.reading("epubcfi(/6/9999!/4/2/1:0)")
    assert e.value.code == "step_out_of_range" and "(/9999) has no target" in str(e.value)
    with pytest.raises(CfiError) as e:
        b.resolve("epubcfi(/4/2)")
    assert e.value.code == "not_spine"
    with pytest.raises(EpubError) as e2:
        Book.from_bytes(b"not a zip")
    assert e2.value.code == "not_zip" and e2.value.limit is None
    assert str(e2.value).startswith("not a zip archive")
    assert isinstance(e2.value, citeflow.CiteflowError) and citeflow.EpubError is EpubError
    with pytest.raises(FileNotFoundError):
        Book.open(book_path("alice.epub").with_name("no-such-book.epub"))
    with pytest.raises(TypeError):
        b.reading(42)  # type: ignore[arg-type]


def test_a_book_opens_the_same_from_a_path_str_bytes_and_bytearray() -> None:
    path = book_path("wasteland.epub")
    data = path.read_bytes()
    expected = [p.to_json() for p in Book.open(path).passages()]
    for source in [str(path), data, bytearray(data)]:
        assert [p.to_json() for p in Book.open(source).passages()] == expected
    assert [p.to_json() for p in Book.from_bytes(data).passages()] == expected
    assert isinstance(Book.open(path).passages()[0], Passage)
