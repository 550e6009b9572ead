//! Behaviour of `kapi::Time` and `kapi::MicroTime`: what they read, what they write, and that
//! the two agree with each other and with upstream's wire format.

use jiff::Timestamp;
use jiff::tz::Offset;
use kapi::time::TimeError;
use kapi::{MicroTime, Time};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

fn ts(s: &str) -> Timestamp {
    s.parse().expect("test timestamps are valid")
}

/// (input, what `Time` writes back, what `MicroTime` writes back)
const VALID: &[(&str, &str, &str)] = &[
    // What upstream emits.
    (
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05.000000Z",
    ),
    (
        "2024-01-02T03:04:05.123456Z",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05.123456Z",
    ),
    (
        "2020-02-08T11:37:35Z",
        "2020-02-08T11:37:35Z",
        "2020-02-08T11:37:35.000000Z",
    ),
    // RFC3339Nano as Go's own clients write it: truncated, never rounded.
    (
        "2024-01-02T03:04:05.999999999Z",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05.999999Z",
    ),
    (
        "2024-01-02T03:04:05.5Z",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05.500000Z",
    ),
    // Offsets are normalised to UTC, across day, month and year boundaries.
    (
        "2024-01-02T03:04:05+02:00",
        "2024-01-02T01:04:05Z",
        "2024-01-02T01:04:05.000000Z",
    ),
    (
        "2024-01-01T01:00:00+02:30",
        "2023-12-31T22:30:00Z",
        "2023-12-31T22:30:00.000000Z",
    ),
    (
        "2024-02-28T23:30:00-01:00",
        "2024-02-29T00:30:00Z",
        "2024-02-29T00:30:00.000000Z",
    ),
    (
        "2024-01-02T03:04:05.25-00:00",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05.250000Z",
    ),
    (
        "2024-01-02T03:04:05+00:00",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05.000000Z",
    ),
    (
        "2024-06-30T12:00:00-23:59",
        "2024-07-01T11:59:00Z",
        "2024-07-01T11:59:00.000000Z",
    ),
    // Go takes a comma before the fraction, and any number of fractional digits.
    (
        "2024-01-02T03:04:05,5Z",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05.500000Z",
    ),
    (
        "2024-01-02T03:04:05.1234567891234Z",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05.123456Z",
    ),
    // Leap day, extremes of the four-digit year.
    (
        "2024-02-29T00:00:00Z",
        "2024-02-29T00:00:00Z",
        "2024-02-29T00:00:00.000000Z",
    ),
    (
        "2000-02-29T23:59:59Z",
        "2000-02-29T23:59:59Z",
        "2000-02-29T23:59:59.000000Z",
    ),
    (
        "0001-01-01T00:00:00Z",
        "0001-01-01T00:00:00Z",
        "0001-01-01T00:00:00.000000Z",
    ),
    (
        "0000-03-01T00:00:00Z",
        "0000-03-01T00:00:00Z",
        "0000-03-01T00:00:00.000000Z",
    ),
    (
        "1969-12-31T23:59:59.5Z",
        "1969-12-31T23:59:59Z",
        "1969-12-31T23:59:59.500000Z",
    ),
    (
        "9999-12-30T21:59:59Z",
        "9999-12-30T21:59:59Z",
        "9999-12-30T21:59:59.000000Z",
    ),
];

#[test]
fn reads_valid_timestamps_and_writes_them_in_utc() {
    for &(input, time_out, micro_out) in VALID {
        let t: Time = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(t.to_string(), time_out, "Time from {input}");
        let m: MicroTime = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(m.to_string(), micro_out, "MicroTime from {input}");
    }
}

const INVALID: &[&str] = &[
    "",
    "yesterday",
    "2024-01-01",
    "2024-13-01T00:00:00Z",
    "2024-00-10T00:00:00Z",
    "2024-02-30T00:00:00Z",
    "2023-02-29T00:00:00Z",
    "2024-04-31T00:00:00Z",
    "2024-01-00T00:00:00Z",
    "2024-01-32T00:00:00Z",
    "2024-01-01T24:00:00Z",
    "2024-01-01T00:60:00Z",
    // Go has no leap seconds.
    "2016-12-31T23:59:60Z",
    // No zone, or a zone Go does not read.
    "2024-01-01T00:00:00",
    "2024-01-01T00:00:00+0200",
    "2024-01-01T00:00:00+02",
    "2024-01-01T00:00:00+02:00:00",
    "2024-01-01T00:00:00+24:00",
    "2024-01-01T00:00:00+02:60",
    "2024-01-01T00:00:00Z[UTC]",
    "2024-01-01T00:00:00+02:00[Europe/Paris]",
    "2024-01-01T00:00:00 Z",
    "2024-01-01T00:00:00ZZ",
    // Lower case, other separators, missing or short fields.
    "2024-01-01t00:00:00Z",
    "2024-01-01T00:00:00z",
    "2024-01-01 00:00:00Z",
    "2024-01-01T00:00Z",
    "2024-1-01T00:00:00Z",
    "2024-01-01T0:00:00Z",
    "24-01-01T00:00:00Z",
    "+2024-01-01T00:00:00Z",
    "-0001-01-01T00:00:00Z",
    "+002024-01-01T00:00:00Z",
    "20240101T000000Z",
    // Fraction without digits, or digits without a separator.
    "2024-01-01T00:00:00.Z",
    "2024-01-01T00:00:00.",
    "2024-01-01T00:00:00123Z",
    // Surrounding whitespace and non-ASCII digits.
    " 2024-01-01T00:00:00Z",
    "2024-01-01T00:00:00Z ",
    "２０２４-01-01T00:00:00Z",
    "2024-01-01T00:00:0٥Z",
    // A valid RFC 3339 instant that jiff's range cannot hold.
    "9999-12-31T23:59:59Z",
];

#[test]
fn rejects_invalid_timestamps_with_an_error() {
    for &input in INVALID {
        let err: TimeError = input.parse::<Time>().expect_err(input);
        assert_eq!(err.input(), input);
        assert!(
            err.to_string()
                .starts_with(&format!("invalid timestamp {input:?}: ")),
            "{err}"
        );
        assert!(
            input.parse::<MicroTime>().is_err(),
            "MicroTime accepted {input:?}"
        );
    }
}

#[test]
fn errors_say_what_is_wrong() {
    let reason = |s: &str| s.parse::<Time>().unwrap_err().to_string();
    assert!(reason("2024-13-01T00:00:00Z").ends_with("month out of range"));
    assert!(reason("2024-02-30T00:00:00Z").ends_with("day out of range for the month"));
    assert!(reason("2024-01-01T00:00:00+25:00").ends_with("time zone offset out of range"));
    assert!(reason("yesterday").contains("expected YYYY-MM-DDTHH:MM:SS"));
    assert!(reason("9999-12-31T23:59:59Z").ends_with("outside the supported range"));
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Holder {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    creation_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    renew_time: Option<MicroTime>,
}

#[test]
fn serde_reads_and_writes_json_strings() {
    let json = r#"{"creationTimestamp":"2024-01-02T03:04:05+01:00","renewTime":"2024-01-02T03:04:05.123456789Z"}"#;
    let h: Holder = serde_json::from_str(json).unwrap();
    assert_eq!(
        h.creation_timestamp,
        Some(ts("2024-01-02T02:04:05Z").into())
    );
    assert_eq!(
        serde_json::to_string(&h).unwrap(),
        r#"{"creationTimestamp":"2024-01-02T02:04:05Z","renewTime":"2024-01-02T03:04:05.123456Z"}"#
    );
}

#[test]
fn null_and_absent_are_none_at_the_field_level() {
    let h: Holder = serde_json::from_str(r#"{"creationTimestamp":null}"#).unwrap();
    assert_eq!(h.creation_timestamp, None);
    let h: Holder = serde_json::from_str("{}").unwrap();
    assert_eq!(
        h,
        Holder {
            creation_timestamp: None,
            renew_time: None
        }
    );
    assert_eq!(serde_json::to_string(&h).unwrap(), "{}");
}

#[test]
fn serde_rejects_non_strings_and_bad_strings() {
    for bad in [
        "null",
        "0",
        "1704164645",
        "true",
        "{}",
        "[]",
        r#"["2024-01-02T03:04:05Z"]"#,
        r#""2024-13-01T00:00:00Z""#,
        r#""2024-01-01""#,
    ] {
        assert!(
            serde_json::from_str::<Time>(bad).is_err(),
            "Time accepted {bad}"
        );
        assert!(
            serde_json::from_str::<MicroTime>(bad).is_err(),
            "MicroTime accepted {bad}"
        );
    }
    let err = serde_json::from_str::<Time>("5").unwrap_err().to_string();
    assert!(
        err.contains("expected an RFC 3339 timestamp string"),
        "{err}"
    );
    let err = serde_json::from_str::<Holder>(r#"{"creationTimestamp":"2024-02-30T00:00:00Z"}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("day out of range"), "{err}");
}

#[test]
fn conversions_truncate_to_the_type_precision() {
    let fine = ts("2024-01-02T03:04:05.987654321Z");
    assert_eq!(Time::from(fine).timestamp(), ts("2024-01-02T03:04:05Z"));
    assert_eq!(
        MicroTime::from(fine).timestamp(),
        ts("2024-01-02T03:04:05.987654Z")
    );
    assert_eq!(
        Timestamp::from(Time::from(fine)),
        ts("2024-01-02T03:04:05Z")
    );
    assert_eq!(
        Timestamp::from(MicroTime::from(fine)),
        ts("2024-01-02T03:04:05.987654Z")
    );
    assert_eq!(Time::from(MicroTime::from(fine)), Time::from(fine));
    assert_eq!(
        MicroTime::from(Time::from(fine)).to_string(),
        "2024-01-02T03:04:05.000000Z"
    );
    assert_eq!(Time::UNIX_EPOCH.to_string(), "1970-01-01T00:00:00Z");
    assert_eq!(
        MicroTime::UNIX_EPOCH.to_string(),
        "1970-01-01T00:00:00.000000Z"
    );
    assert_eq!(Time::default(), Time::UNIX_EPOCH);
}

#[test]
fn now_is_truncated_and_current() {
    let before = Timestamp::now();
    let t = Time::now();
    let m = MicroTime::now();
    let after = Timestamp::now();
    assert_eq!(t.timestamp().subsec_nanosecond(), 0);
    assert_eq!(m.timestamp().subsec_nanosecond() % 1_000, 0);
    assert!(t.timestamp() <= after && before.as_second() <= t.timestamp().as_second());
    assert!(m.timestamp() <= after && before.as_microsecond() <= m.timestamp().as_microsecond());
}

#[test]
fn orders_chronologically_not_by_offset_text() {
    let mut times: Vec<Time> = [
        "2024-01-01T00:30:00+01:00", // 23:30 the day before
        "2024-01-01T00:00:00Z",
        "2023-12-31T23:45:00Z",
        "2023-12-31T23:00:00-00:30",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    times.sort();
    let shown: Vec<String> = times.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "2023-12-31T23:30:00Z",
            "2023-12-31T23:30:00Z",
            "2023-12-31T23:45:00Z",
            "2024-01-01T00:00:00Z",
        ]
    );
    let a: MicroTime = "2024-01-01T00:00:00.000001Z".parse().unwrap();
    let b: MicroTime = "2024-01-01T00:00:00.000002Z".parse().unwrap();
    assert!(a < b);
    assert_eq!(Time::from(a), Time::from(b));
}

/// Timestamps whose UTC year is 0000..=9999 and that jiff can hold: the range both types
/// promise to write and read back.
fn in_range() -> impl Strategy<Value = Timestamp> {
    let lo = ts("0000-01-01T00:00:00Z").as_second();
    let hi = Timestamp::MAX.as_second();
    (lo..hi, 0..1_000_000_000i32)
        .prop_map(|(s, n)| Timestamp::new(s, n).expect("in range by construction"))
}

proptest! {
    #[test]
    fn time_round_trips_at_second_precision(t in in_range()) {
        let time = Time::from(t);
        let text = time.to_string();
        prop_assert_eq!(text.len(), 20);
        prop_assert_eq!(text.parse::<Time>(), Ok(time));
        let dropped = t.as_nanosecond() - time.timestamp().as_nanosecond();
        prop_assert!((0..1_000_000_000).contains(&dropped), "dropped {}ns", dropped);
        let json = serde_json::to_string(&time).unwrap();
        prop_assert_eq!(serde_json::from_str::<Time>(&json).unwrap(), time);
    }

    #[test]
    fn micro_time_round_trips_at_microsecond_precision(t in in_range()) {
        let micro = MicroTime::from(t);
        let text = micro.to_string();
        prop_assert_eq!(text.len(), 27);
        prop_assert_eq!(text.parse::<MicroTime>(), Ok(micro));
        let dropped = t.as_nanosecond() - micro.timestamp().as_nanosecond();
        prop_assert!((0..1_000).contains(&dropped), "dropped {}ns", dropped);
        let json = serde_json::to_string(&micro).unwrap();
        prop_assert_eq!(serde_json::from_str::<MicroTime>(&json).unwrap(), micro);
    }

    #[test]
    fn any_offset_reads_as_the_same_instant(
        t in in_range(),
        offset_minutes in -(23 * 60 + 59)..=(23i32 * 60 + 59),
    ) {
        let offset = Offset::from_seconds(offset_minutes * 60).unwrap();
        let local = offset.to_datetime(t);
        prop_assume!((0..=9999).contains(&local.year()));
        let sign = if offset_minutes < 0 { '-' } else { '+' };
        let text = format!(
            "{}{sign}{:02}:{:02}",
            local.strftime("%Y-%m-%dT%H:%M:%S%.f"),
            offset_minutes.abs() / 60,
            offset_minutes.abs() % 60,
        );
        prop_assert_eq!(text.parse::<MicroTime>(), Ok(MicroTime::from(t)), "{}", text);
        prop_assert_eq!(text.parse::<Time>(), Ok(Time::from(t)), "{}", text);
    }

    #[test]
    fn text_order_matches_time_order(a in in_range(), b in in_range()) {
        let (ta, tb) = (Time::from(a), Time::from(b));
        prop_assert_eq!(ta.cmp(&tb), ta.to_string().cmp(&tb.to_string()));
        let (ma, mb) = (MicroTime::from(a), MicroTime::from(b));
        prop_assert_eq!(ma.cmp(&mb), ma.to_string().cmp(&mb.to_string()));
    }

    #[test]
    fn arbitrary_text_never_panics(input in "\\PC{0,40}") {
        let _ = input.parse::<Time>();
        let _ = input.parse::<MicroTime>();
    }

    #[test]
    fn near_miss_text_never_panics(input in "[0-9T:Z.,+-]{15,32}") {
        let _ = input.parse::<Time>();
        let _ = input.parse::<MicroTime>();
    }
}
