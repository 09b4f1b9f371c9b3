//! One vocabulary of names for the settings enums: [`FromStr`](core::str::FromStr) and
//! [`Display`](core::fmt::Display) from each type's `from_name` and `name`, so that every
//! adapter (CLI, server, Python, WASM) reads and writes the same names.

/// Implements `FromStr` (with [`SettingsError`](crate::SettingsError)) and `Display` for types
/// with `from_name(&str) -> Result<Self, SettingsError>` and `name(&self)`.
macro_rules! by_name {
    ($($ty:ty),+ $(,)?) => {$(
        impl ::core::str::FromStr for $ty {
            type Err = $crate::error::SettingsError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                <$ty>::from_name(s)
            }
        }

        impl ::core::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(&self.name())
            }
        }
    )+};
}

pub(crate) use by_name;
