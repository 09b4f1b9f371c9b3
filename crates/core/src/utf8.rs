//! Incremental UTF-8 decoding: a character cut between two chunks is held, never emitted half.

use crate::settings::InvalidUtf8;

/// Decoder state: the bytes of an unfinished character (at most 3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Utf8Decoder {
    carry: Vec<u8>,
}

impl Utf8Decoder {
    /// Decodes `bytes` (which follow `consumed` raw bytes of input) onto `out`. Invalid
    /// sequences become U+FFFD or fail with the raw offset of the first invalid byte; the
    /// valid text before it is still appended.
    pub(crate) fn decode(
        &mut self,
        bytes: &[u8],
        consumed: u64,
        policy: InvalidUtf8,
        out: &mut String,
    ) -> Result<(), u64> {
        if self.carry.is_empty() {
            return self.decode_from(bytes, consumed, policy, out);
        }
        let mut joined = std::mem::take(&mut self.carry);
        let base = consumed - joined.len() as u64;
        joined.extend_from_slice(bytes);
        self.decode_from(&joined, base, policy, out)
    }

    fn decode_from(
        &mut self,
        mut rest: &[u8],
        mut offset: u64,
        policy: InvalidUtf8,
        out: &mut String,
    ) -> Result<(), u64> {
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    return Ok(());
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(std::str::from_utf8(&rest[..valid]).unwrap_or_default());
                    match e.error_len() {
                        None => {
                            self.carry = rest[valid..].to_vec();
                            return Ok(());
                        }
                        Some(_) if policy == InvalidUtf8::Error => {
                            return Err(offset + valid as u64)
                        }
                        Some(n) => {
                            out.push('\u{FFFD}');
                            rest = &rest[valid + n..];
                            offset += (valid + n) as u64;
                        }
                    }
                }
            }
        }
    }

    /// Ends the input: an unfinished character is invalid.
    pub(crate) fn finish(
        &mut self,
        consumed: u64,
        policy: InvalidUtf8,
        out: &mut String,
    ) -> Result<(), u64> {
        if self.carry.is_empty() {
            return Ok(());
        }
        let at = consumed - self.carry.len() as u64;
        self.carry.clear();
        match policy {
            InvalidUtf8::Error => Err(at),
            _ => {
                out.push('\u{FFFD}');
                Ok(())
            }
        }
    }

    /// Bytes held for an unfinished character.
    pub(crate) fn held_bytes(&self) -> usize {
        self.carry.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&[u8]]) -> String {
        let mut d = Utf8Decoder::default();
        let mut out = String::new();
        let mut n = 0;
        for c in chunks {
            d.decode(c, n, InvalidUtf8::Replace, &mut out).unwrap();
            n += c.len() as u64;
        }
        d.finish(n, InvalidUtf8::Replace, &mut out).unwrap();
        out
    }

    #[test]
    fn split_characters_match_lossy_decoding() {
        let inputs: [&[u8]; 4] = [
            "a【2】é😀z".as_bytes(),
            b"\xE3\x80A\xF0\x9F\x98",
            b"\xFF\xE3\x80\x90\xC3",
            b"ok\xED\xA0\x80ok",
        ];
        for input in inputs {
            let want = String::from_utf8_lossy(input).into_owned();
            for cut in 0..=input.len() {
                for cut2 in cut..=input.len() {
                    let got = run(&[&input[..cut], &input[cut..cut2], &input[cut2..]]);
                    assert_eq!(got, want, "{input:?} cut at {cut},{cut2}");
                }
            }
        }
    }

    #[test]
    fn error_policy_reports_the_raw_offset_and_keeps_valid_text() {
        let mut d = Utf8Decoder::default();
        let mut out = String::new();
        d.decode(b"abc\xE3", 0, InvalidUtf8::Error, &mut out)
            .unwrap();
        let e = d.decode(b"\x80Zq", 4, InvalidUtf8::Error, &mut out);
        assert_eq!(e, Err(3));
        assert_eq!(out, "abc");
    }
}
