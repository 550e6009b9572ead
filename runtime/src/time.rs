//! `Time` and `MicroTime`: the two timestamp formats of the Kubernetes API.
//!
//! Upstream writes `Time` as RFC 3339 in UTC with second precision (`2024-01-02T03:04:05Z`) and
//! `MicroTime` with exactly six fractional digits (`2024-01-02T03:04:05.123456Z`). Both read any
//! RFC 3339 timestamp, as Go's parser does, and reject everything else with an error.

use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An error reading a timestamp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid timestamp {input:?}: {reason}")]
pub struct TimeError {
    input: String,
    reason: String,
}

fn parse_rfc3339(input: &str) -> Result<Timestamp, TimeError> {
    input.parse::<Timestamp>().map_err(|e| TimeError {
        input: input.to_owned(),
        reason: e.to_string(),
    })
}

/// A timestamp with second precision (`metav1.Time`), e.g. `creationTimestamp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(Timestamp);

impl Time {
    /// The current time, truncated to whole seconds as it will be stored.
    pub fn now() -> Self {
        Self::from(Timestamp::now())
    }

    /// The underlying instant.
    pub fn timestamp(self) -> Timestamp {
        self.0
    }
}

impl From<Timestamp> for Time {
    /// Truncates to whole seconds: a `Time` never holds more precision than it can write.
    fn from(ts: Timestamp) -> Self {
        Self(Timestamp::from_second(ts.as_second()).unwrap_or(ts))
    }
}

impl FromStr for Time {
    type Err = TimeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_rfc3339(s).map(Self::from)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.strftime("%Y-%m-%dT%H:%M:%SZ"))
    }
}

/// A timestamp with microsecond precision (`metav1.MicroTime`), e.g. a lease's `renewTime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MicroTime(Timestamp);

impl MicroTime {
    /// The current time, truncated to whole microseconds as it will be stored.
    pub fn now() -> Self {
        Self::from(Timestamp::now())
    }

    /// The underlying instant.
    pub fn timestamp(self) -> Timestamp {
        self.0
    }
}

impl From<Timestamp> for MicroTime {
    /// Truncates to whole microseconds.
    fn from(ts: Timestamp) -> Self {
        Self(Timestamp::from_microsecond(ts.as_microsecond()).unwrap_or(ts))
    }
}

impl FromStr for MicroTime {
    type Err = TimeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_rfc3339(s).map(Self::from)
    }
}

impl fmt::Display for MicroTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.strftime("%Y-%m-%dT%H:%M:%S.%6fZ"))
    }
}

macro_rules! string_serde {
    ($ty:ty, $what:literal) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$ty, E> {
                        v.parse().map_err(E::custom)
                    }
                }
                d.deserialize_str(Visitor)
            }
        }
    };
}

string_serde!(Time, "an RFC 3339 timestamp");
string_serde!(MicroTime, "an RFC 3339 timestamp");
