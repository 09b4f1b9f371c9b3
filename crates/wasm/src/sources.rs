//! `Sources`: what the model was shown, registered in rounds.

use citeflow_core::Source;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::error::BindingError;
use crate::js::{from_js, to_js};
use crate::types::{JsMaybeSource, JsRoundArray, JsSourceArray};

/// The sources of a session, registered in rounds, in the order the model was shown them.
///
/// Keep one `Sources` per session: append a round for every search, and give it to each
/// `Rewriter` (which takes a copy).
#[wasm_bindgen]
#[derive(Debug, Clone, Default)]
pub struct Sources {
    inner: citeflow_core::Sources,
}

impl Sources {
    /// The core value.
    pub fn as_core(&self) -> &citeflow_core::Sources {
        &self.inner
    }
}

impl From<citeflow_core::Sources> for Sources {
    fn from(inner: citeflow_core::Sources) -> Self {
        Sources { inner }
    }
}

pub(crate) fn source_list(list: &JsValue) -> Result<Vec<Source>, BindingError> {
    Ok(from_js::<Vec<Source>>(list, "sources", BindingError::invalid_sources)?.unwrap_or_default())
}

#[wasm_bindgen]
impl Sources {
    /// An empty set.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Sources {
        Sources::default()
    }

    /// A set of one round without a query.
    ///
    /// # Errors
    /// Throws `SourceError` (`empty_id`, `duplicate_id`, `invalid_sources`).
    #[wasm_bindgen(js_name = fromArray)]
    pub fn from_array(list: &JsSourceArray) -> Result<Sources, JsValue> {
        let inner =
            citeflow_core::Sources::from_vec(source_list(list)?).map_err(BindingError::from)?;
        Ok(Sources { inner })
    }

    /// Registers a round of sources and returns its 1-based number. Nothing is registered if
    /// it throws.
    ///
    /// # Errors
    /// Throws `SourceError` (`empty_id`, `duplicate_id`, `invalid_sources`).
    #[wasm_bindgen(js_name = appendRound)]
    pub fn append_round(
        &mut self,
        list: &JsSourceArray,
        query: Option<String>,
    ) -> Result<u32, JsValue> {
        let list = source_list(list)?;
        Ok(self
            .inner
            .append_round(query, list)
            .map_err(BindingError::from)?)
    }

    /// The source with this id.
    ///
    /// # Errors
    /// Throws `Error` `internal` only if a record cannot be converted to JSON (a bug).
    pub fn get(&self, id: &str) -> Result<JsMaybeSource, JsValue> {
        Ok(match self.inner.get(id) {
            Some(s) => to_js(s)?,
            None => JsValue::UNDEFINED,
        }
        .unchecked_into())
    }

    /// The n-th source (1-based) in the order the model was shown them.
    ///
    /// # Errors
    /// Throws `Error` `internal` only if a record cannot be converted to JSON (a bug).
    #[wasm_bindgen(js_name = byRank)]
    pub fn by_rank(&self, rank: u32) -> Result<JsMaybeSource, JsValue> {
        Ok(match self.inner.by_rank(rank) {
            Some(s) => to_js(s)?,
            None => JsValue::UNDEFINED,
        }
        .unchecked_into())
    }

    /// The round that first registered this id.
    #[wasm_bindgen(js_name = roundOf)]
    pub fn round_of(&self, id: &str) -> Option<u32> {
        self.inner.round_of(id)
    }

    /// The rounds in order (for `renderList`'s grouping).
    ///
    /// # Errors
    /// Throws `Error` `internal` only if a record cannot be converted to JSON (a bug).
    pub fn rounds(&self) -> Result<JsRoundArray, JsValue> {
        Ok(to_js(self.inner.rounds())?.unchecked_into())
    }

    /// All sources in registration order.
    ///
    /// # Errors
    /// Throws `Error` `internal` only if a record cannot be converted to JSON (a bug).
    #[wasm_bindgen(js_name = toArray)]
    pub fn to_array(&self) -> Result<JsSourceArray, JsValue> {
        let list: Vec<&Source> = self.inner.iter().collect();
        Ok(to_js(&list)?.unchecked_into())
    }

    /// How many sources there are.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> usize {
        self.inner.len()
    }
}
