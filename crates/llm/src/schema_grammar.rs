//! JSON Schema → GBNF: the grammar of the JSON values a tool's `parameters` schema accepts,
//! so that the model's arguments are valid by construction. Pure (no I/O).
//!
//! Supported: `type` (one or a list: `string`, `number`, `integer`, `boolean`, `null`,
//! `object`, `array`), `enum`, `const`, `properties`, `required`, `additionalProperties`
//! (the grammar writes only the listed properties, which every value of it accepts), `items`,
//! `minItems`/`maxItems`, `minLength`/`maxLength`, `anyOf`, `$ref` to a local
//! `#/$defs/…` or `#/definitions/…` (not in a cycle), and the annotations (`title`,
//! `description`, `default`, `examples`, …). Anything else (`pattern`, `format`,
//! `patternProperties`, `oneOf`, `allOf`, `minimum`, …) is a [`SchemaError`] naming the keyword
//! and its JSON path: a grammar that ignored it could write arguments the schema rejects.
//!
//! Values are written compactly with one space after `:` and `,` (`{"query": "rabbit",
//! "k": 3}`), properties in key order (serde_json's map sorts them), required ones always, optional ones or not.
//! Strings hold no control character and no `\u` escape (so one character is one code point,
//! as `minLength`/`maxLength` count); numbers have at most 15 integer digits, 15 fraction
//! digits and a two-digit exponent (so every number parses as a finite `f64`).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::error::SchemaError;
use crate::gbnf::{Expr, Grammar};

/// The largest `maxLength`, `minLength`, `maxItems` or `minItems` the grammar spells out
/// (llama.cpp expands a bounded repeat into one rule per step).
pub const MAX_SCHEMA_BOUND: u64 = 1024;

/// Keywords that only annotate.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$schema",
    "$id",
    "$comment",
    "$defs",
    "definitions",
    "deprecated",
    "readOnly",
    "writeOnly",
    "strict",
];

/// Keywords the compiler reads.
const HANDLED: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "anyOf",
    "$ref",
];

/// Compiles schemas into one [`Grammar`]; each [`SchemaCompiler::compile`] returns the name of
/// the rule for one schema.
pub(crate) struct SchemaCompiler<'g> {
    grammar: &'g mut Grammar,
    prefix: String,
    next: usize,
    /// `$ref` pointer → its rule, once compiled.
    refs: HashMap<String, String>,
    /// `$ref` pointers being compiled (a cycle if met again).
    open: HashSet<String>,
    /// The most characters a string may have when its schema sets no smaller `maxLength`.
    string_cap: Option<usize>,
}

fn unsupported(feature: impl Into<String>, path: &str) -> SchemaError {
    SchemaError::Unsupported {
        feature: feature.into(),
        path: path.to_owned(),
    }
}

fn invalid(message: impl Into<String>, path: &str) -> SchemaError {
    SchemaError::Invalid {
        message: message.into(),
        path: path.to_owned(),
    }
}

fn class(negated: bool, ranges: &[(char, char)]) -> Expr {
    Expr::Class {
        negated,
        ranges: ranges.to_vec(),
    }
}

fn bound(schema: &Value, key: &str, path: &str) -> Result<Option<usize>, SchemaError> {
    match schema.get(key) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n <= MAX_SCHEMA_BOUND => Ok(Some(n as usize)),
            Some(n) => Err(unsupported(
                format!("{key} {n} (the grammar spells out at most {MAX_SCHEMA_BOUND})"),
                path,
            )),
            None => Err(invalid(
                format!("{key} must be a non-negative integer, not {v}"),
                path,
            )),
        },
    }
}

fn json_literal(v: &Value) -> Expr {
    // Compact JSON; the value parses back equal, which is what `enum`/`const` compare.
    Expr::lit(v.to_string())
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_admits(types: &[&str], v: &Value) -> bool {
    let t = type_of(v);
    types.iter().any(|&want| {
        want == t
            || (want == "number" && t == "integer")
            || (want == "integer" && v.as_f64().is_some_and(|f| f.fract() == 0.0))
    })
}

impl<'g> SchemaCompiler<'g> {
    /// A compiler adding rules named `PREFIX-…` to `grammar`.
    pub(crate) fn new(grammar: &'g mut Grammar, prefix: &str) -> Self {
        SchemaCompiler {
            grammar,
            prefix: prefix.to_owned(),
            next: 0,
            refs: HashMap::new(),
            open: HashSet::new(),
            string_cap: None,
        }
    }

    /// Caps every string at `cap` characters (or its `minLength`, if larger): the grammar then
    /// admits fewer values, all still valid. The agent policy's search call uses it so that a
    /// small model cannot write a query until `max_tokens`.
    pub(crate) fn with_string_cap(mut self, cap: Option<usize>) -> Self {
        self.string_cap = cap;
        self
    }

    fn fresh(&mut self, hint: &str) -> String {
        self.next += 1;
        format!("{}-{hint}{}", self.prefix, self.next)
    }

    /// Compiles `schema` (the root of its `$ref`s) into a rule and returns its name.
    ///
    /// # Errors
    /// [`SchemaError`] naming an unsupported keyword or a malformed value, with its path
    /// (`path` is the schema's own, e.g. `tools[0].function.parameters`).
    pub(crate) fn compile(&mut self, schema: &Value, path: &str) -> Result<String, SchemaError> {
        let expr = self.schema(schema, schema, path)?;
        let name = self.fresh("root");
        self.grammar.define(&name, expr);
        Ok(name)
    }

    fn schema(&mut self, root: &Value, s: &Value, path: &str) -> Result<Expr, SchemaError> {
        let obj = match s {
            Value::Bool(true) => return Ok(self.any_value()),
            Value::Bool(false) => return Err(unsupported("the schema false", path)),
            Value::Object(o) => o,
            other => {
                return Err(invalid(
                    format!("a schema must be an object, not {other}"),
                    path,
                ))
            }
        };
        if let Some(key) = obj
            .keys()
            .find(|k| !ANNOTATIONS.contains(&k.as_str()) && !HANDLED.contains(&k.as_str()))
        {
            return Err(unsupported(key.clone(), path));
        }
        if let Some(r) = obj.get("$ref") {
            if let Some(other) = obj
                .keys()
                .find(|k| k.as_str() != "$ref" && !ANNOTATIONS.contains(&k.as_str()))
            {
                return Err(unsupported(format!("$ref beside {other}"), path));
            }
            return self.reference(root, r, path);
        }
        if let Some(any) = obj.get("anyOf") {
            if let Some(other) = obj
                .keys()
                .find(|k| k.as_str() != "anyOf" && !ANNOTATIONS.contains(&k.as_str()))
            {
                return Err(unsupported(format!("anyOf beside {other}"), path));
            }
            let Some(items) = any.as_array().filter(|a| !a.is_empty()) else {
                return Err(invalid("anyOf must be a non-empty array", path));
            };
            let alts = items
                .iter()
                .enumerate()
                .map(|(i, sub)| self.schema(root, sub, &format!("{path}.anyOf[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Expr::Alt(alts));
        }
        let types: Vec<&str> = match obj.get("type") {
            None => Vec::new(),
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts
                .iter()
                .map(|t| {
                    t.as_str()
                        .ok_or_else(|| invalid(format!("type must name types, not {t}"), path))
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(invalid(format!("type must be a string, not {other}"), path))
            }
        };
        let values = match (obj.get("enum"), obj.get("const")) {
            (Some(_), Some(_)) => return Err(unsupported("enum beside const", path)),
            (Some(Value::Array(vs)), None) => Some(vs.clone()),
            (Some(other), None) => {
                return Err(invalid(format!("enum must be an array, not {other}"), path))
            }
            (None, Some(c)) => Some(vec![c.clone()]),
            (None, None) => None,
        };
        if let Some(values) = values {
            // Values must also pass the other keywords; only `type` is checked here, so the
            // rest must be absent.
            if let Some(other) = obj.keys().find(|k| {
                !["enum", "const", "type"].contains(&k.as_str())
                    && !ANNOTATIONS.contains(&k.as_str())
            }) {
                return Err(unsupported(format!("enum or const beside {other}"), path));
            }
            let alts: Vec<Expr> = values
                .iter()
                .filter(|v| types.is_empty() || type_admits(&types, v))
                .map(json_literal)
                .collect();
            if alts.is_empty() {
                return Err(invalid("enum has no value of the schema's type", path));
            }
            return Ok(Expr::Alt(alts));
        }
        let types = if types.is_empty() {
            if obj.contains_key("properties") || obj.contains_key("required") {
                vec!["object"]
            } else if obj.contains_key("items") {
                vec!["array"]
            } else {
                return Ok(self.any_value());
            }
        } else {
            types
        };
        let mut alts = Vec::new();
        for t in types {
            alts.push(match t {
                "string" => self.string(s, path)?,
                "integer" => self.shared("integer"),
                "number" => self.shared("number"),
                "boolean" => Expr::Alt(vec![Expr::lit("true"), Expr::lit("false")]),
                "null" => Expr::lit("null"),
                "object" => self.object(root, s, path)?,
                "array" => self.array(root, s, path)?,
                other => return Err(invalid(format!("unknown type {other:?}"), path)),
            });
        }
        Ok(if alts.len() == 1 {
            alts.remove(0)
        } else {
            Expr::Alt(alts)
        })
    }

    fn reference(&mut self, root: &Value, r: &Value, path: &str) -> Result<Expr, SchemaError> {
        let Some(pointer) = r.as_str() else {
            return Err(invalid(format!("$ref must be a string, not {r}"), path));
        };
        if let Some(name) = self.refs.get(pointer) {
            return Ok(Expr::rule(name.clone()));
        }
        let Some(target) = pointer
            .strip_prefix('#')
            .filter(|p| p.starts_with("/$defs/") || p.starts_with("/definitions/"))
            .and_then(|p| root.pointer(p))
        else {
            return Err(unsupported(
                format!("$ref {pointer:?} (only local #/$defs/… or #/definitions/…)"),
                path,
            ));
        };
        if !self.open.insert(pointer.to_owned()) {
            return Err(unsupported(format!("$ref cycle through {pointer:?}"), path));
        }
        let expr = self.schema(root, target, &format!("{path}.$ref({pointer})"))?;
        self.open.remove(pointer);
        let name = self.fresh("ref");
        self.grammar.define(&name, expr);
        self.refs.insert(pointer.to_owned(), name.clone());
        Ok(Expr::rule(name))
    }

    /// `integer`, `number`, `string-char` and `value`: defined once, shared by every schema.
    fn shared(&mut self, name: &str) -> Expr {
        if self.grammar.has(name) {
            return Expr::rule(name);
        }
        let digit = || class(false, &[('0', '9')]);
        let integer = || {
            Expr::Seq(vec![
                Expr::lit("-").optional(),
                Expr::Alt(vec![
                    Expr::lit("0"),
                    Expr::Seq(vec![
                        class(false, &[('1', '9')]),
                        digit().repeat(0, Some(14)),
                    ]),
                ]),
            ])
        };
        let expr = match name {
            "integer" => integer(),
            "number" => Expr::Seq(vec![
                integer(),
                Expr::Seq(vec![Expr::lit("."), digit().repeat(1, Some(15))]).optional(),
                Expr::Seq(vec![
                    class(false, &[('e', 'e'), ('E', 'E')]),
                    class(false, &[('-', '-'), ('+', '+')]).optional(),
                    digit().repeat(1, Some(2)),
                ])
                .optional(),
            ]),
            "string-char" => Expr::Alt(vec![
                class(true, &[('"', '"'), ('\\', '\\'), ('\u{0}', '\u{1f}')]),
                Expr::Seq(vec![
                    Expr::lit("\\"),
                    class(
                        false,
                        &[
                            ('"', '"'),
                            ('\\', '\\'),
                            ('/', '/'),
                            ('n', 'n'),
                            ('t', 't'),
                            ('r', 'r'),
                        ],
                    ),
                ]),
            ]),
            _ => {
                // Any JSON value; the first ways are the shortest (the sampler's way out).
                self.grammar.define("value", Expr::lit("null"));
                let string = Expr::Seq(vec![
                    Expr::lit("\""),
                    self.shared("string-char").repeat(0, None),
                    Expr::lit("\""),
                ]);
                let number = self.shared("number");
                let items = |e: Expr| {
                    Expr::Seq(vec![
                        e.clone(),
                        Expr::Seq(vec![Expr::lit(", "), e]).repeat(0, None),
                    ])
                    .optional()
                };
                let member = Expr::Seq(vec![string.clone(), Expr::lit(": "), Expr::rule("value")]);
                Expr::Alt(vec![
                    Expr::lit("null"),
                    Expr::lit("true"),
                    Expr::lit("false"),
                    number,
                    string,
                    Expr::Seq(vec![
                        Expr::lit("["),
                        items(Expr::rule("value")),
                        Expr::lit("]"),
                    ]),
                    Expr::Seq(vec![Expr::lit("{"), items(member), Expr::lit("}")]),
                ])
            }
        };
        self.grammar.define(name, expr);
        Expr::rule(name)
    }

    fn any_value(&mut self) -> Expr {
        self.shared("value")
    }

    fn string(&mut self, s: &Value, path: &str) -> Result<Expr, SchemaError> {
        let min = bound(s, "minLength", path)?.unwrap_or(0);
        let max = bound(s, "maxLength", path)?;
        if max.is_some_and(|m| m < min) {
            return Err(invalid("minLength is greater than maxLength", path));
        }
        let max = match (max, self.string_cap) {
            (Some(m), Some(cap)) => Some(m.min(cap.max(min))),
            (None, Some(cap)) => Some(cap.max(min)),
            (m, None) => m,
        };
        Ok(Expr::Seq(vec![
            Expr::lit("\""),
            self.shared("string-char").repeat(min, max),
            Expr::lit("\""),
        ]))
    }

    fn array(&mut self, root: &Value, s: &Value, path: &str) -> Result<Expr, SchemaError> {
        let min = bound(s, "minItems", path)?.unwrap_or(0);
        let max = bound(s, "maxItems", path)?;
        if max.is_some_and(|m| m < min) {
            return Err(invalid("minItems is greater than maxItems", path));
        }
        let item = match s.get("items") {
            None => self.any_value(),
            Some(Value::Array(_)) => return Err(unsupported("items as an array", path)),
            Some(sub) => {
                let expr = self.schema(root, sub, &format!("{path}.items"))?;
                let name = self.fresh("item");
                self.grammar.define(&name, expr);
                Expr::rule(name)
            }
        };
        if max == Some(0) {
            return Ok(Expr::lit("[]"));
        }
        let rest = Expr::Seq(vec![Expr::lit(", "), item.clone()])
            .repeat(min.saturating_sub(1), max.map(|m| m - 1));
        let body = Expr::Seq(vec![item, rest]);
        Ok(Expr::Seq(vec![
            Expr::lit("["),
            if min == 0 { body.optional() } else { body },
            Expr::lit("]"),
        ]))
    }

    fn object(&mut self, root: &Value, s: &Value, path: &str) -> Result<Expr, SchemaError> {
        let props = match s.get("properties") {
            None => serde_json::Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(other) => {
                return Err(invalid(
                    format!("properties must be an object, not {other}"),
                    path,
                ))
            }
        };
        let required: Vec<&str> = match s.get("required") {
            None => Vec::new(),
            Some(Value::Array(r)) => r
                .iter()
                .map(|n| {
                    n.as_str().ok_or_else(|| {
                        invalid(format!("required must name properties, not {n}"), path)
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(invalid(
                    format!("required must be an array, not {other}"),
                    path,
                ))
            }
        };
        if let Some(missing) = required.iter().find(|r| !props.contains_key(**r)) {
            return Err(unsupported(
                format!("required property {missing:?} that properties does not define"),
                path,
            ));
        }
        match s.get("additionalProperties") {
            None | Some(Value::Bool(_) | Value::Object(_)) => {}
            Some(other) => {
                return Err(invalid(
                    format!("additionalProperties must be a boolean or a schema, not {other}"),
                    path,
                ))
            }
        }
        // Properties in order, each `key: value`.
        let mut members = Vec::new();
        for (key, sub) in &props {
            let expr = self.schema(root, sub, &format!("{path}.properties.{key}"))?;
            let member = Expr::Seq(vec![
                Expr::lit(format!("{}: ", Value::from(key.as_str()))),
                expr,
            ]);
            members.push((member, required.contains(&key.as_str())));
        }
        // `first(i)`: members i.. when none was written yet; `after(i)`: after one was, so each
        // comes with ", " first. Optional members may be left out.
        let base = self.fresh("obj");
        let first = |i: usize| format!("{base}-f{i}");
        let after = |i: usize| format!("{base}-a{i}");
        let n = members.len();
        self.grammar.define(&first(n), Expr::Seq(vec![]));
        self.grammar.define(&after(n), Expr::Seq(vec![]));
        for (i, (member, req)) in members.into_iter().enumerate().rev() {
            let take_first = Expr::Seq(vec![member.clone(), Expr::rule(after(i + 1))]);
            let take_after = Expr::Seq(vec![Expr::lit(", "), member, Expr::rule(after(i + 1))]);
            if req {
                self.grammar.define(&first(i), take_first);
                self.grammar.define(&after(i), take_after);
            } else {
                self.grammar.define(
                    &first(i),
                    Expr::Alt(vec![take_first, Expr::rule(first(i + 1))]),
                );
                self.grammar.define(
                    &after(i),
                    Expr::Alt(vec![take_after, Expr::rule(after(i + 1))]),
                );
            }
        }
        Ok(Expr::Seq(vec![
            Expr::lit("{"),
            Expr::rule(first(0)),
            Expr::lit("}"),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::gbnf::sample::{sample, Rng};

    fn compiled(schema: &Value) -> (Grammar, String) {
        let mut g = Grammar::default();
        let name = SchemaCompiler::new(&mut g, "t")
            .compile(schema, "schema")
            .unwrap();
        (g, name)
    }

    /// Every sampled string parses as JSON that the `jsonschema` crate finds valid.
    fn assert_admits_only_valid(schema: &Value, seed: u64, n: usize) {
        let (g, name) = compiled(schema);
        let validator = jsonschema::validator_for(schema).unwrap();
        let mut rng = Rng(seed | 1);
        for _ in 0..n {
            let text = sample(&g, &name, &mut rng);
            let value: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{text:?} is not JSON ({e}); grammar:\n{}", g.render()));
            if let Err(e) = validator.validate(&value) {
                panic!(
                    "{text} is invalid against {schema}: {e}\ngrammar:\n{}",
                    g.render()
                );
            }
        }
    }

    fn schemas() -> Vec<Value> {
        vec![
            json!({"type": "object", "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 40}}, "required": ["query"]}),
            json!({"type": "object", "properties": {
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
                "ratio": {"type": "number"},
                "ok": {"type": "boolean"},
                "note": {"type": ["string", "null"]}
            }, "required": ["unit"], "additionalProperties": false}),
            json!({"type": "object", "properties": {
                "filter": {"type": "object", "properties": {
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 3},
                    "range": {"type": "object", "properties": {"from": {"type": "integer"}, "to": {"type": "integer"}}, "required": ["to"]}
                }, "required": ["tags", "range"]},
                "any": {},
                "c": {"const": {"a": [1, "x"]}}
            }, "required": ["filter"]}),
            json!({"$defs": {"P": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
                   "type": "object", "properties": {"p": {"$ref": "#/$defs/P"}, "ps": {"type": "array", "items": {"$ref": "#/$defs/P"}}, "e": {"anyOf": [{"type": "integer"}, {"enum": ["a", null]}]}}}),
        ]
    }

    #[test]
    fn every_admitted_string_is_valid_json_for_the_schema() {
        for (i, s) in schemas().iter().enumerate() {
            assert_admits_only_valid(s, 7 + i as u64, 300);
        }
    }

    #[test]
    fn an_object_writes_required_members_in_order() {
        let (g, name) = compiled(
            &json!({"type": "object", "properties": {"a": {"const": 1}, "b": {"const": 2}}, "required": ["b"]}),
        );
        let mut seen = HashSet::new();
        let mut rng = Rng(3);
        for _ in 0..64 {
            seen.insert(sample(&g, &name, &mut rng));
        }
        let mut seen: Vec<_> = seen.into_iter().collect();
        seen.sort();
        assert_eq!(seen, ["{\"a\": 1, \"b\": 2}", "{\"b\": 2}"]);
    }

    #[test]
    fn unsupported_features_name_the_keyword_and_path() {
        for (schema, feature, path) in [
            (
                json!({"type": "object", "properties": {"q": {"type": "string", "pattern": "^a"}}}),
                "pattern",
                "schema.properties.q",
            ),
            (
                json!({"type": "object", "patternProperties": {"^x": {}}}),
                "patternProperties",
                "schema",
            ),
            (
                json!({"type": "array", "items": {"type": "string", "format": "uri"}}),
                "format",
                "schema.items",
            ),
            (
                json!({"$defs": {"N": {"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}}}, "$ref": "#/$defs/N"}),
                "$ref cycle",
                "schema.$ref(#/$defs/N).properties.n",
            ),
            (
                json!({"type": "string", "maxLength": 100000}),
                "maxLength 100000",
                "schema",
            ),
            (json!({"oneOf": [{"type": "string"}]}), "oneOf", "schema"),
        ] {
            let mut g = Grammar::default();
            let e = SchemaCompiler::new(&mut g, "t")
                .compile(&schema, "schema")
                .unwrap_err();
            let SchemaError::Unsupported {
                feature: f,
                path: p,
            } = &e
            else {
                panic!("{e}")
            };
            assert!(f.starts_with(feature), "{f} for {schema}");
            assert_eq!(p, path, "{schema}");
            assert!(
                e.to_string().contains(feature) && e.to_string().contains(path),
                "{e}"
            );
        }
    }

    /// Schemas built from the supported keywords, nested.
    fn arb_schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            (0u64..4, proptest::option::of(4u64..12)).prop_map(|(min, max)| {
                let mut s = json!({"type": "string", "minLength": min});
                if let Some(m) = max {
                    s["maxLength"] = json!(m);
                }
                s
            }),
            Just(json!({"type": "integer"})),
            Just(json!({"type": "number"})),
            Just(json!({"type": "boolean"})),
            Just(json!({"type": ["integer", "null"]})),
            proptest::collection::vec("[a-z\"\\\\é ]{0,6}", 1..4).prop_map(|v| json!({"enum": v})),
            Just(json!({})),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                (inner.clone(), 0u64..3, proptest::option::of(0u64..4)).prop_map(|(items, min, extra)| {
                    let mut s = json!({"type": "array", "items": items, "minItems": min});
                    if let Some(e) = extra {
                        s["maxItems"] = json!(min + e);
                    }
                    s
                }),
                proptest::collection::vec((inner.clone(), any::<bool>()), 0..4).prop_map(|members| {
                    let mut props = serde_json::Map::new();
                    let mut required = Vec::new();
                    for (i, (s, req)) in members.into_iter().enumerate() {
                        let key = format!("k{i}");
                        if req {
                            required.push(json!(key));
                        }
                        props.insert(key, s);
                    }
                    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
                }),
                proptest::collection::vec(inner, 1..3).prop_map(|alts| json!({"anyOf": alts})),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn prop_grammar_admits_only_schema_valid_json(schema in arb_schema(), seed in 1u64..u64::MAX) {
            assert_admits_only_valid(&schema, seed, 20);
        }
    }
}
