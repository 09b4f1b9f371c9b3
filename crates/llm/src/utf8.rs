//! Model output as text: the bytes of tokens, which may end inside a UTF-8 character.
//!
//! Apart from the llama.cpp engine that uses it, so that it is tested without the model.

/// Removes and returns the longest prefix of `pending` that is whole UTF-8 characters; an
/// invalid sequence becomes U+FFFD.
pub(crate) fn take_utf8(pending: &mut Vec<u8>) -> String {
    match std::str::from_utf8(pending) {
        Ok(s) => {
            let s = s.to_owned();
            pending.clear();
            s
        }
        Err(e) => {
            let good = e.valid_up_to();
            let mut out = String::from_utf8_lossy(&pending[..good]).into_owned();
            match e.error_len() {
                // An unfinished character at the end: keep it for the next token.
                None => {
                    pending.drain(..good);
                }
                Some(bad) => {
                    out.push('\u{FFFD}');
                    pending.drain(..good + bad);
                    out.push_str(&take_utf8(pending));
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::take_utf8;

    #[test]
    fn a_character_cut_between_tokens_is_held() {
        let mut p = "a草".as_bytes()[..3].to_vec();
        assert_eq!(take_utf8(&mut p), "a");
        p.extend_from_slice(&"草".as_bytes()[2..]);
        assert_eq!(take_utf8(&mut p), "草");
        assert!(p.is_empty());
        let mut bad = vec![b'x', 0xff, b'y'];
        assert_eq!(take_utf8(&mut bad), "x\u{FFFD}y");
    }
}
