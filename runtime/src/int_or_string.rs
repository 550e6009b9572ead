//! `IntOrString`: `intstr.IntOrString`, a field that holds either an int32 or a string.
//!
//! On the wire it is an untagged JSON value: a number (`8080`) or a string (`"http"`, `"25%"`).
//! This module owns that encoding and the percent arithmetic that Deployments, PodDisruptionBudgets
//! and rolling updates use (`GetScaledValueFromIntOrPercent` upstream). Schemas mark such fields
//! with `x-kubernetes-int-or-string: true`.
//!
//! A string stays a string even when it looks like a number: `"1"` is [`IntOrString::String`],
//! exactly as upstream keeps it. Numbers must be integers in the int32 range; `1.5`, `1e3`,
//! `true`, objects and arrays are errors. Upstream decodes JSON `null` into the integer `0`; in
//! kapi such fields are `Option<IntOrString>`, so `null` becomes `None` at the field level and a
//! bare `IntOrString` rejects it.

use std::fmt;

use serde::de::{self, Unexpected};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An error scaling an [`IntOrString`] against a total.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IntOrStringError {
    /// A string without a trailing `%`, e.g. `"abc"` or `"25"`.
    #[error("invalid value for IntOrString {0:?}: string is not a percentage")]
    NotPercent(String),
    /// A string ending in `%` whose number is not a decimal integer, e.g. `"%"` or `"2.5%"`.
    #[error("invalid value for IntOrString {0:?}: percentage is not an integer")]
    InvalidPercent(String),
    /// The scaled result does not fit in an int32.
    #[error(
        "invalid value for IntOrString {value:?}: scaled against {total} it does not fit in an int32"
    )]
    OutOfRange {
        /// The percentage string.
        value: String,
        /// The total it was scaled against.
        total: i32,
    },
}

/// An int32 or a string (`intstr.IntOrString`), e.g. a port (`8080` or `"http"`) or a surge
/// (`1` or `"25%"`).
///
/// `Default` is `Int(0)`, upstream's zero value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IntOrString {
    /// A JSON number.
    Int(i32),
    /// A JSON string.
    String(String),
}

impl Default for IntOrString {
    fn default() -> Self {
        Self::Int(0)
    }
}

impl IntOrString {
    /// The integer, if this is [`IntOrString::Int`].
    pub fn as_int(&self) -> Option<i32> {
        match self {
            Self::Int(i) => Some(*i),
            Self::String(_) => None,
        }
    }

    /// The string, if this is [`IntOrString::String`].
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Int(_) => None,
            Self::String(s) => Some(s),
        }
    }

    /// Resolves an absolute count or a percentage of `total`, as upstream's
    /// `GetScaledValueFromIntOrPercent` does.
    ///
    /// An `Int` is returned unchanged. A string must be a decimal integer followed by `%`
    /// (an optional sign is allowed, as Go's `strconv.Atoi` allows it); it is scaled as
    /// `percent * total / 100`, rounded up when `round_up` and down otherwise. Any other string
    /// is an error.
    ///
    /// ```
    /// use kapi::IntOrString;
    ///
    /// assert_eq!(IntOrString::from("25%").scaled_value(10, true), Ok(3));
    /// assert_eq!(IntOrString::from("25%").scaled_value(10, false), Ok(2));
    /// assert_eq!(IntOrString::from(4).scaled_value(10, true), Ok(4));
    /// assert!(IntOrString::from("abc").scaled_value(10, true).is_err());
    /// ```
    pub fn scaled_value(&self, total: i32, round_up: bool) -> Result<i32, IntOrStringError> {
        let text = match self {
            Self::Int(i) => return Ok(*i),
            Self::String(s) => s,
        };
        let Some(number) = text.strip_suffix('%') else {
            return Err(IntOrStringError::NotPercent(text.clone()));
        };
        // Rust's integer parser takes exactly what `strconv.Atoi` takes: an optional sign and
        // at least one ASCII digit, no spaces, no underscores.
        let percent: i64 = number
            .parse()
            .map_err(|_| IntOrStringError::InvalidPercent(text.clone()))?;
        // Upstream computes in float64; doing the same keeps the rounding of large values equal.
        let exact = percent as f64 * f64::from(total) / 100.0;
        let rounded = if round_up {
            exact.ceil()
        } else {
            exact.floor()
        };
        if rounded.is_finite() && (f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&rounded) {
            // In range and integral, so the cast is exact.
            Ok(rounded as i32)
        } else {
            Err(IntOrStringError::OutOfRange {
                value: text.clone(),
                total,
            })
        }
    }
}

impl From<i32> for IntOrString {
    fn from(i: i32) -> Self {
        Self::Int(i)
    }
}

impl From<&str> for IntOrString {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl From<String> for IntOrString {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}

impl fmt::Display for IntOrString {
    /// The number or the string as it appears in JSON, without quotes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(i) => fmt::Display::fmt(i, f),
            Self::String(s) => f.pad(s),
        }
    }
}

impl Serialize for IntOrString {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Int(i) => s.serialize_i32(*i),
            Self::String(v) => s.serialize_str(v),
        }
    }
}

// Written by hand rather than `#[serde(untagged)]` so that a bad value gets a precise error
// ("invalid value: integer `3000000000`, expected an int32 or a string") instead of "data did
// not match any variant".
impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = IntOrString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an int32 or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IntOrString, E> {
                i32::try_from(v)
                    .map(IntOrString::Int)
                    .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IntOrString, E> {
                i32::try_from(v)
                    .map(IntOrString::Int)
                    .map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IntOrString, E> {
                Ok(IntOrString::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<IntOrString, E> {
                Ok(IntOrString::String(v))
            }
        }
        d.deserialize_any(Visitor)
    }
}
