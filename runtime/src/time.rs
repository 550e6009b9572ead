//! `Time` and `MicroTime`: the two timestamp formats of the Kubernetes API.
//!
//! Upstream writes `metav1.Time` as RFC 3339 in UTC with second precision
//! (`2024-01-02T03:04:05Z`) and `metav1.MicroTime` with exactly six fractional digits
//! (`2024-01-02T03:04:05.123456Z`). Both types here read the RFC 3339 profile that Go's
//! `time.Parse(time.RFC3339, ...)` accepts and reject everything else with a [`TimeError`]:
//!
//! * `YYYY-MM-DDTHH:MM:SS`, every field zero-padded, a four-digit year `0000`-`9999`, an upper-case
//!   `T`, seconds `00`-`59` (Go has no leap seconds), and a real calendar day (no `02-30`);
//! * an optional fraction of any length after `.` (or `,`, which Go also takes); digits past the
//!   ninth are ignored, and the value is then truncated to the type's precision;
//! * `Z` or a numeric offset `+HH:MM` / `-HH:MM` (hours `00`-`23`), normalised to UTC.
//!
//! Forms that a general ISO 8601 reader would take but Go rejects (lower-case `t`/`z`, a space
//! separator, missing seconds, `+0200`, bracketed zone names) are rejected here too, so that a
//! value kapi accepts is one every Kubernetes client accepts. Two quirks of Go's lenient fallback
//! parser, which Go's own strict RFC 3339 check flags as invalid, are rejected as well: a
//! one-digit hour (`T3:04:05`) and an offset of `+24:00`. Upstream reads `MicroTime` with a
//! layout that demands exactly six fractional digits; kapi is deliberately more lenient there and
//! reads any of the forms above, truncating to microseconds.
//!
//! Absent timestamps: upstream decodes JSON `null` into the zero `Time` and writes the zero `Time`
//! back as `null`. kapi has no zero value with that meaning: optional timestamp fields are
//! `Option<Time>` / `Option<MicroTime>`, so `null` (or a missing field) becomes `None` at the
//! field level, and a bare `Time` rejects `null` as it rejects any other non-string.
//!
//! Both types are backed by [`jiff::Timestamp`], whose range ends at `9999-12-30T22:00:00Z`
//! (and starts at `-9999-01-02T01:59:59Z`); a timestamp string beyond it is reported as an
//! error rather than clamped.

use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::Offset;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An error reading a timestamp: the input was not an RFC 3339 timestamp Go would accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid timestamp {input:?}: {reason}")]
pub struct TimeError {
    input: String,
    reason: &'static str,
}

impl TimeError {
    fn new(input: &str, reason: &'static str) -> Self {
        Self {
            input: input.to_owned(),
            reason,
        }
    }

    /// The text that failed to parse.
    pub fn input(&self) -> &str {
        &self.input
    }
}

const SHAPE: &str = "expected YYYY-MM-DDTHH:MM:SS[.fraction] followed by Z or ±HH:MM";
const NANOS_PER_SECOND: i128 = 1_000_000_000;
const NANOS_PER_MICRO: i128 = 1_000;

/// Reads the fixed-width decimal number in `bytes[range]`, or `None` if any byte is not a digit.
fn fixed_digits(bytes: &[u8], start: usize, len: usize) -> Option<u32> {
    let field = bytes.get(start..start + len)?;
    field.iter().try_fold(0u32, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0'))
    })
}

fn byte_is(bytes: &[u8], at: usize, want: u8) -> bool {
    bytes.get(at) == Some(&want)
}

/// Parses the RFC 3339 profile described in the module docs into an exact instant.
fn parse_rfc3339(input: &str) -> Result<Timestamp, TimeError> {
    let err = |reason| TimeError::new(input, reason);
    let b = input.as_bytes();

    let separators_ok = byte_is(b, 4, b'-')
        && byte_is(b, 7, b'-')
        && byte_is(b, 10, b'T')
        && byte_is(b, 13, b':')
        && byte_is(b, 16, b':');
    let fields = (
        fixed_digits(b, 0, 4),
        fixed_digits(b, 5, 2),
        fixed_digits(b, 8, 2),
        fixed_digits(b, 11, 2),
        fixed_digits(b, 14, 2),
        fixed_digits(b, 17, 2),
    );
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = fields
    else {
        return Err(err(SHAPE));
    };
    if !separators_ok {
        return Err(err(SHAPE));
    }
    if !(1..=12).contains(&month) {
        return Err(err("month out of range"));
    }
    if hour > 23 {
        return Err(err("hour out of range"));
    }
    if minute > 59 {
        return Err(err("minute out of range"));
    }
    if second > 59 {
        return Err(err("second out of range"));
    }

    let mut rest = b.get(19..).unwrap_or_default();

    // Go takes any number of fractional digits but only the first nine carry meaning.
    let mut nanos: u32 = 0;
    if let [b'.' | b',', digits @ ..] = rest
        && digits.first().is_some_and(u8::is_ascii_digit)
    {
        let count = digits.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut scale = 100_000_000;
        for &d in digits.iter().take(count.min(9)) {
            nanos += u32::from(d - b'0') * scale;
            scale /= 10;
        }
        rest = digits.get(count..).unwrap_or_default();
    }

    let offset_seconds: i32 = match rest {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (Some(oh), Some(om)) = (fixed_digits(rest, 1, 2), fixed_digits(rest, 4, 2)) else {
                return Err(err(SHAPE));
            };
            if oh > 23 || om > 59 {
                return Err(err("time zone offset out of range"));
            }
            // Both fields are at most two digits, so the product cannot overflow.
            let magnitude = (oh * 3600 + om * 60) as i32;
            if *sign == b'-' { -magnitude } else { magnitude }
        }
        _ => return Err(err(SHAPE)),
    };

    // All fields are range-checked above, so the narrowing casts below are lossless.
    let datetime = DateTime::new(
        year as i16,
        month as i8,
        day as i8,
        hour as i8,
        minute as i8,
        second as i8,
        nanos as i32,
    )
    .map_err(|_| err("day out of range for the month"))?;
    let offset =
        Offset::from_seconds(offset_seconds).map_err(|_| err("time zone offset out of range"))?;
    offset
        .to_timestamp(datetime)
        .map_err(|_| err("timestamp outside the supported range"))
}

/// Rounds `ts` down (towards the past, as Go's formatting does) to a multiple of `unit_ns`.
fn floor_to(ts: Timestamp, unit_ns: i128) -> Timestamp {
    let ns = ts.as_nanosecond();
    // Flooring moves towards Timestamp::MIN, which is itself a whole second, so this cannot
    // leave the supported range; the fallback only keeps the code panic-free.
    Timestamp::from_nanosecond(ns - ns.rem_euclid(unit_ns)).unwrap_or(ts)
}

/// Writes `ts` in UTC as `YYYY-MM-DDTHH:MM:SS`, then `.ffffff` when `micros`, then `Z`.
fn write_utc(f: &mut fmt::Formatter<'_>, ts: Timestamp, micros: bool) -> fmt::Result {
    let dt = Offset::UTC.to_datetime(ts);
    let year = i32::from(dt.year());
    // Years before 0000 only arise from a `jiff::Timestamp` converted in; they are written with
    // a sign (as Go does) and, like upstream, cannot be read back.
    if year < 0 {
        write!(f, "-{:04}", -year)?;
    } else {
        write!(f, "{year:04}")?;
    }
    write!(
        f,
        "-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )?;
    if micros {
        write!(f, ".{:06}", dt.subsec_nanosecond() / 1_000)?;
    }
    f.write_str("Z")
}

/// A timestamp with second precision (`metav1.Time`), e.g. `creationTimestamp`.
///
/// Always holds a whole number of seconds: converting from a finer [`Timestamp`] or parsing a
/// string with a fraction truncates towards the past, exactly as upstream's formatter drops the
/// fraction. Written as `2024-01-02T03:04:05Z`. `Default` is the Unix epoch (a placeholder for
/// required fields, not upstream's "zero time"; see the module docs on `null`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(Timestamp);

impl Time {
    /// `1970-01-01T00:00:00Z`.
    pub const UNIX_EPOCH: Time = Time(Timestamp::UNIX_EPOCH);

    /// The current time, truncated to whole seconds as it will be stored.
    pub fn now() -> Self {
        Self::from(Timestamp::now())
    }

    /// The underlying instant (always a whole second).
    pub fn timestamp(self) -> Timestamp {
        self.0
    }
}

impl From<Timestamp> for Time {
    /// Truncates to whole seconds: a `Time` never holds more precision than it can write.
    fn from(ts: Timestamp) -> Self {
        Self(floor_to(ts, NANOS_PER_SECOND))
    }
}

impl From<Time> for Timestamp {
    fn from(t: Time) -> Self {
        t.0
    }
}

impl From<MicroTime> for Time {
    /// Drops the microseconds.
    fn from(t: MicroTime) -> Self {
        Self::from(t.0)
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
        write_utc(f, self.0, false)
    }
}

/// A timestamp with microsecond precision (`metav1.MicroTime`), e.g. a lease's `renewTime`.
///
/// Always holds a whole number of microseconds (finer input is truncated towards the past) and
/// is written with exactly six fractional digits: `2024-01-02T03:04:05.123456Z`. `Default` is
/// the Unix epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MicroTime(Timestamp);

impl MicroTime {
    /// `1970-01-01T00:00:00.000000Z`.
    pub const UNIX_EPOCH: MicroTime = MicroTime(Timestamp::UNIX_EPOCH);

    /// The current time, truncated to whole microseconds as it will be stored.
    pub fn now() -> Self {
        Self::from(Timestamp::now())
    }

    /// The underlying instant (always a whole microsecond).
    pub fn timestamp(self) -> Timestamp {
        self.0
    }
}

impl From<Timestamp> for MicroTime {
    /// Truncates to whole microseconds.
    fn from(ts: Timestamp) -> Self {
        Self(floor_to(ts, NANOS_PER_MICRO))
    }
}

impl From<MicroTime> for Timestamp {
    fn from(t: MicroTime) -> Self {
        t.0
    }
}

impl From<Time> for MicroTime {
    /// Lossless: a whole second is a whole microsecond.
    fn from(t: Time) -> Self {
        Self(t.0)
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
        write_utc(f, self.0, true)
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

string_serde!(Time, "an RFC 3339 timestamp string");
string_serde!(MicroTime, "an RFC 3339 timestamp string");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_goes_towards_the_past_before_the_epoch() {
        let ts = Timestamp::new(-2, 500_000_000).unwrap(); // -1.5s
        assert_eq!(Time::from(ts).timestamp(), Timestamp::new(-2, 0).unwrap());
        assert_eq!(Time::from(ts).to_string(), "1969-12-31T23:59:58Z");
        let ts = Timestamp::new(0, -1).unwrap();
        assert_eq!(
            MicroTime::from(ts).to_string(),
            "1969-12-31T23:59:59.999999Z"
        );
    }

    #[test]
    fn negative_years_write_with_a_sign_and_do_not_panic() {
        let t = Time::from(Timestamp::MIN);
        assert!(t.to_string().starts_with("-9999-"), "{t}");
        assert!(t.to_string().parse::<Time>().is_err());
        let t = MicroTime::from(Timestamp::MAX);
        assert_eq!(t.to_string(), "9999-12-30T22:00:00.999999Z");
    }

    #[test]
    fn fixed_digits_rejects_non_digits_and_short_input() {
        assert_eq!(fixed_digits(b"2024", 0, 4), Some(2024));
        assert_eq!(fixed_digits(b"20a4", 0, 4), None);
        assert_eq!(fixed_digits(b"202", 0, 4), None);
        assert_eq!(fixed_digits("２0".as_bytes(), 0, 2), None);
    }
}
