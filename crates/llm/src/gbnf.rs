//! A small GBNF grammar as a value ([`Grammar`] of named [`Expr`] rules), rendered to the text
//! llama.cpp's grammar sampler reads. Pure: the schema compiler builds one, the tests walk it
//! to produce strings it admits.

use std::fmt::Write as _;

/// One grammar expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expr {
    /// Exactly this text.
    Lit(String),
    /// One character in (or, negated, not in) the inclusive ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    /// Another rule, by name.
    Rule(String),
    /// Each in turn.
    Seq(Vec<Expr>),
    /// One of them.
    Alt(Vec<Expr>),
    /// `min` to `max` (unbounded when `None`) repetitions.
    Repeat {
        expr: Box<Expr>,
        min: usize,
        max: Option<usize>,
    },
}

impl Expr {
    /// A literal.
    pub(crate) fn lit(s: impl Into<String>) -> Expr {
        Expr::Lit(s.into())
    }

    /// A reference to the rule `name`.
    pub(crate) fn rule(name: impl Into<String>) -> Expr {
        Expr::Rule(name.into())
    }

    /// `self` zero or one time.
    pub(crate) fn optional(self) -> Expr {
        self.repeat(0, Some(1))
    }

    /// `self` repeated.
    pub(crate) fn repeat(self, min: usize, max: Option<usize>) -> Expr {
        Expr::Repeat {
            expr: Box::new(self),
            min,
            max,
        }
    }

    fn render(&self, out: &mut String) {
        match self {
            Expr::Lit(s) => {
                out.push('"');
                for c in s.chars() {
                    match c {
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        '\t' => out.push_str("\\t"),
                        c if (c as u32) < 0x20 => {
                            let _ = write!(out, "\\x{:02X}", c as u32);
                        }
                        c => out.push(c),
                    }
                }
                out.push('"');
            }
            Expr::Class { negated, ranges } => {
                out.push('[');
                if *negated {
                    out.push('^');
                }
                for &(a, b) in ranges {
                    class_char(a, out);
                    if a != b {
                        out.push('-');
                        class_char(b, out);
                    }
                }
                out.push(']');
            }
            Expr::Rule(name) => out.push_str(name),
            Expr::Seq(items) if items.is_empty() => out.push_str("\"\""),
            Expr::Seq(items) => {
                out.push('(');
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    e.render(out);
                }
                out.push(')');
            }
            Expr::Alt(items) => {
                out.push('(');
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" | ");
                    }
                    e.render(out);
                }
                out.push(')');
            }
            Expr::Repeat { expr, min, max } => {
                out.push('(');
                expr.render(out);
                out.push(')');
                match (min, max) {
                    (0, Some(1)) => out.push('?'),
                    (0, None) => out.push('*'),
                    (1, None) => out.push('+'),
                    (m, None) => {
                        let _ = write!(out, "{{{m},}}");
                    }
                    (m, Some(n)) if m == n => {
                        let _ = write!(out, "{{{m}}}");
                    }
                    (m, Some(n)) => {
                        let _ = write!(out, "{{{m},{n}}}");
                    }
                }
            }
        }
    }
}

fn class_char(c: char, out: &mut String) {
    match c {
        ']' | '[' | '\\' | '^' | '-' => {
            out.push('\\');
            out.push(c);
        }
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x20 => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
        c => out.push(c),
    }
}

/// Named rules; the first is `root`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Grammar {
    rules: Vec<(String, Expr)>,
}

impl Grammar {
    /// Adds (or replaces) the rule `name`.
    pub(crate) fn define(&mut self, name: &str, expr: Expr) {
        match self.rules.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = expr,
            None => self.rules.push((name.to_owned(), expr)),
        }
    }

    /// Whether the rule `name` exists.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.rules.iter().any(|(n, _)| n == name)
    }

    /// The rule `name`.
    #[cfg(test)]
    pub(crate) fn get(&self, name: &str) -> Option<&Expr> {
        self.rules.iter().find(|(n, _)| n == name).map(|(_, e)| e)
    }

    /// The GBNF text, `root` first.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let root = self.rules.iter().filter(|(n, _)| n == "root");
        let rest = self.rules.iter().filter(|(n, _)| n != "root");
        for (name, expr) in root.chain(rest) {
            out.push_str(name);
            out.push_str(" ::= ");
            expr.render(&mut out);
            out.push('\n');
        }
        out
    }
}

/// Walks a grammar at random to produce strings it admits (test oracle input).
#[cfg(test)]
pub(crate) mod sample {
    use super::{Expr, Grammar};

    /// A tiny deterministic generator (xorshift), so the tests need no rand crate.
    pub(crate) struct Rng(pub(crate) u64);

    impl Rng {
        pub(crate) fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n.max(1) as u64) as usize
        }
    }

    /// A string `rule` admits. Past `depth` 6 every choice takes its first (shortest) way.
    pub(crate) fn sample(g: &Grammar, rule: &str, rng: &mut Rng) -> String {
        let mut out = String::new();
        walk(g, g.get(rule).expect("rule"), rng, 0, &mut out);
        out
    }

    const CHARS: &[char] = &[
        'a', 'Z', '0', ' ', '"', '\\', '/', 'é', '草', '\n', '\u{1}', '}',
    ];

    fn walk(g: &Grammar, e: &Expr, rng: &mut Rng, depth: usize, out: &mut String) {
        let deep = depth > 6;
        match e {
            Expr::Lit(s) => out.push_str(s),
            Expr::Class { negated, ranges } => {
                let admits = |c: char| ranges.iter().any(|&(a, b)| a <= c && c <= b) != *negated;
                let pool: Vec<char> = CHARS
                    .iter()
                    .copied()
                    .chain(ranges.iter().flat_map(|&(a, b)| [a, b]))
                    .filter(|&c| admits(c))
                    .collect();
                out.push(pool[rng.below(pool.len())]);
            }
            Expr::Rule(name) => walk(g, g.get(name).expect("rule"), rng, depth + 1, out),
            Expr::Seq(items) => items.iter().for_each(|i| walk(g, i, rng, depth, out)),
            Expr::Alt(items) => {
                let i = if deep { 0 } else { rng.below(items.len()) };
                walk(g, &items[i], rng, depth + 1, out);
            }
            Expr::Repeat { expr, min, max } => {
                let top = max.unwrap_or(min + 4).min(min + 4);
                let n = if deep {
                    *min
                } else {
                    min + rng.below(top - min + 1)
                };
                for _ in 0..n {
                    walk(g, expr, rng, depth + 1, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_render_as_gbnf_root_first() {
        let mut g = Grammar::default();
        g.define("x", Expr::lit("a\"b\n"));
        g.define(
            "root",
            Expr::Seq(vec![
                Expr::rule("x"),
                Expr::Class {
                    negated: true,
                    ranges: vec![('"', '"'), ('\\', '\\'), ('\u{0}', '\u{1f}')],
                }
                .repeat(2, Some(5)),
                Expr::Alt(vec![Expr::lit("t"), Expr::lit("f")]).optional(),
                Expr::lit("z").repeat(3, None),
            ]),
        );
        assert_eq!(
            g.render(),
            "root ::= (x ([^\"\\\\\\x00-\\x1F]){2,5} ((\"t\" | \"f\"))? (\"z\"){3,})\nx ::= \"a\\\"b\\n\"\n"
        );
    }
}
