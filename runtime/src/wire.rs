//! Serde helpers shared by every kapi type and by generated code.
//!
//! Upstream JSON has two habits a Rust model must absorb: string "enums" whose set of values the
//! world may extend ([`open_enum!`](crate::open_enum)), and `null` where Go wrote a nil slice, map
//! or string ([`null_as_default`]).

use serde::{Deserialize, Deserializer};

/// Reads `null` as the type's default, as Go does for slices, maps and strings.
///
/// Go servers write `null` for a nil slice in some places; refusing it would reject objects
/// upstream clients accept.
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Defines a string enum that keeps values it does not know in an `Other` variant.
///
/// Upstream declares these as string type aliases with a few well-known constants, and the
/// world is open (a newer server may send a value this version never heard of), so decoding
/// must never fail on an unknown spelling. Equality and hashing go by the wire spelling, so
/// `Other("Apply")` equals `Apply`.
#[macro_export]
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value without a variant of its own, kept verbatim.
            Other(String),
        }

        impl $name {
            /// The wire spelling of this value.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $text, )*
                    Self::Other(s) => s,
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $( $text => Self::$variant, )*
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                match s.as_str() {
                    $( $text => Self::$variant, )*
                    _ => Self::Other(s),
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = std::convert::Infallible;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Ok(Self::from(s))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl Eq for $name {}

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl std::hash::Hash for $name {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.as_str().hash(state);
            }
        }

        impl $crate::__private::serde::Serialize for $name {
            fn serialize<S: $crate::__private::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::__private::serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::__private::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <String as $crate::__private::serde::Deserialize>::deserialize(d).map(Self::from)
            }
        }
    };
}
