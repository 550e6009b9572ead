//! `Duration`: `metav1.Duration`, a span of time written as a Go duration string.
//!
//! On the wire a duration is a JSON string in the syntax of Go's `time.ParseDuration`
//! (`"1h2m3.5s"`, `"300ms"`, `"-1.5h"`, `"0s"`) and it is written back in the exact form of Go's
//! `Duration.String()`, so a value read from a Go client and written again is byte-for-byte what
//! upstream would send. This module owns that grammar, that formatting, and the conversions to and
//! from [`std::time::Duration`].
//!
//! The value is a signed count of nanoseconds in an `i64`, like Go's, so it spans about ±292
//! years and can be negative. As with [`Time`](crate::Time), an optional duration field is
//! `Option<Duration>` and JSON `null` maps to `None` there; a bare `Duration` rejects `null` (as
//! upstream rejects it: Go leaves the string empty and `ParseDuration("")` fails).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

const NANOS_PER_MICRO: u64 = 1_000;
const NANOS_PER_MILLI: u64 = 1_000_000;
const NANOS_PER_SECOND: u64 = 1_000_000_000;
/// The magnitude of `i64::MIN`: the largest count a negative duration may accumulate.
const MAX_MAGNITUDE: u64 = 1 << 63;

/// An error reading or converting a [`Duration`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// The text is not a Go duration, or its value does not fit in `i64` nanoseconds.
    #[error("invalid duration {0:?}")]
    Invalid(String),
    /// A number with no unit after it, e.g. `"3"` (only a bare `"0"` may omit the unit).
    #[error("missing unit in duration {0:?}")]
    MissingUnit(String),
    /// A unit other than `ns`, `us`, `µs`, `μs`, `ms`, `s`, `m` or `h`, e.g. `"1d"`.
    #[error("unknown unit {unit:?} in duration {input:?}")]
    UnknownUnit {
        /// The unrecognised unit.
        unit: String,
        /// The whole input.
        input: String,
    },
    /// A negative duration cannot become a [`std::time::Duration`].
    #[error("duration {0} is negative and has no std::time::Duration equivalent")]
    Negative(Duration),
    /// A [`std::time::Duration`] longer than `i64::MAX` nanoseconds (about 292 years).
    #[error("duration of {0:?} is longer than the 2562047h47m16.854775807s a Go duration can hold")]
    TooLong(std::time::Duration),
}

/// A span of time in signed nanoseconds (`metav1.Duration`), written as a Go duration string.
///
/// ```
/// use kapi::Duration;
///
/// let d: Duration = "1h2m3.5s".parse().unwrap();
/// assert_eq!(d.as_nanos(), 3_723_500_000_000);
/// assert_eq!(d.to_string(), "1h2m3.5s");
/// assert_eq!("-90s".parse::<Duration>().unwrap().to_string(), "-1m30s");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(i64);

impl Duration {
    /// The empty duration, written `0s`.
    pub const ZERO: Duration = Duration(0);
    /// The longest duration, `2562047h47m16.854775807s`.
    pub const MAX: Duration = Duration(i64::MAX);
    /// The most negative duration, `-2562047h47m16.854775808s`.
    pub const MIN: Duration = Duration(i64::MIN);

    /// A duration of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        Self(nanos)
    }

    /// A duration of `secs` seconds, or `None` if that overflows `i64` nanoseconds.
    pub const fn from_secs(secs: i64) -> Option<Self> {
        match secs.checked_mul(NANOS_PER_SECOND as i64) {
            Some(nanos) => Some(Self(nanos)),
            None => None,
        }
    }

    /// The signed number of nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Whether the duration is below zero.
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// The equivalent [`std::time::Duration`], or `None` if this duration is negative.
    pub const fn to_std(self) -> Option<std::time::Duration> {
        if self.0 < 0 {
            None
        } else {
            Some(std::time::Duration::from_nanos(self.0.unsigned_abs()))
        }
    }
}

impl TryFrom<Duration> for std::time::Duration {
    type Error = DurationError;
    fn try_from(d: Duration) -> Result<Self, Self::Error> {
        d.to_std().ok_or(DurationError::Negative(d))
    }
}

impl TryFrom<std::time::Duration> for Duration {
    type Error = DurationError;
    fn try_from(d: std::time::Duration) -> Result<Self, Self::Error> {
        i64::try_from(d.as_nanos())
            .map(Self)
            .map_err(|_| DurationError::TooLong(d))
    }
}

/// Nanoseconds per unit, for the unit names Go's `time.ParseDuration` knows.
fn unit_nanos(unit: &[u8]) -> Option<u64> {
    Some(match unit {
        b"ns" => 1,
        // "µs" is U+00B5 MICRO SIGN, "μs" is U+03BC GREEK SMALL LETTER MU; Go takes both.
        b"us" | b"\xC2\xB5s" | b"\xCE\xBCs" => NANOS_PER_MICRO,
        b"ms" => NANOS_PER_MILLI,
        b"s" => NANOS_PER_SECOND,
        b"m" => 60 * NANOS_PER_SECOND,
        b"h" => 3600 * NANOS_PER_SECOND,
        _ => return None,
    })
}

/// Consumes leading ASCII digits as an integer; `None` when the value exceeds `1 << 63`.
fn leading_int(s: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    let mut len = 0;
    for &c in s.iter().take_while(|c| c.is_ascii_digit()) {
        value = value
            .checked_mul(10)?
            .checked_add(u64::from(c - b'0'))
            .filter(|v| *v <= MAX_MAGNITUDE)?;
        len += 1;
    }
    Some((value, len))
}

/// Consumes leading ASCII digits of a fraction as `(numerator, 10^kept digits, consumed)`.
///
/// Like Go, digits past what fits in the numerator are consumed but ignored: they are below a
/// nanosecond for any unit.
fn leading_fraction(s: &[u8]) -> (u64, f64, usize) {
    let mut value: u64 = 0;
    let mut scale = 1.0_f64;
    let mut overflowed = false;
    let mut len = 0;
    for &c in s.iter().take_while(|c| c.is_ascii_digit()) {
        len += 1;
        if overflowed {
            continue;
        }
        match value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .filter(|v| *v <= MAX_MAGNITUDE)
        {
            Some(v) if value <= (MAX_MAGNITUDE - 1) / 10 => {
                value = v;
                scale *= 10.0;
            }
            _ => overflowed = true,
        }
    }
    (value, scale, len)
}

/// Parses Go's duration grammar: `[-+]?([0-9]*(\.[0-9]*)?unit)+`, or a bare signed `0`.
fn parse(input: &str) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid(input.to_owned());
    let mut s = input.as_bytes();
    let mut negative = false;
    if let [sign @ (b'-' | b'+'), rest @ ..] = s {
        negative = *sign == b'-';
        s = rest;
    }
    if s == b"0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(invalid());
    }

    let mut total: u64 = 0;
    while let Some(&first) = s.first() {
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let (whole, whole_len) = leading_int(s).ok_or_else(invalid)?;
        s = s.get(whole_len..).unwrap_or_default();

        let (mut frac, mut scale, mut frac_len) = (0, 1.0, 0);
        if let [b'.', rest @ ..] = s {
            (frac, scale, frac_len) = leading_fraction(rest);
            s = rest.get(frac_len..).unwrap_or_default();
        }
        if whole_len == 0 && frac_len == 0 {
            // A lone "." as in ".s".
            return Err(invalid());
        }

        let unit_len = s
            .iter()
            .position(|&c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(input.to_owned()));
        }
        let (unit_text, rest) = s.split_at(unit_len);
        s = rest;
        let unit = unit_nanos(unit_text).ok_or_else(|| DurationError::UnknownUnit {
            unit: String::from_utf8_lossy(unit_text).into_owned(),
            input: input.to_owned(),
        })?;

        let mut value = whole
            .checked_mul(unit)
            .filter(|v| *v <= MAX_MAGNITUDE)
            .ok_or_else(invalid)?;
        if frac > 0 {
            // Go computes the fractional part in f64 (exact to the nanosecond for fractions of
            // an hour); doing the same keeps every parse bit-identical to upstream.
            let part = (frac as f64 * (unit as f64 / scale)) as u64;
            value = value
                .checked_add(part)
                .filter(|v| *v <= MAX_MAGNITUDE)
                .ok_or_else(invalid)?;
        }
        total = total
            .checked_add(value)
            .filter(|v| *v <= MAX_MAGNITUDE)
            .ok_or_else(invalid)?;
    }

    if negative {
        // `total` is at most 2^63, whose negation is exactly i64::MIN.
        Ok(Duration(0_i64.wrapping_sub_unsigned(total)))
    } else {
        i64::try_from(total).map(Duration).map_err(|_| invalid())
    }
}

impl FromStr for Duration {
    type Err = DurationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

/// Writes `int`, then `.` and the `prec`-digit fraction `frac` without trailing zeros (nothing at
/// all when `frac` is zero).
fn write_decimal(
    f: &mut fmt::Formatter<'_>,
    int: u64,
    mut frac: u64,
    mut prec: usize,
) -> fmt::Result {
    write!(f, "{int}")?;
    if frac == 0 {
        return Ok(());
    }
    while frac.is_multiple_of(10) {
        frac /= 10;
        prec -= 1;
    }
    write!(f, ".{frac:0prec$}")
}

impl fmt::Display for Duration {
    /// Formats exactly as Go's `Duration.String()`: `1h2m3.5s`, `1.5µs`, `0s`, `-2m0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let u = self.0.unsigned_abs();
        if self.0 < 0 {
            f.write_str("-")?;
        }
        if u < NANOS_PER_SECOND {
            // Below a second Go switches to the largest unit that keeps an integer part.
            return match u {
                0 => f.write_str("0s"),
                1..NANOS_PER_MICRO => write!(f, "{u}ns"),
                NANOS_PER_MICRO..NANOS_PER_MILLI => {
                    write_decimal(f, u / NANOS_PER_MICRO, u % NANOS_PER_MICRO, 3)?;
                    f.write_str("µs")
                }
                _ => {
                    write_decimal(f, u / NANOS_PER_MILLI, u % NANOS_PER_MILLI, 6)?;
                    f.write_str("ms")
                }
            };
        }
        let secs = u / NANOS_PER_SECOND;
        let (hours, minutes) = (secs / 3600, secs / 60 % 60);
        // Go stops at hours (days vary in length) and, once a larger unit is shown, writes
        // every smaller one, zero or not: `1h0m0s`.
        if hours > 0 {
            write!(f, "{hours}h")?;
        }
        if secs >= 60 {
            write!(f, "{minutes}m")?;
        }
        write_decimal(f, secs % 60, u % NANOS_PER_SECOND, 9)?;
        f.write_str("s")
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Go duration string such as \"1h2m3s\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NS: i64 = 1;
    const US: i64 = 1_000;
    const MS: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;

    fn parsed(s: &str) -> Result<i64, DurationError> {
        s.parse::<Duration>().map(Duration::as_nanos)
    }

    /// Go's own `parseDurationTests` table (src/time/time_test.go).
    #[test]
    fn parses_go_examples() {
        let table: &[(&str, i64)] = &[
            ("0", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            ("10ns", 10 * NS),
            ("11us", 11 * US),
            ("12µs", 12 * US),
            ("12μs", 12 * US),
            ("13ms", 13 * MS),
            ("14s", 14 * S),
            ("15m", 15 * M),
            ("16h", 16 * H),
            ("3h30m", 3 * H + 30 * M),
            ("10.5s4m", 4 * M + 10 * S + 500 * MS),
            ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
            (
                "1h2m3s4ms5us6ns",
                H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS,
            ),
            ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 20 * M),
            ("9007199254740993ns", (1 << 53) + 1),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("0.100000000000000000000h", 6 * M),
            ("0.830103483285477580700h", 49 * M + 48 * S + 372_539_827),
            // The forms the brief and the Kubernetes docs use.
            ("1h2m3.5s", H + 2 * M + 3 * S + 500 * MS),
            ("300ms", 300 * MS),
            ("-1.5h", -(H + 30 * M)),
            ("0s", 0),
        ];
        for &(input, want) in table {
            assert_eq!(parsed(input), Ok(want), "parsing {input:?}");
        }
    }

    /// Go's `parseDurationErrorTests`, plus the error kind we report for each.
    #[test]
    fn rejects_go_error_examples() {
        let invalid = |s: &str| DurationError::Invalid(s.to_owned());
        let missing = |s: &str| DurationError::MissingUnit(s.to_owned());
        let unknown = |u: &str, s: &str| DurationError::UnknownUnit {
            unit: u.to_owned(),
            input: s.to_owned(),
        };
        let table: Vec<(&str, DurationError)> = vec![
            ("", invalid("")),
            ("3", missing("3")),
            ("-", invalid("-")),
            ("s", invalid("s")),
            (".", invalid(".")),
            ("-.", invalid("-.")),
            (".s", invalid(".s")),
            ("+.s", invalid("+.s")),
            ("1d", unknown("d", "1d")),
            ("\u{FFFD}", invalid("\u{FFFD}")),
            (
                "\u{FFFD} hello \u{FFFD} world",
                invalid("\u{FFFD} hello \u{FFFD} world"),
            ),
            ("1h 2m", unknown("h ", "1h 2m")),
            ("1H", unknown("H", "1H")),
            ("1.5", missing("1.5")),
            ("--1s", invalid("--1s")),
            ("1s-1s", unknown("s-", "1s-1s")),
            ("9223372036854775810ns", invalid("9223372036854775810ns")),
            ("9223372036854775808ns", invalid("9223372036854775808ns")),
            ("-9223372036854775809ns", invalid("-9223372036854775809ns")),
            ("9223372036854776us", invalid("9223372036854776us")),
            ("3000000h", invalid("3000000h")),
            ("9223372036854775.808us", invalid("9223372036854775.808us")),
            (
                "9223372036854ms775us808ns",
                invalid("9223372036854ms775us808ns"),
            ),
            // Go wraps its u64 accumulator here and returns 0; an overflow is an error.
            (
                "9223372036854775808ns9223372036854775808ns",
                invalid("9223372036854775808ns9223372036854775808ns"),
            ),
        ];
        for (input, want) in table {
            assert_eq!(parsed(input), Err(want), "parsing {input:?}");
        }
    }

    #[test]
    fn error_messages_quote_input_and_unit() {
        assert_eq!(
            parsed("1d").unwrap_err().to_string(),
            r#"unknown unit "d" in duration "1d""#
        );
        assert_eq!(
            parsed("3").unwrap_err().to_string(),
            r#"missing unit in duration "3""#
        );
        assert_eq!(
            parsed("").unwrap_err().to_string(),
            r#"invalid duration """#
        );
    }

    /// Go's `durationTests` table, each value also negated, plus Kubernetes-typical values.
    #[test]
    fn formats_like_go() {
        let table: &[(i64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (1100, "1.1µs"),
            (2200 * US, "2.2ms"),
            (3300 * MS, "3.3s"),
            (4 * M + 5 * S, "4m5s"),
            (4 * M + 5001 * MS, "4m5.001s"),
            (5 * H + 6 * M + 7001 * MS, "5h6m7.001s"),
            (8 * M + 1, "8m0.000000001s"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (H, "1h0m0s"),
            (2 * M, "2m0s"),
            (H + 2 * M + 3 * S + 500 * MS, "1h2m3.5s"),
            (1500, "1.5µs"),
            (999, "999ns"),
            (1000, "1µs"),
            (999_999_999, "999.999999ms"),
            (S, "1s"),
            (90 * S, "1m30s"),
            (100 * H, "100h0m0s"),
        ];
        for &(nanos, want) in table {
            assert_eq!(Duration::from_nanos(nanos).to_string(), want);
            if nanos > 0 {
                assert_eq!(Duration::from_nanos(-nanos).to_string(), format!("-{want}"));
            }
        }
        assert_eq!(Duration::MIN.to_string(), "-2562047h47m16.854775808s");
    }

    #[test]
    fn serde_is_a_go_duration_string() {
        let d: Duration = serde_json::from_str(r#""1h2m3.5s""#).unwrap();
        assert_eq!(d.as_nanos(), H + 2 * M + 3 * S + 500 * MS);
        assert_eq!(serde_json::to_string(&d).unwrap(), r#""1h2m3.5s""#);
        assert_eq!(
            serde_json::to_string(&Duration::from_nanos(-2 * M)).unwrap(),
            r#""-2m0s""#
        );
        for bad in ["5", "null", "true", "\"5d\"", "\"\"", "{}", "[]"] {
            assert!(serde_json::from_str::<Duration>(bad).is_err(), "{bad}");
        }
        let none: Option<Duration> = serde_json::from_str("null").unwrap();
        assert_eq!(none, None);
    }

    #[test]
    fn std_conversions() {
        let d = Duration::from_nanos(1_500);
        assert_eq!(d.to_std(), Some(std::time::Duration::from_nanos(1_500)));
        assert_eq!(Duration::ZERO.to_std(), Some(std::time::Duration::ZERO));
        assert_eq!(Duration::from_nanos(-1).to_std(), None);
        assert_eq!(
            std::time::Duration::try_from(Duration::from_nanos(-1)),
            Err(DurationError::Negative(Duration::from_nanos(-1)))
        );
        assert_eq!(
            Duration::try_from(std::time::Duration::from_secs(90)),
            Ok(Duration::from_nanos(90 * S))
        );
        let too_long = std::time::Duration::from_nanos(u64::MAX);
        assert_eq!(
            Duration::try_from(too_long),
            Err(DurationError::TooLong(too_long))
        );
        assert_eq!(
            Duration::try_from(std::time::Duration::from_nanos(i64::MAX as u64)),
            Ok(Duration::MAX)
        );
        assert_eq!(Duration::from_secs(2), Some(Duration::from_nanos(2 * S)));
        assert_eq!(Duration::from_secs(i64::MAX), None);
        assert!(Duration::from_nanos(-1).is_negative());
        assert!(!Duration::ZERO.is_negative());
    }

    #[test]
    fn orders_by_length() {
        let mut v: Vec<Duration> = ["1h", "-1s", "0s", "59m", "1ns"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        v.sort();
        let shown: Vec<String> = v.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["-1s", "0s", "1ns", "59m0s", "1h0m0s"]);
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(nanos in any::<i64>()) {
            let d = Duration::from_nanos(nanos);
            prop_assert_eq!(d.to_string().parse::<Duration>(), Ok(d));
        }

        #[test]
        fn composite_strings_parse_to_their_sum(
            h in 0i64..10_000, m in 0i64..60, s in 0i64..60, ms in 0i64..1000, neg: bool,
        ) {
            let input = format!("{}{h}h{m}m{s}s{ms}ms", if neg { "-" } else { "" });
            let magnitude = h * H + m * M + s * S + ms * MS;
            prop_assert_eq!(parsed(&input), Ok(if neg { -magnitude } else { magnitude }));
        }

        #[test]
        fn arbitrary_text_never_panics(input in "\\PC{0,24}") {
            let _ = input.parse::<Duration>();
        }
    }
}
