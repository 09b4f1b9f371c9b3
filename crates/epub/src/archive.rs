//! Reading zip entries under [`Limits`].

use std::io::{Cursor, Read};

use zip::ZipArchive;

use crate::limits::RATIO_FLOOR_BYTES;
use crate::{Limits, OpenError};

pub(crate) struct Archive<'a> {
    zip: ZipArchive<Cursor<&'a [u8]>>,
    limits: Limits,
    read_total: u64,
}

impl<'a> Archive<'a> {
    pub(crate) fn open(bytes: &'a [u8], limits: &Limits) -> Result<Self, OpenError> {
        let mut zip = ZipArchive::new(Cursor::new(bytes)).map_err(|e| OpenError::NotZip {
            reason: e.to_string(),
        })?;
        if zip.len() > limits.max_entries() {
            return Err(OpenError::TooManyEntries {
                entries: zip.len(),
                limit: limits.max_entries(),
            });
        }
        let mut declared: u64 = 0;
        for i in 0..zip.len() {
            let f = zip.by_index_raw(i).map_err(|e| OpenError::NotZip {
                reason: e.to_string(),
            })?;
            declared = declared.saturating_add(f.size());
        }
        if declared > limits.max_total_uncompressed_bytes() {
            return Err(OpenError::TotalTooLarge {
                bytes: declared,
                limit: limits.max_total_uncompressed_bytes(),
            });
        }
        Ok(Archive {
            zip,
            limits: limits.clone(),
            read_total: 0,
        })
    }

    /// Names of all entries.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.zip.file_names()
    }

    /// Reads an entry; `Ok(None)` if there is none with this name.
    pub(crate) fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, OpenError> {
        let index = match self.zip.index_for_name(name) {
            Some(i) => i,
            None => {
                // Some producers differ in case only.
                let lower = name.to_lowercase();
                match self.zip.file_names().find(|n| n.to_lowercase() == lower) {
                    Some(n) => {
                        let n = n.to_owned();
                        match self.zip.index_for_name(&n) {
                            Some(i) => i,
                            None => return Ok(None),
                        }
                    }
                    None => return Ok(None),
                }
            }
        };
        let max_entry = self.limits.max_entry_bytes();
        let max_total = self.limits.max_total_uncompressed_bytes();
        let ratio = self.limits.max_compression_ratio();
        let entry_err = |e: zip::result::ZipError| OpenError::Entry {
            path: name.to_owned(),
            reason: e.to_string(),
        };
        let (declared, compressed, encrypted) = {
            let f = self.zip.by_index_raw(index).map_err(entry_err)?;
            (f.size(), f.compressed_size(), f.encrypted())
        };
        if encrypted {
            return Err(OpenError::Encrypted {
                path: name.to_owned(),
                algorithm: "zip password encryption".to_owned(),
            });
        }
        self.check(name, declared, compressed, max_entry, max_total, ratio)?;
        let f = self.zip.by_index(index).map_err(entry_err)?;
        let cap = usize::try_from(declared.min(max_entry)).unwrap_or(0);
        let mut buf = Vec::with_capacity(cap);
        f.take(max_entry.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(|e| OpenError::Entry {
                path: name.to_owned(),
                reason: e.to_string(),
            })?;
        let got = buf.len() as u64;
        self.check(name, got, compressed, max_entry, max_total, ratio)?;
        self.read_total += got;
        Ok(Some(buf))
    }

    fn check(
        &self,
        name: &str,
        size: u64,
        compressed: u64,
        max_entry: u64,
        max_total: u64,
        ratio: u64,
    ) -> Result<(), OpenError> {
        if size > max_entry {
            return Err(OpenError::EntryTooLarge {
                path: name.to_owned(),
                bytes: size,
                limit: max_entry,
            });
        }
        if self.read_total.saturating_add(size) > max_total {
            return Err(OpenError::TotalTooLarge {
                bytes: self.read_total.saturating_add(size),
                limit: max_total,
            });
        }
        if size >= RATIO_FLOOR_BYTES && size > compressed.saturating_mul(ratio) {
            return Err(OpenError::CompressionRatio {
                path: name.to_owned(),
                ratio: size / compressed.max(1),
                limit: ratio,
            });
        }
        Ok(())
    }
}
