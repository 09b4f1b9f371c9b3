//! OpenAI function tools in a chat request: `tools`, `tool_choice`, `parallel_tool_calls`
//! parsed into [`Tools`]; the text a tool call is written as; the grammar of a turn that may
//! (or must) call them. Pure (no I/O).
//!
//! The model writes a call as
//!
//! ```text
//! <tool_call>
//! {"name": "search_books", "arguments": {"query": "White Rabbit"}}
//! </tool_call>
//! ```
//!
//! (several calls are separated by one line break), the form Hermes-style chat models are
//! trained on; the grammar admits only tool names from the request and arguments valid against
//! that tool's JSON schema ([`crate::schema_grammar`]).

use serde_json::{json, Value};

use crate::error::GenerateError;
use crate::gbnf::{Expr, Grammar};
use crate::schema_grammar::SchemaCompiler;

/// The most tool calls one turn may hold when `parallel_tool_calls` is on.
pub const MAX_PARALLEL_CALLS: usize = 4;

/// What opens a call, up to the tool's name.
pub(crate) const CALL_OPEN: &str = "<tool_call>\n{\"name\": \"";
/// Between the name and the arguments.
pub(crate) const CALL_ARGS: &str = "\", \"arguments\": ";
/// What closes a call, after the arguments.
pub(crate) const CALL_CLOSE: &str = "}\n</tool_call>";
/// Between two calls.
pub(crate) const CALL_SEP: &str = "\n";

/// One function tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// `function.name` (`[A-Za-z0-9_-]`, 1 to 64 characters).
    pub name: String,
    /// `function.description`, or empty.
    pub description: String,
    /// `function.parameters`, or `{"type": "object", "properties": {}}`.
    pub parameters: Value,
}

/// `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// `"none"`: answer in prose.
    None,
    /// `"auto"` (the default with tools): a call or an answer.
    Auto,
    /// `"required"`: at least one call.
    Required,
    /// `{"type": "function", "function": {"name": …}}`: a call of this tool.
    Named(String),
}

/// The tools of a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Tools {
    /// The tools, in the request's order.
    pub tools: Vec<Tool>,
    /// `tool_choice`.
    pub choice: ToolChoice,
    /// `parallel_tool_calls` (default true): up to [`MAX_PARALLEL_CALLS`] calls in a turn.
    pub parallel: bool,
    /// Each tool's arguments grammar, compiled once at parse time: (rule name, rules).
    grammar: Grammar,
    arg_rules: Vec<String>,
}

fn invalid(message: impl Into<String>) -> GenerateError {
    GenerateError::Invalid {
        message: message.into(),
    }
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Tools {
    /// Reads `tools`, `tool_choice` and `parallel_tool_calls`; `None` without tools (a
    /// `tool_choice` of `none` or `auto` is then allowed, as OpenAI allows it).
    ///
    /// # Errors
    /// [`GenerateError::Invalid`] naming a malformed field; [`GenerateError::Schema`] for a
    /// schema the grammar cannot honour (keyword and path).
    pub fn parse(body: &Value) -> Result<Option<Tools>, GenerateError> {
        let list = match body.get("tools") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(other) => return Err(invalid(format!("tools must be an array, not {other}"))),
        };
        let choice = match body.get("tool_choice") {
            None | Some(Value::Null) => {
                if list.is_empty() {
                    ToolChoice::None
                } else {
                    ToolChoice::Auto
                }
            }
            Some(Value::String(s)) => match s.as_str() {
                "none" => ToolChoice::None,
                "auto" => ToolChoice::Auto,
                "required" => ToolChoice::Required,
                other => {
                    return Err(invalid(format!(
                        "tool_choice {other:?} is not none, auto, required or a function"
                    )))
                }
            },
            Some(v @ Value::Object(_)) => {
                match v.pointer("/function/name").and_then(Value::as_str) {
                    Some(name) if v.get("type").and_then(Value::as_str) == Some("function") => {
                        ToolChoice::Named(name.to_owned())
                    }
                    _ => return Err(invalid(
                        "tool_choice must be {\"type\": \"function\", \"function\": {\"name\": …}}",
                    )),
                }
            }
            Some(other) => return Err(invalid(format!("tool_choice {other} is not valid"))),
        };
        let parallel = match body.get("parallel_tool_calls") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(invalid(format!(
                    "parallel_tool_calls must be a boolean, not {other}"
                )))
            }
        };
        if list.is_empty() {
            return match choice {
                ToolChoice::None | ToolChoice::Auto => Ok(None),
                _ => Err(invalid(
                    "tool_choice asks for a tool call but tools is empty",
                )),
            };
        }
        let mut tools = Vec::new();
        let mut grammar = Grammar::default();
        let mut arg_rules = Vec::new();
        for (i, t) in list.iter().enumerate() {
            let at = format!("tools[{i}]");
            if t.get("type").and_then(Value::as_str) != Some("function") {
                return Err(invalid(format!("{at}.type must be \"function\"")));
            }
            let f = t
                .get("function")
                .filter(|f| f.is_object())
                .ok_or_else(|| invalid(format!("{at}.function must be an object")))?;
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| valid_name(n))
                .ok_or_else(|| {
                    invalid(format!(
                        "{at}.function.name must be 1 to 64 of a-z, A-Z, 0-9, _ and -"
                    ))
                })?;
            if tools.iter().any(|t: &Tool| t.name == name) {
                return Err(invalid(format!("{at}.function.name {name:?} is repeated")));
            }
            let parameters = match f.get("parameters") {
                None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
                Some(p) => p.clone(),
            };
            let path = format!("{at}.function.parameters");
            if !matches!(parameters.get("type"), None | Some(Value::String(_)))
                || parameters.get("type").is_some_and(|t| t != "object")
                || !parameters.is_object()
            {
                return Err(invalid(format!("{path} must be an object schema")));
            }
            let rule =
                SchemaCompiler::new(&mut grammar, &format!("t{i}")).compile(&parameters, &path)?;
            arg_rules.push(rule);
            tools.push(Tool {
                name: name.to_owned(),
                description: f
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                parameters,
            });
        }
        if let ToolChoice::Named(n) = &choice {
            if !tools.iter().any(|t| &t.name == n) {
                return Err(invalid(format!(
                    "tool_choice names {n:?}, which is not in tools"
                )));
            }
        }
        Ok(Some(Tools {
            tools,
            choice,
            parallel,
            grammar,
            arg_rules,
        }))
    }

    /// The index of the tool `name`.
    pub(crate) fn index(&self, name: &str) -> Option<usize> {
        self.tools.iter().position(|t| t.name == name)
    }

    /// What the model is told about the tools (added to the system message).
    pub(crate) fn prompt(&self) -> String {
        let mut out = String::from("You may call these tools:\n<tools>\n");
        for t in &self.tools {
            out.push_str(
                &json!({"name": t.name, "description": t.description, "parameters": t.parameters})
                    .to_string(),
            );
            out.push('\n');
        }
        out.push_str("</tools>\nTo call a tool, write:\n");
        out.push_str(&call_text("NAME", "{ARGUMENTS}"));
        out
    }

    /// The GBNF grammar of a turn: `calls` lists the tools that may be called. With
    /// `sequence`, exactly one call of each, in that order; else one call of any of them, or
    /// up to [`MAX_PARALLEL_CALLS`] when `parallel`. With `answer`, prose (not starting with
    /// `<`) is allowed instead of calls.
    ///
    /// `string_cap` caps the arguments' strings (see
    /// [`SchemaCompiler::with_string_cap`]); the schemas are then compiled again with it.
    pub(crate) fn grammar(
        &self,
        calls: &[usize],
        sequence: bool,
        answer: bool,
        string_cap: Option<usize>,
    ) -> String {
        let mut g = self.grammar.clone();
        let mut arg_rules = self.arg_rules.clone();
        if string_cap.is_some() {
            let mut capped = Grammar::default();
            for &i in calls {
                // The schema compiled once already at parse time: it compiles again.
                if let Ok(rule) = SchemaCompiler::new(&mut capped, &format!("c{i}"))
                    .with_string_cap(string_cap)
                    .compile(&self.tools[i].parameters, "")
                {
                    arg_rules[i] = rule;
                }
            }
            g = capped;
        }
        let call = |i: usize| {
            Expr::Seq(vec![
                Expr::lit(format!("{CALL_OPEN}{}{CALL_ARGS}", self.tools[i].name)),
                Expr::rule(arg_rules[i].clone()),
                Expr::lit(CALL_CLOSE),
            ])
        };
        let block = if sequence {
            let mut items = Vec::new();
            for (k, &i) in calls.iter().enumerate() {
                if k > 0 {
                    items.push(Expr::lit(CALL_SEP));
                }
                items.push(call(i));
            }
            Expr::Seq(items)
        } else {
            g.define("call", Expr::Alt(calls.iter().map(|&i| call(i)).collect()));
            if self.parallel {
                Expr::Seq(vec![
                    Expr::rule("call"),
                    Expr::Seq(vec![Expr::lit(CALL_SEP), Expr::rule("call")])
                        .repeat(0, Some(MAX_PARALLEL_CALLS - 1)),
                ])
            } else {
                Expr::rule("call")
            }
        };
        let root = if answer {
            let prose = Expr::Seq(vec![
                Expr::Class {
                    negated: true,
                    ranges: vec![('<', '<'), ('\u{0}', '\u{0}')],
                },
                Expr::Class {
                    negated: true,
                    ranges: vec![('\u{0}', '\u{0}')],
                }
                .repeat(0, None),
            ]);
            Expr::Alt(vec![block, prose])
        } else {
            block
        };
        g.define("root", root);
        g.render()
    }
}

/// The text of one call, as the model writes it (and as earlier calls are shown to it).
pub(crate) fn call_text(name: &str, arguments: &str) -> String {
    format!("{CALL_OPEN}{name}{CALL_ARGS}{arguments}{CALL_CLOSE}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(extra: Value) -> Value {
        let mut b = json!({"messages": [{"role": "user", "content": "x"}], "tools": [
            {"type": "function", "function": {"name": "search_books", "description": "Search the books",
              "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
            {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
              "properties": {"unit": {"enum": ["c", "f"]}}, "required": ["unit"]}}}
        ]});
        if let (Some(b), Some(e)) = (b.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        b
    }

    #[test]
    fn tool_choice_forms_are_read() {
        let t = Tools::parse(&body(json!({}))).unwrap().unwrap();
        assert_eq!((t.choice.clone(), t.parallel), (ToolChoice::Auto, true));
        for (choice, want) in [
            (json!("none"), ToolChoice::None),
            (json!("required"), ToolChoice::Required),
            (
                json!({"type": "function", "function": {"name": "get_weather"}}),
                ToolChoice::Named("get_weather".into()),
            ),
        ] {
            let t = Tools::parse(&body(
                json!({"tool_choice": choice, "parallel_tool_calls": false}),
            ))
            .unwrap()
            .unwrap();
            assert_eq!(t.choice, want);
            assert!(!t.parallel);
        }
        assert_eq!(Tools::parse(&json!({"messages": []})).unwrap(), None);
    }

    #[test]
    fn bad_tools_are_named() {
        for (extra, needle) in [
            (json!({"tool_choice": "sometimes"}), "tool_choice \"sometimes\""),
            (json!({"tool_choice": {"type": "function", "function": {"name": "nope"}}}), "\"nope\""),
            (json!({"parallel_tool_calls": "yes"}), "parallel_tool_calls"),
            (json!({"tools": [{"type": "function", "function": {"name": "a b"}}]}), "tools[0].function.name"),
            (json!({"tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object", "properties": {"q": {"type": "string", "pattern": "x"}}}}}]}),
             "unsupported JSON schema feature pattern at tools[0].function.parameters.properties.q"),
        ] {
            let e = Tools::parse(&body(extra)).unwrap_err();
            assert!(e.to_string().contains(needle), "{e}");
            assert!(e.is_client_error());
        }
    }

    #[test]
    fn a_string_cap_bounds_unbounded_strings() {
        let t = Tools::parse(&body(json!({}))).unwrap().unwrap();
        assert!(!t.grammar(&[0], true, false, None).contains("{0,64}"));
        let g = t.grammar(&[0], true, false, Some(64));
        assert!(g.contains("(string-char){0,64}"), "{g}");
    }

    #[test]
    fn a_turn_grammar_holds_calls_and_prose() {
        let t = Tools::parse(&body(json!({"parallel_tool_calls": false})))
            .unwrap()
            .unwrap();
        let g = t.grammar(&[0, 1], false, true, None);
        assert!(g.starts_with("root ::= (call | ("), "{g}");
        assert!(g.contains("call ::= ((\"<tool_call>\\n{\\\"name\\\": \\\"search_books\\\", \\\"arguments\\\": \" t0-root"), "{g}");
        let g = t.grammar(&[0, 1], true, false, None);
        assert!(g.starts_with("root ::= ((\"<tool_call>"), "{g}");
    }
}
