//! The errors of the API types that decode themselves (`UnmarshalJSON`), which Go's JSON
//! decoder hands on as they are: `resource.Quantity`'s (`ParseQuantity`'s three errors,
//! k8s.io/apimachinery `pkg/api/resource/quantity.go`; its `ErrNumeric` needs numbers
//! longer than kapi's quantities hold, whose refusal stays kapi's own) and `metav1.Time`'s and
//! `metav1.MicroTime`'s (a string first, then Go's `time.Parse` with RFC 3339, whose
//! `ParseError` texts `time_parse` reproduces for these two layouts).

use serde_json::Value;

/// `ErrFormatWrong`.
const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// `ErrSuffix`.
const SUFFIX: &str = "unable to parse quantity's suffix";

/// What `Quantity.UnmarshalJSON` answers for `value`, `None` when it reads it. A value kapi's
/// own parser refuses for reasons Go's does not share (more digits than kapi holds) is `None`
/// too: the caller keeps its own account.
pub(crate) fn quantity_error(value: &Value) -> Option<&'static str> {
    let text = match value {
        Value::Null => return None,
        Value::String(text) => text.trim(),
        Value::Number(number) => return quantity_text_error(&number.to_string()),
        // The raw bytes of any other value start with a character no quantity starts with.
        _ => return Some(FORMAT_WRONG),
    };
    quantity_text_error(text)
}

/// `ParseQuantity`'s error for `text`, read as `parseQuantityString` reads it: a sign, the
/// number (its leading zeros; a text of only zeros, or only a sign, is 0 at once), a fraction,
/// then a suffix of SI letters with an optional signed exponent, which must end the text.
pub(super) fn quantity_text_error(text: &str) -> Option<&'static str> {
    if text.is_empty() {
        return Some(FORMAT_WRONG);
    }
    let bytes = text.as_bytes();
    let digits = |from: usize| {
        from + bytes
            .get(from..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut pos = usize::from(matches!(bytes[0], b'+' | b'-'));
    while bytes.get(pos) == Some(&b'0') {
        pos += 1;
    }
    if pos == bytes.len() {
        return None;
    }
    pos = digits(pos);
    if bytes.get(pos) == Some(&b'.') {
        pos = digits(pos + 1);
    }
    let suffix_start = pos;
    while bytes.get(pos).is_some_and(|b| b"eEinumkKMGTP".contains(b)) {
        pos += 1;
    }
    if pos < bytes.len() {
        if matches!(bytes[pos], b'+' | b'-') {
            pos += 1;
        }
        pos = digits(pos);
        if pos < bytes.len() {
            return Some(FORMAT_WRONG);
        }
    }
    // What passes here is a number Go reads (a number part without digits is 0); its other
    // error, `ErrNumeric`, needs more digits than kapi's quantities hold.
    (!known_suffix(&text[suffix_start..])).then_some(SUFFIX)
}

/// Whether `quantitySuffixer.interpret` knows `suffix`: a decimal or binary SI suffix, or an
/// exponent `e<int>`/`E<int>`.
fn known_suffix(suffix: &str) -> bool {
    const SI: [&str; 16] = [
        "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ];
    if SI.contains(&suffix) {
        return true;
    }
    let Some(exponent) = suffix.strip_prefix(['e', 'E']) else {
        return false;
    };
    // `strconv.ParseInt(..., 10, 64)`, which takes a sign.
    !exponent.is_empty() && exponent.parse::<i64>().is_ok()
}

/// Which of upstream's time types a value decodes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeType {
    /// `metav1.Time`: `time.RFC3339`.
    Time,
    /// `metav1.MicroTime`: `metav1.RFC3339Micro`.
    MicroTime,
}

impl TimeType {
    fn layout(self) -> &'static str {
        match self {
            TimeType::Time => "2006-01-02T15:04:05Z07:00",
            TimeType::MicroTime => "2006-01-02T15:04:05.000000Z07:00",
        }
    }
}

/// What `Time.UnmarshalJSON` (or `MicroTime`'s) answers for `value`, `None` when it reads it.
pub(crate) fn time_error(value: &Value, kind: TimeType) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(text) => time_parse(kind.layout(), text).err(),
        other => Some(format!(
            "json: cannot unmarshal {} into Go value of type string",
            super::json_kind(other)
        )),
    }
}

/// One element of the two layouts.
#[derive(Debug, Clone, Copy)]
enum Element {
    Literal(&'static str),
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Micros,
    Zone,
}

impl Element {
    fn text(self) -> &'static str {
        match self {
            Element::Literal(text) => text,
            Element::Year => "2006",
            Element::Month => "01",
            Element::Day => "02",
            Element::Hour => "15",
            Element::Minute => "04",
            Element::Second => "05",
            Element::Micros => ".000000",
            Element::Zone => "Z07:00",
        }
    }
}

/// The layout's elements: RFC 3339's, with the six fraction digits before the zone for
/// `RFC3339Micro`.
fn elements(layout: &str) -> Vec<Element> {
    use Element::*;
    let mut elements = vec![
        Year,
        Literal("-"),
        Month,
        Literal("-"),
        Day,
        Literal("T"),
        Hour,
        Literal(":"),
        Minute,
        Literal(":"),
        Second,
    ];
    if layout.contains(".000000") {
        elements.push(Micros);
    }
    elements.push(Zone);
    elements
}

/// Go's `time` package `quote`: double quotes, `"` and `\` escaped, bytes outside printable
/// ASCII as `\x..`.
fn go_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        if c.is_ascii() && c >= ' ' && c != '\u{7f}' {
            if c == '"' || c == '\\' {
                quoted.push('\\');
            }
            quoted.push(c);
        } else if c == '\u{7f}' {
            quoted.push(c);
        } else {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                quoted.push_str(&format!("\\x{byte:02x}"));
            }
        }
    }
    quoted.push('"');
    quoted
}

/// `getnum`: one or two leading digits (two when `fixed`).
fn getnum(value: &str, fixed: bool) -> Option<(u32, &str)> {
    let bytes = value.as_bytes();
    let digit = |i: usize| {
        bytes
            .get(i)
            .filter(|b| b.is_ascii_digit())
            .map(|b| u32::from(b - b'0'))
    };
    let first = digit(0)?;
    match digit(1) {
        Some(second) => Some((first * 10 + second, value.get(2..)?)),
        None if fixed => None,
        None => Some((first, value.get(1..)?)),
    }
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Go's `time.Parse(layout, value)` for the two RFC 3339 layouts: `Ok` when it parses, else
/// its `ParseError` text (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x"
/// as "2006"`, or `parsing time "x": month out of range`).
fn time_parse(layout: &str, value: &str) -> Result<(), String> {
    let cannot = |rest: &str, element: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            go_quote(value),
            go_quote(layout),
            go_quote(rest),
            go_quote(element)
        )
    };
    let out_of_range =
        |what: &str| format!("parsing time {}: {what} out of range", go_quote(value));
    let (mut year, mut month, mut day) = (0, 0, 0);
    let mut rest = value;
    let layout_elements = elements(layout);
    for (index, element) in layout_elements.iter().enumerate() {
        let hold = rest;
        let bad = || cannot(hold, element.text());
        match *element {
            Element::Literal(literal) => {
                rest = rest.strip_prefix(literal).ok_or_else(bad)?;
            }
            Element::Year => {
                let digits = rest
                    .get(..4)
                    .filter(|d| d.bytes().all(|b| b.is_ascii_digit()));
                let Some(digits) = digits else {
                    return Err(bad());
                };
                year = digits.parse().map_err(|_| bad())?;
                rest = &rest[4..];
            }
            Element::Month | Element::Day | Element::Minute | Element::Second => {
                let (number, after) = getnum(rest, true).ok_or_else(bad)?;
                rest = after;
                let (limit, name) = match element {
                    Element::Month => (13, "month"),
                    Element::Day => (u32::MAX, "day"),
                    Element::Minute => (60, "minute"),
                    _ => (60, "second"),
                };
                match element {
                    Element::Month if number == 0 || number >= limit => {
                        return Err(out_of_range(name));
                    }
                    Element::Month => month = number,
                    Element::Day => day = number,
                    _ if number >= limit => return Err(out_of_range(name)),
                    _ => {}
                }
                // A fraction the layout has no place for is read with the seconds.
                let next_is_fraction =
                    matches!(layout_elements.get(index + 1), Some(Element::Micros));
                if matches!(element, Element::Second) && !next_is_fraction {
                    let bytes = rest.as_bytes();
                    if bytes.len() >= 2
                        && matches!(bytes[0], b'.' | b',')
                        && bytes[1].is_ascii_digit()
                    {
                        let digits = bytes[1..].iter().take_while(|b| b.is_ascii_digit()).count();
                        rest = &rest[1 + digits..];
                    }
                }
            }
            Element::Hour => {
                let (hour, after) = getnum(rest, false).ok_or_else(bad)?;
                if hour >= 24 {
                    return Err(out_of_range("hour"));
                }
                rest = after;
            }
            Element::Micros => {
                let bytes = rest.as_bytes();
                if bytes.len() < 7
                    || !matches!(bytes[0], b'.' | b',')
                    || !bytes[1..7].iter().all(u8::is_ascii_digit)
                {
                    return Err(bad());
                }
                rest = &rest[7..];
            }
            Element::Zone => {
                if let Some(after) = rest.strip_prefix('Z') {
                    rest = after;
                    continue;
                }
                let bytes = rest.as_bytes();
                if bytes.len() < 6 || bytes[3] != b':' {
                    return Err(bad());
                }
                let hours = getnum(&rest[1..3], true);
                let minutes = getnum(&rest[4..6], true);
                let (Some((hours, _)), Some((minutes, _))) = (hours, minutes) else {
                    return Err(bad());
                };
                if hours > 24 {
                    return Err(out_of_range("time zone offset hour"));
                }
                if minutes > 60 {
                    return Err(out_of_range("time zone offset minute"));
                }
                if !matches!(bytes[0], b'+' | b'-') {
                    return Err(bad());
                }
                rest = &rest[6..];
            }
        }
    }
    if !rest.is_empty() {
        return Err(format!(
            "parsing time {}: extra text: {}",
            go_quote(value),
            go_quote(rest)
        ));
    }
    if day < 1 || day > days_in(month, year) {
        return Err(out_of_range("day"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `ParseQuantity`'s errors for what clients get wrong.
    #[test]
    fn quantities_fail_as_parse_quantity_does() {
        for good in [
            "1", "100m", "1.5Gi", "2e3", "+1", "-1", " 5 ", "0", "1.", "1E-3", "12Ki",
        ] {
            assert_eq!(quantity_error(&json!(good)), None, "{good}");
        }
        assert_eq!(quantity_error(&json!(5)), None);
        assert_eq!(quantity_error(&Value::Null), None);
        for zero in ["+", "-", "000"] {
            assert_eq!(quantity_error(&json!(zero)), None, "{zero}");
        }
        for bad in ["abc", "", "1Q", "1.2.3", "1KiB", "ten", "1 m"] {
            assert_eq!(quantity_error(&json!(bad)), Some(FORMAT_WRONG), "{bad}");
        }
        for bad in ["1ii", "1mm", "1Ki3", "1Kk", "1e"] {
            assert_eq!(quantity_error(&json!(bad)), Some(SUFFIX), "{bad}");
        }
        // A number part without digits is 0 to Go.
        for zero in [".", "m", "Ki"] {
            assert_eq!(quantity_error(&json!(zero)), None, "{zero}");
        }
        assert_eq!(quantity_error(&json!(true)), Some(FORMAT_WRONG));
        assert_eq!(quantity_error(&json!({"a": 1})), Some(FORMAT_WRONG));
    }

    /// Go's `time.Parse` texts, as `go run` prints them for these inputs.
    #[test]
    fn times_fail_as_go_parses_them() {
        let time = |v: &str| time_parse(TimeType::Time.layout(), v);
        assert_eq!(time("2026-11-27T10:00:00Z"), Ok(()));
        assert_eq!(time("2026-11-27T10:00:00.123Z"), Ok(()));
        assert_eq!(time("2026-11-27T10:00:00+02:00"), Ok(()));
        assert_eq!(
            time("yesterday").unwrap_err(),
            r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#
        );
        assert_eq!(
            time("2026-11-27").unwrap_err(),
            r#"parsing time "2026-11-27" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T""#
        );
        assert_eq!(
            time("2026-11-27 10:00:00Z").unwrap_err(),
            r#"parsing time "2026-11-27 10:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 10:00:00Z" as "T""#
        );
        assert_eq!(
            time("2026-13-01T00:00:00Z").unwrap_err(),
            r#"parsing time "2026-13-01T00:00:00Z": month out of range"#
        );
        assert_eq!(
            time("2026-02-30T00:00:00Z").unwrap_err(),
            r#"parsing time "2026-02-30T00:00:00Z": day out of range"#
        );
        assert_eq!(
            time("2026-11-27T10:00:00").unwrap_err(),
            r#"parsing time "2026-11-27T10:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#
        );
        assert_eq!(
            time("2026-11-27T10:00:00Zjunk").unwrap_err(),
            r#"parsing time "2026-11-27T10:00:00Zjunk": extra text: "junk""#
        );
        let micro = |v: &str| time_parse(TimeType::MicroTime.layout(), v);
        assert_eq!(micro("2026-11-27T10:00:00.123456Z"), Ok(()));
        assert_eq!(
            micro("2026-11-27T10:00:00Z").unwrap_err(),
            r#"parsing time "2026-11-27T10:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#
        );
        assert_eq!(
            time_error(&json!(5), TimeType::Time).unwrap(),
            "json: cannot unmarshal number into Go value of type string"
        );
    }
}
