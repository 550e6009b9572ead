//! Behaviour of `kapi::Quantity` against upstream `resource.Quantity`.
//!
//! Expected values come from upstream's own tables (`quantity_test.go`: `TestQuantityParse`,
//! `TestQuantityString`, `TestQuantityParseEmit`, `TestParseQuantity`, `TestNewSet`,
//! `TestMilliNewSet`) and from its decode corpus of v1.37.0 (`quantity_decode_corpus.json`),
//! which records what `ParseQuantity` returns for a grid of spellings. Cases where kapi
//! deliberately differs say so next to the case.

use std::collections::HashSet;

use kapi::Quantity;
use kapi::quantity::{Format, QuantityErrorKind};
use proptest::prelude::*;

fn q(text: &str) -> Quantity {
    match text.parse::<Quantity>() {
        Ok(quantity) => quantity,
        Err(err) => panic!("{text:?} should parse: {err}"),
    }
}

use Format::{BinarySi as Bin, DecimalExponent as Exp, DecimalSi as Dec};

/// Input, canonical string, and the format the parsed value carries.
const CANONICAL: &[(&str, &str, Format)] = &[
    // Zero in every spelling prints as "0", never "-0" or "0Ki".
    ("0", "0", Dec),
    ("-0", "0", Dec),
    ("+0", "0", Dec),
    ("0n", "0", Dec),
    ("0Ki", "0", Bin),
    ("0.0Ei", "0", Bin),
    ("0e-20", "0", Exp),
    // Upstream's fast path reads a missing number as zero (decode corpus: "Ki", "m", "-", ".",
    // "e5" all decode to 0).
    ("Ki", "0", Bin),
    ("Ti", "0", Bin),
    ("m", "0", Dec),
    ("-", "0", Dec),
    (".", "0", Dec),
    ("e5", "0", Exp),
    // Decimal SI: largest suffix keeping an integer mantissa.
    ("1", "1", Dec),
    ("+1", "1", Dec), // upstream's String() echoes "+1" (cached input); the canonical form is "1"
    ("100m", "100m", Dec),
    ("1000m", "1", Dec),
    ("0.1", "100m", Dec),
    ("1.5", "1500m", Dec),
    ("-1.5", "-1500m", Dec),
    (".5", "500m", Dec),
    ("5.", "5", Dec),
    ("1.G", "1G", Dec),
    ("1.25", "1250m", Dec),
    ("1.001", "1001m", Dec), // upstream echoes "1.001" (kubernetes#138165)
    ("1.500", "1500m", Dec),
    ("01", "1", Dec),
    ("50k", "50k", Dec),
    ("8.1k", "8100", Dec),
    ("1000M", "1G", Dec),
    ("100.035k", "100035", Dec),
    ("10.035M", "10035k", Dec),
    ("7.123456M", "7123456", Dec),
    ("5.444T", "5444G", Dec),
    ("1.01E", "1010P", Dec),
    ("12E", "12E", Dec),
    ("0.0005k", "500m", Dec),
    ("1080000000n", "1080m", Dec),
    ("1000E", "1e21", Dec), // beyond E, decimal SI falls back to an exponent
    ("10000000000000000000", "10E", Dec),
    ("9223372036854775808", "9223372036854775808", Dec),
    ("999999999999999999.1", "999999999999999999100m", Dec),
    ("-9999999999999999999000m", "-9999999999999999999", Dec),
    ("1.0000000000000000001E", "1000000000000000000100m", Dec),
    (
        "99999999999999999999999999999999999999",
        "99999999999999999999999999999999999999",
        Dec,
    ),
    (
        "10000000000000000000000000000000000000000000000000",
        "10e48",
        Dec,
    ),
    // Finer than nano rounds away from zero to the next nano.
    ("3.001n", "4n", Dec),
    ("0.9n", "1n", Dec),
    ("0.0000000001", "1n", Dec),
    ("-0.0000000001", "-1n", Dec),
    ("0.00000012345", "124n", Dec),
    ("0.00000012354", "124n", Dec),
    // Decimal exponent: exponent a multiple of three, written with "e".
    ("1e3", "1e3", Exp),
    ("1E3", "1e3", Exp), // upstream echoes "1E3"
    ("1e+21", "1e21", Exp),
    ("1e03", "1e3", Exp),
    ("1E-3", "1e-3", Exp),
    ("12E-2", "120e-3", Exp),
    ("1.2e3", "1200", Exp),
    ("1.3E+6", "1300e3", Exp),
    ("1.53E12", "1530e9", Exp),
    ("0.5e0", "500e-3", Exp),
    ("80e-3", "80e-3", Exp),
    ("1e0", "1", Exp),
    ("1e-10", "1e-9", Exp),
    ("1.1E-9", "2e-9", Exp),
    ("123e-11", "2e-9", Exp),
    ("1e-2147483648", "1e-9", Exp), // upstream hangs here; the exact value rounds to 1n
    ("1e2147483647", "10e2147483646", Exp),
    // Binary SI.
    ("1Ki", "1Ki", Bin),
    ("8Ki", "8Ki", Bin),
    ("1024Mi", "1Gi", Bin),
    ("1.5Gi", "1536Mi", Bin),
    ("0.5Mi", "512Ki", Bin),
    ("-1Gi", "-1Gi", Bin),
    ("1025Ki", "1025Ki", Bin),
    ("7Ei", "7Ei", Bin),
    ("0.5Ki", "512", Bin), // below 1024: written as decimal SI
    ("0.9765625Ki", "1k", Bin),
    ("1.5Ki", "1536", Bin),
    ("2.9296875Ki", "3000", Bin), // binary SI without a suffix, as upstream ("3000" reads as 3k)
    ("1.1Ki", "1126400m", Bin),   // a fraction: decimal SI
    ("100.035Ki", "102435840m", Bin),
    (".001Ki", "1024m", Bin),
    // Below 1 the parsed value itself switches to decimal SI.
    (".000001Ki", "1024u", Dec),
    (".000000000001Ki", "2n", Dec),
    ("-0.0001Ki", "-102400u", Dec),
    // Parsing caps binary SI at 2^63-1.
    ("8Ei", "9223372036854775807", Bin),
    ("-8Ei", "-9223372036854775807", Bin),
    ("9Ei", "9223372036854775807", Bin),
    ("9223372036854775807Ki", "9223372036854775807", Bin),
    ("9223372036854775.808Pi", "9223372036854775807", Bin),
];

#[test]
fn parse_gives_canonical_string_and_format() {
    for &(input, canonical, format) in CANONICAL {
        let parsed = q(input);
        assert_eq!(parsed.to_string(), canonical, "canonical form of {input:?}");
        assert_eq!(parsed.format(), format, "format of {input:?}");
        // The canonical string reads back to the same value.
        assert_eq!(
            q(canonical),
            parsed,
            "{canonical:?} reads back as {input:?}"
        );
    }
}

#[test]
fn exact_values_match_upstream_decode_corpus() {
    // (input, mantissa, exponent) as recorded by upstream's decode corpus.
    let cases: &[(&str, i128, i32)] = &[
        ("5Ki", 512, 1),
        ("7Mi", 7_340_032, 0),
        ("1Ei", 1_152_921_504_606_846_976, 0),
        (".5n", 1, -9),
        (".5u", 5, -7),
        (".5Ei", 576_460_752_303_423_488, 0),
        ("+9223372036854775.808e-19", 922_338, -9),
        ("+9223372036854775.808e-10", 922_337_203_685_478, -9),
        ("9223372036854775.808e1000", 9_223_372_036_854_775_808, 997),
        (
            "10000000000000000000000000000000000000000000000000e-10",
            1,
            39,
        ),
        ("-1e-17", -1, -9),
    ];
    for &(input, mantissa, exponent) in cases {
        assert_eq!(
            q(input).to_decimal_parts(),
            (mantissa, exponent),
            "{input:?}"
        );
    }
}

#[test]
fn invalid_inputs_are_rejected_with_a_reason() {
    use QuantityErrorKind::{Empty, Overflow, Suffix, Syntax};
    let cases: &[(&str, QuantityErrorKind)] = &[
        ("", Empty),
        ("1.5.5", Syntax),
        ("1..5", Syntax),
        ("1.1.M", Syntax),
        ("--1", Syntax),
        ("++1", Syntax),
        ("1-", Syntax),
        ("1+1.0M", Syntax),
        (" 1", Syntax),
        ("1 ", Syntax),
        ("1 Ki", Syntax),
        ("1,5", Syntax),
        ("1_000", Syntax),
        ("1/2", Syntax),
        ("1\0", Syntax),
        ("\u{ff11}", Syntax),  // fullwidth digit one
        ("\u{2212}1", Syntax), // minus sign
        ("1Qi", Suffix),
        ("1K", Suffix),
        ("1ki", Suffix),
        ("1KI", Suffix),
        ("1KiB", Suffix),
        ("1Zi", Suffix),
        ("1\u{b5}", Suffix), // micro sign
        ("1i", Suffix),
        (".5i", Suffix),
        ("-3.01i", Suffix),
        ("0.1mi", Suffix),
        ("0.1am", Suffix),
        ("1e", Suffix),
        ("1e+", Suffix),
        ("1e-", Suffix),
        ("-3.01e-", Suffix),
        ("1e1.5", Suffix),
        ("1e3k", Suffix),
        ("1E3Ki", Suffix),
        ("1e+-3", Suffix),
        ("0x10", Suffix),
        ("aoeu", Suffix),
        ("Inf", Suffix),
        ("NaN", Suffix),
        // No digits, where upstream's slow path fails to read the empty number.
        ("Pi", Syntax),
        ("Ei", Syntax),
        ("-.Pi", Syntax),
        ("e-10", Syntax),
        // Exponents beyond 64 bits fail upstream too.
        ("1e9223372036854775808", Overflow),
        ("0e99999999999999999999", Overflow),
    ];
    for &(input, kind) in cases {
        match input.parse::<Quantity>() {
            Ok(parsed) => panic!("{input:?} should be rejected, got {parsed}"),
            Err(err) => {
                assert_eq!(err.kind(), kind, "{input:?}: {err}");
                assert!(err.to_string().contains("invalid quantity"), "{err}");
            }
        }
    }
}

#[test]
fn error_messages_point_at_the_problem() {
    let message = |input: &str| match input.parse::<Quantity>() {
        Ok(parsed) => panic!("{input:?} should be rejected, got {parsed}"),
        Err(err) => err.to_string(),
    };
    assert_eq!(
        message("1.5.5"),
        r#"invalid quantity "1.5.5": second decimal point at byte 3"#
    );
    assert!(message("1Qi").contains(r#"unknown suffix "Qi""#));
    assert!(message("--1").contains("misplaced sign '-' at byte 1"));
    assert!(message(" 1").contains("unexpected character ' ' at byte 0"));
    assert!(message("").contains("cannot be empty"));
    // A huge input is not echoed in full.
    let long = format!("{}x", "1".repeat(10_000));
    assert!(message(&long).len() < 300);
}

#[test]
fn values_kapi_cannot_hold_are_overflow_errors() {
    // Upstream holds all of these in an arbitrary-precision decimal (or, for exponents past
    // 32 bits, silently truncates the exponent); kapi reports an overflow instead.
    let cases = [
        "1234567890123456789012345678901234567891".to_owned(),
        "170141183460469231731687303715884105728".to_owned(), // i128::MAX + 1
        "9".repeat(100),
        "1000000000000000000000000000000.000000001".to_owned(), // 40 digits down to the nano
        "1e4294967296".to_owned(),
        "1e-9223372036854775808".to_owned(),
        "10e2147483647".to_owned(),
    ];
    for input in &cases {
        match input.parse::<Quantity>() {
            Ok(parsed) => panic!("{input:?} should overflow, got {parsed}"),
            Err(err) => assert_eq!(err.kind(), QuantityErrorKind::Overflow, "{input}: {err}"),
        }
    }
    // Digits finer than a nano round away first, so they cannot overflow.
    assert_eq!(
        q("1.00000000000000000000000000000000000001E").to_string(),
        "1000000000000000000000000001n"
    );
    // Zero is zero whatever the exponent, as upstream reads it.
    assert!(q("0e4294967296").is_zero());
}

#[test]
fn equality_and_hash_go_by_value() {
    let groups: &[&[&str]] = &[
        &["1Ki", "1024", "1.024k", "1024000m", "1024e0"],
        &["1000m", "1", "1e0", "0.001k", "+1"],
        &["0", "-0", "0Ki", "0e9", "m"],
        &["1.5Gi", "1536Mi", "1610612736"],
        &["0.5Ki", "512"],
        &["1e3", "1k", "1000"],
        &["9Ei", "8Ei", "9223372036854775807"],
    ];
    for group in groups {
        let values: Vec<Quantity> = group.iter().map(|s| q(s)).collect();
        let distinct: HashSet<Quantity> = values.iter().copied().collect();
        assert_eq!(distinct.len(), 1, "{group:?} should be one value");
        for (a, b) in values.iter().zip(values.iter().skip(1)) {
            assert_eq!(a, b);
            assert_eq!(a.cmp(b), std::cmp::Ordering::Equal);
        }
    }
    assert_ne!(q("1Ki"), q("1k"));
    assert_ne!(q("1n"), q("0"));
}

#[test]
fn ordering_goes_by_value() {
    // Each pair is (smaller, larger).
    let pairs = [
        ("50m", "100m"),
        ("100m", "1"),
        ("999m", "1"),
        ("-1", "0"),
        ("0", "1n"),
        ("-1n", "0"),
        ("-2", "-1"),
        ("-1Gi", "-1G"),
        ("100Gi", "10000T"),
        ("1k", "1Ki"),
        ("1E", "1Ei"),
        ("999E", "1e21"),
        ("1E", "1.0000000000000000001E"),
        ("9223372036854775807", "9223372036854775808"),
        ("1e2147483646", "1e2147483647"),
        ("-1e2147483647", "-1e2147483646"),
        ("123n", "1234n"),
        ("1.2349", "1.235"),
        ("1.235", "1.2351"),
        ("-1.2351", "-1.235"),
        ("1235n", "12349n"),
    ];
    for (small, large) in pairs {
        assert!(q(small) < q(large), "{small} < {large}");
        assert!(q(large) > q(small), "{large} > {small}");
    }
    let mut sorted: Vec<Quantity> = ["1Gi", "-1", "500m", "0", "1G", "2n"]
        .iter()
        .map(|s| q(s))
        .collect();
    sorted.sort();
    let printed: Vec<String> = sorted.iter().map(Quantity::to_string).collect();
    assert_eq!(printed, ["-1", "0", "2n", "500m", "1G", "1Gi"]);
}

#[test]
fn add_and_sub_keep_the_receivers_format() {
    type Op = fn(Quantity, Quantity) -> Option<Quantity>;
    let add: Op = Quantity::checked_add;
    let sub: Op = Quantity::checked_sub;
    // (lhs, op, rhs, result, format of the result)
    let cases: &[(&str, Op, &str, &str, Format)] = &[
        ("1", add, "500m", "1500m", Dec),
        ("1Gi", add, "512Mi", "1536Mi", Bin),
        ("1Ki", add, "1", "1025", Bin),
        ("10", add, "1", "11", Dec),
        ("10", add, "1Ki", "1034", Dec),
        ("1e3", add, "1k", "2e3", Exp),
        // A zero receiver takes the other operand's format (upstream TestQuantityAddZeroPreservesSuffix).
        ("0", add, "100m", "100m", Dec),
        ("0", add, "1Gi", "1Gi", Bin),
        ("100m", add, "0", "100m", Dec),
        ("1Gi", add, "0", "1Gi", Bin),
        ("1", sub, "1", "0", Dec),
        ("10", sub, "10", "0", Dec),
        ("10Ki", sub, "1", "10239", Bin),
        ("10", sub, "1Ki", "-1014", Dec),
        ("0", sub, "1Gi", "-1Gi", Bin),
        ("0", sub, "100m", "-100m", Dec),
        ("1Gi", sub, "0", "1Gi", Bin),
        ("1n", sub, "2n", "-1n", Dec),
        ("1E", add, "1E", "2E", Dec),
        ("4Ei", add, "4Ei", "8Ei", Bin), // arithmetic is not capped, as upstream
        ("1e30", add, "1", "1000000000000000000000000000001", Exp),
    ];
    for &(lhs, op, rhs, expected, format) in cases {
        let Some(result) = op(q(lhs), q(rhs)) else {
            panic!("{lhs} op {rhs} should not overflow");
        };
        assert_eq!(result.to_string(), expected, "{lhs} op {rhs}");
        assert_eq!(result.format(), format, "format of {lhs} op {rhs}");
    }
}

#[test]
fn arithmetic_overflow_is_none_not_a_panic() {
    // i128::MAX, the largest mantissa.
    let big = q("170141183460469231731687303715884105727");
    assert_eq!(big.checked_add(q("1")), None);
    assert_eq!((-big).checked_sub(q("1")), None);
    // Carrying into a new digit is fine while the stripped mantissa fits.
    let nines = q("99999999999999999999999999999999999999");
    assert_eq!(
        nines.checked_add(q("1")).map(|sum| sum.to_string()),
        Some("100e36".to_owned())
    );
    // Too far apart to align in 38 digits.
    assert_eq!(q("1e30").checked_add(q("1n")), None);
    assert_eq!(q("1e2147483647").checked_add(q("1")), None);
    // But far apart is fine when one side is zero, and exact cancellation is fine.
    assert_eq!(
        q("1e2147483647").checked_add(q("0")),
        Some(q("1e2147483647"))
    );
    assert_eq!(big.checked_sub(big), Some(Quantity::ZERO));
}

#[test]
fn negation_keeps_the_format() {
    let negated = -q("9.01");
    assert_eq!(negated.to_string(), "-9010m");
    assert_eq!((-q("1Gi")).to_string(), "-1Gi");
    assert_eq!((-q("1Gi")).format(), Bin);
    assert_eq!((-Quantity::ZERO).to_string(), "0");
}

#[test]
fn constructors_match_upstream_new_quantity() {
    // Upstream TestNewSet.
    let ints: &[(i64, Format, &str)] = &[
        (1, Dec, "1"),
        (1000, Dec, "1k"),
        (1_234_000, Dec, "1234k"),
        (1024, Bin, "1Ki"),
        (1_000_000, Exp, "1e6"),
        (1024 * 1024, Bin, "1Mi"),
        (0, Bin, "0"),
        (i64::MIN, Dec, "-9223372036854775808"),
    ];
    for &(value, format, expected) in ints {
        let quantity = Quantity::from_i64(value, format);
        assert_eq!(quantity.to_string(), expected, "from_i64({value})");
        assert_eq!(quantity.format(), format);
        assert_eq!(quantity.value(), Some(value));
    }
    // Upstream TestMilliNewSet.
    let millis: &[(i64, Format, &str)] = &[
        (1, Dec, "1m"),
        (1000, Dec, "1"),
        (1_234_000, Dec, "1234"),
        (1024, Bin, "1024m"),
        (1_000_000, Exp, "1e3"),
        (1024 * 1024, Bin, "1048576m"),
        (0, Dec, "0"),
    ];
    for &(value, format, expected) in millis {
        let quantity = Quantity::from_milli(value, format);
        assert_eq!(quantity.to_string(), expected, "from_milli({value})");
        assert_eq!(quantity.milli_value(), Some(value));
    }
    assert_eq!(Quantity::default(), Quantity::ZERO);
    assert_eq!(Quantity::ZERO.format(), Dec);
}

#[test]
fn integer_accessors_round_away_from_zero() {
    /// Input, then `value()`, `milli_value()` and `as_i64()`.
    type Case = (&'static str, Option<i64>, Option<i64>, Option<i64>);
    let cases: &[Case] = &[
        ("1.2", Some(2), Some(1200), None),
        ("-1.2", Some(-2), Some(-1200), None),
        ("1n", Some(1), Some(1), None),
        ("-1n", Some(-1), Some(-1), None),
        ("1Ki", Some(1024), Some(1_024_000), Some(1024)),
        ("100m", Some(1), Some(100), None),
        ("9.01", Some(10), Some(9010), None),
        ("0", Some(0), Some(0), Some(0)),
        ("9223372036854775807", Some(i64::MAX), None, Some(i64::MAX)),
        ("9223372036854775808", None, None, None),
        ("1e30", None, None, None),
    ];
    for &(input, value, milli, exact) in cases {
        let quantity = q(input);
        assert_eq!(quantity.value(), value, "value of {input}");
        assert_eq!(quantity.milli_value(), milli, "milli value of {input}");
        assert_eq!(quantity.as_i64(), exact, "as_i64 of {input}");
    }
    // Upstream TestScaledValue: from one scale to another.
    assert_eq!(q("1").scaled_value(-9), Some(1_000_000_000));
    assert_eq!(q("1n").scaled_value(0), Some(1));
    assert_eq!(q("1m").scaled_value(-6), Some(1000));
    assert_eq!(q("100").scaled_value(2), Some(1));
    assert_eq!(q("1n").scaled_value(i32::MAX), Some(1));
    assert_eq!(q("1").scaled_value(i32::MIN), None);
}

#[test]
fn to_f64_is_the_nearest_float() {
    let cases: &[(&str, f64)] = &[
        ("2Ki", 2048.0),
        ("1.1Ki", 1126.4),
        ("1Mi", 1.048_576e6),
        ("2Gi", 2.147_483_648e9),
        ("100m", 0.1),
        ("-1.5", -1.5),
        ("12E", 1.2e19),
        ("0", 0.0),
    ];
    for &(input, expected) in cases {
        assert_eq!(q(input).to_f64(), expected, "{input}");
    }
    assert_eq!(q("12e500").to_f64(), f64::INFINITY);
    assert_eq!(q("-12e500").to_f64(), f64::NEG_INFINITY);
}

#[test]
fn format_names_match_upstream() {
    assert_eq!(Bin.to_string(), "BinarySI");
    assert_eq!(Dec.as_str(), "DecimalSI");
    assert_eq!(Exp.as_str(), "DecimalExponent");
}

#[test]
fn display_honours_width() {
    assert_eq!(format!("[{:>6}]", q("1.5Gi")), "[1536Mi]");
    assert_eq!(format!("[{:<7}]", q("100m")), "[100m   ]");
    assert_eq!(format!("{:?}", q("1Ki")), "Quantity(1Ki, BinarySI)");
}

/// Quantities write back the text they were read from (custom resources are stored verbatim
/// upstream, so a read-modify-write through a typed client must not rewrite them; issue 17),
/// and the canonical form after arithmetic, on request, and inside `canonical_scope` (what the
/// server uses for built-in kinds, as Go's `resource.Quantity.MarshalJSON` writes them).
#[test]
fn serializes_as_read_and_canonical_on_request() {
    let cases = [
        ("1.5", "\"1.5\"", "\"1500m\""),
        ("1.5Gi", "\"1.5Gi\"", "\"1536Mi\""),
        ("1000m", "\"1000m\"", "\"1\""),
        ("0.05", "\"0.05\"", "\"50m\""),
        ("0", "\"0\"", "\"0\""),
        ("1e3", "\"1e3\"", "\"1e3\""),
    ];
    for (input, kept, canonical) in cases {
        let quantity = q(input);
        assert_eq!(serde_json::to_string(&quantity).ok().as_deref(), Some(kept));
        assert_eq!(quantity.spelling(), input);
        let on_request = serde_json::to_string(&quantity.canonical()).ok();
        assert_eq!(on_request.as_deref(), Some(canonical), "{input}");
        let scoped = kapi::quantity::canonical_scope(|| serde_json::to_string(&quantity).ok());
        assert_eq!(scoped.as_deref(), Some(canonical), "{input}");
        // Display is always canonical.
        assert_eq!(format!("\"{quantity}\""), canonical);
    }
    // Arithmetic gives canonical results.
    let sum = q("500m").checked_add(q("0.5")).expect("sum");
    assert_eq!(serde_json::to_string(&sum).ok().as_deref(), Some("\"1\""));
    // JSON numbers stay numbers.
    for json in ["2", "0.5", "-3", "18446744073709551615"] {
        let parsed: Quantity = serde_json::from_str(json).expect(json);
        assert_eq!(serde_json::to_string(&parsed).ok().as_deref(), Some(json));
    }
    // A spelling longer than the inline buffer is written in canonical form.
    let long = format!("1.{}", "0".repeat(40));
    assert_eq!(
        serde_json::to_string(&q(&long)).ok().as_deref(),
        Some("\"1\"")
    );
}

#[test]
fn deserializes_from_strings_and_numbers() {
    // (JSON, canonical string of the result)
    let cases = [
        (r#""1Gi""#, "1Gi"),
        (r#""1.5Gi""#, "1536Mi"),
        (r#"" 1""#, "1"), // upstream trims whitespace inside the string
        (r#""1 ""#, "1"),
        (r#""100m""#, "100m"),
        ("1", "1"),
        (" -1", "-1"),
        ("10", "10"),
        ("0.5", "500m"),
        ("1.0", "1"),
        ("1e3", "1k"), // upstream keeps "1e3" from the raw text; the value is the same
        ("1.5e-10", "1n"),
        ("18446744073709551615", "18446744073709551615"),
        ("-9223372036854775808", "-9223372036854775808"),
        // serde_json hands integers beyond 64 bits over as f64, so digits past 17 are lost.
        ("123456789012345678901234567890", "123456789012345680T"),
    ];
    for (json, expected) in cases {
        match serde_json::from_str::<Quantity>(json) {
            Ok(parsed) => assert_eq!(parsed.to_string(), expected, "{json}"),
            Err(err) => panic!("{json} should deserialize: {err}"),
        }
    }
    assert_eq!(
        serde_json::from_str::<Quantity>(r#""1Gi""#).ok(),
        Some(q("1Gi"))
    );
}

#[test]
fn invalid_serde_input_is_an_error() {
    for json in [
        r#""""#,
        r#""1.5.5""#,
        r#""1Qi""#,
        r#""abc""#,
        "null",
        "true",
        "[]",
        "{}",
        "1e400",
    ] {
        assert!(
            serde_json::from_str::<Quantity>(json).is_err(),
            "{json} should be rejected"
        );
    }
    let err = match serde_json::from_str::<Quantity>(r#""1Qi""#) {
        Ok(parsed) => panic!("should fail, got {parsed}"),
        Err(err) => err.to_string(),
    };
    assert!(err.contains(r#"unknown suffix "Qi""#), "{err}");
}

#[test]
fn serde_round_trip_in_a_struct() {
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Resources {
        cpu: Quantity,
        memory: Option<Quantity>,
    }
    let parsed: Resources = match serde_json::from_str(r#"{"cpu": 0.25, "memory": "1.5Gi"}"#) {
        Ok(parsed) => parsed,
        Err(err) => panic!("should deserialize: {err}"),
    };
    assert_eq!(parsed.cpu, q("250m"));
    assert_eq!(parsed.memory, Some(q("1536Mi")));
    let json = serde_json::to_string(&parsed).ok();
    assert_eq!(json.as_deref(), Some(r#"{"cpu":0.25,"memory":"1.5Gi"}"#));
    let absent: Resources = match serde_json::from_str(r#"{"cpu": "1", "memory": null}"#) {
        Ok(parsed) => parsed,
        Err(err) => panic!("should deserialize: {err}"),
    };
    assert_eq!(absent.memory, None);
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/// Well-formed quantity spellings across every suffix family.
fn quantity_text() -> impl Strategy<Value = String> {
    let sign = prop_oneof![Just(""), Just("-"), Just("+")];
    let int = "[0-9]{0,12}";
    let frac = prop_oneof![Just(String::new()), "\\.[0-9]{0,12}".prop_map(|s| s)];
    let suffix = prop_oneof![
        prop::sample::select(vec![
            "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
        ])
        .prop_map(str::to_owned),
        (prop::sample::select(vec!["e", "E", "e+", "e-"]), 0u32..40)
            .prop_map(|(e, n)| format!("{e}{n}")),
    ];
    (sign, int, frac, suffix).prop_map(|(s, i, f, x)| format!("{s}{i}{f}{x}"))
}

proptest! {
    #[test]
    fn canonical_form_reads_back_and_is_stable(text in quantity_text()) {
        let parsed = match text.parse::<Quantity>() {
            Ok(parsed) => parsed,
            Err(err) => {
                // Only the empty string and digit-less slow-path spellings ("Pi", "-e-12")
                // fail here.
                prop_assert!(
                    text.is_empty() || err.to_string().contains("no digits"),
                    "{}",
                    err
                );
                return Ok(());
            }
        };
        let first = parsed.to_string();
        let reparsed = q(&first);
        prop_assert_eq!(reparsed, parsed);
        let second = reparsed.to_string();
        // Canonicalising a canonical string changes nothing, except upstream's one unstable
        // case: a binary-SI whole number with no binary suffix ("3000"), which reads back as
        // decimal SI ("3k").
        if parsed.format() != Format::BinarySi || first.contains('i') {
            prop_assert_eq!(&second, &first);
        }
        prop_assert_eq!(q(&second).to_string(), second.clone());
    }

    #[test]
    fn parse_never_panics_on_arbitrary_text(text in "\\PC{0,40}") {
        let _ = text.parse::<Quantity>();
    }

    #[test]
    fn parse_never_panics_on_quantity_like_text(text in "[0-9.eEinumkKMGTP+ -]{0,40}") {
        if let Ok(parsed) = text.parse::<Quantity>() {
            // Whatever parses prints and reads back.
            prop_assert_eq!(q(&parsed.to_string()), parsed);
        }
    }

    #[test]
    fn ordering_agrees_with_f64(
        a in -2_000_000_000i64..2_000_000_000,
        ea in -9i32..=9,
        b in -2_000_000_000i64..2_000_000_000,
        eb in -9i32..=9,
    ) {
        let x = q(&format!("{a}e{ea}"));
        let y = q(&format!("{b}e{eb}"));
        // At most ten significant digits: distinct values stay distinct as floats.
        prop_assert_eq!(Some(x.cmp(&y)), x.to_f64().partial_cmp(&y.to_f64()));
        prop_assert_eq!(x == y, x.to_f64() == y.to_f64());
    }

    #[test]
    fn add_then_sub_is_identity(
        a in any::<i64>(),
        ea in -9i32..=18,
        b in any::<i64>(),
        eb in -9i32..=18,
    ) {
        let x = q(&format!("{a}e{ea}"));
        let y = q(&format!("{b}e{eb}"));
        let Some(sum) = x.checked_add(y) else {
            return Ok(());
        };
        prop_assert_eq!(sum.checked_sub(y), Some(x));
        prop_assert_eq!(y.checked_add(x), Some(sum));
        prop_assert_eq!(sum.cmp(&x), y.cmp(&Quantity::ZERO));
    }
}
