//! The CFI parser (EPUB CFI 1.1 grammar, strict about structure).

use super::{Cfi, IdAssertion, Number, Offset, Param, Path, Step, TextAssertion};

/// Why a CFI could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CfiParseError {
    /// The input is empty.
    #[error("empty cfi")]
    Empty,
    /// The input is neither `epubcfi(…)` nor a path starting with `/`.
    #[error("cfi {input:?} must start with \"epubcfi(\" or \"/\"")]
    MissingPrefix {
        /// The input.
        input: String,
    },
    /// Something unexpected at a byte position.
    #[error("invalid cfi {input:?} at byte {position}: expected {expected}, found {found}")]
    Unexpected {
        /// The input.
        input: String,
        /// Byte offset of the problem in `input`.
        position: usize,
        /// What the grammar allows here.
        expected: &'static str,
        /// What was there (`end of input` at the end).
        found: String,
    },
    /// A number is out of range or has a leading zero.
    #[error("invalid cfi {input:?} at byte {position}: bad number {number:?}")]
    BadNumber {
        /// The input.
        input: String,
        /// Byte offset of the number in `input`.
        position: usize,
        /// The number as written.
        number: String,
    },
    /// `%XX` escapes do not decode to UTF-8.
    #[error("cfi {input:?} has percent-escapes that are not utf-8")]
    BadPercentEncoding {
        /// The input.
        input: String,
    },
}

impl CfiParseError {
    /// Byte offset of the problem in the input, where there is one.
    pub fn position(&self) -> Option<usize> {
        match self {
            CfiParseError::Unexpected { position, .. }
            | CfiParseError::BadNumber { position, .. } => Some(*position),
            _ => None,
        }
    }
}

struct P<'a> {
    input: &'a str,
    /// Offset of the parsed text inside `input`.
    base: usize,
    s: &'a [u8],
    i: usize,
}

pub(super) fn parse(input: &str) -> Result<Cfi, CfiParseError> {
    if input.is_empty() {
        return Err(CfiParseError::Empty);
    }
    let start = match input.find("#epubcfi(") {
        Some(h) => h + 1,
        None => 0,
    };
    let text = &input[start..];
    let (wrapped, body_start) = if text.starts_with("epubcfi(") {
        (true, 8)
    } else if text.starts_with('/') {
        (false, 0)
    } else {
        return Err(CfiParseError::MissingPrefix {
            input: input.to_owned(),
        });
    };
    let mut p = P {
        input,
        base: start,
        s: text.as_bytes(),
        i: body_start,
    };
    let mut path = Path::default();
    if p.peek() != Some(b'/') {
        return Err(p.unexpected("'/' starting a step"));
    }
    p.local_path(&mut path)?;
    let mut range = None;
    if p.peek() == Some(b',') {
        p.i += 1;
        let mut s = Path::default();
        p.local_path(&mut s)?;
        if p.peek() != Some(b',') {
            return Err(p.unexpected("',' before the range end"));
        }
        p.i += 1;
        let mut e = Path::default();
        p.local_path(&mut e)?;
        if s.steps.is_empty() && s.offset.is_none() {
            return Err(p.unexpected_at(p.i, "a non-empty range start"));
        }
        if e.steps.is_empty() && e.offset.is_none() {
            return Err(p.unexpected("a non-empty range end"));
        }
        range = Some((s, e));
    }
    if wrapped {
        if p.peek() != Some(b')') {
            return Err(p.unexpected("a step, an offset, ',' or ')'"));
        }
        p.i += 1;
    }
    if p.i != p.s.len() {
        return Err(p.unexpected(if wrapped {
            "end of input after ')'"
        } else {
            "a step, an offset or ','"
        }));
    }
    Ok(Cfi { path, range })
}

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn unexpected(&self, expected: &'static str) -> CfiParseError {
        self.unexpected_at(self.i, expected)
    }

    fn unexpected_at(&self, at: usize, expected: &'static str) -> CfiParseError {
        let found = match std::str::from_utf8(&self.s[at.min(self.s.len())..])
            .ok()
            .and_then(|r| r.chars().next())
        {
            Some(c) => format!("{c:?}"),
            None => "end of input".to_owned(),
        };
        CfiParseError::Unexpected {
            input: self.input.to_owned(),
            position: self.base + at,
            expected,
            found,
        }
    }

    /// `{ step | "!" step } [ ["!"] offset ]`
    fn local_path(&mut self, path: &mut Path) -> Result<(), CfiParseError> {
        let mut redirected = false;
        loop {
            match self.peek() {
                Some(b'/') => {
                    let step = self.step(redirected)?;
                    path.steps.push(step);
                    redirected = false;
                }
                Some(b'!') if !redirected => {
                    self.i += 1;
                    redirected = true;
                }
                Some(b':' | b'@' | b'~') => {
                    path.offset = Some(self.offset()?);
                    path.offset_redirected = redirected;
                    return Ok(());
                }
                _ => {
                    if redirected {
                        return Err(self.unexpected("a step or an offset after '!'"));
                    }
                    return Ok(());
                }
            }
        }
    }

    fn step(&mut self, redirected: bool) -> Result<Step, CfiParseError> {
        self.i += 1; // '/'
        let index = self.integer()?;
        let assertion = if self.peek() == Some(b'[') {
            self.i += 1;
            let id = self.value()?;
            let params = self.params()?;
            self.close_bracket()?;
            Some(IdAssertion { id, params })
        } else {
            None
        };
        Ok(Step {
            index,
            assertion,
            redirected,
        })
    }

    fn offset(&mut self) -> Result<Offset, CfiParseError> {
        let kind = self.s[self.i];
        self.i += 1;
        match kind {
            b':' => {
                let utf16_offset = self.integer()?;
                let assertion = if self.peek() == Some(b'[') {
                    self.i += 1;
                    let before = self.value()?;
                    let after = if self.peek() == Some(b',') {
                        self.i += 1;
                        Some(self.value()?)
                    } else {
                        None
                    };
                    let params = self.params()?;
                    self.close_bracket()?;
                    Some(TextAssertion {
                        before,
                        after,
                        params,
                    })
                } else {
                    None
                };
                Ok(Offset::Character {
                    utf16_offset,
                    assertion,
                })
            }
            b'@' => {
                let (x, y) = self.spatial()?;
                Ok(Offset::Spatial { x, y })
            }
            _ => {
                let seconds = self.number()?;
                let spatial = if self.peek() == Some(b'@') {
                    self.i += 1;
                    Some(self.spatial()?)
                } else {
                    None
                };
                Ok(Offset::Temporal { seconds, spatial })
            }
        }
    }

    fn spatial(&mut self) -> Result<(Number, Number), CfiParseError> {
        let x = self.number()?;
        if self.peek() != Some(b':') {
            return Err(self.unexpected("':' between spatial coordinates"));
        }
        self.i += 1;
        let y = self.number()?;
        Ok((x, y))
    }

    fn digits(&mut self) -> &str {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).unwrap_or("")
    }

    fn integer(&mut self) -> Result<u32, CfiParseError> {
        let start = self.i;
        let d = self.digits().to_owned();
        if d.is_empty() {
            return Err(self.unexpected("a number"));
        }
        if d.len() > 1 && d.starts_with('0') {
            return Err(self.bad_number(start, d));
        }
        d.parse::<u32>().map_err(|_| self.bad_number(start, d))
    }

    fn number(&mut self) -> Result<Number, CfiParseError> {
        let start = self.i;
        let mut text = self.digits().to_owned();
        if text.is_empty() {
            return Err(self.unexpected("a number"));
        }
        if text.len() > 1 && text.starts_with('0') {
            return Err(self.bad_number(start, text));
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            let frac = self.digits().to_owned();
            if frac.is_empty() {
                return Err(self.unexpected("digits after '.'"));
            }
            text.push('.');
            text.push_str(&frac);
        }
        Ok(Number(text))
    }

    fn bad_number(&self, start: usize, number: String) -> CfiParseError {
        CfiParseError::BadNumber {
            input: self.input.to_owned(),
            position: self.base + start,
            number,
        }
    }

    fn close_bracket(&mut self) -> Result<(), CfiParseError> {
        if self.peek() != Some(b']') {
            return Err(self.unexpected("']' closing the assertion"));
        }
        self.i += 1;
        Ok(())
    }

    /// An assertion value: any characters, `^` escaping the next one; stops
    /// before an unescaped special character.
    fn value(&mut self) -> Result<String, CfiParseError> {
        let mut out = String::new();
        loop {
            let rest = std::str::from_utf8(&self.s[self.i..]).unwrap_or("");
            let Some(c) = rest.chars().next() else {
                return Err(self.unexpected("']' closing the assertion"));
            };
            match c {
                '^' => {
                    let Some(e) = rest[1..].chars().next() else {
                        return Err(self.unexpected_at(self.i + 1, "a character after '^'"));
                    };
                    out.push(e);
                    self.i += 1 + e.len_utf8();
                }
                '[' | '(' | ')' => {
                    return Err(self.unexpected("an escaped '^' before this character"))
                }
                ']' | ',' | ';' | '=' => return Ok(out),
                _ => {
                    out.push(c);
                    self.i += c.len_utf8();
                }
            }
        }
    }

    /// `{ ";" name "=" value { "," value } }`
    fn params(&mut self) -> Result<Vec<Param>, CfiParseError> {
        let mut params = Vec::new();
        while self.peek() == Some(b';') {
            self.i += 1;
            let name = self.value()?;
            if name.is_empty() {
                return Err(self.unexpected("a parameter name"));
            }
            if self.peek() != Some(b'=') {
                return Err(self.unexpected("'=' after the parameter name"));
            }
            self.i += 1;
            let mut values = vec![self.value()?];
            while self.peek() == Some(b',') {
                self.i += 1;
                values.push(self.value()?);
            }
            params.push(Param { name, values });
        }
        match self.peek() {
            Some(b']') | None => Ok(params),
            _ => Err(self.unexpected("';' or ']' in the assertion")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_the_position() {
        let e = Cfi::parse("epubcfi(/6/4!x)").unwrap_err();
        assert_eq!(e.position(), Some(13));
        assert!(e.to_string().contains("'x'"), "{e}");
        let e = Cfi::parse("epubcfi(/6/04)").unwrap_err();
        assert_eq!(e.position(), Some(11));
    }

    #[test]
    fn escaped_ids_are_unescaped() {
        let c = Cfi::parse("epubcfi(/4[4^^^[^]^(^)^,^;^=]/6!/4:9)").unwrap();
        assert_eq!(c.path().steps()[0].id(), Some("4^[](),;="));
    }
}
