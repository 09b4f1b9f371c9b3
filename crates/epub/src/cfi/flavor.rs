//! [`CfiFlavor`]: which way of writing CFIs, by name.

use std::fmt;

/// Which way of writing CFIs: the EPUB CFI 1.1 specification's, or the one
/// epub.js 0.3.93 generates and resolves.
///
/// Names (for settings, the CLI's `--cfi-flavor` and the bindings) are
/// `spec` and `epubjs`; [`FromStr`](std::str::FromStr) and
/// [`Display`](fmt::Display) use them.
///
/// ```
/// use citeflow_epub::CfiFlavor;
/// assert_eq!("epubjs".parse::<CfiFlavor>()?, CfiFlavor::Epubjs);
/// assert_eq!(CfiFlavor::default().to_string(), "spec");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// ### Default
///
/// [`CfiFlavor::Spec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum CfiFlavor {
    /// EPUB CFI 1.1: character data chunks between element children,
    /// comments ignored, CDATA is text, ids escaped with `^`.
    #[default]
    Spec,
    /// epub.js 0.3.93: DOM text nodes counted among text nodes, offsets
    /// inside one DOM text node, CDATA written `/0/1:n`, ids unescaped.
    Epubjs,
}

impl CfiFlavor {
    /// Every flavour, the default first.
    pub const ALL: [CfiFlavor; 2] = [CfiFlavor::Spec, CfiFlavor::Epubjs];

    /// The stable name: `spec` or `epubjs`.
    pub fn name(self) -> &'static str {
        match self {
            CfiFlavor::Spec => "spec",
            CfiFlavor::Epubjs => "epubjs",
        }
    }

    /// Parses a name given by [`CfiFlavor::name`].
    ///
    /// # Errors
    ///
    /// [`CfiFlavorError::UnknownName`] for any other name.
    pub fn from_name(name: &str) -> Result<CfiFlavor, CfiFlavorError> {
        CfiFlavor::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| CfiFlavorError::UnknownName {
                value: name.to_owned(),
            })
    }
}

impl fmt::Display for CfiFlavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for CfiFlavor {
    type Err = CfiFlavorError;
    fn from_str(s: &str) -> Result<CfiFlavor, CfiFlavorError> {
        CfiFlavor::from_name(s)
    }
}

/// Why a [`CfiFlavor`] name was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CfiFlavorError {
    /// The name is neither `spec` nor `epubjs`.
    #[error("unknown cfi flavor {value:?} (expected spec or epubjs)")]
    UnknownName {
        /// The name given.
        value: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_fail() {
        for f in CfiFlavor::ALL {
            assert_eq!(f.to_string().parse::<CfiFlavor>(), Ok(f));
        }
        assert_eq!(
            "epub.js".parse::<CfiFlavor>().map_err(|e| e.to_string()),
            Err("unknown cfi flavor \"epub.js\" (expected spec or epubjs)".to_owned())
        );
    }
}
