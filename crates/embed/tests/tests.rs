//! Tests of `citeflow-embed` with the real model: set `CITEFLOW_EMBED_MODEL` to the file
//! fetched by `fetch_model` (`scripts/test-embed.sh` does). Without it the model test is
//! skipped with a printed notice, as the Redis tests are without their URL, so a bare
//! `cargo test --workspace` needs no download.

use citeflow_embed::{Embedder, Vectors};

fn model() -> Option<Embedder> {
    let Some(path) = std::env::var_os("CITEFLOW_EMBED_MODEL") else {
        eprintln!("skipped: set CITEFLOW_EMBED_MODEL to the model file (scripts/test-embed.sh)");
        return None;
    };
    Some(Embedder::open(std::path::Path::new(&path)).expect("model opens"))
}

#[test]
fn a_query_finds_its_passage_across_languages() {
    let Some(mut e) = model() else { return };
    assert_eq!(e.dim(), 384);
    let passages = [
        "The White Rabbit took a watch out of its waistcoat-pocket and hurried on.",
        "山路を登りながら、こう考えた。智に働けば角が立つ。情に棹させば流される。",
        "April is the cruellest month, breeding lilacs out of the dead land.",
    ];
    let vs = e.embed_passages(&passages).unwrap();
    let mut v = Vectors::new(e.dim());
    for p in &vs {
        let norm: f32 = p.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "{norm}");
        v.push(p);
    }
    for (query, want) in [
        ("What did the rabbit take out of his pocket?", 0),
        ("山道を歩きながら考えたこと", 1),
        ("画家在山路上想了什么？", 1),
        ("which month is the cruellest?", 2),
    ] {
        let q = e.embed_query(query).unwrap();
        assert_eq!(v.top_k(&q, 1)[0].0, want, "{query}");
    }
    // A batch of one equals the single-text path.
    let one = e.embed_passages(&passages[..1]).unwrap();
    let cos: f32 = one[0].iter().zip(&vs[0]).map(|(a, b)| a * b).sum();
    assert!(cos > 0.999, "{cos}");
}

#[test]
fn another_file_is_refused_by_its_digest() {
    let dir = std::env::temp_dir().join(format!("citeflow-embed-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("not-a-model.bin");
    std::fs::write(&p, b"abc").unwrap();
    let err = Embedder::open(&p).unwrap_err();
    assert!(
        err.to_string()
            .contains("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
