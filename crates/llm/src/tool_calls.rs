//! [`CallReader`]: reads the model's text, as it streams, into prose or tool calls (the form
//! [`crate::tools`] makes the grammar write). Pure: push text with [`CallReader::write`], pull
//! [`CallEvent`]s with [`CallReader::poll_event`].
//!
//! A turn that may call tools decides on its first character: the grammar lets prose start
//! with anything but `<` and a call start with `<tool_call>`. A call's name is known once its
//! closing quote is read ([`CallEvent::Start`]); its arguments are passed on as they come
//! ([`CallEvent::Arguments`]), up to the end of their JSON object.

use std::collections::VecDeque;

use crate::tools::{CALL_ARGS, CALL_CLOSE, CALL_OPEN, CALL_SEP};

/// What the model wrote, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallEvent {
    /// Prose.
    Text(String),
    /// Call number `index` (from 0) of the tool `name` begins.
    Start { index: usize, name: String },
    /// More of call `index`'s arguments (JSON text).
    Arguments { index: usize, fragment: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Nothing read yet.
    Undecided,
    /// Prose to the end.
    Prose,
    /// Matching a fixed text: `CALL_OPEN`, `CALL_ARGS`, `CALL_CLOSE` or `CALL_SEP`, `at` chars in.
    Fixed { text: &'static str, at: usize },
    /// The tool's name.
    Name(String),
    /// The arguments' JSON: nesting depth, inside a string, after a backslash.
    Arguments {
        depth: usize,
        in_string: bool,
        escaped: bool,
    },
    /// Text the form does not expect (a cut answer): ignored.
    Off,
}

/// Reads one turn's text into [`CallEvent`]s.
#[derive(Debug)]
pub(crate) struct CallReader {
    calls_possible: bool,
    state: State,
    calls: usize,
    events: VecDeque<CallEvent>,
}

impl CallReader {
    /// A reader; without `calls_possible` everything is prose.
    pub(crate) fn new(calls_possible: bool) -> Self {
        CallReader {
            calls_possible,
            state: State::Undecided,
            calls: 0,
            events: VecDeque::new(),
        }
    }

    /// Whether the turn is tool calls (known from the first character on).
    pub(crate) fn has_calls(&self) -> bool {
        self.calls > 0 || !matches!(self.state, State::Undecided | State::Prose)
    }

    /// Reads more of the model's text.
    pub(crate) fn write(&mut self, text: &str) {
        let mut prose = String::new();
        let mut args = String::new();
        for c in text.chars() {
            if self.state == State::Undecided {
                self.state = if self.calls_possible && c == '<' {
                    State::Fixed {
                        text: CALL_OPEN,
                        at: 0,
                    }
                } else {
                    State::Prose
                };
            }
            match &mut self.state {
                State::Undecided | State::Off => {}
                State::Prose => prose.push(c),
                State::Fixed { text, at } => {
                    let want = text[*at..].chars().next();
                    if want != Some(c) {
                        self.state = State::Off;
                        continue;
                    }
                    *at += c.len_utf8();
                    if *at == text.len() {
                        self.state = match *text {
                            CALL_OPEN => State::Name(String::new()),
                            CALL_ARGS => State::Arguments {
                                depth: 0,
                                in_string: false,
                                escaped: false,
                            },
                            CALL_CLOSE => State::Fixed {
                                text: CALL_SEP,
                                at: 0,
                            },
                            _ => State::Fixed {
                                text: CALL_OPEN,
                                at: 0,
                            },
                        };
                    }
                }
                State::Name(name) => {
                    if c == '"' {
                        let name = std::mem::take(name);
                        self.events.push_back(CallEvent::Start {
                            index: self.calls,
                            name,
                        });
                        self.calls += 1;
                        // The quote that ends the name opens `CALL_ARGS`.
                        self.state = State::Fixed {
                            text: CALL_ARGS,
                            at: 1,
                        };
                    } else {
                        name.push(c);
                    }
                }
                State::Arguments {
                    depth,
                    in_string,
                    escaped,
                } => {
                    args.push(c);
                    if *in_string {
                        match (*escaped, c) {
                            (true, _) => *escaped = false,
                            (false, '\\') => *escaped = true,
                            (false, '"') => *in_string = false,
                            _ => {}
                        }
                        continue;
                    }
                    match c {
                        '"' => *in_string = true,
                        '{' | '[' => *depth += 1,
                        '}' | ']' => *depth = depth.saturating_sub(1),
                        _ => {}
                    }
                    if *depth == 0 && matches!(c, '}' | ']') {
                        self.flush_args(&mut args);
                        self.state = State::Fixed {
                            text: CALL_CLOSE,
                            at: 0,
                        };
                    }
                }
            }
        }
        if !prose.is_empty() {
            self.events.push_back(CallEvent::Text(prose));
        }
        self.flush_args(&mut args);
    }

    fn flush_args(&mut self, args: &mut String) {
        if !args.is_empty() {
            self.events.push_back(CallEvent::Arguments {
                index: self.calls.saturating_sub(1),
                fragment: std::mem::take(args),
            });
        }
    }

    /// The next event, if any.
    pub(crate) fn poll_event(&mut self) -> Option<CallEvent> {
        self.events.pop_front()
    }
}

/// The calls of a whole turn: (name, arguments) each, or the prose when it is no call.
pub(crate) fn read_whole(
    text: &str,
    calls_possible: bool,
) -> Result<Vec<(String, String)>, String> {
    let mut r = CallReader::new(calls_possible);
    r.write(text);
    if !r.has_calls() {
        return Err(text.to_owned());
    }
    let mut calls: Vec<(String, String)> = Vec::new();
    while let Some(e) = r.poll_event() {
        match e {
            CallEvent::Start { name, .. } => calls.push((name, String::new())),
            CallEvent::Arguments { index, fragment } => {
                if let Some(c) = calls.get_mut(index) {
                    c.1.push_str(&fragment);
                }
            }
            CallEvent::Text(_) => {}
        }
    }
    Ok(calls)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::call_text;

    fn events(text: &str, chunk: usize) -> Vec<CallEvent> {
        let mut r = CallReader::new(true);
        let chars: Vec<char> = text.chars().collect();
        let mut out = Vec::new();
        for part in chars.chunks(chunk) {
            r.write(&part.iter().collect::<String>());
            while let Some(e) = r.poll_event() {
                out.push(e);
            }
        }
        out
    }

    /// Arguments fragments joined per call, whatever the chunking.
    fn joined(evs: &[CallEvent]) -> Vec<(String, String)> {
        let mut calls: Vec<(String, String)> = Vec::new();
        for e in evs {
            match e {
                CallEvent::Start { index, name } => {
                    assert_eq!(*index, calls.len());
                    calls.push((name.clone(), String::new()));
                }
                CallEvent::Arguments { index, fragment } => calls[*index].1.push_str(fragment),
                CallEvent::Text(t) => panic!("prose {t:?}"),
            }
        }
        calls
    }

    #[test]
    fn calls_are_read_under_every_chunking() {
        let a = r#"{"query": "a } \" { ] rabbit", "k": [1, {"x": []}]}"#;
        let text = format!(
            "{}{CALL_SEP}{}",
            call_text("search_books", a),
            call_text("w", "{}")
        );
        for chunk in [1, 2, 3, 7, 1000] {
            let evs = events(&text, chunk);
            assert_eq!(
                joined(&evs),
                [
                    ("search_books".to_owned(), a.to_owned()),
                    ("w".to_owned(), "{}".to_owned())
                ],
                "chunk {chunk}"
            );
        }
        assert_eq!(read_whole(&text, true).unwrap().len(), 2);
    }

    #[test]
    fn prose_is_prose() {
        assert_eq!(
            events("The Rabbit <b>", 3)
                .iter()
                .map(|e| match e {
                    CallEvent::Text(t) => t.as_str(),
                    _ => panic!(),
                })
                .collect::<String>(),
            "The Rabbit <b>"
        );
        assert_eq!(
            read_whole("<tool_call>", false),
            Err("<tool_call>".to_owned())
        );
    }
}
