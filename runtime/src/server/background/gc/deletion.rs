//! The deletion rules every delete path shares, the request handlers' and the collector's:
//! what sets a kind's rules apart (`DeleteClass`: Pods delete gracefully, Namespaces are held
//! by `spec.finalizers` too, some legacy controllers orphan by default), the checks of
//! `DeleteOptions`, the collector finalizers (`orphan`, `foregroundDeletion`) a propagation
//! policy sets, and what a delete does to an object ([`plan_delete`]).
//!
//! Pure functions over JSON values: nothing here reads or writes the store, so a handler and
//! the collector decide a delete the same way.

use serde_json::{Map, Value};

use crate::ResourceInfo;
use crate::meta::{DeleteOptions, DeletionPropagation, StatusCause};
use crate::time::Time;

use crate::server::http::error::ApiError;

/// The finalizer that makes the collector orphan an object's dependents before it goes.
pub(crate) const ORPHAN_FINALIZER: &str = "orphan";

/// The finalizer that holds an object until the collector has deleted its blocking dependents.
pub(crate) const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The default grace period of a Pod whose spec names none (upstream's API default).
const DEFAULT_POD_GRACE: i64 = 30;

/// The upstream values a `propagationPolicy` may take, as its message lists them.
const POLICY_VALUES: &[&str] = &["Foreground", "Background", "Orphan", "nil"];

/// What sets a kind's deletion rules apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeleteClass {
    /// Core `v1` Pods: graceful deletion.
    pub(crate) pod: bool,
    /// Core `v1` Namespaces: `spec.finalizers` hold them too.
    pub(crate) namespace: bool,
    /// Dependents are orphaned when a delete names no policy.
    pub(crate) default_orphan: bool,
}

/// The deletion rules of a served kind. The kinds that orphan by default are the ones upstream
/// kept that way for old clients: ReplicationControllers, and the controllers of
/// `extensions/v1beta1`, `apps/v1beta1` and `apps/v1beta2`.
pub(crate) fn class_of(info: &ResourceInfo) -> DeleteClass {
    let group: &str = &info.gvk.group;
    let version: &str = &info.gvk.version;
    let plural: &str = &info.plural;
    let legacy_controller = match (group, version) {
        ("extensions", "v1beta1") | ("apps", "v1beta2") => {
            matches!(
                plural,
                "deployments" | "daemonsets" | "replicasets" | "statefulsets"
            )
        }
        ("apps", "v1beta1") => matches!(plural, "deployments" | "statefulsets"),
        _ => false,
    };
    DeleteClass {
        pod: group.is_empty() && plural == "pods",
        namespace: group.is_empty() && plural == "namespaces",
        default_orphan: legacy_controller
            || (group.is_empty() && plural == "replicationcontrollers"),
    }
}

/// The deletion rules of a stored object, from its key (the collector always names a policy,
/// so the default does not matter there).
pub(super) fn class_of_key(key: &str) -> DeleteClass {
    DeleteClass {
        pod: key.starts_with("/registry/core/pods/"),
        namespace: key.starts_with("/registry/core/namespaces/"),
        default_orphan: false,
    }
}

/// Checks `DeleteOptions` as upstream's `ValidateDeleteOptions` does: the policy, then
/// `orphanDependents` with a policy, then `dryRun`, all in one 422 on `DeleteOptions`.
/// Answers whether the delete is a dry run.
pub(crate) fn validate_options(options: &DeleteOptions) -> Result<bool, ApiError> {
    let mut causes = Vec::new();
    if let (Some(_), Some(policy)) = (options.orphan_dependents, &options.propagation_policy) {
        causes.push(StatusCause::invalid(
            "propagationPolicy",
            &Value::from(policy.as_str()),
            "orphanDependents and deletionPropagation cannot be both set",
        ));
    }
    if let Some(DeletionPropagation::Other(value)) = &options.propagation_policy {
        causes.push(StatusCause::not_supported(
            "propagationPolicy",
            &Value::from(value.as_str()),
            POLICY_VALUES,
        ));
    }
    let dry_run = match crate::server::http::dry_run::delete_dry_run(&options.dry_run) {
        Ok(dry_run) => dry_run,
        Err(e) => {
            let status = e.into_status();
            causes.extend(status.details.map(|d| d.causes).unwrap_or_default());
            true
        }
    };
    if causes.is_empty() {
        Ok(dry_run)
    } else {
        Err(ApiError::invalid(
            "meta.k8s.io",
            "DeleteOptions",
            "",
            causes,
        ))
    }
}

/// A string list at a JSON pointer (empty when absent).
pub(super) fn strings_at(object: &Value, pointer: &str) -> Vec<String> {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.finalizers`.
pub(crate) fn finalizers(object: &Value) -> Vec<String> {
    strings_at(object, "/metadata/finalizers")
}

/// Whether `metadata.deletionTimestamp` is set.
pub(crate) fn is_deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// Whether anything still holds the object: `metadata.finalizers`, or for namespaces
/// `spec.finalizers`.
pub(super) fn held(class: DeleteClass, object: &Value) -> bool {
    !finalizers(object).is_empty()
        || (class.namespace && !strings_at(object, "/spec/finalizers").is_empty())
}

/// The object's finalizers after a delete with `options`, following upstream's order of
/// precedence: `orphanDependents`, then `propagationPolicy`, then the collector finalizer the
/// object already has, then the kind's default.
fn finalizers_after_delete(
    class: DeleteClass,
    current: &[String],
    options: &DeleteOptions,
) -> Vec<String> {
    let has = |f: &str| current.iter().any(|c| c == f);
    let explicit = match (options.orphan_dependents, &options.propagation_policy) {
        (Some(true), _) | (None, Some(DeletionPropagation::Orphan)) => Some((true, false)),
        (Some(false), _) | (None, Some(DeletionPropagation::Background)) => Some((false, false)),
        (None, Some(DeletionPropagation::Foreground)) => Some((false, true)),
        _ => None,
    };
    let (orphan, foreground) = explicit.unwrap_or_else(|| {
        if has(ORPHAN_FINALIZER) {
            (true, false)
        } else if has(FOREGROUND_FINALIZER) {
            (false, true)
        } else {
            (class.default_orphan, false)
        }
    });
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    if orphan {
        next.push(ORPHAN_FINALIZER.to_owned());
    }
    if foreground {
        next.push(FOREGROUND_FINALIZER.to_owned());
    }
    let same = next.len() == current.len() && next.iter().all(|f| has(f));
    if same { current.to_vec() } else { next }
}

/// What a delete does to an object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DeletePlan {
    /// Nothing holds it: remove it from the store.
    Remove,
    /// It stays, marked for deletion: store this.
    Mark(Value),
    /// It is already marked exactly so.
    Unchanged,
}

fn timestamp_after(now: jiff::Timestamp, seconds: i64) -> Value {
    let at = now
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .unwrap_or(now);
    serde_json::to_value(Time::from(at)).unwrap_or(Value::Null)
}

/// The grace period a delete gives a Pod that is not being deleted yet, as upstream's Pod
/// strategy computes it: the request's, else the Pod's own, and zero for a Pod that is not
/// scheduled or has finished.
fn pod_grace(pod: &Value, options: &DeleteOptions) -> i64 {
    let requested = options
        .grace_period_seconds
        .or_else(|| {
            pod.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(DEFAULT_POD_GRACE);
    let scheduled = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let finished = matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Failed" | "Succeeded")
    );
    if !scheduled || finished {
        0
    } else {
        // Negative periods mean one second upstream.
        if requested < 0 { 1 } else { requested }
    }
}

/// Decides what a delete with `options` does to `current` (a served or stored object) at
/// `now`, as upstream's generic store does: collector finalizers are set or cleared per the
/// policy, an object that anything holds is marked (`deletionTimestamp`, and for Pods with a
/// grace period `deletionGracePeriodSeconds`), and anything else is removed.
pub(crate) fn plan_delete(
    class: DeleteClass,
    current: &Value,
    options: &DeleteOptions,
    now: jiff::Timestamp,
) -> DeletePlan {
    let already = is_deleting(current);
    let current_grace = current
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut grace = 0;
    if class.pod {
        if already && current_grace > 0 {
            // A graceful deletion is under way: only a shorter period changes it, and the
            // finalizers stay as they are.
            match options.grace_period_seconds.map(|g| g.max(0)) {
                Some(shorter) if shorter < current_grace => grace = shorter,
                _ => return DeletePlan::Unchanged,
            }
            if grace > 0 {
                let mut next = current.clone();
                let meta = crate::server::objects::json::meta_mut(&mut next);
                meta.insert("deletionTimestamp".into(), timestamp_after(now, grace));
                meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
                return DeletePlan::Mark(next);
            }
        } else if !already {
            grace = pod_grace(current, options);
        }
    }
    let before = finalizers(current);
    let after = finalizers_after_delete(class, &before, options);
    let mut next = current.clone();
    if after != before {
        crate::server::objects::json::meta_mut(&mut next).insert(
            "finalizers".into(),
            Value::from(after.iter().map(String::as_str).collect::<Vec<_>>()),
        );
    }
    if grace <= 0 && !held(class, &next) {
        return DeletePlan::Remove;
    }
    let meta = crate::server::objects::json::meta_mut(&mut next);
    if !already {
        if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
            && generation > 0
        {
            meta.insert("generation".into(), Value::from(generation + 1));
        }
        meta.insert("deletionTimestamp".into(), timestamp_after(now, grace));
        meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
    } else if grace == 0 && current_grace > 0 {
        meta.insert("deletionTimestamp".into(), timestamp_after(now, 0));
        meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
    }
    if class.namespace
        && let Value::Object(map) = &mut next
    {
        let phase = map
            .entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
        crate::server::objects::json::object_mut(phase)
            .insert("phase".into(), Value::from("Terminating"));
    }
    if next == *current {
        DeletePlan::Unchanged
    } else {
        DeletePlan::Mark(next)
    }
}

/// Whether a marked object has nothing left to wait for: no finalizer holds it, and it is not
/// a Pod within its grace period.
pub(super) fn unheld(key: &str, object: &Value) -> bool {
    let class = class_of_key(key);
    let graceful = class.pod
        && object
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .is_some_and(|g| g > 0);
    is_deleting(object) && !held(class, object) && !graceful
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(orphan: Option<bool>, policy: Option<&str>) -> DeleteOptions {
        DeleteOptions {
            orphan_dependents: orphan,
            propagation_policy: policy.map(DeletionPropagation::from),
            ..DeleteOptions::default()
        }
    }

    const PLAIN: DeleteClass = DeleteClass {
        pod: false,
        namespace: false,
        default_orphan: false,
    };
    const ORPHANING: DeleteClass = DeleteClass {
        pod: false,
        namespace: false,
        default_orphan: true,
    };

    /// The kind, its finalizers, `orphanDependents`, `propagationPolicy`, and the finalizers
    /// after the delete.
    type Row = (
        DeleteClass,
        &'static [&'static str],
        Option<bool>,
        Option<&'static str>,
        &'static [&'static str],
    );

    #[test]
    fn collector_finalizers_follow_upstream_precedence() {
        let rows: &[Row] = &[
            (PLAIN, &[], None, None, &[]),
            (ORPHANING, &[], None, None, &["orphan"]),
            (ORPHANING, &[], None, Some("Background"), &[]),
            (PLAIN, &[], None, Some("Orphan"), &["orphan"]),
            (
                PLAIN,
                &[],
                None,
                Some("Foreground"),
                &["foregroundDeletion"],
            ),
            (PLAIN, &["a"], Some(true), None, &["a", "orphan"]),
            (PLAIN, &["orphan"], Some(false), None, &[]),
            (PLAIN, &["orphan"], None, None, &["orphan"]),
            (
                PLAIN,
                &["foregroundDeletion"],
                None,
                None,
                &["foregroundDeletion"],
            ),
            (
                PLAIN,
                &["foregroundDeletion", "x"],
                None,
                Some("Orphan"),
                &["x", "orphan"],
            ),
            (
                ORPHANING,
                &["foregroundDeletion"],
                None,
                None,
                &["foregroundDeletion"],
            ),
        ];
        for (class, current, orphan, policy, want) in rows {
            let current: Vec<String> = current.iter().map(|s| (*s).to_owned()).collect();
            let got = finalizers_after_delete(*class, &current, &options(*orphan, *policy));
            assert_eq!(got, *want, "{class:?} {current:?} {orphan:?} {policy:?}");
        }
    }

    #[test]
    fn option_validation_uses_upstreams_words() {
        let rows = [
            (options(None, Some("Orphan")), None),
            (options(Some(true), None), None),
            (
                options(None, Some("Bogus")),
                Some(
                    "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Bogus\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                ),
            ),
            (
                options(Some(false), Some("Background")),
                Some(
                    "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Background\": orphanDependents and deletionPropagation cannot be both set",
                ),
            ),
        ];
        for (options, want) in rows {
            match (validate_options(&options), want) {
                (Ok(dry), None) => assert!(!dry),
                (Err(e), Some(message)) => {
                    assert_eq!(e.code().as_u16(), 422);
                    assert_eq!(e.into_status().message.as_deref(), Some(message));
                }
                (got, want) => panic!("{options:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn pods_are_graceful_only_when_scheduled() {
        let pod_class = DeleteClass {
            pod: true,
            namespace: false,
            default_orphan: false,
        };
        let now = jiff::Timestamp::now();
        let unscheduled = serde_json::json!({"metadata": {"name": "p"}, "spec": {}});
        let scheduled = serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 20},
        });
        let zero = DeleteOptions {
            grace_period_seconds: Some(0),
            ..DeleteOptions::default()
        };
        assert_eq!(
            plan_delete(pod_class, &unscheduled, &DeleteOptions::default(), now),
            DeletePlan::Remove
        );
        assert_eq!(
            plan_delete(pod_class, &scheduled, &zero, now),
            DeletePlan::Remove
        );
        let DeletePlan::Mark(marked) =
            plan_delete(pod_class, &scheduled, &DeleteOptions::default(), now)
        else {
            panic!("a scheduled pod is deleted gracefully");
        };
        assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 20);
        assert_eq!(
            plan_delete(pod_class, &marked, &DeleteOptions::default(), now),
            DeletePlan::Unchanged
        );
        assert_eq!(
            plan_delete(pod_class, &marked, &zero, now),
            DeletePlan::Remove
        );
    }
}
