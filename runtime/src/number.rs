//! `Number`: a JSON number that writes back as it was read, for schemas of `type: number`.
//!
//! An `f64` forgets whether a value was written as an integer: serde writes `100` read into an
//! `f64` back as `100.0`, so a custom resource read and written back unchanged would change
//! its text (custom resources are stored verbatim upstream, and GitOps tools compare text).
//! Go's encoder writes a whole `float64` without a fraction (`100`), so the built-ins'
//! `type: number` fields come back as written too. `Number` keeps the integer or float form
//! it was read in (a `serde_json::Number`, with no workspace-wide feature) and compares by
//! value: `Number::from(1) == Number::from_f64(1.0).unwrap()`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A JSON number kept in the form it was read in (integer or float).
#[derive(Clone)]
pub struct Number(serde_json::Number);

impl Number {
    /// A float; `None` for NaN and the infinities, which JSON cannot write.
    pub fn from_f64(value: f64) -> Option<Number> {
        serde_json::Number::from_f64(value).map(Number)
    }

    /// The value as an `f64` (the nearest one for integers beyond 2⁵³).
    pub fn as_f64(&self) -> f64 {
        self.0.as_f64().unwrap_or_default()
    }

    /// The value as an `i64`, if it was written as an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        self.0.as_i64()
    }

    /// Whether the value was written as an integer.
    pub fn is_integer(&self) -> bool {
        self.0.is_i64() || self.0.is_u64()
    }

    /// The `serde_json::Number` it holds.
    pub fn as_json(&self) -> &serde_json::Number {
        &self.0
    }
}

impl Default for Number {
    /// Zero, written `0`.
    fn default() -> Self {
        Number(0.into())
    }
}

impl PartialEq for Number {
    /// By value: `1` equals `1.0`.
    fn eq(&self, other: &Self) -> bool {
        match (self.0.as_i64(), other.0.as_i64()) {
            (Some(a), Some(b)) => a == b,
            _ => match (self.0.as_u64(), other.0.as_u64()) {
                (Some(a), Some(b)) => a == b,
                _ => self.as_f64() == other.as_f64(),
            },
        }
    }
}

impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Number({})", self.0)
    }
}

impl fmt::Display for Number {
    /// As JSON writes it: `100`, `0.5`, `1.5e+300`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Number {
            fn from(value: $t) -> Self {
                Number(value.into())
            }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl From<serde_json::Number> for Number {
    fn from(value: serde_json::Number) -> Self {
        Number(value)
    }
}

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde_json::Number::deserialize(deserializer).map(Number)
    }
}

#[cfg(test)]
mod tests {
    use super::Number;

    #[test]
    fn keeps_integer_and_float_forms() {
        for text in ["100", "-3", "0.5", "18446744073709551615", "1.5e+300"] {
            let n: Number = serde_json::from_str(text).expect(text);
            assert_eq!(serde_json::to_string(&n).expect("writes"), text);
        }
        let f64_text = serde_json::to_string(&100.0_f64).expect("writes");
        assert_eq!(f64_text, "100.0", "what an f64 field would write");
        assert_eq!(Number::from(1), Number::from_f64(1.0).expect("finite"));
        assert_eq!(Number::default().to_string(), "0");
        assert!(serde_json::from_str::<Number>("\"1\"").is_err());
        assert!(Number::from_f64(f64::NAN).is_none());
    }
}
