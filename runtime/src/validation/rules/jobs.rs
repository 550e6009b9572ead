//! A Job's rules (`pkg/apis/batch/validation/validation.go`: `validateGeneratedSelector`,
//! `ValidateJob`, `validateJobSpec`, `ValidateJobSpecUpdate`, `validateJobStatus`) and a
//! CronJob's job template and name (`ValidateJobTemplateSpec`, `ValidateCronJobCreate`). The selector these check is the one
//! the Job strategy generates on create ([`crate::write_rules::CreateRule::JobSelector`]).

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown, go_quoted};
use super::super::format::Format;
use super::super::{IMMUTABLE, at_path};
use super::go_value::{self, GoType, Kind};
use super::networking::domain_prefixed_path;
use super::{Workload, items, present, selector, text};
use jiff::Timestamp;

use crate::KubeVersion;
use crate::time::Time;
use crate::write_rules::job_labels;

/// From 1.21 (`IndexedJob`) a Job has a completion mode, and an Indexed Job's last pod
/// hostname must be a DNS label.
const INDEXED_SINCE: KubeVersion = KubeVersion::new(1, 21);
/// From 1.21 a Job's restart policy `Always` (or none) is reported as required, with the valid
/// values; before, as any unsupported value.
const RESTART_REQUIRED_SINCE: KubeVersion = KubeVersion::new(1, 21);
/// From 1.27 (`ElasticIndexedJob`, beta and on) an Indexed Job's completions may change with
/// its parallelism.
const ELASTIC_INDEXED_SINCE: KubeVersion = KubeVersion::new(1, 27);
/// The most pods an Indexed Job may run at once (`maxParallelismForIndexedJob`).
const MAX_INDEXED_PARALLELISM: i64 = 100_000;
/// The most indexes `maxFailedIndexes` may name (`maxFailedIndexesForIndexedJob`).
const MAX_FAILED_INDEXES: i64 = 100_000;
/// The most rules of a pod failure policy (`maxPodFailurePolicyRules`).
const MAX_FAILURE_RULES: usize = 20;
/// The most exit codes of one rule (`maxPodFailurePolicyOnExitCodesValues`).
const MAX_EXIT_CODES: usize = 255;
/// The most pod condition patterns of one rule (`maxPodFailurePolicyOnPodConditionsPatterns`).
const MAX_CONDITION_PATTERNS: usize = 20;
/// JobManagedBy is beta and on by default from 1.32 (alpha in 1.30 and 1.31, the field dropped):
/// `managedBy` is checked, and writes through `/status` are held to the strategy's stricter
/// rules.
const MANAGED_BY_SINCE: KubeVersion = KubeVersion::new(1, 32);
/// The longest `managedBy` (`maxManagedByLength`).
const MAX_MANAGED_BY: usize = 63;
/// JobSuccessPolicy is beta and on by default from 1.31.
const SUCCESS_POLICY_SINCE: KubeVersion = KubeVersion::new(1, 31);
/// The most rules of a success policy (`maxSuccessPolicyRule`).
const MAX_SUCCESS_RULES: usize = 20;
/// The longest `succeededIndexes` (`maxJobSuccessPolicySucceededIndexesLimit`).
const MAX_SUCCEEDED_INDEXES: usize = 64 * 1024;
/// From 1.21 a Job's status has `uncountedTerminatedPods` (JobTrackingWithFinalizers).
const UNCOUNTED_SINCE: KubeVersion = KubeVersion::new(1, 21);

/// `batch.SuccessPolicy` and its rules, printed by "requires indexed completion mode".
static SUCCESS_POLICY_RULE: GoType = GoType {
    name: "batch.SuccessPolicyRule",
    fields: &[
        (
            "SucceededIndexes",
            "succeededIndexes",
            Kind::Ptr("*string"),
            None,
        ),
        (
            "SucceededCount",
            "succeededCount",
            Kind::Ptr("*int32"),
            None,
        ),
    ],
};
static SUCCESS_POLICY: GoType = GoType {
    name: "batch.SuccessPolicy",
    fields: &[(
        "Rules",
        "rules",
        Kind::StructSlice(&SUCCESS_POLICY_RULE),
        None,
    )],
};

/// `batch.UncountedTerminatedPods`, printed by "must be empty for finished job".
static UNCOUNTED_TERMINATED_PODS: GoType = GoType {
    name: "batch.UncountedTerminatedPods",
    fields: &[
        (
            "Succeeded",
            "succeeded",
            Kind::StrSlice("[]types.UID"),
            None,
        ),
        ("Failed", "failed", Kind::StrSlice("[]types.UID"), None),
    ],
};

/// On a Job (the whole object): its generated selector and labels, its selector against its
/// template, an Indexed Job's name, and on update what may not change.
pub(super) fn job(new: &Value, old: Option<&Value>, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    // On update the `batch.kubernetes.io/` labels are required only of a Job that had both
    // (`validationOptionsForJob`).
    let prefixed = old.is_none_or(|old| {
        let labels = at_path(old, ".spec.template.metadata.labels");
        job_labels(release)
            .iter()
            .filter(|label| label.prefixed)
            .all(|label| labels.and_then(|l| l.get(label.name)).is_some())
    });
    generated_selector(new, prefixed, at, errors);
    if let Some(spec) = new.get("spec") {
        selector(Workload::Job, spec, &at.child("spec"), errors);
    }
    if release >= INDEXED_SINCE {
        indexed_name(new, at, errors);
    }
    if let Some(old) = old {
        job_update(new, old, at, errors);
    }
}

/// `validateGeneratedSelector`: unless `manualSelector`, the template carries the labels the
/// strategy generates, with this Job's uid and name, and the selector selects them.
fn generated_selector(job: &Value, prefixed: bool, at: &FieldPath, errors: &mut Errors) {
    if at_path(job, ".spec.manualSelector") == Some(&Value::Bool(true)) {
        return;
    }
    let Some(raw) = at_path(job, ".spec.selector").filter(|s| !s.is_null()) else {
        return;
    };
    let uid = at_path(job, ".metadata.uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = at_path(job, ".metadata.name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if uid.is_empty() {
        errors.required(&at.join(".metadata.uid"), "");
    }
    let template_labels = at_path(job, ".spec.template.metadata.labels");
    let labels_path = at.join(".spec.template.metadata.labels");
    let mut expected = std::collections::BTreeMap::new();
    // Upstream checks the legacy labels first, then the prefixed ones.
    let mut wanted: Vec<_> = job_labels(errors.release())
        .iter()
        .filter(|label| prefixed || !label.prefixed)
        .collect();
    wanted.sort_by_key(|label| label.prefixed);
    for label in wanted {
        let value = if label.uid { uid } else { name };
        expected.insert(label.name.to_owned(), value.to_owned());
        let path = labels_path.key(label.name);
        let detail = format!("must be '{value}'");
        match template_labels.and_then(|l| l.get(label.name)) {
            None => errors.required(&path, &detail),
            Some(found) if found.as_str() != Some(value) => {
                let shown = Shown::StringMap(template_labels.unwrap_or(&Value::Null));
                errors.invalid(&path, shown, &detail);
            }
            Some(_) => {}
        }
    }
    let Ok(parsed) = serde_json::from_value::<crate::meta::LabelSelector>(raw.clone()) else {
        return;
    };
    if parsed.matches(&expected) == Ok(false) {
        let path = at.join(".spec.selector");
        errors.invalid(
            &path,
            Shown::LabelSelector(raw),
            "`selector` not auto-generated",
        );
    }
}

/// `ValidateJob`: an Indexed Job's pods are named `<job>-<index>`, which must stay a DNS label.
fn indexed_name(job: &Value, at: &FieldPath, errors: &mut Errors) {
    if at_path(job, ".spec.completionMode").and_then(Value::as_str) != Some("Indexed") {
        return;
    }
    let Some(completions) = at_path(job, ".spec.completions").and_then(Value::as_i64) else {
        return;
    };
    if completions <= 0 {
        return;
    }
    let name = at_path(job, ".metadata.name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let hostname = format!("{name}-{}", completions - 1);
    if !Format::DnsLabel
        .messages(&hostname, errors.release())
        .is_empty()
    {
        let detail = format!("will not able to create pod with invalid DNS label: {hostname}");
        errors.invalid(
            &at.join(".metadata.name"),
            Shown::Plain(&Value::from(name)),
            &detail,
        );
    }
}

/// `ValidateJobSpecUpdate`'s completions (the selector, completion mode and policies that may
/// not change are data, the template is `job_template`).
fn job_update(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    completions(new, old, &at.child("spec"), errors);
}

/// `validateCompletions`: immutable, but an Indexed Job's from 1.27 may change with its
/// parallelism (to the same number).
fn completions(new: &Value, old: &Value, spec: &FieldPath, errors: &mut Errors) {
    let get = |job: &Value, name: &str| at_path(job, &format!(".spec.{name}")).cloned();
    let (value, before) = (get(new, "completions"), get(old, "completions"));
    if value == before {
        return;
    }
    let path = spec.child("completions");
    let shown = value.clone().unwrap_or(Value::Null);
    let indexed = get(new, "completionMode").as_ref().and_then(Value::as_str) == Some("Indexed");
    if errors.release() < ELASTIC_INDEXED_SINCE || !indexed {
        errors.invalid(&path, Shown::Plain(&shown), IMMUTABLE);
        return;
    }
    // A missing one is already reported as required of an Indexed Job.
    if value.is_some() && value != get(new, "parallelism") {
        let detail = "can only be modified in tandem with spec.parallelism";
        errors.invalid(&path, Shown::Plain(&shown), detail);
    }
}

/// On a JobSpec (a Job's, or a CronJob's job template's): `validateJobSpec` beyond the counts,
/// which are data: the pod template's restart policy, the completion mode and what an Indexed
/// Job needs, per-index backoff, the pod failure and replacement policies.
pub(super) fn job_spec(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let mode = spec.get("completionMode").and_then(Value::as_str);
    let indexed = mode == Some("Indexed");
    let int = |name: &str| spec.get(name).and_then(Value::as_i64);
    let per_index = int("backoffLimitPerIndex");
    let max_failed = int("maxFailedIndexes");
    if max_failed.is_some() && per_index.is_none() {
        let detail = "when maxFailedIndexes is specified";
        errors.required(&at.child("backoffLimitPerIndex"), detail);
    }
    if release >= MANAGED_BY_SINCE
        && let Some(managed_by) = spec.get("managedBy").and_then(Value::as_str)
    {
        let path = at.child("managedBy");
        domain_prefixed_path(managed_by, &path, errors);
        if managed_by.len() > MAX_MANAGED_BY {
            errors.too_long(&path, MAX_MANAGED_BY);
        }
    }
    if let Some(mode) = mode {
        let supported = ["NonIndexed", "Indexed"];
        if !supported.contains(&mode) {
            errors.not_supported(&at.child("completionMode"), &Value::from(mode), &supported);
        }
    }
    if indexed {
        let completions = int("completions");
        if completions.is_none() {
            errors.required(&at.child("completions"), "when completion mode is Indexed");
        }
        if let Some(parallelism) = int("parallelism").filter(|&p| p > MAX_INDEXED_PARALLELISM) {
            let detail = format!(
                "must be less than or equal to {MAX_INDEXED_PARALLELISM} when completion mode is Indexed"
            );
            let path = at.child("parallelism");
            errors.invalid(&path, Shown::Plain(&Value::from(parallelism)), &detail);
        }
        if let (Some(completions), Some(max_failed)) = (completions, max_failed)
            && max_failed > completions
        {
            let path = at.child("maxFailedIndexes");
            let shown = Value::from(max_failed);
            errors.invalid(
                &path,
                Shown::Plain(&shown),
                "must be less than or equal to completions",
            );
        }
        if let Some(max_failed) = max_failed.filter(|&m| m > MAX_FAILED_INDEXES) {
            let detail = format!("must be less than or equal to {MAX_FAILED_INDEXES}");
            let path = at.child("maxFailedIndexes");
            errors.invalid(&path, Shown::Plain(&Value::from(max_failed)), &detail);
        }
    } else {
        for (name, value) in [
            ("backoffLimitPerIndex", per_index),
            ("maxFailedIndexes", max_failed),
        ] {
            if let Some(value) = value {
                let path = at.child(name);
                let shown = Value::from(value);
                errors.invalid(
                    &path,
                    Shown::Plain(&shown),
                    "requires indexed completion mode",
                );
            }
        }
    }
    if let Some(policy) = spec.get("podFailurePolicy").filter(|p| !p.is_null()) {
        pod_failure_policy(spec, policy, &at.child("podFailurePolicy"), errors);
    }
    if release >= SUCCESS_POLICY_SINCE
        && let Some(policy) = spec.get("successPolicy").filter(|p| !p.is_null())
    {
        let path = at.child("successPolicy");
        if indexed {
            success_policy(policy, int("completions"), &path, errors);
        } else {
            let (go, json) = go_value::render(&SUCCESS_POLICY, policy, release);
            let detail = "requires indexed completion mode";
            errors.invalid(&path, Shown::Go(&go, &json), detail);
        }
    }
    pod_replacement_policy(spec, &at.child("podReplacementPolicy"), errors);
    restart_policy(spec, at, release, errors);
}

/// `validateSuccessPolicy`: 1 to 20 rules, each with a count or indexes, the indexes well
/// formed below `completions`, the count within the completions and the indexes named.
fn success_policy(policy: &Value, completions: Option<i64>, at: &FieldPath, errors: &mut Errors) {
    let rules = items(policy, "rules");
    let rules_at = at.child("rules");
    if rules.is_empty() {
        let detail = "at least one rules must be specified when the successPolicy is specified";
        errors.required(&rules_at, detail);
    }
    if rules.len() > MAX_SUCCESS_RULES {
        errors.too_many(&rules_at, rules.len(), MAX_SUCCESS_RULES);
    }
    // An Indexed Job without completions is reported as such; upstream would dereference nil.
    let Some(completions) = completions else {
        return;
    };
    for (i, rule) in rules.iter().enumerate() {
        let at = rules_at.index(i);
        let indexes = rule.get("succeededIndexes").and_then(Value::as_str);
        let count = rule.get("succeededCount").and_then(Value::as_i64);
        if indexes.is_none() && count.is_none() {
            let detail = "at least one of succeededCount or succeededIndexes must be specified";
            errors.required(&at, detail);
        }
        let mut total = 0;
        if let Some(indexes) = indexes {
            let path = at.child("succeededIndexes");
            if indexes.len() > MAX_SUCCEEDED_INDEXES {
                errors.too_long(&path, MAX_SUCCEEDED_INDEXES);
            }
            match indexes_total(indexes, completions) {
                Ok(sum) => total = sum,
                Err(message) => {
                    let detail = format!("error parsing succeededIndexes: {message}");
                    errors.invalid(&path, Shown::Plain(&Value::from(indexes)), &detail);
                }
            }
        }
        if let Some(count) = count {
            let path = at.child("succeededCount");
            let shown = Value::from(count);
            if count < 0 {
                errors.invalid(&path, Shown::Plain(&shown), super::super::NEGATIVE);
            }
            if count > completions {
                let detail = format!(
                    "must be less than or equal to {completions} (the number of specified completions)"
                );
                errors.invalid(&path, Shown::Plain(&shown), &detail);
            }
            if indexes.is_some() && count > total {
                let detail = format!(
                    "must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"
                );
                errors.invalid(&path, Shown::Plain(&shown), &detail);
            }
        }
    }
}

/// `validateIndexesFormat`: comma-separated indexes and `x-y` intervals, increasing, below
/// `completions`; the number of indexes, or upstream's error.
fn indexes_total(indexes: &str, completions: i64) -> Result<i64, String> {
    if indexes.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0;
    for interval in indexes.split(',') {
        let (x, y) = index_interval(interval, completions)?;
        if let Some(last) = last.filter(|&l| l >= x) {
            return Err(format!(
                "non-increasing order, previous: {last}, current: {x}"
            ));
        }
        total += y - x + 1;
        last = Some(y);
    }
    Ok(total)
}

/// `parseIndexInterval`: `x` or `x-y`, each an integer below `completions`, `x` below `y`.
fn index_interval(interval: &str, completions: i64) -> Result<(i64, i64), String> {
    let limits: Vec<&str> = interval.split('-').collect();
    if limits.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            Value::from(interval)
        ));
    }
    let parse = |limit: &str| -> Result<i64, String> {
        // Go's strconv.Atoi: an optional sign and decimal digits.
        let n = limit.parse::<i64>().map_err(|_| {
            format!(
                "cannot convert string to integer for index: {}",
                Value::from(limit)
            )
        })?;
        if n >= completions {
            return Err(format!("too large index: {}", Value::from(limit)));
        }
        Ok(n)
    };
    let x = parse(limits[0])?;
    let Some(second) = limits.get(1) else {
        return Ok((x, x));
    };
    let y = parse(second)?;
    if x >= y {
        return Err(format!("non-increasing order, previous: {x}, current: {y}"));
    }
    Ok((x, y))
}

/// `validateJobStatus` and `ValidateJobStatusUpdate`, on writes through `jobs/status`: counts
/// not negative, uncounted pods' UIDs set and once; from 1.32 (JobManagedBy on) the rules the
/// strategy's `getStatusValidationOptions` switches on, each only where the write changes what
/// it looks at ([`status_transitions`]).
pub(super) fn job_status(job: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let null = Value::Null;
    let status = job.get("status").unwrap_or(&null);
    let at = at.child("status");
    for name in ["active", "succeeded", "failed", "ready", "terminating"] {
        if let Some(n) = count(status, name).filter(|&n| n < 0) {
            let shown = Value::from(n);
            errors.invalid(
                &at.child(name),
                Shown::Plain(&shown),
                super::super::NEGATIVE,
            );
        }
    }
    if release >= UNCOUNTED_SINCE
        && let Some(uncounted) = status.get("uncountedTerminatedPods")
    {
        let path = at.child("uncountedTerminatedPods");
        let mut seen: Vec<&str> = Vec::new();
        for list in ["succeeded", "failed"] {
            for (i, uid) in items(uncounted, list).iter().enumerate() {
                let uid = uid.as_str().unwrap_or("");
                let p = path.child(list).index(i);
                if uid.is_empty() {
                    errors.invalid(&p, Shown::Plain(&Value::from(uid)), "must not be empty");
                } else if seen.contains(&uid) {
                    errors.duplicate(&p, &Value::from(uid));
                } else {
                    seen.push(uid);
                }
            }
        }
    }
    if release >= MANAGED_BY_SINCE {
        let old_status = old.get("status").unwrap_or(&null);
        status_transitions(job, status, old_status, &at, errors);
    }
}

/// A status count, if written.
fn count(status: &Value, name: &str) -> Option<i64> {
    status.get(name).and_then(Value::as_i64)
}

/// Whether a status has the condition `kind` with status `True`.
fn condition(status: &Value, kind: &str) -> bool {
    items(status, "conditions")
        .iter()
        .any(|c| text(c, "type") == kind && text(c, "status") == "True")
}

/// A `metav1.Time` status field as the Job's validation sees it: the instant (a fraction a
/// client wrote is kept, as Go keeps it until the object is stored) and how Go's
/// `time.Time.String()` prints it in a field error, the server's zone being UTC
/// (`2024-01-02 03:04:05.5 +0000 UTC`); none unless it reads as Go's RFC 3339.
fn go_time(value: &Value) -> Option<(Timestamp, String)> {
    let text = value.as_str()?;
    text.parse::<Time>().ok()?;
    let at: Timestamp = text.parse().ok()?;
    let shown = format!("{} +0000 UTC", at.strftime("%Y-%m-%d %H:%M:%S%.f"));
    Some((at, shown))
}

/// [`go_time`]'s text of a time field, or its JSON when it does not read as a time.
fn shown_time(value: &Value) -> String {
    go_time(value).map_or_else(|| value.to_string(), |(_, shown)| shown)
}

/// The rules `getStatusValidationOptions` switches on with JobManagedBy (from 1.32), in
/// `validateJobStatus`' order, then `ValidateJobStatusUpdate`'s: each rule runs only when the
/// write changes a condition or field it reads, so a controller's status that was valid stays
/// writable. Messages from `pkg/apis/batch/validation/validation.go` as of 1.35.
fn status_transitions(job: &Value, new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let null = Value::Null;
    let spec = job.get("spec").unwrap_or(&null);
    let changed = |name: &str| field_changed(new, old, name);
    let flipped = |kind: &str| condition(new, kind) != condition(old, kind);
    let [complete, failed, failure_target, criteria_met] =
        ["Complete", "Failed", "FailureTarget", "SuccessCriteriaMet"].map(|k| condition(new, k));
    let finished = complete || failed;
    let finished_changed = finished != (condition(old, "Complete") || condition(old, "Failed"));
    let conditions = at.child("conditions");

    if (flipped("Complete") || flipped("Failed")) && complete && failed {
        errors.invalid_omitted(
            &conditions,
            "cannot set Complete=True and Failed=true conditions",
        );
    }
    if (flipped("Complete") || flipped("FailureTarget")) && complete && failure_target {
        errors.invalid_omitted(
            &conditions,
            "cannot set Complete=True and FailureTarget=true conditions",
        );
    }
    if flipped("Complete") || changed("completionTime") {
        match (complete, present(new, "completionTime")) {
            (false, Some(time)) => {
                let shown = shown_time(time);
                let detail = "cannot set completionTime when there is no Complete=True condition";
                errors.invalid_text(&at.child("completionTime"), &shown, detail);
            }
            (true, None) => {
                errors.required(
                    &at.child("completionTime"),
                    "completionTime is required for Complete jobs",
                );
            }
            _ => {}
        }
    }
    if (changed("startTime") || changed("completionTime"))
        && let Some((start, _)) = present(new, "startTime").and_then(go_time)
        && let Some((end, shown)) = present(new, "completionTime").and_then(go_time)
        && end < start
    {
        errors.invalid_text(
            &at.child("completionTime"),
            &shown,
            "must be equal to or after `startTime`",
        );
    }
    if (flipped("Failed") || changed("failedIndexes")) && failed && !failure_target {
        errors.invalid_omitted(
            &conditions,
            "cannot set Failed=True condition without the FailureTarget=true condition",
        );
    }
    if (flipped("Complete") || flipped("SuccessCriteriaMet")) && complete && !criteria_met {
        errors.invalid_omitted(
            &conditions,
            "cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
        );
    }
    if (finished_changed || changed("active"))
        && finished
        && let Some(active) = count(new, "active").filter(|&n| n > 0)
    {
        let shown = Value::from(active);
        let detail = "active>0 is invalid for finished job";
        errors.invalid(&at.child("active"), Shown::Plain(&shown), detail);
    }
    if (finished_changed || changed("startTime")) && finished && present(new, "startTime").is_none()
    {
        errors.required(
            &at.child("startTime"),
            "startTime is required for finished job",
        );
    }
    if (finished_changed || changed("uncountedTerminatedPods"))
        && finished
        && let Some(uncounted) = present(new, "uncountedTerminatedPods")
        && ["succeeded", "failed"]
            .iter()
            .any(|list| !items(uncounted, list).is_empty())
    {
        let (go, json) = go_value::render(&UNCOUNTED_TERMINATED_PODS, uncounted, errors.release());
        errors.invalid(
            &at.child("uncountedTerminatedPods"),
            Shown::Go(&go, &json),
            "must be empty for finished job",
        );
    }
    indexes(spec, new, old, at, errors);
    if (finished_changed || changed("terminating"))
        && finished
        && let Some(terminating) = count(new, "terminating").filter(|&n| n > 0)
    {
        let shown = Value::from(terminating);
        let detail = "terminating>0 is invalid for finished job";
        errors.invalid(&at.child("terminating"), Shown::Plain(&shown), detail);
    }
    if (changed("ready") || changed("active"))
        && let Some(ready) = count(new, "ready")
        && ready > count(new, "active").unwrap_or(0)
    {
        let shown = Value::from(ready);
        let detail = "cannot set more ready pods than active";
        errors.invalid(&at.child("ready"), Shown::Plain(&shown), detail);
    }

    // The success criteria, checked on every status write since JobSuccessPolicy, last.
    if criteria_met && failed {
        errors.invalid_omitted(
            &conditions,
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        );
    }
    if criteria_met && failure_target {
        errors.invalid_omitted(
            &conditions,
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        );
    }
    if present(spec, "successPolicy").is_some() && complete && !criteria_met {
        errors.invalid_omitted(
            &conditions,
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        );
    }
    // ValidateJobStatusUpdate: what the stored status holds stays.
    for kind in ["Failed", "Complete", "FailureTarget"] {
        if condition(old, kind) && !condition(new, kind) {
            let detail = format!("cannot disable the terminal {kind}=True condition");
            errors.invalid_omitted(&conditions, &detail);
        }
    }
    let number = |status: &Value, name: &str| count(status, name).unwrap_or(0);
    if number(new, "failed") < number(old, "failed") {
        let shown = Value::from(number(new, "failed"));
        let detail = "cannot decrease the failed counter";
        errors.invalid(&at.child("failed"), Shown::Plain(&shown), detail);
    }
    let indexed = text(spec, "completionMode") == "Indexed";
    let elastic = indexed && spec.get("completions") == spec.get("parallelism");
    if !elastic && number(new, "succeeded") < number(old, "succeeded") {
        let shown = Value::from(number(new, "succeeded"));
        let detail = "cannot decrease the succeeded counter";
        errors.invalid(&at.child("succeeded"), Shown::Plain(&shown), detail);
    }
    if let (Some(time), Some(_)) = (
        present(new, "completionTime"),
        present(old, "completionTime"),
    ) && changed("completionTime")
    {
        let shown = shown_time(time);
        errors.invalid_text(&at.child("completionTime"), &shown, IMMUTABLE);
    }
    // A Job resuming (its `Suspended` condition gone) starts again (kubernetes#134769, in 1.35
    // and backported to 1.34).
    let resuming = condition(old, "Suspended") && !condition(new, "Suspended");
    if present(old, "startTime").is_some()
        && changed("startTime")
        && spec.get("suspend").and_then(Value::as_bool) != Some(true)
        && !resuming
    {
        let shown = present(new, "startTime").map_or_else(|| "\"null\"".to_owned(), shown_time);
        let detail = "field is immutable for unsuspended job once set";
        errors.invalid_text(&at.child("startTime"), &shown, detail);
    }
    if condition(old, "SuccessCriteriaMet") && !criteria_met {
        errors.invalid_omitted(
            &conditions,
            "cannot disable the SuccessCriteriaMet=True condition",
        );
    }
    if condition(old, "Complete") && !condition(old, "SuccessCriteriaMet") && criteria_met {
        errors.invalid_omitted(
            &conditions,
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        );
    }
}

/// The completed and failed indexes of a status write: parsed against `completions`, only an
/// Indexed Job's, failed ones only with a backoff limit per index, and never both at once.
fn indexes(spec: &Value, new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let changed = |name: &str| field_changed(new, old, name);
    let completions = spec.get("completions").and_then(Value::as_i64);
    let completed = present(new, "completedIndexes");
    let failed = present(new, "failedIndexes");
    let per_index = present(spec, "backoffLimitPerIndex").is_some();
    let parse = |indexes: Option<&Value>| -> Option<Result<Vec<(i64, i64)>, String>> {
        let indexes = indexes?.as_str()?;
        Some(intervals(indexes, completions?))
    };
    let completed_parsed = parse(completed);
    let failed_parsed = if per_index { parse(failed) } else { None };
    if changed("completedIndexes")
        && let (Some(Err(error)), Some(value)) = (&completed_parsed, completed)
    {
        let detail = format!("error parsing completedIndexes: {error}");
        errors.invalid(&at.child("completedIndexes"), Shown::Plain(value), &detail);
    }
    if changed("failedIndexes")
        && let (Some(Err(error)), Some(value)) = (&failed_parsed, failed)
    {
        let detail = format!("error parsing failedIndexes: {error}");
        errors.invalid(&at.child("failedIndexes"), Shown::Plain(value), &detail);
    }
    if changed("completedIndexes")
        && text(spec, "completionMode") != "Indexed"
        && let Some(value) = completed.filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
    {
        let detail = "cannot set non-empty completedIndexes when non-indexed completion mode";
        errors.invalid(&at.child("completedIndexes"), Shown::Plain(value), detail);
    }
    if changed("failedIndexes")
        && !per_index
        && let Some(value) = failed
    {
        let detail = "cannot set non-null failedIndexes when backoffLimitPerIndex is null";
        errors.invalid(&at.child("failedIndexes"), Shown::Plain(value), detail);
    }
    // `validateFailedIndexesNotOverlapCompleted` reads what it can of both lists.
    let readable = |indexes: Option<&Value>, completions: i64| -> Vec<(i64, i64)> {
        let text = indexes.and_then(Value::as_str).unwrap_or("");
        text.split(',')
            .filter(|interval| !interval.is_empty())
            .filter_map(|interval| index_interval(interval, completions).ok())
            .collect()
    };
    if (changed("completedIndexes") || changed("failedIndexes"))
        && let (Some(completions), Some(value)) = (completions, failed)
        && let Some(index) = first_overlap(
            &readable(completed, completions),
            &readable(failed, completions),
        )
    {
        let detail = format!("failedIndexes and completedIndexes overlap at index: {index}");
        errors.invalid(&at.child("failedIndexes"), Shown::Plain(value), &detail);
    }
}

/// Whether a write changes a status field. Go's non-pointer fields (`active`,
/// `completedIndexes`) read a missing value as their zero value.
fn field_changed(new: &Value, old: &Value, name: &str) -> bool {
    let zero = match name {
        "active" => Value::from(0),
        "completedIndexes" => Value::from(""),
        _ => Value::Null,
    };
    let read = |status| present(status, name).unwrap_or(&zero);
    read(new) != read(old)
}

/// The intervals of a valid indexes list (see [`indexes_total`]), or upstream's error.
fn intervals(indexes: &str, completions: i64) -> Result<Vec<(i64, i64)>, String> {
    indexes_total(indexes, completions)?;
    if indexes.is_empty() {
        return Ok(Vec::new());
    }
    indexes
        .split(',')
        .map(|interval| index_interval(interval, completions))
        .collect()
}

/// The lowest index in both sorted interval lists.
fn first_overlap(a: &[(i64, i64)], b: &[(i64, i64)]) -> Option<i64> {
    let (mut i, mut j) = (0, 0);
    while let (Some(&(a0, a1)), Some(&(b0, b1))) = (a.get(i), b.get(j)) {
        let low = a0.max(b0);
        if low <= a1.min(b1) {
            return Some(low);
        }
        if a1 < b1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    None
}

/// The pod template's restart policy: `OnFailure` or `Never`, and `Never` under a pod failure
/// policy.
fn restart_policy(spec: &Value, at: &FieldPath, release: KubeVersion, errors: &mut Errors) {
    let policy = at_path(spec, ".template.spec.restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    let path = at.join(".template.spec.restartPolicy");
    let supported = ["OnFailure", "Never"];
    if release >= RESTART_REQUIRED_SINCE && matches!(policy, "Always" | "") {
        errors.required(&path, "valid values: \"OnFailure\", \"Never\"");
    } else if !supported.contains(&policy) {
        errors.not_supported(&path, &Value::from(policy), &supported);
    } else if spec.get("podFailurePolicy").is_some_and(|p| !p.is_null()) && policy != "Never" {
        let detail = "only \"Never\" is supported when podFailurePolicy is specified";
        errors.invalid(&path, Shown::Plain(&Value::from(policy)), detail);
    }
}

/// `validatePodReplacementPolicy`: `Failed` under a pod failure policy, else either value.
fn pod_replacement_policy(spec: &Value, path: &FieldPath, errors: &mut Errors) {
    let Some(policy) = spec.get("podReplacementPolicy").and_then(Value::as_str) else {
        return;
    };
    let supported: &[&str] = if spec.get("podFailurePolicy").is_some_and(|p| !p.is_null()) {
        &["Failed"]
    } else {
        &["Failed", "TerminatingOrFailed"]
    };
    if !supported.contains(&policy) {
        errors.not_supported(path, &Value::from(policy), supported);
    }
}

/// `validatePodFailurePolicy` and its rules.
fn pod_failure_policy(spec: &Value, policy: &Value, at: &FieldPath, errors: &mut Errors) {
    let rules = items(policy, "rules");
    let rules_path = at.child("rules");
    if rules.len() > MAX_FAILURE_RULES {
        errors.too_many(&rules_path, rules.len(), MAX_FAILURE_RULES);
    }
    let containers: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|list| {
            at_path(spec, &format!(".template.spec.{list}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .map(|c| text(c, "name"))
        .collect();
    let per_index = spec
        .get("backoffLimitPerIndex")
        .is_some_and(|v| !v.is_null());
    for (i, rule) in rules.iter().enumerate() {
        let path = rules_path.index(i);
        failure_rule(rule, per_index, &containers, &path, errors);
    }
}

fn failure_rule(
    rule: &Value,
    per_index: bool,
    containers: &[&str],
    at: &FieldPath,
    errors: &mut Errors,
) {
    let actions = ["Count", "FailIndex", "FailJob", "Ignore"];
    let action = text(rule, "action");
    let action_path = at.child("action");
    if action.is_empty() {
        let detail = format!("valid values: {}", go_quoted(&actions));
        errors.required(&action_path, &detail);
    } else if action == "FailIndex" {
        if !per_index {
            let detail = "requires the backoffLimitPerIndex to be set";
            errors.invalid(&action_path, Shown::Plain(&Value::from(action)), detail);
        }
    } else if !actions.contains(&action) {
        errors.not_supported(&action_path, &Value::from(action), &actions);
    }
    let exit_codes = rule.get("onExitCodes").filter(|v| !v.is_null());
    let conditions = items(rule, "onPodConditions");
    if let Some(exit_codes) = exit_codes {
        on_exit_codes(exit_codes, containers, &at.child("onExitCodes"), errors);
    }
    if !conditions.is_empty() {
        on_pod_conditions(conditions, &at.child("onPodConditions"), errors);
    }
    if exit_codes.is_some() && !conditions.is_empty() {
        let detail = "specifying both OnExitCodes and OnPodConditions is not supported";
        errors.invalid_omitted(at, detail);
    }
    if exit_codes.is_none() && conditions.is_empty() {
        let detail = "specifying one of OnExitCodes and OnPodConditions is required";
        errors.invalid_omitted(at, detail);
    }
}

fn on_exit_codes(requirement: &Value, containers: &[&str], at: &FieldPath, errors: &mut Errors) {
    let operators = ["In", "NotIn"];
    let operator = text(requirement, "operator");
    let operator_path = at.child("operator");
    if operator.is_empty() {
        let detail = format!("valid values: {}", go_quoted(&operators));
        errors.required(&operator_path, &detail);
    } else if !operators.contains(&operator) {
        errors.not_supported(&operator_path, &Value::from(operator), &operators);
    }
    if let Some(name) = requirement.get("containerName").and_then(Value::as_str)
        && !containers.contains(&name)
    {
        let detail = "must be one of the container or initContainer names in the pod template";
        errors.invalid(
            &at.child("containerName"),
            Shown::Plain(&Value::from(name)),
            detail,
        );
    }
    let values_path = at.child("values");
    let raw = requirement.get("values").unwrap_or(&Value::Null);
    let values: Vec<i64> = items(requirement, "values")
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    if values.is_empty() {
        let shown = Shown::GoSlice("[]int32", raw);
        errors.invalid(&values_path, shown, "at least one value is required");
    } else if values.len() > MAX_EXIT_CODES {
        errors.too_many(&values_path, values.len(), MAX_EXIT_CODES);
    }
    let mut seen = std::collections::BTreeSet::new();
    for (j, &value) in values.iter().enumerate() {
        let path = values_path.index(j);
        if operator == "In" && value == 0 {
            let detail = "must not be 0 for the In operator";
            errors.invalid(&path, Shown::Plain(&Value::from(value)), detail);
        }
        if !seen.insert(value) {
            errors.duplicate(&path, &Value::from(value));
        }
    }
    if values.windows(2).any(|pair| pair[0] > pair[1]) {
        errors.invalid(
            &values_path,
            Shown::GoSlice("[]int32", raw),
            "must be ordered",
        );
    }
}

fn on_pod_conditions(patterns: &[Value], at: &FieldPath, errors: &mut Errors) {
    if patterns.len() > MAX_CONDITION_PATTERNS {
        errors.too_many(at, patterns.len(), MAX_CONDITION_PATTERNS);
    }
    let statuses = ["False", "True", "Unknown"];
    for (j, pattern) in patterns.iter().enumerate() {
        let path = at.index(j);
        let kind = text(pattern, "type");
        for message in Format::QualifiedName.messages(kind, errors.release()) {
            errors.invalid(
                &path.child("type"),
                Shown::Plain(&Value::from(kind)),
                &message,
            );
        }
        let status = text(pattern, "status");
        let status_path = path.child("status");
        if status.is_empty() {
            let detail = format!("valid values: {}", go_quoted(&statuses));
            errors.required(&status_path, &detail);
        } else if !statuses.contains(&status) {
            errors.not_supported(&status_path, &Value::from(status), &statuses);
        }
    }
}

/// On a CronJob's JobTemplateSpec (`ValidateJobTemplateSpec`): the strategy generates each
/// Job's selector, so the template may not set one or ask for a manual one.
pub(super) fn job_template_spec(template: &Value, at: &FieldPath, errors: &mut Errors) {
    let spec = at.child("spec");
    if let Some(selector) = at_path(template, ".spec.selector").filter(|s| !s.is_null()) {
        let detail = "`selector` will be auto-generated";
        errors.invalid(
            &spec.child("selector"),
            Shown::LabelSelector(selector),
            detail,
        );
    }
    if at_path(template, ".spec.manualSelector") == Some(&Value::Bool(true)) {
        let path = spec.child("manualSelector");
        errors.not_supported(&path, &Value::Bool(true), &["nil", "false"]);
    }
}

/// On a CronJob, creates only: its Jobs are named `<cronjob>-<11 characters>`, which must stay
/// a 63-character DNS label (`ValidateCronJobCreate`).
pub(super) fn cron_job_name(cron_job: &Value, at: &FieldPath, errors: &mut Errors) {
    let name = at_path(cron_job, ".metadata.name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.len() > 52 {
        let path = at.join(".metadata.name");
        let detail = "must be no more than 52 characters";
        errors.invalid(&path, Shown::Plain(&Value::from(name)), detail);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::lines;
    use super::*;
    use crate::write_rules::CreateRule;

    const UID: &str = "0b5e6f0e-1d51-4d5e-9f0c-3c1c0b7d2a11";

    /// A Job as a create leaves it in release 1.`minor`: uid, then the strategy's selector.
    fn created(minor: u16, spec: Value) -> Value {
        let mut job = json!({"metadata": {"name": "pi", "uid": UID}, "spec": spec});
        CreateRule::JobSelector.apply(&mut job, KubeVersion::new(1, minor));
        job
    }

    fn template(restart: &str) -> Value {
        json!({"spec": {"restartPolicy": restart, "containers": [{"name": "pi"}]}})
    }

    fn check_job(minor: u16, new: &Value, old: Option<&Value>) -> Vec<String> {
        lines(minor, |errors| job(new, old, &FieldPath::root(), errors))
    }

    #[test]
    fn a_generated_selector_passes_and_a_foreign_one_does_not() {
        for minor in [20, 28, 34] {
            let job = created(minor, json!({"template": template("Never")}));
            assert_eq!(
                check_job(minor, &job, None),
                Vec::<String>::new(),
                "1.{minor}"
            );
        }
        // A selector of the user's own without `manualSelector: true` gets the uid added and
        // still selects pods without the generated labels (validateGeneratedSelector).
        let spec = json!({"selector": {"matchLabels": {"app": "pi"}},
            "template": {"metadata": {"labels": {"app": "pi"}}, "spec": template("Never")["spec"]}});
        let job = created(28, spec);
        let found = check_job(28, &job, None);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"pi\", \"batch.kubernetes.io/controller-uid\":")
                && found[0].ends_with("`selector` not auto-generated"),
            "{found:?}"
        );
    }

    #[test]
    fn generated_labels_the_template_contradicts_are_refused() {
        let spec = json!({"template": {"metadata": {"labels": {"job-name": "other"}},
            "spec": template("Never")["spec"]}});
        let job = created(34, spec);
        assert_eq!(
            check_job(34, &job, None),
            [
                "spec.template.metadata.labels[job-name]: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"0b5e6f0e-1d51-4d5e-9f0c-3c1c0b7d2a11\",\"batch.kubernetes.io/job-name\":\"pi\",\"controller-uid\":\"0b5e6f0e-1d51-4d5e-9f0c-3c1c0b7d2a11\",\"job-name\":\"other\"}: must be 'pi'",
            ]
        );
    }

    #[test]
    fn a_manual_selector_must_exist_and_match() {
        let spec = json!({"manualSelector": true, "template": template("Never")});
        let job = created(28, spec);
        assert_eq!(
            check_job(28, &job, None),
            [
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: map[string]string(nil): `selector` does not match template `labels`",
            ]
        );
    }

    #[test]
    fn an_indexed_jobs_last_hostname_must_be_a_dns_label() {
        let name = "a".repeat(62);
        let mut job = created(
            34,
            json!({"completionMode": "Indexed", "completions": 10, "template": template("Never")}),
        );
        job["metadata"]["name"] = Value::from(name.as_str());
        let found = check_job(34, &job, None);
        assert!(
            found.contains(&format!(
                "metadata.name: Invalid value: \"{name}\": will not able to create pod with invalid DNS label: {name}-9"
            )),
            "{found:?}"
        );
    }

    #[test]
    fn updates_keep_completions() {
        let old = created(
            28,
            json!({"completions": 3, "parallelism": 3, "template": template("Never")}),
        );
        let mut new = old.clone();
        new["spec"]["completions"] = json!(4);
        // (The selector's immutability is data, asserted in kubectl_defaults.rs.)
        let found = check_job(28, &new, Some(&old));
        assert!(
            found.contains(&"spec.completions: Invalid value: 4: field is immutable".to_owned()),
            "{found:?}"
        );
        // An Indexed Job's completions move with its parallelism from 1.27 (ElasticIndexedJob).
        let indexed = json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3, "template": template("Never")});
        let old = created(34, indexed);
        let mut new = old.clone();
        new["spec"]["completions"] = json!(5);
        assert_eq!(
            check_job(34, &new, Some(&old)),
            [
                "spec.completions: Invalid value: 5: can only be modified in tandem with spec.parallelism"
            ]
        );
        new["spec"]["parallelism"] = json!(5);
        assert_eq!(check_job(34, &new, Some(&old)), Vec::<String>::new());
    }

    fn check_spec(minor: u16, spec: &Value) -> Vec<String> {
        lines(minor, |errors| {
            job_spec(spec, &FieldPath::of("spec"), errors)
        })
    }

    #[test]
    fn restart_policy_is_on_failure_or_never() {
        // validateJobSpec: 1.20 lists the values; later releases call Always (the pod default)
        // and nothing required.
        let spec = json!({"template": template("Always")});
        assert_eq!(
            check_spec(20, &spec),
            [
                "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
            ]
        );
        assert_eq!(
            check_spec(28, &spec),
            [
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
            ]
        );
        assert_eq!(
            check_spec(28, &json!({"template": template("OnFailure")})),
            Vec::<String>::new()
        );
    }

    #[test]
    fn indexed_jobs_and_failure_policies_are_checked() {
        let spec = json!({
            "completionMode": "Indexed",
            "maxFailedIndexes": 2,
            "podFailurePolicy": {"rules": [
                {"action": "Explode", "onExitCodes": {"operator": "In", "values": [3, 0, 1, 1]}},
                {"action": "Ignore"},
            ]},
            "template": template("OnFailure"),
        });
        assert_eq!(
            check_spec(34, &spec),
            [
                "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
                "spec.completions: Required value: when completion mode is Indexed",
                "spec.podFailurePolicy.rules[0].action: Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[3]: Duplicate value: 1",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [3,0,1,1]: must be ordered",
                "spec.podFailurePolicy.rules[1]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
                "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified",
            ]
        );
    }

    #[test]
    fn cron_jobs_leave_their_jobs_room_and_selectors() {
        let long = json!({"metadata": {"name": "c".repeat(53)}});
        let found = lines(28, |errors| {
            cron_job_name(&long, &FieldPath::root(), errors)
        });
        assert_eq!(found.len(), 1);
        assert!(
            found[0].ends_with("must be no more than 52 characters"),
            "{found:?}"
        );
        let template =
            json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "manualSelector": true}});
        let at = FieldPath::of("spec.jobTemplate");
        assert_eq!(
            lines(20, |errors| job_template_spec(&template, &at, errors)),
            [
                "spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated",
                "spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: \"nil\", \"false\"",
            ]
        );
    }

    fn spec_lines(minor: u16, spec: &Value) -> Vec<String> {
        lines(minor, |errors| {
            job_spec(spec, &FieldPath::of("spec"), errors)
        })
    }

    #[test]
    fn managed_by_is_a_domain_prefixed_path_of_63_characters_from_1_32() {
        // validateJobSpec: IsDomainPrefixedPath and maxManagedByLength (JobManagedBy, beta 1.32).
        let with =
            |managed_by: &str| json!({"managedBy": managed_by, "template": template("Never")});
        let long = format!("example.com/{}", "x".repeat(60));
        for minor in [34, 36] {
            assert_eq!(
                spec_lines(minor, &with("kueue")),
                [
                    "spec.managedBy: Invalid value: \"kueue\": must be a domain-prefixed path (such as \"acme.io/foo\")"
                ]
            );
            assert_eq!(
                spec_lines(minor, &with(&long)),
                ["spec.managedBy: Too long: may not be more than 63 bytes"]
            );
            assert!(spec_lines(minor, &with("kueue.x-k8s.io/manager")).is_empty());
        }
        assert!(spec_lines(28, &with("kueue")).is_empty());
    }

    #[test]
    fn a_success_policy_needs_an_indexed_job_and_rules_within_its_completions() {
        // validateJobSpec's "requires indexed completion mode" (the struct as JSON from 1.34),
        // validateSuccessPolicy, validateSuccessPolicyRule, validateIndexesFormat.
        let policy = json!({"rules": [{"succeededIndexes": "0-2"}]});
        let spec = json!({"successPolicy": policy, "template": template("Never")});
        assert_eq!(
            spec_lines(34, &spec),
            [
                r#"spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":"0-2","SucceededCount":null}]}: requires indexed completion mode"#
            ]
        );
        let indexed = |rules: Value| {
            json!({"completionMode": "Indexed", "completions": 5,
                   "successPolicy": {"rules": rules}, "template": template("Never")})
        };
        assert_eq!(
            spec_lines(36, &indexed(json!([]))),
            [
                "spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified"
            ]
        );
        let rules = json!([{}, {"succeededIndexes": "3,1"}, {"succeededIndexes": "1-2-3"},
            {"succeededIndexes": "0,x"}, {"succeededIndexes": "7"},
            {"succeededIndexes": "1-3", "succeededCount": 4}, {"succeededCount": 6}]);
        assert_eq!(
            spec_lines(34, &indexed(rules)),
            [
                "spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified",
                r#"spec.successPolicy.rules[1].succeededIndexes: Invalid value: "3,1": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1"#,
                r#"spec.successPolicy.rules[2].succeededIndexes: Invalid value: "1-2-3": error parsing succeededIndexes: the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'"#,
                r#"spec.successPolicy.rules[3].succeededIndexes: Invalid value: "0,x": error parsing succeededIndexes: cannot convert string to integer for index: "x""#,
                r#"spec.successPolicy.rules[4].succeededIndexes: Invalid value: "7": error parsing succeededIndexes: too large index: "7""#,
                "spec.successPolicy.rules[5].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of indexes in the specified succeededIndexes field)",
                "spec.successPolicy.rules[6].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)",
            ]
        );
        assert!(spec_lines(28, &indexed(json!([]))).is_empty());
    }

    #[test]
    fn a_status_write_moves_a_job_as_its_controller_would() {
        // validateJobStatus with getStatusValidationOptions' rules (JobManagedBy, from 1.32):
        // each runs only when the write changes what it reads.
        let true_ = |kind: &str| json!({"type": kind, "status": "True"});
        let job = |spec: Value, status: Value| json!({"spec": spec, "status": status});
        let spec = json!({"completions": 4, "parallelism": 2, "completionMode": "Indexed",
            "backoffLimitPerIndex": 1});
        let old = job(
            spec.clone(),
            json!({"active": 2, "startTime": "2026-01-02T00:00:00Z"}),
        );
        let new = job(
            spec.clone(),
            json!({
                "active": 1, "ready": 2, "terminating": 1,
                "startTime": "2026-01-02T00:00:00Z", "completionTime": "2026-01-01T00:00:00Z",
                "completedIndexes": "0-2", "failedIndexes": "2,5",
                "uncountedTerminatedPods": {"succeeded": ["u"]},
                "conditions": [true_("Complete"), true_("Failed")],
            }),
        );
        let check = |new: &Value, old: &Value| {
            lines(36, |errors| {
                job_status(new, old, &FieldPath::root(), errors)
            })
        };
        assert_eq!(
            check(&new, &old),
            [
                "status.conditions: Invalid value: cannot set Complete=True and Failed=true conditions",
                "status.completionTime: Invalid value: 2026-01-01 00:00:00 +0000 UTC: must be equal to or after `startTime`",
                "status.conditions: Invalid value: cannot set Failed=True condition without the FailureTarget=true condition",
                "status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
                "status.active: Invalid value: 1: active>0 is invalid for finished job",
                r#"status.uncountedTerminatedPods: Invalid value: {"Succeeded":["u"],"Failed":null}: must be empty for finished job"#,
                r#"status.failedIndexes: Invalid value: "2,5": error parsing failedIndexes: too large index: "5""#,
                r#"status.failedIndexes: Invalid value: "2,5": failedIndexes and completedIndexes overlap at index: 2"#,
                "status.terminating: Invalid value: 1: terminating>0 is invalid for finished job",
                "status.ready: Invalid value: 2: cannot set more ready pods than active",
            ]
        );
        // The same status stored already: nothing it changes, nothing refused.
        assert!(check(&new, &new).is_empty());
        // Overlapping indexes; a non-indexed Job's; a completion time without Complete, then
        // moved; a start time moved on a running Job.
        let overlap = job(
            spec.clone(),
            json!({"completedIndexes": "0-2", "failedIndexes": "1"}),
        );
        assert_eq!(
            check(&overlap, &job(spec.clone(), json!({}))),
            [
                r#"status.failedIndexes: Invalid value: "1": failedIndexes and completedIndexes overlap at index: 1"#
            ]
        );
        let plain = json!({"completions": 4});
        assert_eq!(
            check(
                &job(
                    plain.clone(),
                    json!({"completedIndexes": "1", "failedIndexes": "1"})
                ),
                &job(plain.clone(), json!({}))
            ),
            [
                r#"status.completedIndexes: Invalid value: "1": cannot set non-empty completedIndexes when non-indexed completion mode"#,
                r#"status.failedIndexes: Invalid value: "1": cannot set non-null failedIndexes when backoffLimitPerIndex is null"#,
                r#"status.failedIndexes: Invalid value: "1": failedIndexes and completedIndexes overlap at index: 1"#,
            ]
        );
        let timed = |start: &str, done: &str| {
            job(
                plain.clone(),
                json!({"startTime": start, "completionTime": done}),
            )
        };
        assert_eq!(
            check(
                &timed("2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"),
                &timed("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")
            ),
            [
                "status.completionTime: Invalid value: 2026-01-03 00:00:00 +0000 UTC: cannot set completionTime when there is no Complete=True condition",
                "status.completionTime: Invalid value: 2026-01-03 00:00:00 +0000 UTC: field is immutable",
                "status.startTime: Invalid value: 2026-01-02 00:00:00 +0000 UTC: field is immutable for unsuspended job once set",
            ]
        );
        // A fraction of a second is printed as Go prints it.
        assert_eq!(
            check(
                &timed("2026-01-01T00:00:00Z", "2026-01-02T00:00:00.5+01:00"),
                &timed("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")
            ),
            [
                "status.completionTime: Invalid value: 2026-01-01 23:00:00.5 +0000 UTC: cannot set completionTime when there is no Complete=True condition",
                "status.completionTime: Invalid value: 2026-01-01 23:00:00.5 +0000 UTC: field is immutable",
            ]
        );
        // A Job resuming (its Suspended condition gone) may start again (kubernetes#134769).
        let suspended = json!([{"type": "Suspended", "status": "True"}]);
        let before = job(
            plain.clone(),
            json!({"startTime": "2026-01-01T00:00:00Z", "conditions": suspended}),
        );
        let resumed = job(plain.clone(), json!({"startTime": "2026-01-02T00:00:00Z"}));
        assert!(check(&resumed, &before).is_empty());
        // A finished Job without its times, and success criteria against a failure (checked
        // last, as validateJobStatus does).
        let done = job(
            json!({"completions": 1, "successPolicy": {"rules": [{"succeededCount": 1}]}}),
            json!({"conditions": [true_("Complete"), true_("FailureTarget"), true_("SuccessCriteriaMet")]}),
        );
        assert_eq!(
            check(&done, &job(json!({}), json!({}))),
            [
                "status.conditions: Invalid value: cannot set Complete=True and FailureTarget=true conditions",
                "status.completionTime: Required value: completionTime is required for Complete jobs",
                "status.startTime: Required value: startTime is required for finished job",
                "status.conditions: Invalid value: cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
            ]
        );
        assert!(
            lines(28, |errors| job_status(
                &new,
                &old,
                &FieldPath::root(),
                errors
            ))
            .is_empty()
        );
    }

    #[test]
    fn a_status_write_keeps_counts_non_negative_and_from_1_32_its_counters_and_terminal_conditions()
    {
        // validateJobStatus, ValidateJobStatusUpdate with the strategy's options (JobManagedBy).
        let job =
            |status: Value| json!({"spec": {"completions": 3, "parallelism": 1}, "status": status});
        let old = job(json!({"succeeded": 2, "failed": 1,
            "conditions": [{"type": "Complete", "status": "True"}]}));
        let new = job(json!({"active": -1, "succeeded": 1, "failed": 0,
            "uncountedTerminatedPods": {"succeeded": ["a", ""], "failed": ["a"]}}));
        let check = |minor| {
            lines(minor, |errors| {
                job_status(&new, &old, &FieldPath::root(), errors)
            })
        };
        let always = [
            "status.active: Invalid value: -1: must be greater than or equal to 0",
            r#"status.uncountedTerminatedPods.succeeded[1]: Invalid value: "": must not be empty"#,
            r#"status.uncountedTerminatedPods.failed[0]: Duplicate value: "a""#,
        ];
        assert_eq!(check(28), always);
        let mut strict = always.to_vec();
        strict.extend([
            "status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
            "status.failed: Invalid value: 0: cannot decrease the failed counter",
            "status.succeeded: Invalid value: 1: cannot decrease the succeeded counter",
        ]);
        assert_eq!(check(34), strict);
        assert_eq!(check(20), always[..1]);
    }
}
