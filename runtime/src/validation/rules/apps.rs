//! The apps rules that are code beyond the selectors (`pkg/apis/apps/validation/validation.go`):
//! a Deployment's rolling update (`ValidateRollingUpdateDeployment`), and the count-or-percent
//! checks it shares with PodDisruptionBudgets (`ValidatePositiveIntOrPercent`,
//! `IsNotMoreThan100Percent`).

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};

const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// An `intstr.IntOrString` as Go's `%#v` prints it (its `String` has a pointer receiver, so
/// upstream shows the struct before 1.34, and JSON after).
fn int_or_string_go(value: &Value) -> String {
    match value {
        Value::String(s) => format!(
            "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
            Value::from(s.as_str())
        ),
        other => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            other.as_i64().unwrap_or(0)
        ),
    }
}

/// The percentage of a valid `"N%"` (`getPercentValue`).
fn percent(value: &Value) -> Option<u64> {
    let digits = value.as_str()?.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // More digits than fit are more than 100 %.
    Some(digits.parse().unwrap_or(u64::MAX))
}

/// `getIntOrPercentValue`: the percentage or the count (0 for anything else).
fn int_or_percent_value(value: Option<&Value>) -> i64 {
    match value {
        Some(v @ Value::String(_)) => {
            percent(v).map_or(0, |p| i64::try_from(p).unwrap_or(i64::MAX))
        }
        Some(v) => v.as_i64().unwrap_or(0),
        None => 0,
    }
}

/// `ValidatePositiveIntOrPercent`: a count at least 0, or a percentage string.
pub(super) fn positive_int_or_percent(value: &Value, path: &FieldPath, errors: &mut Errors) {
    match value {
        Value::String(_) => {
            if percent(value).is_none() {
                let go = int_or_string_go(value);
                errors.invalid(path, Shown::Go(&go, value), PERCENT_MSG);
            }
        }
        other => {
            let n = other.as_i64().unwrap_or(0);
            if n < 0 {
                errors.invalid(
                    path,
                    Shown::Plain(&Value::from(n)),
                    "must be greater than or equal to 0",
                );
            }
        }
    }
}

/// `IsNotMoreThan100Percent`.
pub(super) fn not_more_than_100_percent(value: &Value, path: &FieldPath, errors: &mut Errors) {
    if percent(value).is_some_and(|p| p > 100) {
        let go = int_or_string_go(value);
        errors.invalid(path, Shown::Go(&go, value), "must not be greater than 100%");
    }
}

/// `ValidateRollingUpdateDeployment`: counts or percentages, not both 0, at most 100 %
/// unavailable; on a RollingUpdateDeployment.
pub(super) fn rolling_update(update: &Value, at: &FieldPath, errors: &mut Errors) {
    let unavailable = update.get("maxUnavailable").filter(|v| !v.is_null());
    let surge = update.get("maxSurge").filter(|v| !v.is_null());
    let unavailable_at = at.child("maxUnavailable");
    if let Some(value) = unavailable {
        positive_int_or_percent(value, &unavailable_at, errors);
    }
    if let Some(value) = surge {
        positive_int_or_percent(value, &at.child("maxSurge"), errors);
    }
    if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
        let zero = Value::from(0);
        let value = unavailable.unwrap_or(&zero);
        let go = int_or_string_go(value);
        errors.invalid(
            &unavailable_at,
            Shown::Go(&go, value),
            "may not be 0 when `maxSurge` is 0",
        );
    }
    if let Some(value) = unavailable {
        not_more_than_100_percent(value, &unavailable_at, errors);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(update: &Value, minor: u16) -> Vec<String> {
        let at = FieldPath::of("spec.strategy.rollingUpdate");
        super::super::lines(minor, |e| rolling_update(update, &at, e))
    }

    #[test]
    fn rolling_updates_move_at_least_one_pod() {
        // ValidateRollingUpdateDeployment, the value an IntOrString struct before 1.34.
        assert_eq!(
            run(&json!({"maxUnavailable": 0, "maxSurge": "0%"}), 28),
            [
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0"
            ]
        );
        assert_eq!(
            run(&json!({"maxUnavailable": "150%", "maxSurge": -1}), 34),
            [
                "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0",
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%",
            ]
        );
        assert!(run(&json!({"maxUnavailable": "25%", "maxSurge": "25%"}), 20).is_empty());
    }
}
