//! One vocabulary of names for the settings enums, owned by serde: each enum's
//! `#[serde(rename_all = "snake_case")]` (and its `alias`es) is the only table of names.
//! [`FromStr`](core::str::FromStr) reads a name through the derived `Deserialize` and
//! [`Display`](core::fmt::Display) writes it through the derived `Serialize`, so that every
//! adapter (CLI, server, Python, WASM) and every JSON form reads and writes the same names.

use core::fmt;

use serde::de::value::StrDeserializer;
use serde::de::DeserializeOwned;
use serde::ser::{self, Impossible, Serialize};

use crate::error::SettingsError;

/// Reads `name` as a `T` with `T`'s serde names.
///
/// # Errors
/// [`SettingsError::UnknownName`] naming `what`, the name, and the names `T` accepts.
pub(crate) fn parse<T: DeserializeOwned>(
    what: &'static str,
    name: &str,
) -> Result<T, SettingsError> {
    T::deserialize(StrDeserializer::<NameError>::new(name)).map_err(|e| {
        SettingsError::UnknownName {
            what,
            value: name.to_owned(),
            expected: e.0,
        }
    })
}

/// The serde name of a unit variant (`None` for any other value).
pub(crate) fn name_of<T: Serialize>(value: &T) -> Option<&'static str> {
    value.serialize(UnitVariantName).ok()
}

/// The error of [`parse`]: the names the enum accepts, as serde's `unknown_variant` lists them.
#[derive(Debug)]
pub(crate) struct NameError(&'static [&'static str]);

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected one of {:?}", self.0)
    }
}

impl std::error::Error for NameError {}

impl serde::de::Error for NameError {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        NameError(&[])
    }

    fn unknown_variant(_variant: &str, expected: &'static [&'static str]) -> Self {
        NameError(expected)
    }
}

impl ser::Error for NameError {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        NameError(&[])
    }
}

/// A serializer that only takes a unit variant, and returns its name.
struct UnitVariantName;

macro_rules! not_a_name {
    ($($method:ident($($ty:ty),*)),+ $(,)?) => {$(
        fn $method(self, $(_: $ty),*) -> Result<Self::Ok, Self::Error> {
            Err(NameError(&[]))
        }
    )+};
}

impl ser::Serializer for UnitVariantName {
    type Ok = &'static str;
    type Error = NameError;
    type SerializeSeq = Impossible<&'static str, NameError>;
    type SerializeTuple = Impossible<&'static str, NameError>;
    type SerializeTupleStruct = Impossible<&'static str, NameError>;
    type SerializeTupleVariant = Impossible<&'static str, NameError>;
    type SerializeMap = Impossible<&'static str, NameError>;
    type SerializeStruct = Impossible<&'static str, NameError>;
    type SerializeStructVariant = Impossible<&'static str, NameError>;

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Self::Ok, Self::Error> {
        Ok(variant)
    }

    not_a_name!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
    );

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<Self::Ok, Self::Error> {
        Err(NameError(&[]))
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<Self::Ok, Self::Error> {
        Err(NameError(&[]))
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Self::Ok, Self::Error> {
        Err(NameError(&[]))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        Err(NameError(&[]))
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Self::Error> {
        Err(NameError(&[]))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Self::Error> {
        Err(NameError(&[]))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Self::Error> {
        Err(NameError(&[]))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        Err(NameError(&[]))
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Self::Error> {
        Err(NameError(&[]))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Self::Error> {
        Err(NameError(&[]))
    }
}

/// Implements `FromStr` (with [`SettingsError::UnknownName`] naming `$what`) and `Display` for
/// unit-only enums through their serde names.
macro_rules! by_serde_name {
    ($($ty:ty => $what:literal),+ $(,)?) => {$(
        impl ::core::str::FromStr for $ty {
            type Err = $crate::error::SettingsError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $crate::names::parse($what, s)
            }
        }

        impl ::core::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str($crate::names::name_of(self).unwrap_or_default())
            }
        }
    )+};
}

pub(crate) use by_serde_name;
