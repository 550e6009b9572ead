//! Jobs' STATUS, COMPLETIONS and DURATION (`printJob`) and a ControllerRevision's CONTROLLER
//! (`printControllerRevision`), of `pkg/printers/internalversion/printers.go`.

use jiff::Timestamp;
use serde_json::Value;

use crate::printer::format::{self, array_at, at, condition_true, int_at, str_at};

/// Job STATUS since 1.34: the first of Complete, Failed, Terminating (deleted), Suspended,
/// FailureTarget and SuccessCriteriaMet that holds (a condition counts when the first of its
/// type is True), else Running.
pub(crate) fn job_status(job: &Value) -> Value {
    status(job, true)
}

/// Job STATUS of 1.30 to 1.33, which did not know SuccessCriteriaMet.
pub(crate) fn job_status_before_success_criteria(job: &Value) -> Value {
    status(job, false)
}

fn status(job: &Value, success_criteria: bool) -> Value {
    let conditions = array_at(job, ".status.conditions");
    let holds = |type_: &str| condition_true(conditions, type_);
    let deleted = at(job, ".metadata.deletionTimestamp").is_some_and(|t| !t.is_null());
    let status = if holds("Complete") {
        "Complete"
    } else if holds("Failed") {
        "Failed"
    } else if deleted {
        "Terminating"
    } else if holds("Suspended") {
        "Suspended"
    } else if holds("FailureTarget") {
        "FailureTarget"
    } else if success_criteria && holds("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    Value::from(status)
}

/// Job COMPLETIONS: `succeeded/completions`; without completions, `succeeded/1`, or
/// `succeeded/1 of parallelism` when more than one pod runs at once.
pub(crate) fn job_completions(job: &Value) -> Value {
    let succeeded = int_at(job, ".status.succeeded");
    if let Some(completions) = at(job, ".spec.completions").and_then(Value::as_i64) {
        return Value::from(format!("{succeeded}/{completions}"));
    }
    let parallelism = int_at(job, ".spec.parallelism");
    Value::from(if parallelism > 1 {
        format!("{succeeded}/1 of {parallelism}")
    } else {
        format!("{succeeded}/1")
    })
}

/// Job DURATION: from the start to the completion, or to `now` while running; `""` before it
/// started.
pub(crate) fn job_duration(job: &Value, now: Timestamp) -> Value {
    let Some(start) = format::timestamp(at(job, ".status.startTime")) else {
        return Value::from("");
    };
    let end = format::timestamp(at(job, ".status.completionTime")).unwrap_or(now);
    Value::from(format::human_duration(end.as_second() - start.as_second()))
}

/// ControllerRevision CONTROLLER: the controller owner as `kind.group/name` in lower case
/// (`formatResourceName`), `<none>` without one.
pub(crate) fn controller_of(object: &Value) -> Value {
    let owner = array_at(object, ".metadata.ownerReferences")
        .iter()
        .find(|owner| at(owner, ".controller").and_then(Value::as_bool) == Some(true));
    let Some(owner) = owner else {
        return Value::from(format::NONE);
    };
    let api_version = str_at(owner, ".apiVersion");
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let kind = str_at(owner, ".kind");
    let group_kind = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    Value::from(format!(
        "{}/{}",
        group_kind.to_lowercase(),
        str_at(owner, ".name")
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn job_status_takes_the_first_condition_that_holds() {
        let job = |conditions: Value| json!({"status": {"conditions": conditions}});
        assert_eq!(job_status(&job(json!([]))), json!("Running"));
        let done = job(
            json!([{"type": "Failed", "status": "True"}, {"type": "Complete", "status": "True"}]),
        );
        assert_eq!(job_status(&done), json!("Complete"));
        let suspended = job(json!([{"type": "Suspended", "status": "True"}]));
        assert_eq!(job_status(&suspended), json!("Suspended"));
        let met = job(json!([{"type": "SuccessCriteriaMet", "status": "True"}]));
        assert_eq!(job_status(&met), json!("SuccessCriteriaMet"));
        assert_eq!(job_status_before_success_criteria(&met), json!("Running"));
        // Only the first condition of a type counts (hasJobCondition).
        let first_false = job(
            json!([{"type": "Failed", "status": "False"}, {"type": "Failed", "status": "True"}]),
        );
        assert_eq!(job_status(&first_false), json!("Running"));
        let deleted = json!({"metadata": {"deletionTimestamp": "2024-05-01T09:00:00Z"},
            "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
        assert_eq!(job_status(&deleted), json!("Terminating"));
    }

    #[test]
    fn job_completions_and_duration() {
        let now: Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
        assert_eq!(
            job_completions(&json!({"spec": {"completions": 3}, "status": {"succeeded": 1}})),
            json!("1/3")
        );
        assert_eq!(
            job_completions(&json!({"spec": {"parallelism": 2}})),
            json!("0/1 of 2")
        );
        assert_eq!(
            job_completions(&json!({"spec": {"parallelism": 1}})),
            json!("0/1")
        );
        assert_eq!(job_duration(&json!({}), now), json!(""));
        let running = json!({"status": {"startTime": "2024-05-01T09:58:00Z"}});
        assert_eq!(job_duration(&running, now), json!("2m"));
        let done = json!({"status": {"startTime": "2024-05-01T09:00:00Z", "completionTime": "2024-05-01T09:00:42Z"}});
        assert_eq!(job_duration(&done, now), json!("42s"));
    }

    #[test]
    fn controller_is_the_controlling_owner() {
        let revision = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "p"},
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "controller": true}]}});
        assert_eq!(controller_of(&revision), json!("daemonset.apps/agent"));
        let core = json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "controller": true}]}});
        assert_eq!(controller_of(&core), json!("node/n"));
        assert_eq!(controller_of(&json!({})), json!("<none>"));
    }
}
