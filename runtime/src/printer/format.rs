//! The formats kube-apiserver's printers share (`pkg/printers/internalversion/printers.go` and
//! the apimachinery helpers it calls): ages, label sets and selectors, counts, `<none>` for
//! what is empty. Each reads JSON, as the server holds objects, and treats a missing field as
//! upstream's Go structs see it: the zero value of its type.

use std::fmt::Write as _;

use jiff::Timestamp;
use serde_json::{Map, Value};

use crate::Quantity;

/// What upstream prints for an empty or missing value.
pub const NONE: &str = "<none>";
/// What upstream prints for an unset optional boolean or list.
pub const UNSET: &str = "<unset>";
/// What upstream prints for a missing or zero timestamp.
pub const UNKNOWN: &str = "<unknown>";

/// The value at a simple JSON path (`.a.b`, `.a[0].b`, `{.a.b}`), if present.
pub fn at<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = object;
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    for part in path.trim_start_matches('.').split('.') {
        if part.is_empty() {
            continue;
        }
        let (field, rest) = match part.find('[') {
            Some(i) => part.split_at(i),
            None => (part, ""),
        };
        if !field.is_empty() {
            current = current.get(field)?;
        }
        for index in rest.split('[').filter(|s| !s.is_empty()) {
            let index = index.trim_end_matches(']');
            current = match index.parse::<usize>() {
                Ok(i) => current.get(i)?,
                Err(_) => current.get(index.trim_matches('\'').trim_matches('"'))?,
            };
        }
    }
    Some(current)
}

/// The string at `path`; `""` when missing or not a string.
pub fn str_at<'a>(object: &'a Value, path: &str) -> &'a str {
    at(object, path).and_then(Value::as_str).unwrap_or("")
}

/// The integer at `path`; 0 when missing.
pub fn int_at(object: &Value, path: &str) -> i64 {
    at(object, path).and_then(Value::as_i64).unwrap_or(0)
}

/// The array at `path`; empty when missing.
pub fn array_at<'a>(object: &'a Value, path: &str) -> &'a [Value] {
    at(object, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The object at `path`, if it is one.
pub fn map_at<'a>(object: &'a Value, path: &str) -> Option<&'a Map<String, Value>> {
    at(object, path).and_then(Value::as_object)
}

/// How many entries the map or list at `path` holds; 0 when missing.
pub fn len_at(object: &Value, path: &str) -> usize {
    match at(object, path) {
        Some(Value::Object(map)) => map.len(),
        Some(Value::Array(list)) => list.len(),
        _ => 0,
    }
}

/// `text`, or `<none>` when it is empty.
pub fn or_none(text: impl Into<String>) -> String {
    let text = text.into();
    if text.is_empty() {
        NONE.to_owned()
    } else {
        text
    }
}

/// A timestamp's age at `now`, as `translateTimestampSince`: `<unknown>` when missing or
/// unparsable, else [`human_duration`].
pub fn age(timestamp: Option<&Value>, now: Timestamp) -> String {
    let Some(at) = timestamp
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<Timestamp>().ok())
    else {
        return UNKNOWN.to_owned();
    };
    human_duration(now.as_second() - at.as_second())
}

/// A duration of `seconds` as apimachinery's `duration.HumanDuration` writes it: `119s`,
/// `2m5s`, `179m`, `3h5m`, `47h`, `7d23h`, `729d`, `7y364d`, `8y`; `0s` for a duration a
/// little in the future (clock skew) and `<invalid>` for one further ahead.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let d = (hours / 24) % 365;
        return if d == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{d}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// A label set as `labels.FormatLabels` writes it: `k=v` pairs sorted, joined by `,`;
/// `<none>` when empty.
pub fn labels(map: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = map
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    or_none(pairs.join(","))
}

/// A `LabelSelector` as `metav1.FormatLabelSelector` writes it: requirements sorted by key,
/// `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined by `,`; `<none>` when it selects
/// nothing or everything, `<error>` when it is not a valid selector.
pub fn label_selector(selector: Option<&Value>) -> String {
    selector_text(selector).map_or_else(|| "<error>".to_owned(), or_none)
}

/// A `LabelSelector` as `metav1.LabelSelectorAsSelector(..).String()` writes it: as
/// [`label_selector`] but `""` when empty or missing; `None` when it is not a valid selector
/// (an unknown operator, `In`/`NotIn` without values, `Exists`/`DoesNotExist` with some).
pub fn selector_text(selector: Option<&Value>) -> Option<String> {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return Some(String::new());
    };
    let mut requirements: Vec<(String, String)> = Vec::new();
    for (key, value) in selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        requirements.push((
            key.clone(),
            format!("{key}={}", value.as_str().unwrap_or("")),
        ));
    }
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expression.get("key").and_then(Value::as_str).unwrap_or("");
        let mut values: Vec<&str> = expression
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match expression.get("operator").and_then(Value::as_str) {
            Some("In") if !values.is_empty() => format!("{key} in ({})", values.join(",")),
            Some("NotIn") if !values.is_empty() => format!("{key} notin ({})", values.join(",")),
            Some("Exists") if values.is_empty() => key.to_owned(),
            Some("DoesNotExist") if values.is_empty() => format!("!{key}"),
            _ => return None,
        };
        requirements.push((key.to_owned(), text));
    }
    // Upstream sorts requirements by key only, keeping the order of equal keys.
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::new();
    for (i, (_, text)) in requirements.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{text}");
    }
    Some(out)
}

/// An optional boolean as `printBoolPtr`: `<unset>`, `True` or `False`.
pub fn bool_ptr(value: Option<&Value>) -> String {
    match value.and_then(Value::as_bool) {
        None => UNSET.to_owned(),
        Some(true) => "True".to_owned(),
        Some(false) => "False".to_owned(),
    }
}

/// The `field` of each item of a list, joined by `,` (`layoutContainerCells`: container names,
/// images).
pub fn join_field(items: &[Value], field: &str) -> String {
    items
        .iter()
        .map(|item| item.get(field).and_then(Value::as_str).unwrap_or(""))
        .collect::<Vec<_>>()
        .join(",")
}

/// A timestamp (`Time` or `MicroTime`), if present and valid; a missing one is Go's zero time.
pub fn timestamp(value: Option<&Value>) -> Option<Timestamp> {
    value
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<Timestamp>().ok())
}

/// A quantity as `Quantity.String()` writes it: the canonical form (`1Gi`, `500m`); `0` for a
/// missing (zero) one, and the text as stored when it does not parse.
pub fn quantity(value: Option<&Value>) -> String {
    let text = match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(number)) => number.to_string(),
        _ => return "0".to_owned(),
    };
    text.parse::<Quantity>()
        .map_or(text, |quantity| quantity.to_string())
}

/// An `IntOrString` as its `String()` writes it: the integer's digits or the string.
pub fn int_or_string(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        _ => String::new(),
    }
}

/// The first condition of `type_` in a list of conditions.
pub fn condition<'a>(conditions: &'a [Value], type_: &str) -> Option<&'a Value> {
    conditions
        .iter()
        .find(|condition| str_at(condition, ".type") == type_)
}

/// Whether the first condition of `type_` has status `True` (upstream's `hasJobCondition` and
/// the like).
pub fn condition_true(conditions: &[Value], type_: &str) -> bool {
    condition(conditions, type_).is_some_and(|c| str_at(c, ".status") == "True")
}

/// Upstream's `listWithMoreString`: the items joined by `,`, then ` + N more...` when `count`
/// went past the `max` kept; `<unset>` when there is nothing.
pub fn list_with_more(list: &[String], count: usize, max: usize) -> String {
    let joined = list.join(",");
    if count > max {
        return format!("{joined} + {} more...", count - max);
    }
    if joined.is_empty() {
        UNSET.to_owned()
    } else {
        joined
    }
}

/// `namespace/name` of a reference (a claim's, a service's, a subject's).
pub fn namespaced_name(reference: &Value) -> String {
    format!(
        "{}/{}",
        str_at(reference, ".namespace"),
        str_at(reference, ".name")
    )
}

/// The strings of a list, as Go's `%v` prints a `[]string`: `[a b]`.
pub fn go_strings(items: &[Value]) -> String {
    let items: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn human_duration_matches_apimachinery() {
        // Cases from apimachinery's pkg/util/duration/duration_test.go (TestHumanDuration).
        let cases = [
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (1, "1s"),
            (119, "119s"),
            (120, "2m"),
            (125, "2m5s"),
            (599, "9m59s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 5 * 60, "3h5m"),
            (8 * 3600, "8h"),
            (47 * 3600 + 59 * 60, "47h"),
            (48 * 3600, "2d"),
            (7 * 86400 + 23 * 3600, "7d23h"),
            (8 * 86400, "8d"),
            (729 * 86400, "729d"),
            (2 * 365 * 86400, "2y"),
            (7 * 365 * 86400 + 364 * 86400, "7y364d"),
            (8 * 365 * 86400, "8y"),
        ];
        for (seconds, text) in cases {
            assert_eq!(human_duration(seconds), text, "{seconds}s");
        }
    }

    #[test]
    fn age_of_missing_or_bad_timestamps_is_unknown() {
        let now: Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
        assert_eq!(age(None, now), UNKNOWN);
        assert_eq!(age(Some(&json!("yesterday")), now), UNKNOWN);
        assert_eq!(age(Some(&json!("2024-05-01T09:55:00Z")), now), "5m");
    }

    #[test]
    fn selectors_and_labels_format_as_upstream() {
        let selector = json!({
            "matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [
                {"key": "c", "operator": "In", "values": ["y", "x"]},
                {"key": "d", "operator": "NotIn", "values": ["z"]},
                {"key": "e", "operator": "Exists"},
                {"key": "f", "operator": "DoesNotExist"},
            ],
        });
        assert_eq!(
            label_selector(Some(&selector)),
            "a=1,b=2,c in (x,y),d notin (z),e,!f"
        );
        assert_eq!(label_selector(Some(&json!({}))), NONE);
        assert_eq!(label_selector(None), NONE);
        assert_eq!(
            label_selector(Some(
                &json!({"matchExpressions": [{"key": "a", "operator": "Gt"}]})
            )),
            "<error>"
        );
        let map = json!({"tier": "web", "app": "x"});
        assert_eq!(labels(map.as_object()), "app=x,tier=web");
        assert_eq!(labels(None), NONE);
    }
}
