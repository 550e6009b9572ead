//! An Event's LAST SEEN, FIRST SEEN, OBJECT, SOURCE and COUNT (`printEvent`,
//! `formatEventSource` of `pkg/printers/internalversion/printers.go`).
//!
//! Upstream prints the internal type for `v1` and `events.k8s.io` Events alike; the columns give
//! each version's fields as paths (`lastTimestamp` or `deprecatedLastTimestamp`, `involvedObject`
//! or `regarding`, ...), and these rules read whichever they are given.

use jiff::Timestamp;
use serde_json::Value;

use crate::printer::format::{self, at, int_at, str_at};

fn age(object: &Value, path: &str, now: Timestamp) -> Option<String> {
    format::timestamp(at(object, path))
        .map(|t| format::human_duration(now.as_second() - t.as_second()))
}

/// FIRST SEEN, reading `firstTimestamp, eventTime`: the first timestamp's age, else the event
/// time's, else `<unknown>`.
pub(crate) fn first_seen(event: &Value, first: &str, event_time: &str, now: Timestamp) -> String {
    age(event, first, now)
        .or_else(|| age(event, event_time, now))
        .unwrap_or_else(|| format::UNKNOWN.to_owned())
}

/// LAST SEEN, reading `lastTimestamp, firstTimestamp, eventTime, series`: the series' last
/// observation when there is a series, else the last timestamp's age, else FIRST SEEN.
pub(crate) fn last_seen(event: &Value, paths: [&str; 4], now: Timestamp) -> Value {
    let [last, first, event_time, series] = paths;
    if let Some(series) = at(event, series).filter(|s| !s.is_null()) {
        return Value::from(
            age(series, ".lastObservedTime", now).unwrap_or_else(|| format::UNKNOWN.to_owned()),
        );
    }
    Value::from(age(event, last, now).unwrap_or_else(|| first_seen(event, first, event_time, now)))
}

/// OBJECT, reading the involved object's reference: `kind/name` with the kind in lower case,
/// the kind alone without a name.
pub(crate) fn object(event: &Value, reference: &str) -> Value {
    let reference = at(event, reference).unwrap_or(&Value::Null);
    let kind = str_at(reference, ".kind").to_lowercase();
    Value::from(match str_at(reference, ".name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    })
}

/// SOURCE, reading `source, reportingController, reportingInstance`: the source's component
/// (else the reporting controller), then `, ` and its host (else the reporting instance) when
/// there is one.
pub(crate) fn source(event: &Value, paths: [&str; 3]) -> Value {
    let [source, controller, instance] = paths;
    let source = at(event, source).unwrap_or(&Value::Null);
    let first = |a: &str, b: &str| {
        let a = str_at(source, a);
        if a.is_empty() { str_at(event, b) } else { a }.to_owned()
    };
    let component = first(".component", controller);
    let host = first(".host", instance);
    Value::from(if host.is_empty() {
        component
    } else {
        format!("{component}, {host}")
    })
}

/// COUNT since 1.23, reading `count, series`: the series' count when there is a series, else
/// the count, 1 when unset (a singleton event of the new API).
pub(crate) fn count(event: &Value, count: &str, series: &str) -> Value {
    Value::from(count_with(event, count, series, 0))
}

/// COUNT before 1.23: a series counted one more, for the singleton event before it.
pub(crate) fn count_series_plus_one(event: &Value, count: &str, series: &str) -> Value {
    Value::from(count_with(event, count, series, 1))
}

fn count_with(event: &Value, count: &str, series: &str, extra: i64) -> i64 {
    match at(event, series).filter(|s| !s.is_null()) {
        Some(series) => int_at(series, ".count") + extra,
        None => match int_at(event, count) {
            0 => 1,
            count => count,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const CORE: [&str; 4] = [".lastTimestamp", ".firstTimestamp", ".eventTime", ".series"];

    fn now() -> Timestamp {
        "2024-05-01T10:00:00Z".parse().unwrap()
    }

    #[test]
    fn times_fall_back_from_last_to_first_to_event_time() {
        let event = json!({"firstTimestamp": "2024-05-01T09:50:00Z", "lastTimestamp": "2024-05-01T09:59:00Z"});
        assert_eq!(last_seen(&event, CORE, now()), json!("60s"));
        assert_eq!(
            first_seen(&event, ".firstTimestamp", ".eventTime", now()),
            "10m"
        );
        let new_api = json!({"eventTime": "2024-05-01T09:58:00.000000Z"});
        assert_eq!(last_seen(&new_api, CORE, now()), json!("2m"));
        let series = json!({"lastTimestamp": "2024-05-01T09:00:00Z",
                            "series": {"count": 4, "lastObservedTime": "2024-05-01T09:59:30.000000Z"}});
        assert_eq!(last_seen(&series, CORE, now()), json!("30s"));
        assert_eq!(count(&series, ".count", ".series"), json!(4));
        assert_eq!(
            count_series_plus_one(&series, ".count", ".series"),
            json!(5)
        );
        assert_eq!(count(&json!({}), ".count", ".series"), json!(1));
        assert_eq!(count(&json!({"count": 7}), ".count", ".series"), json!(7));
        assert_eq!(last_seen(&json!({}), CORE, now()), json!("<unknown>"));
    }

    #[test]
    fn object_and_source() {
        let event = json!({"involvedObject": {"kind": "Pod", "name": "web-1"},
                           "source": {"component": "kubelet", "host": "node-1"}});
        assert_eq!(object(&event, ".involvedObject"), json!("pod/web-1"));
        assert_eq!(
            object(&json!({"regarding": {"kind": "Node"}}), ".regarding"),
            json!("node")
        );
        let paths = [".source", ".reportingComponent", ".reportingInstance"];
        assert_eq!(source(&event, paths), json!("kubelet, node-1"));
        let reported = json!({"reportingController": "scheduler"});
        let new_paths = [
            ".deprecatedSource",
            ".reportingController",
            ".reportingInstance",
        ];
        assert_eq!(source(&reported, new_paths), json!("scheduler"));
    }
}
