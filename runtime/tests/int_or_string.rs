//! Behaviour of `kapi::IntOrString`: its untagged JSON form and percent scaling as upstream's
//! `GetScaledValueFromIntOrPercent` does it.

use kapi::IntOrString;
use kapi::int_or_string::IntOrStringError;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[test]
fn reads_both_json_forms() {
    let table: &[(&str, IntOrString)] = &[
        ("0", IntOrString::Int(0)),
        ("8080", IntOrString::Int(8080)),
        ("-1", IntOrString::Int(-1)),
        ("2147483647", IntOrString::Int(i32::MAX)),
        ("-2147483648", IntOrString::Int(i32::MIN)),
        (r#""http""#, IntOrString::from("http")),
        (r#""25%""#, IntOrString::from("25%")),
        // A numeric string stays a string, as upstream keeps it.
        (r#""1""#, IntOrString::from("1")),
        (r#""""#, IntOrString::from("")),
        (r#""caf\u00e9""#, IntOrString::from("café")),
    ];
    for (json, want) in table {
        let got: IntOrString = serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(&got, want, "{json}");
    }
}

#[test]
fn writes_ints_as_numbers_and_strings_as_strings() {
    let table: &[(IntOrString, &str)] = &[
        (IntOrString::Int(8080), "8080"),
        (IntOrString::Int(-3), "-3"),
        (IntOrString::from("25%"), r#""25%""#),
        (IntOrString::from("1"), r#""1""#),
        (IntOrString::from("a\"b"), r#""a\"b""#),
    ];
    for (value, want) in table {
        let json = serde_json::to_string(value).unwrap();
        assert_eq!(&json, want);
        assert_eq!(&serde_json::from_str::<IntOrString>(&json).unwrap(), value);
    }
}

#[test]
fn rejects_json_that_is_neither_an_int32_nor_a_string() {
    for bad in [
        "1.5",
        "1.0",
        "1e3",
        "true",
        "false",
        "null",
        "{}",
        "[]",
        "[1]",
        r#"{"intVal":1}"#,
        "2147483648",
        "-2147483649",
        "18446744073709551615",
    ] {
        assert!(
            serde_json::from_str::<IntOrString>(bad).is_err(),
            "accepted {bad}"
        );
    }
    let err = serde_json::from_str::<IntOrString>("3000000000")
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected an int32 or a string"), "{err}");
    let err = serde_json::from_str::<IntOrString>("1.5")
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected an int32 or a string"), "{err}");
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RollingUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_surge: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_unavailable: Option<IntOrString>,
}

#[test]
fn optional_fields_map_null_and_absence_to_none() {
    let r: RollingUpdate =
        serde_json::from_str(r#"{"maxSurge":"25%","maxUnavailable":null}"#).unwrap();
    assert_eq!(
        r,
        RollingUpdate {
            max_surge: Some("25%".into()),
            max_unavailable: None
        }
    );
    assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"maxSurge":"25%"}"#);
    let r: RollingUpdate = serde_json::from_str(r#"{"maxUnavailable":1}"#).unwrap();
    assert_eq!(r.max_unavailable, Some(IntOrString::Int(1)));
    assert!(serde_json::from_str::<RollingUpdate>(r#"{"maxSurge":1.5}"#).is_err());
}

#[test]
fn scales_like_get_scaled_value_from_int_or_percent() {
    // (value, total, round_up, expected)
    let table: &[(IntOrString, i32, bool, i32)] = &[
        (IntOrString::Int(3), 10, true, 3),
        (IntOrString::Int(3), 10, false, 3),
        (IntOrString::Int(-3), 0, false, -3),
        (IntOrString::Int(50), 10, true, 50),
        ("25%".into(), 10, true, 3),
        ("25%".into(), 10, false, 2),
        ("25%".into(), 100, true, 25),
        ("25%".into(), 100, false, 25),
        ("25%".into(), 4, true, 1),
        ("25%".into(), 4, false, 1),
        ("25%".into(), 1, true, 1),
        ("25%".into(), 1, false, 0),
        ("25%".into(), 0, true, 0),
        ("0%".into(), 10, true, 0),
        ("1%".into(), 1, true, 1),
        ("1%".into(), 99, false, 0),
        ("33%".into(), 3, true, 1),
        ("33%".into(), 3, false, 0),
        ("50%".into(), 5, true, 3),
        ("50%".into(), 5, false, 2),
        ("100%".into(), 7, false, 7),
        ("150%".into(), 10, false, 15),
        ("+10%".into(), 10, true, 1),
        ("010%".into(), 10, true, 1),
        ("-10%".into(), 15, true, -1),
        ("-10%".into(), 15, false, -2),
        ("10%".into(), -15, false, -2),
        ("100%".into(), i32::MAX, true, i32::MAX),
    ];
    for (value, total, round_up, want) in table {
        assert_eq!(
            value.scaled_value(*total, *round_up),
            Ok(*want),
            "{value} of {total}, round_up={round_up}"
        );
    }
}

#[test]
fn scaling_rejects_strings_that_are_not_integer_percentages() {
    let not_percent = |s: &str| IntOrStringError::NotPercent(s.to_owned());
    let invalid = |s: &str| IntOrStringError::InvalidPercent(s.to_owned());
    let table: Vec<(&str, IntOrStringError)> = vec![
        ("abc", not_percent("abc")),
        ("25", not_percent("25")),
        ("", not_percent("")),
        ("%25", not_percent("%25")),
        ("25% ", not_percent("25% ")),
        ("%", invalid("%")),
        ("abc%", invalid("abc%")),
        ("2.5%", invalid("2.5%")),
        (" 25%", invalid(" 25%")),
        ("25 %", invalid("25 %")),
        ("25%%", invalid("25%%")),
        ("1_0%", invalid("1_0%")),
        ("--1%", invalid("--1%")),
        ("99999999999999999999%", invalid("99999999999999999999%")),
    ];
    for (input, want) in table {
        let value = IntOrString::from(input);
        assert_eq!(value.scaled_value(10, true), Err(want.clone()), "{input:?}");
        assert_eq!(value.scaled_value(10, false), Err(want), "{input:?}");
    }
    assert_eq!(
        IntOrString::from("abc")
            .scaled_value(10, true)
            .unwrap_err()
            .to_string(),
        r#"invalid value for IntOrString "abc": string is not a percentage"#
    );
    assert_eq!(
        IntOrString::from("%")
            .scaled_value(10, true)
            .unwrap_err()
            .to_string(),
        r#"invalid value for IntOrString "%": percentage is not an integer"#
    );
}

#[test]
fn scaling_that_overflows_int32_is_an_error() {
    let value = IntOrString::from("200%");
    assert_eq!(
        value.scaled_value(i32::MAX, false),
        Err(IntOrStringError::OutOfRange {
            value: "200%".to_owned(),
            total: i32::MAX
        })
    );
    assert!(
        IntOrString::from("9223372036854775807%")
            .scaled_value(100, true)
            .is_err()
    );
}

#[test]
fn conversions_accessors_and_display() {
    assert_eq!(IntOrString::from(5), IntOrString::Int(5));
    assert_eq!(IntOrString::from("x"), IntOrString::String("x".to_owned()));
    assert_eq!(IntOrString::from(String::from("x")), IntOrString::from("x"));
    assert_eq!(IntOrString::default(), IntOrString::Int(0));
    assert_eq!(IntOrString::Int(7).as_int(), Some(7));
    assert_eq!(IntOrString::Int(7).as_str(), None);
    assert_eq!(IntOrString::from("25%").as_str(), Some("25%"));
    assert_eq!(IntOrString::from("25%").as_int(), None);
    assert_eq!(IntOrString::Int(-42).to_string(), "-42");
    assert_eq!(IntOrString::from("25%").to_string(), "25%");
    assert_eq!(format!("{:>4}", IntOrString::Int(7)), "   7");
}

proptest! {
    #[test]
    fn json_round_trips(value in prop_oneof![
        any::<i32>().prop_map(IntOrString::Int),
        "\\PC{0,12}".prop_map(IntOrString::String),
    ]) {
        let json = serde_json::to_string(&value).unwrap();
        prop_assert_eq!(serde_json::from_str::<IntOrString>(&json).unwrap(), value);
    }

    #[test]
    fn percent_scaling_is_bounded_by_floor_and_ceil(
        percent in 0i64..=100, total in 0i32..=100_000,
    ) {
        let value = IntOrString::from(format!("{percent}%"));
        let up = value.scaled_value(total, true).unwrap();
        let down = value.scaled_value(total, false).unwrap();
        // Exact integer arithmetic gives the same floor and ceiling as upstream's float64 here.
        let exact = percent * i64::from(total);
        prop_assert_eq!(i64::from(down), exact.div_euclid(100));
        prop_assert_eq!(i64::from(up), (exact + 99).div_euclid(100));
        prop_assert!(down <= up && up - down <= 1);
    }

    #[test]
    fn int_values_ignore_the_total(i in any::<i32>(), total in any::<i32>(), up: bool) {
        prop_assert_eq!(IntOrString::Int(i).scaled_value(total, up), Ok(i));
    }
}
