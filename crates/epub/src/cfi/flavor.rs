//! [`CfiFlavor`]: which way of writing CFIs, by name; [`FlavorReading`]:
//! how a CFI of unknown flavour was read.

use std::fmt;

use crate::text::Resolved;

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

/// How [`Book::resolve_any`](crate::Book::resolve_any) read a CFI of unknown flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlavorReading {
    /// Both flavours read it to the same place (true of every CFI whose
    /// steps mean the same in both, such as any text after text).
    Same(Resolved),
    /// Only this flavour reads it to text: the other has no target there,
    /// or lands on an empty chunk (a place with no text, which neither
    /// flavour generates for a text position).
    Only(CfiFlavor, Resolved),
    /// Both read it to text, at different places: the flavour must be
    /// given (use [`Book::resolve_as`](crate::Book::resolve_as)).
    Ambiguous {
        /// The place when read as [`CfiFlavor::Spec`].
        spec: Resolved,
        /// The place when read as [`CfiFlavor::Epubjs`].
        epubjs: Resolved,
    },
}

impl FlavorReading {
    /// The place, unless the reading is ambiguous.
    pub fn resolved(&self) -> Option<&Resolved> {
        match self {
            FlavorReading::Same(r) | FlavorReading::Only(_, r) => Some(r),
            FlavorReading::Ambiguous { .. } => None,
        }
    }

    /// The flavour that read it, when only one did.
    pub fn flavor(&self) -> Option<CfiFlavor> {
        match self {
            FlavorReading::Only(f, _) => Some(*f),
            _ => None,
        }
    }
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
