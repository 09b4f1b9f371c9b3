//! Plain conversions: JSON values to and from Python objects, chunks, serde names.

use std::borrow::Cow;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;

/// A JSON value as a Python object (dict, list, str, int, float, bool, None).
pub(crate) fn value_to_py(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any().unbind()
            } else if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any().unbind()
            } else {
                n.as_f64()
                    .unwrap_or(f64::NAN)
                    .into_pyobject(py)?
                    .into_any()
                    .unbind()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any().unbind(),
        Value::Array(a) => {
            let list = PyList::empty(py);
            for x in a {
                list.append(value_to_py(py, x)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(o) => {
            let d = PyDict::new(py);
            for (k, x) in o {
                d.set_item(k, value_to_py(py, x)?)?;
            }
            d.into_any().unbind()
        }
    })
}

/// A Python object made of dicts (str keys), lists, tuples, str, int, float, bool and None as a
/// JSON value.
pub(crate) fn py_to_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if obj.cast::<PyInt>().is_ok() {
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Ok(Value::from(obj.extract::<i64>()?));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return serde_json::Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err("nan and infinity have no JSON form"));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, v) in d.iter() {
            let key = k
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err("dict keys must be str"))?
                .to_cow()?
                .into_owned();
            map.insert(key, py_to_value(&v)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .map(|x| py_to_value(&x))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t
            .iter()
            .map(|x| py_to_value(&x))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    Err(PyTypeError::new_err(format!(
        "cannot convert {} to JSON",
        obj.get_type().name()?
    )))
}

/// A chunk of input: `str` (UTF-8 encoded) or bytes-like (`bytes`, `bytearray`).
pub(crate) enum Chunk<'a> {
    Text(Cow<'a, str>),
    Bytes(&'a [u8]),
    Owned(Vec<u8>),
}

impl Chunk<'_> {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Chunk::Text(s) => s.as_bytes(),
            Chunk::Bytes(b) => b,
            Chunk::Owned(b) => b,
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Chunk<'a> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.cast::<PyString>().is_ok() {
            return Ok(Chunk::Text(<Cow<'a, str>>::extract(obj)?));
        }
        if let Ok(b) = <&'a [u8]>::extract(obj) {
            return Ok(Chunk::Bytes(b));
        }
        if let Ok(b) = obj.cast::<PyByteArray>() {
            return Ok(Chunk::Owned(b.to_vec()));
        }
        Err(PyTypeError::new_err(format!(
            "a chunk must be str or bytes, not {}",
            obj.get_type().name()?
        )))
    }
}

/// The serde name of a unit enum value (`"renumber"`, `"unknown_id"`).
pub(crate) fn serde_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(e) => e.to_string(),
    }
}

/// `repr()` of a Python string (same quoting rule as Python's).
pub(crate) fn repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `repr()` of an optional string.
pub(crate) fn repr_opt(s: Option<&str>) -> String {
    s.map_or_else(|| "None".to_owned(), repr_str)
}

/// Serialises a core value to a Python dict/list through its serde form.
pub(crate) fn to_py<T: serde::Serialize>(py: Python<'_>, v: &T) -> PyResult<Py<PyAny>> {
    let value = serde_json::to_value(v).map_err(|e| {
        crate::errors::raise::<crate::errors::CiteflowError>(py, "serialize", e.to_string())
    })?;
    value_to_py(py, &value)
}
