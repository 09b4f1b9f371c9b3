//! The tokenizer: words for scripts that put spaces between words, character bigrams for
//! Chinese, Japanese and Korean.

use tantivy::tokenizer::{
    Language, RemoveLongFilter, Stemmer, StopWordFilter, TextAnalyzer, Token, TokenStream,
    Tokenizer,
};

/// The name the index registers [`CjkBigramTokenizer`]'s analyzer under.
pub const TOKENIZER_NAME: &str = "citeflow_cjk";

/// A tantivy [`Tokenizer`] for mixed CJK and alphabetic text.
///
/// - A run of Han ideographs, kana or Hangul becomes its overlapping character bigrams
///   (`吾輩は猫` → `吾輩`, `輩は`, `は猫`); a run of one character becomes that character.
///   CJK text has no spaces, so bigrams let any two-character word match without a
///   dictionary.
/// - A run of other letters and digits (Latin, Cyrillic, Greek, Arabic, Hebrew, Devanagari…,
///   with their combining marks) becomes one lowercased token.
/// - Full-width ASCII (`ＡＢＣ１２３`) is read as ASCII; everything else (spaces,
///   punctuation, symbols) separates tokens.
///
/// [`analyzer`] adds the filters the index uses on top (long-token removal, English stop
/// words, English stemming).
#[derive(Debug, Clone, Default)]
pub struct CjkBigramTokenizer {
    tokens: Vec<Token>,
}

/// The token stream of [`CjkBigramTokenizer`].
#[derive(Debug)]
pub struct CjkBigramTokenStream<'a> {
    tokens: &'a mut Vec<Token>,
    /// Index of the current token plus one (0: before the first).
    next: usize,
}

impl Tokenizer for CjkBigramTokenizer {
    type TokenStream<'a> = CjkBigramTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CjkBigramTokenStream<'a> {
        self.tokens.clear();
        tokenize_into(text, &mut self.tokens);
        CjkBigramTokenStream {
            tokens: &mut self.tokens,
            next: 0,
        }
    }
}

impl TokenStream for CjkBigramTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next.saturating_sub(1)]
    }

    fn token_mut(&mut self) -> &mut Token {
        let i = self.next.saturating_sub(1);
        &mut self.tokens[i]
    }
}

/// The analyzer the index uses for passage text, chapter titles and queries:
/// [`CjkBigramTokenizer`], then tokens over 40 bytes dropped, English stop words dropped
/// and English stemming (`rabbits` → `rabbit`; tokens of other scripts pass unchanged).
pub fn analyzer() -> TextAnalyzer {
    let builder = TextAnalyzer::builder(CjkBigramTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .dynamic();
    let builder = match StopWordFilter::new(Language::English) {
        Some(stop) => builder.filter_dynamic(stop),
        None => builder,
    };
    builder
        .filter_dynamic(Stemmer::new(Language::English))
        .build()
}

/// The tokens `analyzer()` makes of `text`, as strings (for tests and debugging).
pub fn tokens(text: &str) -> Vec<String> {
    let mut a = analyzer();
    let mut stream = a.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Cjk,
    Word,
    Other,
}

fn class(c: char) -> Class {
    if is_cjk(c) {
        Class::Cjk
    } else if c.is_alphanumeric() || is_mark(c) {
        Class::Word
    } else {
        Class::Other
    }
}

/// Han ideographs, kana, Hangul and the marks that live inside Japanese words.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF     // Hangul Jamo
        | 0x3005..=0x3007   // 々 〆 〇
        | 0x3041..=0x309F   // Hiragana
        | 0x30A0..=0x30FF   // Katakana (with ー)
        | 0x3130..=0x318F   // Hangul compatibility Jamo
        | 0x31F0..=0x31FF   // Katakana phonetic extensions
        | 0x3400..=0x4DBF   // CJK extension A
        | 0x4E00..=0x9FFF   // CJK unified ideographs
        | 0xAC00..=0xD7AF   // Hangul syllables
        | 0xF900..=0xFAFF   // CJK compatibility ideographs
        | 0xFF66..=0xFF9F   // half-width katakana
        | 0x20000..=0x3FFFF // CJK extensions B and later
    )
}

/// Combining marks and joiners that continue a word (Arabic harakat, Hebrew points, Indic
/// vowel signs, Thai vowels, combining diacritics).
fn is_mark(c: char) -> bool {
    matches!(c as u32,
        0x0300..=0x036F
        | 0x0483..=0x0489
        | 0x0591..=0x05C7
        | 0x0610..=0x061A
        | 0x0640
        | 0x064B..=0x065F
        | 0x0670
        | 0x06D6..=0x06ED
        | 0x0900..=0x0DFF
        | 0x0E31..=0x0E4E
        | 0x1AB0..=0x1AFF
        | 0x1DC0..=0x1DFF
        | 0x200C..=0x200D
        | 0x20D0..=0x20FF
        | 0xFE20..=0xFE2F
    ) && !c.is_whitespace()
}

/// Full-width ASCII letters and digits as ASCII.
fn narrow(c: char) -> char {
    match c as u32 {
        0xFF10..=0xFF19 | 0xFF21..=0xFF3A | 0xFF41..=0xFF5A => {
            char::from_u32(c as u32 - 0xFEE0).unwrap_or(c)
        }
        _ => c,
    }
}

fn push(tokens: &mut Vec<Token>, text: String, from: usize, to: usize) {
    let position = tokens.len();
    tokens.push(Token {
        offset_from: from,
        offset_to: to,
        position,
        text,
        position_length: 1,
    });
}

fn tokenize_into(text: &str, tokens: &mut Vec<Token>) {
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        match class(c) {
            Class::Other => {
                chars.next();
            }
            Class::Word => {
                let mut word = String::new();
                let mut end = start;
                while let Some(&(i, c)) = chars.peek() {
                    if class(c) != Class::Word {
                        break;
                    }
                    word.extend(narrow(c).to_lowercase());
                    end = i + c.len_utf8();
                    chars.next();
                }
                push(tokens, word, start, end);
            }
            Class::Cjk => {
                let mut run: Vec<(usize, char)> = Vec::new();
                while let Some(&(i, c)) = chars.peek() {
                    if class(c) != Class::Cjk {
                        break;
                    }
                    run.push((i, c));
                    chars.next();
                }
                if let [(i, c)] = run[..] {
                    push(tokens, c.to_string(), i, i + c.len_utf8());
                } else {
                    for pair in run.windows(2) {
                        let (i, a) = pair[0];
                        let (j, b) = pair[1];
                        push(tokens, format!("{a}{b}"), i, j + b.len_utf8());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cjk_runs_become_bigrams_and_words_stay_whole() {
        assert_eq!(tokens("吾輩は猫"), ["吾輩", "輩は", "は猫"]);
        assert_eq!(tokens("猫。"), ["猫"]);
        assert_eq!(tokens("The Rabbits ran"), ["rabbit", "ran"]);
        assert_eq!(
            tokens("智に働けばAlice角が立つ"),
            ["智に", "に働", "働け", "けば", "alic", "角が", "が立", "立つ"]
        );
        assert_eq!(tokens("ＡＢＣ１２３"), ["abc123"]);
        assert_eq!(tokens("中文分词"), ["中文", "文分", "分词"]);
    }

    #[test]
    fn arabic_words_keep_their_marks() {
        assert_eq!(tokens("السَّلَامُ عليكم"), ["السَّلَامُ", "عليكم"]);
    }

    #[test]
    fn offsets_point_at_the_source_text() {
        let mut t = CjkBigramTokenizer::default();
        let text = "ab 草枕";
        let mut s = t.token_stream(text);
        let mut got = Vec::new();
        while s.advance() {
            let tok = s.token();
            got.push(text[tok.offset_from..tok.offset_to].to_owned());
        }
        assert_eq!(got, ["ab", "草枕"]);
    }
}
