//! The events a `Rewriter` emits, one small class per kind.
//!
//! Each class has a `type` (the core's `type` field in JSON), its fields as read-only
//! attributes, `repr()`, equality, `__match_args__` and `to_dict()` (the core's JSON form).
//! Offsets are UTF-8 byte offsets, as in the core.

use citeflow_core as core;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyList, PyString};

use crate::anchor::AnchorEvent;
use crate::convert::{repr_opt, repr_str, serde_name};
use crate::detail::CitationDetail;
use crate::errors::{raise, CiteflowError};
use crate::types::{to_py, ListedSource, Report, Source};

/// Rendered text. Concatenated, the texts are the whole rendered answer.
///
/// `type` and `text` are plain slots (struct members), the fastest attribute reads Python has:
/// a token stream reads them once per token.
#[pyclass(frozen, module = "citeflow._citeflow")]
pub(crate) struct TextEvent {
    /// Always `"text"`.
    #[pyo3(get, name = "type")]
    kind: Py<PyString>,
    /// The text.
    #[pyo3(get)]
    text: Py<PyString>,
}

impl TextEvent {
    /// A text event holding `text` (an exact `str`) as it is, without copying it.
    pub(crate) fn from_py<'py>(text: Bound<'py, PyString>) -> PyResult<Bound<'py, TextEvent>> {
        let py = text.py();
        Bound::new(
            py,
            TextEvent {
                kind: pyo3::intern!(py, "text").clone().unbind(),
                text: text.unbind(),
            },
        )
    }
}

#[pymethods]
impl TextEvent {
    #[new]
    fn new(py: Python<'_>, text: &str) -> Self {
        TextEvent {
            kind: pyo3::intern!(py, "text").clone().unbind(),
            text: PyString::new(py, text).unbind(),
        }
    }

    #[classattr]
    fn __match_args__() -> (&'static str,) {
        ("text",)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match other.cast::<TextEvent>() {
            Ok(o) => {
                let same = PyAnyMethods::eq(self.text.bind(py).as_any(), o.get().text.bind(py))?;
                Ok(PyBool::new(py, same).to_owned().into_any().unbind())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    /// The core's JSON form: `{"type": "text", "text": ...}`.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(
            py,
            &core::Event::Text {
                text: self.text.bind(py).to_str()?.to_owned(),
            },
        )
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "TextEvent(text={})",
            repr_str(self.text.bind(py).to_str()?)
        ))
    }
}

/// How an event class keeps one of its fields (as the core's event holds it), gives it to
/// Python and shows it in `repr()`.
trait Field {
    /// What the Python attribute returns.
    type Get<'a>
    where
        Self: 'a;
    /// The Python attribute's value.
    fn get(&self) -> Self::Get<'_>;
    /// The value as `repr()` shows it.
    fn repr(&self) -> String;
}

impl Field for u32 {
    type Get<'a> = u32;
    fn get(&self) -> u32 {
        *self
    }
    fn repr(&self) -> String {
        self.to_string()
    }
}

impl Field for u64 {
    type Get<'a> = u64;
    fn get(&self) -> u64 {
        *self
    }
    fn repr(&self) -> String {
        self.to_string()
    }
}

impl Field for bool {
    type Get<'a> = bool;
    fn get(&self) -> bool {
        *self
    }
    fn repr(&self) -> String {
        py_bool(*self).to_owned()
    }
}

impl Field for Option<u32> {
    type Get<'a> = Option<u32>;
    fn get(&self) -> Option<u32> {
        *self
    }
    fn repr(&self) -> String {
        self.map_or_else(|| "None".to_owned(), |r| r.to_string())
    }
}

impl Field for String {
    type Get<'a> = &'a str;
    fn get(&self) -> &str {
        self
    }
    fn repr(&self) -> String {
        repr_str(self)
    }
}

impl Field for Option<String> {
    type Get<'a> = Option<&'a str>;
    fn get(&self) -> Option<&str> {
        self.as_deref()
    }
    fn repr(&self) -> String {
        repr_opt(self.as_deref())
    }
}

impl Field for core::UnresolvedReason {
    type Get<'a> = &'static str;
    fn get(&self) -> &'static str {
        self.as_str()
    }
    fn repr(&self) -> String {
        repr_str(&serde_name(self))
    }
}

/// A core value and the Python class that wraps it.
trait Wrap: Clone {
    /// The class.
    type Class;
    /// The value in its class.
    fn wrap(self) -> Self::Class;
    /// `repr()` of the class.
    fn repr(class: &Self::Class) -> String;
}

macro_rules! wrap {
    ($($core:ty => $class:ident),+ $(,)?) => {$(
        impl Wrap for $core {
            type Class = $class;
            fn wrap(self) -> $class {
                $class { inner: self }
            }
            fn repr(class: &$class) -> String {
                class.__repr__()
            }
        }
    )+};
}

wrap!(
    core::Source => Source,
    core::ListedSource => ListedSource,
    core::Report => Report,
    core::CitationDetail => CitationDetail,
);

impl<T: Wrap> Field for Box<T> {
    type Get<'a>
        = T::Class
    where
        T: 'a;
    fn get(&self) -> T::Class {
        T::clone(self).wrap()
    }
    fn repr(&self) -> String {
        T::repr(&self.get())
    }
}

impl<T: Wrap> Field for Option<Box<T>> {
    type Get<'a>
        = Option<T::Class>
    where
        T: 'a;
    fn get(&self) -> Option<T::Class> {
        self.as_deref().cloned().map(T::wrap)
    }
    fn repr(&self) -> String {
        self.get()
            .map_or_else(|| "None".to_owned(), |c| T::repr(&c))
    }
}

impl<T: Wrap> Field for Vec<T> {
    type Get<'a>
        = Vec<T::Class>
    where
        T: 'a;
    fn get(&self) -> Vec<T::Class> {
        self.iter().cloned().map(T::wrap).collect()
    }
    fn repr(&self) -> String {
        let items: Vec<String> = self.get().iter().map(T::repr).collect();
        format!("[{}]", items.join(", "))
    }
}

/// `&'static str`, once for each field (the type of `__match_args__`).
macro_rules! static_str {
    ($field:ident) => {
        &'static str
    };
}

/// One class for each of the core's events but text: the fields as the core's variant holds
/// them, a read-only attribute for each (and `type`), `__match_args__` (every field), equality,
/// `repr()` (the fields named in `repr(...)`) and `to_dict()` (the core's JSON form); and
/// `event_to_py`, which turns a core event into its class.
macro_rules! event_classes {
    ($(
        $(#[$meta:meta])*
        $class:ident = $variant:ident($kind:literal) {
            $(
                $(#[$field_meta:meta])*
                $field:ident: $ty:ty,
            )+
        }
        repr($($shown:ident),+);
    )+) => {
        $(
            $(#[$meta])*
            #[pyclass(frozen, eq, module = "citeflow._citeflow")]
            #[derive(PartialEq)]
            pub(crate) struct $class {
                $($field: $ty,)+
            }

            #[pymethods]
            impl $class {
                #[classattr]
                fn __match_args__() -> ($(static_str!($field),)+) {
                    ($(stringify!($field),)+)
                }

                #[doc = concat!("Always `\"", $kind, "\"`.")]
                #[getter(r#type)]
                fn kind<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
                    pyo3::intern!(py, $kind)
                }

                $(
                    $(#[$field_meta])*
                    #[getter]
                    fn $field(&self) -> <$ty as Field>::Get<'_> {
                        Field::get(&self.$field)
                    }
                )+

                /// The core's JSON form.
                fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                    to_py(
                        py,
                        &core::Event::$variant {
                            $($field: self.$field.clone(),)+
                        },
                    )
                }

                fn __repr__(&self) -> String {
                    let fields: &[String] = &[
                        $(format!("{}={}", stringify!($shown), Field::repr(&self.$shown)),)+
                    ];
                    format!("{}({})", stringify!($class), fields.join(", "))
                }
            }
        )+

        /// A core event as its Python class.
        pub(crate) fn event_to_py(py: Python<'_>, e: core::Event) -> PyResult<Bound<'_, PyAny>> {
            Ok(match e {
                core::Event::Text { text } => {
                    TextEvent::from_py(PyString::new(py, &text))?.into_any()
                }
                core::Event::Anchor(anchor) => Bound::new(py, AnchorEvent::from(*anchor))?.into_any(),
                $(
                    core::Event::$variant { $($field,)+ } => {
                        Bound::new(py, $class { $($field,)+ })?.into_any()
                    }
                )+
                other => {
                    return Err(raise::<CiteflowError>(
                        py,
                        "unsupported_event",
                        format!(
                            "event type {} is not supported by this binding",
                            other.kind()
                        ),
                    ))
                }
            })
        }
    };
}

event_classes! {
    /// A number shown for the first time in this stream, with its source. It comes before the
    /// citation and the text that show the number.
    SourceEvent = Source("source") {
        /// The number.
        number: u32,
        /// The source record.
        source: Box<core::Source>,
        /// The round that registered the source.
        round: Option<u32>,
        /// Whether the number was handed out just now (False: an earlier answer of the session
        /// gave it out).
        is_new: bool,
    }
    repr(number, source, round, is_new);

    /// A resolved citation. `byte_offset` is where the number's rendering starts in the rendered
    /// output and `input_byte_offset` where the marker started in the decoded input, both in
    /// UTF-8 bytes; `char_offset` is the output position as a `str` index (code points) and
    /// `utf16_offset` in UTF-16 code units. `provider` is what a provider said about the citation
    /// (`ProviderStream`), None for a marker the model wrote.
    CitationEvent = Citation("citation") {
        /// The number shown.
        number: u32,
        /// The id the model wrote (for a rank, the id of that source).
        source_id: String,
        /// Where the number's rendering starts in the rendered output (UTF-8 bytes).
        byte_offset: u64,
        /// Where the marker started in the decoded input (UTF-8 bytes).
        input_byte_offset: u64,
        /// Where the number's rendering starts in the rendered output, in code points (a `str`
        /// index).
        char_offset: u64,
        /// Where the number's rendering starts in the rendered output, in UTF-16 code units (a
        /// JavaScript index).
        utf16_offset: u64,
        /// What the provider said about this citation; None for a marker the model wrote.
        provider: Option<Box<core::CitationDetail>>,
    }
    repr(number, source_id, byte_offset, input_byte_offset, char_offset, utf16_offset, provider);

    /// A marker, or one id in it, that did not resolve. It used no number. `reason` is
    /// `"unknown_id"` or `"rank_out_of_range"`; offsets are UTF-8 bytes as in `CitationEvent`.
    UnresolvedEvent = Unresolved("unresolved") {
        /// The whole marker as written.
        raw: String,
        /// The id or rank that failed.
        reference: String,
        /// Why: `"unknown_id"` or `"rank_out_of_range"`.
        reason: core::UnresolvedReason,
        /// Where its rendering (if any) starts in the rendered output (UTF-8 bytes).
        byte_offset: u64,
        /// Where the marker started in the decoded input (UTF-8 bytes).
        input_byte_offset: u64,
    }
    repr(raw, reference, reason, byte_offset, input_byte_offset);

    /// `number_source="external"` only: allocate a number for `key` in the shared store and answer
    /// with `Rewriter.provide_number(key, number)`. Nothing more is emitted until then.
    NumberNeededEvent = NumberNeeded("number_needed") {
        /// The canonical key.
        key: String,
        /// The source id that needs it.
        source_id: String,
    }
    repr(key, source_id);

    /// The end: the final source list and the report.
    DoneEvent = Done("done") {
        /// The cited sources by number.
        sources: Vec<core::ListedSource>,
        /// Counts and checks.
        report: Box<core::Report>,
        /// The final answer when provider citations were bound after their text was shown
        /// (`CitationDetail.late`): the streamed text with those numbers placed. None when the
        /// streamed text is final.
        text: Option<String>,
        /// The sources shown to the model that the answer did not cite, in registration order:
        /// the "more sources" a UI lists after the cited ones.
        uncited: Vec<core::Source>,
    }
    repr(sources, report, text);
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// Core events as a Python list.
pub(crate) fn events_to_list(
    py: Python<'_>,
    events: impl IntoIterator<Item = core::Event>,
) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for e in events {
        list.append(event_to_py(py, e)?)?;
    }
    Ok(list)
}
