//! A Job's rules (`pkg/apis/batch/validation/validation.go`: `validateGeneratedSelector`,
//! `ValidateJob`, `validateJobSpec`, `ValidateJobSpecUpdate`) and a CronJob's job template and
//! name (`ValidateJobTemplateSpec`, `ValidateCronJobCreate`). The selector these check is the one
//! the Job strategy generates on create ([`crate::write_rules::CreateRule::JobSelector`]).

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown, go_quoted};
use super::super::format::Format;
use super::super::{IMMUTABLE, at_path};
use super::{Workload, items, selector, text};
use crate::KubeVersion;
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
    pod_replacement_policy(spec, &at.child("podReplacementPolicy"), errors);
    restart_policy(spec, at, release, errors);
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
}
