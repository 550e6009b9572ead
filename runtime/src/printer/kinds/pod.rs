//! A Pod's READY, STATUS, RESTARTS and READINESS GATES, as `printPod` computes them
//! (`pkg/printers/internalversion/printers.go`). The summary changed over releases, and each
//! shape is its own rule: 1.20's (no sidecars, no scheduling gates, init restarts dropped once
//! initialized), 1.28's (restartable init containers count as containers, `SchedulingGated`,
//! `N (5m ago)` restarts) and 1.31's (a deleted pod in a terminal phase keeps its phase instead
//! of `Terminating`).
//!
//! Row conditions (`Completed` for a Succeeded or Failed pod) are not cells and are not given.

use jiff::Timestamp;
use serde_json::Value;

use crate::printer::format::{self, array_at, at, condition_true, int_at, str_at};

/// Whose `printPod` to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Era {
    /// 1.20's.
    V1_20,
    /// 1.28's: sidecars, `SchedulingGated`, the Initialized condition, the last restart.
    V1_28,
    /// 1.31's: `Terminating` only for pods not yet Succeeded or Failed.
    V1_31,
}

/// What `printPod` sums up of the containers.
struct Summary {
    ready: i64,
    total: i64,
    reason: String,
    restarts: i64,
    last_restart: Option<Timestamp>,
}

/// The later of two restart times, as `lastRestartDate.Before(&terminatedDate)` keeps it.
fn later(current: Option<Timestamp>, finished: Option<&Value>) -> Option<Timestamp> {
    match (current, format::timestamp(finished)) {
        (Some(a), Some(b)) if b > a => Some(b),
        (None, b) => b,
        (a, _) => a,
    }
}

/// Whether an init container runs for the pod's life (`restartPolicy: Always`, 1.28+).
fn restartable(pod: &Value, name: &str) -> bool {
    array_at(pod, ".spec.initContainers")
        .iter()
        .find(|c| str_at(c, ".name") == name)
        .is_some_and(|c| str_at(c, ".restartPolicy") == "Always")
}

/// The reason a terminated container gives: its reason, else its signal or exit code.
fn terminated_reason(terminated: &Value, prefix: &str) -> String {
    let reason = str_at(terminated, ".reason");
    if !reason.is_empty() {
        return format!("{prefix}{reason}");
    }
    let signal = int_at(terminated, ".signal");
    if signal != 0 {
        format!("{prefix}Signal:{signal}")
    } else {
        format!("{prefix}ExitCode:{}", int_at(terminated, ".exitCode"))
    }
}

fn summary(pod: &Value, era: Era) -> Summary {
    let sidecars = era >= Era::V1_28;
    let phase = str_at(pod, ".status.phase");
    let mut reason = match str_at(pod, ".status.reason") {
        "" => phase.to_owned(),
        reason => reason.to_owned(),
    };
    let conditions = array_at(pod, ".status.conditions");
    if sidecars
        && conditions.iter().any(|c| {
            str_at(c, ".type") == "PodScheduled" && str_at(c, ".reason") == "SchedulingGated"
        })
    {
        reason = "SchedulingGated".to_owned();
    }
    let init_containers = array_at(pod, ".spec.initContainers");
    let mut total = array_at(pod, ".spec.containers").len() as i64;
    if sidecars {
        total += init_containers
            .iter()
            .filter(|c| str_at(c, ".restartPolicy") == "Always")
            .count() as i64;
    }
    let (mut ready, mut restarts, mut sidecar_restarts) = (0, 0, 0);
    let (mut last_restart, mut last_sidecar_restart) = (None, None);
    let mut initializing = false;
    let statuses = array_at(pod, ".status.initContainerStatuses");
    for (i, status) in statuses.iter().enumerate() {
        let count = int_at(status, ".restartCount");
        let finished = at(status, ".lastState.terminated.finishedAt");
        restarts += count;
        last_restart = later(last_restart, finished);
        let sidecar = sidecars && restartable(pod, str_at(status, ".name"));
        if sidecar {
            sidecar_restarts += count;
            last_sidecar_restart = later(last_sidecar_restart, finished);
        }
        let terminated = at(status, ".state.terminated").filter(|t| !t.is_null());
        let waiting = str_at(status, ".state.waiting.reason");
        if terminated.is_some_and(|t| int_at(t, ".exitCode") == 0) {
            continue;
        }
        if sidecar && at(status, ".started").and_then(Value::as_bool) == Some(true) {
            if at(status, ".ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = match terminated {
            Some(terminated) => terminated_reason(terminated, "Init:"),
            None if !waiting.is_empty() && waiting != "PodInitializing" => {
                format!("Init:{waiting}")
            }
            None => format!("Init:{i}/{}", init_containers.len()),
        };
        initializing = true;
        break;
    }
    if !initializing || (sidecars && condition_true(conditions, "Initialized")) {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut running = false;
        for status in array_at(pod, ".status.containerStatuses").iter().rev() {
            restarts += int_at(status, ".restartCount");
            last_restart = later(last_restart, at(status, ".lastState.terminated.finishedAt"));
            let waiting = str_at(status, ".state.waiting.reason");
            let terminated = at(status, ".state.terminated").filter(|t| !t.is_null());
            if !waiting.is_empty() {
                reason = waiting.to_owned();
            } else if let Some(terminated) = terminated {
                reason = terminated_reason(terminated, "");
            } else if at(status, ".ready").and_then(Value::as_bool) == Some(true)
                && at(status, ".state.running").is_some_and(|r| !r.is_null())
            {
                running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && running {
            let pod_ready = conditions
                .iter()
                .any(|c| str_at(c, ".type") == "Ready" && str_at(c, ".status") == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_owned();
        }
    }
    let deleted = at(pod, ".metadata.deletionTimestamp").is_some_and(|t| !t.is_null());
    let terminal = matches!(phase, "Succeeded" | "Failed");
    if deleted && str_at(pod, ".status.reason") == "NodeLost" {
        reason = "Unknown".to_owned();
    } else if deleted && (era < Era::V1_31 || !terminal) {
        reason = "Terminating".to_owned();
    }
    Summary {
        ready,
        total,
        reason,
        restarts,
        last_restart,
    }
}

/// READY since 1.28: ready containers, sidecars included, of all containers.
pub(crate) fn ready(pod: &Value) -> Value {
    let s = summary(pod, Era::V1_28);
    Value::from(format!("{}/{}", s.ready, s.total))
}

/// READY before 1.28: ready containers of `spec.containers`, once initialized.
pub(crate) fn ready_before_sidecars(pod: &Value) -> Value {
    let s = summary(pod, Era::V1_20);
    Value::from(format!("{}/{}", s.ready, s.total))
}

/// STATUS since 1.31.
pub(crate) fn status(pod: &Value) -> Value {
    Value::from(summary(pod, Era::V1_31).reason)
}

/// STATUS of 1.28 to 1.30: any deleted pod is `Terminating`.
pub(crate) fn status_before_terminal_phases(pod: &Value) -> Value {
    Value::from(summary(pod, Era::V1_28).reason)
}

/// STATUS before 1.28.
pub(crate) fn status_before_sidecars(pod: &Value) -> Value {
    Value::from(summary(pod, Era::V1_20).reason)
}

/// RESTARTS since 1.22 (as 1.28 writes it): `3`, or `3 (5m ago)` with the last restart's age.
pub(crate) fn restarts(pod: &Value, now: Timestamp) -> Value {
    let s = summary(pod, Era::V1_28);
    Value::from(match s.last_restart {
        Some(at) if s.restarts != 0 => format!(
            "{} ({} ago)",
            s.restarts,
            format::human_duration(now.as_second() - at.as_second())
        ),
        _ => s.restarts.to_string(),
    })
}

/// RESTARTS before 1.22: the count, a number.
pub(crate) fn restart_count(pod: &Value) -> Value {
    Value::from(summary(pod, Era::V1_20).restarts)
}

/// READINESS GATES: gates whose condition (the first of its type) is True, of all gates;
/// `<none>` without gates.
pub(crate) fn readiness_gates(pod: &Value) -> Value {
    let gates = array_at(pod, ".spec.readinessGates");
    if gates.is_empty() {
        return Value::from(format::NONE);
    }
    let conditions = array_at(pod, ".status.conditions");
    let ready = gates
        .iter()
        .filter(|gate| condition_true(conditions, str_at(gate, ".conditionType")))
        .count();
    Value::from(format!("{ready}/{}", gates.len()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> Timestamp {
        "2024-05-01T10:00:00Z".parse().unwrap()
    }

    fn running(name: &str, ready: bool, restarts: i64) -> Value {
        json!({"name": name, "ready": ready, "restartCount": restarts,
               "state": {"running": {"startedAt": "2024-05-01T09:00:00Z"}}})
    }

    #[test]
    fn running_pod_counts_ready_containers_and_restarts() {
        let mut last = running("b", true, 2);
        last["lastState"] =
            json!({"terminated": {"exitCode": 1, "finishedAt": "2024-05-01T09:55:00Z"}});
        let pod = json!({
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "containerStatuses": [running("a", false, 0), last]},
        });
        assert_eq!(ready(&pod), json!("1/2"));
        assert_eq!(status(&pod), json!("Running"));
        assert_eq!(restarts(&pod, now()), json!("2 (5m ago)"));
        assert_eq!(restart_count(&pod), json!(2));
        // 1.28+: no "ago" suffix without restarts.
        let fresh = json!({"spec": {"containers": [{"name": "a"}]},
            "status": {"containerStatuses": [running("a", true, 0)]}});
        assert_eq!(restarts(&fresh, now()), json!("0"));
    }

    #[test]
    fn init_containers_give_the_status_while_initializing() {
        let pod = |init: Value| {
            json!({"spec": {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "c"}]},
                   "status": {"phase": "Pending", "initContainerStatuses": init,
                              "containerStatuses": [{"name": "c", "restartCount": 4,
                                                     "state": {"waiting": {"reason": "PodInitializing"}}}]}})
        };
        let done = json!({"name": "i1", "state": {"terminated": {"exitCode": 0}}});
        // The first init container still running: Init:i/n.
        let p = pod(json!([done, {"name": "i2", "state": {"running": {}}}]));
        assert_eq!(status(&p), json!("Init:1/2"));
        assert_eq!(ready(&p), json!("0/1"));
        // A waiting reason other than PodInitializing, a failure with or without a reason.
        let p = pod(
            json!([{"name": "i1", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]),
        );
        assert_eq!(status(&p), json!("Init:CrashLoopBackOff"));
        // Init restarts count while initializing; the main containers' do not.
        assert_eq!(restarts(&p, now()), json!("3"));
        let p = pod(json!([{"name": "i1", "state": {"terminated": {"exitCode": 2}}}]));
        assert_eq!(status(&p), json!("Init:ExitCode:2"));
        let p =
            pod(json!([{"name": "i1", "state": {"terminated": {"exitCode": 137, "signal": 9}}}]));
        assert_eq!(status(&p), json!("Init:Signal:9"));
        let p = pod(
            json!([{"name": "i1", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]),
        );
        assert_eq!(status(&p), json!("Init:Error"));
        // All init containers done: the main containers' state.
        let p = pod(json!([done, {"name": "i2", "state": {"terminated": {"exitCode": 0}}}]));
        assert_eq!(status(&p), json!("PodInitializing"));
        assert_eq!(restarts(&p, now()), json!("4"));
    }

    #[test]
    fn sidecars_count_as_containers_since_1_28() {
        let pod = json!({
            "spec": {"initContainers": [{"name": "proxy", "restartPolicy": "Always"}],
                     "containers": [{"name": "app"}]},
            "status": {"phase": "Running",
                "initContainerStatuses": [{"name": "proxy", "started": true, "ready": true, "restartCount": 1,
                                           "state": {"running": {}}}],
                "containerStatuses": [running("app", true, 0)]},
        });
        assert_eq!(ready(&pod), json!("2/2"));
        assert_eq!(status(&pod), json!("Running"));
        assert_eq!(restarts(&pod, now()), json!("1"));
        // 1.20 saw an init container still running, so the pod initializing.
        assert_eq!(ready_before_sidecars(&pod), json!("0/1"));
        assert_eq!(status_before_sidecars(&pod), json!("Init:0/1"));
    }

    #[test]
    fn completed_containers_beside_running_ones() {
        let pod = |ready_condition: &str| {
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]},
                   "status": {"phase": "Running",
                              "conditions": [{"type": "Ready", "status": ready_condition}],
                              "containerStatuses": [
                                  {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                                  running("b", true, 0)]}})
        };
        assert_eq!(status(&pod("True")), json!("Running"));
        assert_eq!(status(&pod("False")), json!("NotReady"));
    }

    #[test]
    fn deleted_pods() {
        let mut pod = json!({"metadata": {"deletionTimestamp": "2024-05-01T09:59:00Z"},
                             "spec": {"containers": [{"name": "a"}]},
                             "status": {"phase": "Running", "containerStatuses": [running("a", true, 0)]}});
        assert_eq!(status(&pod), json!("Terminating"));
        pod["status"]["phase"] = json!("Succeeded");
        // 1.31+: a terminal pod keeps its phase; before, every deleted pod was Terminating.
        assert_eq!(status(&pod), json!("Succeeded"));
        assert_eq!(status_before_terminal_phases(&pod), json!("Terminating"));
        assert_eq!(status_before_sidecars(&pod), json!("Terminating"));
        // A pod on an unreachable node.
        pod["status"]["reason"] = json!("NodeLost");
        assert_eq!(status(&pod), json!("Unknown"));
        assert_eq!(status_before_sidecars(&pod), json!("Unknown"));
    }

    #[test]
    fn scheduling_gates_and_readiness_gates() {
        let pod = json!({
            "spec": {"containers": [{"name": "a"}],
                     "readinessGates": [{"conditionType": "x"}, {"conditionType": "y"}]},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"},
                {"type": "x", "status": "True"}, {"type": "y", "status": "False"},
                {"type": "y", "status": "True"}]},
        });
        assert_eq!(status(&pod), json!("SchedulingGated"));
        assert_eq!(status_before_sidecars(&pod), json!("Pending"));
        // Only the first condition of a gate's type counts.
        assert_eq!(readiness_gates(&pod), json!("1/2"));
        assert_eq!(readiness_gates(&json!({})), json!("<none>"));
    }
}
