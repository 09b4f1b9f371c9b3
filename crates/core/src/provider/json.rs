//! The JSON helpers every dialect reader shares: the payload ([`Doc`]: its text, or a parsed
//! tree), the lenient borrowed field types the dialects' structs are made of ([`Str`], [`U64`],
//! [`Obj`], [`List`], [`Lax`], [`Entries`], …), and the [`Problem`] a reader reports. A leaf: it
//! imports no other module of `provider`.
//!
//! Each dialect reads a payload into `serde` structs of only the fields it uses, borrowing its
//! strings from the payload's text (a string with escapes is copied), skipping everything else
//! unparsed: no [`Value`] tree is built. A field's type says what the reader accepts, and never
//! fails on another kind: it records what it found (absent, `null`, the kind wanted, another
//! kind), and the dialect decides, as it did on the tree: `opt()` for "absent or null is none,
//! another kind is a problem", `req(key)` for "this kind or a problem", `get()` for "this kind,
//! or none". A payload whose text does not read into the structs (not JSON, a duplicate key)
//! is read again as a tree, which gives what the tree always gave (its JSON error, the last
//! of duplicate keys).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

/// Why a dialect reader refused a payload.
#[derive(Debug)]
pub(crate) enum Problem {
    /// The payload's shape is not what the API sends.
    Shape(String),
    /// The stream reported an error.
    Upstream(String),
    /// The payload's text did not read into the dialect's structs (not JSON, a duplicate
    /// key): read it again as a tree. Nothing was read from it.
    Untyped,
}

/// A payload given to a dialect reader: its JSON text (a JSON object), or a parsed tree.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Doc<'a> {
    /// The text of a JSON object.
    Text(&'a str),
    /// A parsed JSON object.
    Tree(&'a Value),
}

impl<'a> Doc<'a> {
    /// The payload read as `T`, borrowing its strings.
    ///
    /// # Errors
    /// [`Problem::Untyped`] when the text does not read as `T`.
    pub(crate) fn parse<T: Deserialize<'a>>(self) -> Result<T, Problem> {
        match self {
            Doc::Text(s) => serde_json::from_str(s).map_err(|_| Problem::Untyped),
            // The field types accept any value: a tree (whose keys are unique) always reads.
            Doc::Tree(v) => T::deserialize(v).map_err(|e| Problem::Shape(e.to_string())),
        }
    }

    /// The payload as a tree, for the messages of errors the provider reported (parsed
    /// here when the payload is text: only on that path).
    pub(crate) fn tree(self) -> Result<Cow<'a, Value>, Problem> {
        match self {
            Doc::Text(s) => serde_json::from_str(s)
                .map(Cow::Owned)
                .map_err(|_| Problem::Untyped),
            Doc::Tree(v) => Ok(Cow::Borrowed(v)),
        }
    }

    /// The payload's text: as given, or a tree's compact JSON (for a dialect whose structs
    /// keep where a field is in the text, [`Raw`] and [`StrAt`], which only a text can say).
    pub(crate) fn text(self) -> Cow<'a, str> {
        match self {
            Doc::Text(s) => Cow::Borrowed(s),
            Doc::Tree(v) => Cow::Owned(v.to_string()),
        }
    }

    /// The payload as compact JSON (the message of an error event).
    pub(crate) fn to_json(self) -> Result<String, Problem> {
        Ok(self.tree()?.to_string())
    }
}

/// A JSON scalar, as a lenient field sees it.
pub(crate) enum Scalar<'de> {
    Str(Cow<'de, str>),
    U64(u64),
    /// A negative integer.
    I64(i64),
    /// A number with a fraction or an exponent.
    F64(f64),
    Bool(bool),
}

/// What a lenient field type makes of each kind of JSON value. Nothing fails but the
/// deserializer itself (the text's syntax, a duplicate key inside a struct).
pub(crate) trait Lenient<'de>: Sized {
    /// The field was `null`.
    fn null() -> Self;
    /// The field was a scalar.
    fn scalar(s: Scalar<'de>) -> Self;
    /// The field was an array.
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error>;
    /// The field was an object.
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error>;
}

/// Skips an array, for a type that does not want one.
fn skip_seq<'de, A: SeqAccess<'de>>(seq: A) -> Result<(), A::Error> {
    IgnoredAny.visit_seq(seq).map(drop)
}

/// Skips an object, for a type that does not want one.
fn skip_map<'de, A: MapAccess<'de>>(map: A) -> Result<(), A::Error> {
    IgnoredAny.visit_map(map).map(drop)
}

/// The visitor of every [`Lenient`] type.
struct LenientVisitor<T>(PhantomData<T>);

impl<'de, T: Lenient<'de>> Visitor<'de> for LenientVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<T, E> {
        Ok(T::scalar(Scalar::Str(Cow::Borrowed(v))))
    }
    fn visit_str<E>(self, v: &str) -> Result<T, E> {
        Ok(T::scalar(Scalar::Str(Cow::Owned(v.to_owned()))))
    }
    fn visit_string<E>(self, v: String) -> Result<T, E> {
        Ok(T::scalar(Scalar::Str(Cow::Owned(v))))
    }
    fn visit_u64<E>(self, v: u64) -> Result<T, E> {
        Ok(T::scalar(Scalar::U64(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<T, E> {
        // serde_json gives a non-negative integer as `u64`; `Value`'s `as_u64` reads it too.
        Ok(T::scalar(match u64::try_from(v) {
            Ok(n) => Scalar::U64(n),
            Err(_) => Scalar::I64(v),
        }))
    }
    fn visit_f64<E>(self, v: f64) -> Result<T, E> {
        Ok(T::scalar(Scalar::F64(v)))
    }
    fn visit_bool<E>(self, v: bool) -> Result<T, E> {
        Ok(T::scalar(Scalar::Bool(v)))
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::null())
    }
    fn visit_none<E>(self) -> Result<T, E> {
        Ok(T::null())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::map(map)
    }
}

/// `impl Deserialize` through [`Lenient`].
macro_rules! lenient_deserialize {
    ($($t:tt)*) => {
        $($t)* {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(LenientVisitor(PhantomData))
            }
        }
    };
}

/// A string field.
#[derive(Debug, Clone, Default)]
pub(crate) enum Str<'a> {
    #[default]
    Absent,
    Null,
    Is(Cow<'a, str>),
    /// Another kind.
    Not,
}

impl Str<'_> {
    /// The string, or a problem naming `key`.
    pub(crate) fn req(&self, key: &str) -> Result<&str, Problem> {
        self.get()
            .ok_or_else(|| shape(format!("`{key}` to be a string")))
    }

    /// The string; absent or null is `None`, another kind a problem naming `key`.
    pub(crate) fn opt(&self, key: &str) -> Result<Option<&str>, Problem> {
        match self {
            Str::Absent | Str::Null => Ok(None),
            Str::Is(s) => Ok(Some(s)),
            Str::Not => Err(shape(format!("`{key}` to be a string"))),
        }
    }

    /// The string, if it is one.
    pub(crate) fn get(&self) -> Option<&str> {
        match self {
            Str::Is(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the field was given (even as `null`).
    pub(crate) fn is_given(&self) -> bool {
        !matches!(self, Str::Absent)
    }
}

impl<'de: 'a, 'a> Lenient<'de> for Str<'a> {
    fn null() -> Self {
        Str::Null
    }
    fn scalar(s: Scalar<'de>) -> Self {
        match s {
            Scalar::Str(s) => Str::Is(s),
            _ => Str::Not,
        }
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        skip_seq(seq).map(|()| Str::Not)
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        skip_map(map).map(|()| Str::Not)
    }
}

lenient_deserialize!(impl<'de: 'a, 'a> Deserialize<'de> for Str<'a>);

/// A non-negative integer field.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum U64 {
    #[default]
    Absent,
    Null,
    Is(u64),
    /// Another kind (a negative or fractional number too).
    Not,
}

impl U64 {
    /// The integer; absent or null is `None`, another kind a problem naming `key`.
    pub(crate) fn opt(self, key: &str) -> Result<Option<u64>, Problem> {
        match self {
            U64::Absent | U64::Null => Ok(None),
            U64::Is(n) => Ok(Some(n)),
            U64::Not => Err(shape(format!("`{key}` to be a non-negative integer"))),
        }
    }

    /// The integer, if it is one.
    pub(crate) fn get(self) -> Option<u64> {
        match self {
            U64::Is(n) => Some(n),
            _ => None,
        }
    }

    /// Whether the field was given (even as `null`).
    pub(crate) fn is_given(self) -> bool {
        !matches!(self, U64::Absent)
    }
}

impl<'de> Lenient<'de> for U64 {
    fn null() -> Self {
        U64::Null
    }
    fn scalar(s: Scalar<'de>) -> Self {
        match s {
            Scalar::U64(n) => U64::Is(n),
            _ => U64::Not,
        }
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        skip_seq(seq).map(|()| U64::Not)
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        skip_map(map).map(|()| U64::Not)
    }
}

lenient_deserialize!(impl<'de> Deserialize<'de> for U64);

/// A field that is `true` only when it is JSON `true`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct True(pub(crate) bool);

impl<'de> Lenient<'de> for True {
    fn null() -> Self {
        True(false)
    }
    fn scalar(s: Scalar<'de>) -> Self {
        True(matches!(s, Scalar::Bool(true)))
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        skip_seq(seq).map(|()| True(false))
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        skip_map(map).map(|()| True(false))
    }
}

lenient_deserialize!(impl<'de> Deserialize<'de> for True);

/// A field that is given and not `null` (its value skipped).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Given(pub(crate) bool);

impl<'de> Lenient<'de> for Given {
    fn null() -> Self {
        Given(false)
    }
    fn scalar(_: Scalar<'de>) -> Self {
        Given(true)
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        skip_seq(seq).map(|()| Given(true))
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        skip_map(map).map(|()| Given(true))
    }
}

lenient_deserialize!(impl<'de> Deserialize<'de> for Given);

/// An object field read as `T` (a struct of lenient fields).
#[derive(Debug, Clone, Default)]
pub(crate) enum Obj<T> {
    #[default]
    Absent,
    Null,
    Is(T),
    /// Another kind.
    Not,
}

impl<T> Obj<T> {
    /// The object, or a problem naming `key`.
    pub(crate) fn req(&self, key: &str) -> Result<&T, Problem> {
        self.get()
            .ok_or_else(|| shape(format!("`{key}` to be an object")))
    }

    /// The object, if it is one.
    pub(crate) fn get(&self) -> Option<&T> {
        match self {
            Obj::Is(t) => Some(t),
            _ => None,
        }
    }

    /// This field, or `other` when this one is absent (not when it is `null`).
    pub(crate) fn or<'s>(&'s self, other: &'s Obj<T>) -> &'s Obj<T> {
        match self {
            Obj::Absent => other,
            _ => self,
        }
    }
}

impl<'de, T: Deserialize<'de>> Lenient<'de> for Obj<T> {
    fn null() -> Self {
        Obj::Null
    }
    fn scalar(_: Scalar<'de>) -> Self {
        Obj::Not
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        skip_seq(seq).map(|()| Obj::Not)
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Obj::Is)
    }
}

lenient_deserialize!(impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T>);

/// A field read as `T` when it is an object, and as `T`'s default (no fields) when it is
/// anything else: what `Value::get` on it gives.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lax<T>(pub(crate) T);

impl<'de, T: Deserialize<'de> + Default> Lenient<'de> for Lax<T> {
    fn null() -> Self {
        Lax(T::default())
    }
    fn scalar(_: Scalar<'de>) -> Self {
        Lax(T::default())
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        skip_seq(seq).map(|()| Lax(T::default()))
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Lax)
    }
}

lenient_deserialize!(impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Lax<T>);

impl<T> std::ops::Deref for Lax<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// An array field of `T` (each element a lenient type).
#[derive(Debug, Clone, Default)]
pub(crate) enum List<T> {
    #[default]
    Absent,
    Null,
    Is(Vec<T>),
    /// Another kind.
    Not,
}

impl<T> List<T> {
    /// The elements (absent or null is empty), or a problem naming `key`.
    pub(crate) fn req(&self, key: &str) -> Result<&[T], Problem> {
        match self {
            List::Absent | List::Null => Ok(&[]),
            List::Is(v) => Ok(v),
            List::Not => Err(shape(format!("`{key}` to be an array"))),
        }
    }

    /// The elements, if it is an array (else none).
    pub(crate) fn get(&self) -> &[T] {
        match self {
            List::Is(v) => v,
            _ => &[],
        }
    }
}

impl<'de, T: Deserialize<'de>> Lenient<'de> for List<T> {
    fn null() -> Self {
        List::Null
    }
    fn scalar(_: Scalar<'de>) -> Self {
        List::Not
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(x) = seq.next_element()? {
            v.push(x);
        }
        Ok(List::Is(v))
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        skip_map(map).map(|()| List::Not)
    }
}

lenient_deserialize!(impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T>);

/// A field's JSON text as the payload wrote it (`null` too), or `None` when absent. Only a
/// payload's text reads into it: a dialect with such a field reads a tree as its text
/// ([`Doc::text`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Raw<'a>(pub(crate) Option<&'a str>);

impl<'a> Raw<'a> {
    /// Whether the field was given (even as `null`).
    pub(crate) fn is_given(self) -> bool {
        self.0.is_some()
    }

    /// Whether the field was absent or `null`.
    pub(crate) fn is_null(self) -> bool {
        self.0.is_none_or(|v| v == "null")
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(d).map(|v| Raw(Some(v.get())))
    }
}

/// A string field with its JSON text as the payload wrote it (`None` when absent): where it is,
/// for an adapter that rewrites the payload in its own text. Read from a payload's text only,
/// as [`Raw`]. The text is scanned once: a string literal with no escape is the string between
/// its quotes (borrowed); one with escapes, or another kind, is decoded from that text.
#[derive(Debug, Clone, Default)]
pub(crate) struct StrAt<'a> {
    pub(crate) raw: Raw<'a>,
    pub(crate) value: Str<'a>,
}

impl<'de: 'a, 'a> Deserialize<'de> for StrAt<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw: &'a str = <&'de RawValue>::deserialize(d)?.get();
        // A string literal's text is already checked (no control character, valid escapes).
        let value = match raw.as_bytes() {
            [b'"', inner @ .., b'"'] if memchr::memchr(b'\\', inner).is_none() => {
                Str::Is(Cow::Borrowed(&raw[1..raw.len() - 1]))
            }
            _ => serde_json::from_str(raw).map_err(D::Error::custom)?,
        };
        Ok(StrAt {
            raw: Raw(Some(raw)),
            value,
        })
    }
}

/// A member that an answer keeps as its metadata (a chat chunk's `id`, `model`, …): a JSON
/// scalar as a tree would hold it, or [`MetaValue::Composite`] for an array or an object
/// (skipped unread).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum MetaValue<'a> {
    /// Not in the chunk.
    #[default]
    Absent,
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A string (borrowed from the chunk's text when it has no escape).
    Str(Cow<'a, str>),
    /// A non-negative integer.
    U64(u64),
    /// A negative integer.
    I64(i64),
    /// A number with a fraction or an exponent.
    F64(f64),
    /// An array or an object.
    Composite,
}

impl MetaValue<'_> {
    /// The same value, owning its string.
    #[must_use]
    pub fn into_owned(self) -> MetaValue<'static> {
        match self {
            MetaValue::Absent => MetaValue::Absent,
            MetaValue::Null => MetaValue::Null,
            MetaValue::Bool(b) => MetaValue::Bool(b),
            MetaValue::Str(s) => MetaValue::Str(Cow::Owned(s.into_owned())),
            MetaValue::U64(n) => MetaValue::U64(n),
            MetaValue::I64(n) => MetaValue::I64(n),
            MetaValue::F64(n) => MetaValue::F64(n),
            MetaValue::Composite => MetaValue::Composite,
        }
    }

    /// The value as a JSON tree (`None` when absent or an array or object, which was not
    /// read).
    #[must_use]
    pub fn to_value(&self) -> Option<Value> {
        Some(match self {
            MetaValue::Absent | MetaValue::Composite => return None,
            MetaValue::Null => Value::Null,
            MetaValue::Bool(b) => Value::Bool(*b),
            MetaValue::Str(s) => Value::String(s.as_ref().to_owned()),
            MetaValue::U64(n) => Value::from(*n),
            MetaValue::I64(n) => Value::from(*n),
            MetaValue::F64(n) => Value::from(*n),
        })
    }
}

impl<'de: 'a, 'a> Lenient<'de> for MetaValue<'a> {
    fn null() -> Self {
        MetaValue::Null
    }
    fn scalar(s: Scalar<'de>) -> Self {
        match s {
            Scalar::Str(s) => MetaValue::Str(s),
            Scalar::U64(n) => MetaValue::U64(n),
            Scalar::I64(n) => MetaValue::I64(n),
            Scalar::F64(n) => MetaValue::F64(n),
            Scalar::Bool(b) => MetaValue::Bool(b),
        }
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        skip_seq(seq).map(|()| MetaValue::Composite)
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        skip_map(map).map(|()| MetaValue::Composite)
    }
}

lenient_deserialize!(impl<'de: 'a, 'a> Deserialize<'de> for MetaValue<'a>);

/// An object of any keys, each value read as `V`, in the order a tree keeps them (sorted by
/// key, the last of duplicate keys kept). Anything but an object reads as no entries.
#[derive(Debug, Clone)]
pub(crate) struct Entries<'a, V>(pub(crate) Vec<(Cow<'a, str>, V)>);

impl<V> Default for Entries<'_, V> {
    fn default() -> Self {
        Entries(Vec::new())
    }
}

impl<'de: 'a, 'a, V: Deserialize<'de>> Lenient<'de> for Entries<'a, V> {
    fn null() -> Self {
        Entries::default()
    }
    fn scalar(_: Scalar<'de>) -> Self {
        Entries::default()
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        skip_seq(seq).map(|()| Entries::default())
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut all: Vec<(Cow<'a, str>, V)> = Vec::new();
        while let Some(key) = map.next_key::<Str<'a>>()? {
            let Str::Is(key) = key else {
                // JSON keys are strings.
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let value = map.next_value()?;
            all.push((key, value));
        }
        all.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(Cow<'a, str>, V)> = Vec::with_capacity(all.len());
        for e in all {
            if out.last().is_some_and(|l| l.0 == e.0) {
                out.pop();
            }
            out.push(e);
        }
        Ok(Entries(out))
    }
}

lenient_deserialize!(impl<'de: 'a, 'a, V: Deserialize<'de>> Deserialize<'de> for Entries<'a, V>);

pub(crate) type ReadResult = Result<(), Problem>;

/// `expected` as a [`Problem::Shape`].
pub(crate) fn shape(expected: impl Into<String>) -> Problem {
    Problem::Shape(expected.into())
}

/// "an array", "a number", … for messages.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The top-level keys of a payload, for [`ProviderError::UnknownDialect`](super::error::ProviderError::UnknownDialect).
pub(crate) fn keys_of(v: &Value) -> String {
    match v.as_object() {
        Some(o) => {
            let keys: Vec<&str> = o.keys().take(8).map(String::as_str).collect();
            keys.join(", ")
        }
        None => json_kind(v).to_owned(),
    }
}
