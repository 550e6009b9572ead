// Over the server's 800-line bound by a few lines: the catalog built from the stored CRDs,
// their status and the task that swaps the catalog in; a split is left for a later change.
//! CustomResourceDefinitions created while the server runs: the kinds they define are served
//! like compiled ones, through a schema-driven codec instead of a Rust type.
//!
//! One task owns the catalog. It reads every stored CRD, builds the served [`Registry`] (the
//! kinds registered at start plus one kind per served version of each accepted CRD), swaps it
//! into the state, writes each CRD's `status` (accepted names, the `NamesAccepted` and
//! `Established` conditions, stored versions) and its cleanup finalizer, then waits on a watch of
//! the CRD prefix and does it all again on any change. Being watch-driven, it works the same for
//! one process and for replicas over one etcd.
//!
//! Deleting a CRD (it carries `customresourcecleanup.apiextensions.k8s.io` once accepted) marks
//! it `Terminating`: its kinds stop accepting creates, every object of the resource is deleted
//! (objects with finalizers are marked and waited for), then the finalizer goes and the CRD with
//! it, as apiextensions-apiserver does.
//!
//! Writes to CRDs are checked here too ([`validate_crd`]): the name is `<plural>.<group>`,
//! exactly one version stores objects, the schemas are structural.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::de::Error as _;
use serde_json::{Value, json};

use crate::crd::instance::Rules;
use crate::crd::{CustomResourceDefinition, CustomResourceDefinitionNames};
use crate::meta::StatusCause;
use crate::registry::{RegisteredKind, Validator};
use crate::schema::JSONSchemaProps;
use crate::storage::{Bytes, KeyValue, Storage, WatchEvent};
use crate::{GroupVersionKind, Lifecycle, PrinterColumn, Registry, ResourceInfo, Scope, Verb};

use crate::server::background::TaskError;
use crate::server::signal;
use crate::server::state::State;
use crate::server::state::keys;

/// The group and resource of CRDs themselves.
const GROUP: &str = "apiextensions.k8s.io";
const PLURAL: &str = "customresourcedefinitions";

/// The finalizer an accepted CRD carries until its objects are gone.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The served CRD kind (`apiextensions.k8s.io/v1`), if the server serves CRDs.
fn crd_kind(registry: &Registry) -> Option<&RegisteredKind> {
    registry.get(GROUP, "v1", PLURAL)
}

/// The registry to serve at start: `base` with its CRD kind checking CRD writes.
pub(crate) fn prepare(mut base: Registry) -> Registry {
    if let Some(kind) = crd_kind(&base) {
        let checked = RegisteredKind {
            validate: Some(Arc::new(validate_crd) as Validator),
            ..kind.clone()
        };
        base.insert_kind(checked);
    }
    base
}

/// What one pass over the stored CRDs found.
pub(crate) struct Refreshed {
    /// The revision the CRDs were read at.
    pub(crate) revision: u64,
    /// Whether a deleted CRD still waits for objects held by finalizers: their removal does
    /// not touch any CRD, so the task looks again after a pause instead of waiting on a change.
    pub(crate) pending: bool,
}

/// Reads every CRD, serves the kinds of the accepted ones and brings their status up to date.
pub(crate) async fn refresh(state: &State, base: &Registry) -> Result<Refreshed, TaskError> {
    let Some(kind) = crd_kind(base) else {
        let revision = state.storage.current_revision().await?;
        return Ok(Refreshed {
            revision,
            pending: false,
        });
    };
    let prefix = keys::resource_prefix(&kind.info);
    let listed = state.storage.list(&prefix, None, None, None).await?;
    let mut stored: Vec<(KeyValue, CustomResourceDefinition)> = listed
        .items
        .into_iter()
        .filter_map(|kv| {
            // Objects written through another version (v1beta1) do not parse as v1: skipped.
            let crd = serde_json::from_slice(&kv.value).ok()?;
            Some((kv, crd))
        })
        .collect();
    // Older CRDs win name conflicts, as upstream's naming controller decides by age.
    stored.sort_by(|(a, x), (b, y)| {
        (&x.metadata.creation_timestamp, a.create_revision)
            .cmp(&(&y.metadata.creation_timestamp, b.create_revision))
    });
    let (registry, verdicts) = catalog(base, stored.iter().map(|(_, crd)| crd));
    state.set_registry(registry);
    let mut pending = false;
    let mut finished = Vec::new();
    for ((kv, crd), verdict) in stored.iter().zip(&verdicts) {
        match reconcile(state, kv, crd, verdict).await {
            Cleanup::Done => {}
            Cleanup::Waiting => pending = true,
            Cleanup::Finished { object, remaining } => finished.push((kv, object, remaining)),
        }
    }
    if !finished.is_empty() {
        // Stop serving the finished CRDs' kinds before they disappear, so a client that saw
        // the CRD go never finds its kinds still in discovery.
        let gone = |kv: &KeyValue| finished.iter().any(|(done, ..)| done.key == kv.key);
        let still = stored
            .iter()
            .filter(|(kv, _)| !gone(kv))
            .map(|(_, crd)| crd);
        state.set_registry(catalog(base, still).0);
        for (kv, object, remaining) in &finished {
            finish(state, kv, object, *remaining).await;
        }
    }
    Ok(Refreshed {
        revision: listed.revision,
        pending,
    })
}

/// How long the task waits before looking again at a deleted CRD whose objects remain.
const CLEANUP_RETRY: Duration = Duration::from_millis(500);

/// Runs [`refresh`] after every change to a CRD until `stop`.
pub(crate) fn spawn(
    state: State,
    base: Arc<Registry>,
    first: Refreshed,
    stop: signal::Receiver<bool>,
) {
    let Some(kind) = crd_kind(&base) else {
        return;
    };
    let prefix = keys::resource_prefix(&kind.info);
    tokio::spawn(async move {
        let mut stop = stop;
        let Refreshed {
            mut revision,
            mut pending,
        } = first;
        loop {
            let changed = async {
                let mut watch = state.storage.watch(&prefix, revision).await.ok()?;
                loop {
                    match watch.next().await? {
                        Ok(WatchEvent::Progress { .. }) => continue,
                        Ok(_) => return Some(()),
                        Err(_) => return None,
                    }
                }
            };
            tokio::select! {
                _ = stop.changed() => return,
                changed = changed => {
                    if changed.is_none() {
                        // The watch failed (compacted, engine hiccup): re-read after a pause.
                        tokio::time::sleep(CLEANUP_RETRY).await;
                    }
                }
                _ = tokio::time::sleep(CLEANUP_RETRY), if pending => {}
            }
            match refresh(&state, &base).await {
                Ok(done) => (revision, pending) = (done.revision, done.pending),
                Err(error) => {
                    tracing::warn!(%error, "reading the CustomResourceDefinitions failed; retrying");
                    tokio::time::sleep(CLEANUP_RETRY).await;
                }
            }
        }
    });
}

/// What the catalog decided about one CRD.
#[derive(Debug, Clone, PartialEq, Default)]
struct Verdict {
    /// The names the CRD's kinds are served under, if they are.
    serving: Option<CustomResourceDefinitionNames>,
    /// The name already in use, as `NamesAccepted`'s reason and message.
    conflict: Option<(&'static str, String)>,
}

/// Who holds which name in one group: per kind of name (plural, singular, ...), the holder's
/// CRD name, or `""` for a compiled kind.
#[derive(Default)]
struct Taken {
    holders: BTreeMap<(&'static str, String), String>,
}

/// The kinds of name, in the order upstream checks them, with the conflict reason of each.
const NAME_KINDS: [(&str, &str); 5] = [
    ("plural", "PluralConflict"),
    ("singular", "SingularConflict"),
    ("shortNames", "ShortNamesConflict"),
    ("kind", "KindConflict"),
    ("listKind", "ListKindConflict"),
];

fn names_by_kind(names: &CustomResourceDefinitionNames) -> [(&'static str, Vec<&str>); 5] {
    [
        ("plural", vec![names.plural.as_str()]),
        ("singular", vec![names.singular.as_str()]),
        (
            "shortNames",
            names.short_names.iter().map(String::as_str).collect(),
        ),
        ("kind", vec![names.kind.as_str()]),
        ("listKind", vec![names.list_kind.as_str()]),
    ]
}

impl Taken {
    /// Gives `holder` every name of `names`, after releasing the ones it held before.
    fn hold(&mut self, holder: &str, names: &CustomResourceDefinitionNames) {
        self.holders
            .retain(|_, who| who != holder || holder.is_empty());
        for (kind, list) in names_by_kind(names) {
            for name in list.into_iter().filter(|n| !n.is_empty()) {
                self.holders
                    .insert((kind, name.to_owned()), holder.to_owned());
            }
        }
    }

    /// The first name of `names` someone other than `holder` holds, with upstream's condition
    /// reason and message.
    fn conflict(
        &self,
        holder: &str,
        names: &CustomResourceDefinitionNames,
    ) -> Option<(&'static str, String)> {
        for ((kind, list), (_, reason)) in names_by_kind(names).into_iter().zip(NAME_KINDS) {
            for name in list {
                let key = (kind, name.to_owned());
                if self.holders.get(&key).is_some_and(|who| who != holder) {
                    return Some((reason, format!("{name:?} is already in use")));
                }
            }
        }
        None
    }
}

/// `base` plus the kinds of every CRD whose names are free. Names go first to the CRDs
/// already established under them (their `status.acceptedNames`), then to new claims in age
/// order; a CRD whose new names conflict keeps being served under the names it was accepted
/// with, as upstream does.
fn catalog<'a>(
    base: &Registry,
    crds: impl Iterator<Item = &'a CustomResourceDefinition> + Clone,
) -> (Registry, Vec<Verdict>) {
    let mut registry = base.clone();
    let mut taken: BTreeMap<String, Taken> = BTreeMap::new();
    for kind in base.kinds() {
        let info = &kind.info;
        taken.entry(info.gvk.group.to_string()).or_default().hold(
            "",
            &CustomResourceDefinitionNames {
                plural: info.plural.to_string(),
                singular: info.singular.to_string(),
                short_names: info.short_names.iter().map(|s| s.to_string()).collect(),
                kind: info.gvk.kind.to_string(),
                list_kind: info.list_kind(),
                categories: Vec::new(),
            },
        );
    }
    let name_of = |crd: &CustomResourceDefinition| crd.metadata.name.clone().unwrap_or_default();
    for crd in crds.clone() {
        if let Some(names) = established_names(crd) {
            let group = taken.entry(crd.spec.group.clone()).or_default();
            if group.conflict(&name_of(crd), &names).is_none() {
                group.hold(&name_of(crd), &names);
            }
        }
    }
    let mut verdicts = Vec::new();
    for crd in crds {
        let holder = name_of(crd);
        let wanted = accepted_names(crd);
        let group = taken.entry(crd.spec.group.clone()).or_default();
        let mut verdict = Verdict::default();
        match group.conflict(&holder, &wanted) {
            None => {
                group.hold(&holder, &wanted);
                verdict.serving = Some(wanted);
            }
            Some(conflict) => {
                verdict.conflict = Some(conflict);
                verdict.serving =
                    established_names(crd).filter(|names| group.conflict(&holder, names).is_none());
            }
        }
        if let Some(names) = &verdict.serving {
            for version in crd.spec.versions.iter().filter(|v| v.served) {
                registry.insert_kind(kind_of(crd, names, &version.name));
            }
        }
        verdicts.push(verdict);
    }
    (registry, verdicts)
}

/// The names an established CRD was accepted with, from its stored status.
fn established_names(crd: &CustomResourceDefinition) -> Option<CustomResourceDefinitionNames> {
    let status = crd.status.as_ref()?;
    let established = status
        .conditions
        .iter()
        .any(|c| c.type_ == "Established" && c.status == "True");
    (established && !status.accepted_names.plural.is_empty()).then(|| status.accepted_names.clone())
}

/// `spec.names` with upstream's defaults filled in.
fn accepted_names(crd: &CustomResourceDefinition) -> CustomResourceDefinitionNames {
    let mut names = crd.spec.names.clone();
    if names.singular.is_empty() {
        names.singular = names.kind.to_lowercase();
    }
    if names.list_kind.is_empty() {
        names.list_kind = format!("{}List", names.kind);
    }
    names
}

/// The served kind of one version of `crd`.
fn kind_of(
    crd: &CustomResourceDefinition,
    names: &CustomResourceDefinitionNames,
    version: &str,
) -> RegisteredKind {
    let spec_version = crd.spec.versions.iter().find(|v| v.name == version);
    let rules: Option<Arc<Rules>> = spec_version
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.clone())
        .map(|schema| Arc::new(Rules::new(schema)));
    let owned = |list: &[String]| -> Cow<'static, [Cow<'static, str>]> {
        Cow::Owned(list.iter().cloned().map(Cow::Owned).collect())
    };
    let subresources = spec_version.and_then(|v| v.subresources.as_ref());
    let terminating = crd.metadata.deletion_timestamp.is_some();
    let verbs: Vec<Verb> = Verb::ALL
        .iter()
        .copied()
        .filter(|verb| !(terminating && *verb == Verb::Create))
        .collect();
    let info = ResourceInfo {
        gvk: GroupVersionKind {
            group: Cow::Owned(crd.spec.group.clone()),
            version: Cow::Owned(version.to_owned()),
            kind: Cow::Owned(names.kind.clone()),
        },
        plural: Cow::Owned(names.plural.clone()),
        singular: Cow::Owned(names.singular.clone()),
        short_names: owned(&names.short_names),
        categories: owned(&names.categories),
        scope: if crd.spec.scope == "Cluster" {
            Scope::Cluster
        } else {
            Scope::Namespaced
        },
        verbs: Cow::Owned(verbs),
        subresources: crate::Subresources {
            status: subresources.is_some_and(|s| s.status.is_some()),
            scale: subresources
                .and_then(|s| s.scale.as_ref())
                .map(|scale| crate::Scale {
                    spec_replicas_path: Cow::Owned(scale.spec_replicas_path.clone()),
                    status_replicas_path: Cow::Owned(scale.status_replicas_path.clone()),
                    label_selector_path: scale.label_selector_path.clone().map(Cow::Owned),
                }),
        },
        lifecycle: Lifecycle {
            warning: spec_version.filter(|v| v.deprecated).map(|v| {
                Cow::Owned(v.deprecation_warning.clone().unwrap_or_else(|| {
                    format!("{}/{version} {} is deprecated", crd.spec.group, names.kind)
                }))
            }),
            ..Lifecycle::default()
        },
        printer_columns: Cow::Owned(
            spec_version
                .map(|v| {
                    v.additional_printer_columns
                        .iter()
                        .map(|c| PrinterColumn {
                            name: Cow::Owned(c.name.clone()),
                            type_: Cow::Owned(c.type_.clone()),
                            format: (!c.format.is_empty()).then(|| Cow::Owned(c.format.clone())),
                            description: (!c.description.is_empty())
                                .then(|| Cow::Owned(c.description.clone())),
                            priority: c.priority,
                            json_path: Cow::Owned(c.json_path.clone()),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
        selectable_fields: Cow::Owned(
            spec_version
                .map(|v| {
                    v.selectable_fields
                        .iter()
                        .map(|f| Cow::Owned(f.json_path.trim_start_matches('.').to_owned()))
                        .collect()
                })
                .unwrap_or_default(),
        ),
    };
    let codec_rules = rules.clone();
    let schema_rules = rules.clone();
    RegisteredKind {
        info: Arc::new(info),
        merge: None,
        codec: Arc::new(move |mut object: Value| {
            if let Some(rules) = &codec_rules {
                rules
                    .prune_and_default(&mut object)
                    .map_err(serde_json::Error::custom)?;
            }
            Ok(object)
        }),
        schema: Some(Arc::new(move || {
            schema_rules.as_ref().map(|r| r.schema().clone())
        })),
        validate: rules
            .map(|rules| Arc::new(move |object: &Value| rules.validate(object)) as Validator),
    }
}

/// Where the cleanup of a deleted CRD stands.
#[derive(Debug, PartialEq)]
enum Cleanup {
    /// Nothing to wait for: the CRD is not being deleted.
    Done,
    /// Objects held by finalizers remain.
    Waiting,
    /// Every object is gone: the CRD, without the cleanup finalizer, is to be written back
    /// (or deleted when no finalizer remains) once its kinds are no longer served.
    Finished { object: Value, remaining: usize },
}

/// Brings one CRD's stored status and finalizers up to date with `verdict`, and runs the
/// cleanup of a CRD being deleted. A write that loses a race is left to the next refresh,
/// which the winning write's watch event triggers.
async fn reconcile(
    state: &State,
    kv: &KeyValue,
    crd: &CustomResourceDefinition,
    verdict: &Verdict,
) -> Cleanup {
    let Ok(mut object) = serde_json::from_slice::<Value>(&kv.value) else {
        return Cleanup::Done;
    };
    let terminating = crd.metadata.deletion_timestamp.is_some();
    let wanted = status_for(crd, verdict, &object);
    let status_changed = object.get("status") != Some(&wanted);
    object["status"] = wanted;
    if !terminating {
        let finalizer_added = verdict.serving.is_some() && add_finalizer(&mut object);
        if status_changed || finalizer_added {
            let _ = write(state, kv, &object).await;
        }
        return Cleanup::Done;
    }
    let cleaned = match &verdict.serving {
        Some(names) => delete_instances(state, crd, names).await,
        None => true,
    };
    if !cleaned {
        if status_changed {
            let _ = write(state, kv, &object).await;
        }
        return Cleanup::Waiting;
    }
    let remaining = remove_finalizer(&mut object);
    Cleanup::Finished { object, remaining }
}

/// Ends a cleanup: the CRD goes when no other finalizer holds it.
async fn finish(state: &State, kv: &KeyValue, object: &Value, remaining: usize) {
    if remaining == 0 {
        let _ = state.storage.delete(&kv.key, Some(kv.mod_revision)).await;
    } else {
        let _ = write(state, kv, object).await;
    }
}

async fn write(state: &State, kv: &KeyValue, object: &Value) -> Result<(), TaskError> {
    let bytes = serde_json::to_vec(object).map_err(TaskError::Encode)?;
    state
        .storage
        .update(&kv.key, Bytes::from(bytes), kv.mod_revision)
        .await
        .map(|_| ())
        .map_err(|source| TaskError::Update {
            key: kv.key.clone(),
            source,
        })
}

/// The conditions this controller owns; others in a CRD's status are kept as they are.
const OWN_CONDITIONS: [&str; 3] = ["NamesAccepted", "Established", "Terminating"];

/// The status a CRD should carry: upstream's conditions (keeping the transition time of a
/// condition whose status did not change, and conditions others set), the accepted names and
/// the stored versions.
fn status_for(crd: &CustomResourceDefinition, verdict: &Verdict, stored: &Value) -> Value {
    let previous: Vec<Value> = stored
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let now = json!(crate::Time::now());
    let condition = |type_: &str, status: &str, reason: &str, message: &str| -> Value {
        let since = previous
            .iter()
            .find(|c| c["type"] == type_ && c["status"] == status)
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| now.clone());
        json!({
            "type": type_, "status": status, "lastTransitionTime": since,
            "reason": reason, "message": message,
        })
    };
    let mut conditions = vec![match &verdict.conflict {
        None => condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        Some((reason, message)) => condition("NamesAccepted", "False", reason, message),
    }];
    conditions.push(match &verdict.serving {
        Some(_) => condition(
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        ),
        None => condition(
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
        ),
    });
    if crd.metadata.deletion_timestamp.is_some() {
        conditions.push(condition(
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        ));
    }
    conditions.extend(
        previous
            .iter()
            .filter(|c| {
                !OWN_CONDITIONS
                    .iter()
                    .any(|own| c.get("type").and_then(Value::as_str) == Some(own))
            })
            .cloned(),
    );
    let accepted = match &verdict.serving {
        Some(names) => serde_json::to_value(names).unwrap_or(Value::Null),
        None => json!({"plural": "", "kind": ""}),
    };
    let mut stored_versions: Vec<String> = stored
        .pointer("/status/storedVersions")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    if let Some(version) = crd.storage_version()
        && !stored_versions.contains(&version.name)
    {
        stored_versions.push(version.name.clone());
    }
    json!({
        "conditions": conditions,
        "acceptedNames": accepted,
        "storedVersions": stored_versions,
    })
}

fn finalizers_of(object: &mut Value) -> Option<&mut Vec<Value>> {
    let meta = object.get_mut("metadata")?.as_object_mut()?;
    meta.entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
}

/// Adds the cleanup finalizer; whether it was missing.
fn add_finalizer(object: &mut Value) -> bool {
    match finalizers_of(object) {
        Some(list) if !list.iter().any(|f| f == CLEANUP_FINALIZER) => {
            list.push(Value::from(CLEANUP_FINALIZER));
            true
        }
        _ => false,
    }
}

/// Removes the cleanup finalizer; how many finalizers remain.
fn remove_finalizer(object: &mut Value) -> usize {
    let Some(list) = finalizers_of(object) else {
        return 0;
    };
    list.retain(|f| f != CLEANUP_FINALIZER);
    let remaining = list.len();
    if remaining == 0
        && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("finalizers");
    }
    remaining
}

/// How many objects one cleanup pass reads at a time.
const CLEANUP_PAGE: usize = 500;

/// Deletes every object of a terminating CRD's resource; objects with finalizers get a
/// `deletionTimestamp` and are left to their controllers. Whether none remain: a delete that
/// loses a race, or a create that slipped in with an older catalog, leaves something behind,
/// so only an empty read of the whole resource counts.
async fn delete_instances(
    state: &State,
    crd: &CustomResourceDefinition,
    names: &CustomResourceDefinitionNames,
) -> bool {
    let Some(version) = crd.spec.versions.first() else {
        return true;
    };
    let prefix = keys::resource_prefix(&kind_of(crd, names, &version.name).info);
    let mut start: Option<String> = None;
    let mut found = false;
    loop {
        let Ok(page) = state
            .storage
            .list(&prefix, None, start.as_deref(), Some(CLEANUP_PAGE))
            .await
        else {
            return false;
        };
        for kv in &page.items {
            found = true;
            let mut object = serde_json::from_slice::<Value>(&kv.value).unwrap_or(Value::Null);
            let held = object
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty());
            if !held {
                let _ = state.storage.delete(&kv.key, Some(kv.mod_revision)).await;
            } else if object.pointer("/metadata/deletionTimestamp").is_none()
                && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
            {
                meta.insert("deletionTimestamp".into(), json!(crate::Time::now()));
                let _ = write(state, kv, &object).await;
            }
        }
        match page.items.last() {
            Some(last) if page.more => start = Some(format!("{}\0", last.key)),
            _ => break,
        }
    }
    // Whatever was found is gone only if a fresh read finds nothing.
    !found
        || state
            .storage
            .count(&prefix)
            .await
            .is_ok_and(|remaining| remaining == 0)
}

/// The checks kube-apiserver makes on a CRD write that its schema cannot express.
fn validate_crd(object: &Value) -> Vec<StatusCause> {
    let crd: CustomResourceDefinition = match serde_json::from_value(object.clone()) {
        Ok(crd) => crd,
        // The codec already refused what does not decode.
        Err(_) => return Vec::new(),
    };
    let mut causes = Vec::new();
    let spec = &crd.spec;
    let name = crd.metadata.name.clone().unwrap_or_default();
    let expected = format!("{}.{}", spec.names.plural, spec.group);
    if !name.is_empty() && name != expected {
        causes.push(StatusCause::invalid(
            "metadata.name",
            &Value::from(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if spec.group.is_empty() {
        causes.push(StatusCause::required("spec.group", ""));
    } else if !spec.group.contains('.') {
        causes.push(StatusCause::invalid(
            "spec.group",
            &Value::from(spec.group.clone()),
            "should be a domain with at least one dot",
        ));
    } else if !crate::names::is_dns_subdomain(&spec.group) {
        causes.push(StatusCause::invalid(
            "spec.group",
            &Value::from(spec.group.clone()),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        ));
    }
    if spec.scope != "Namespaced" && spec.scope != "Cluster" {
        causes.push(StatusCause::not_supported(
            "spec.scope",
            &Value::from(spec.scope.clone()),
            &["Cluster", "Namespaced"],
        ));
    }
    for (field, value) in [
        ("spec.names.plural", &spec.names.plural),
        ("spec.names.kind", &spec.names.kind),
    ] {
        if value.is_empty() {
            causes.push(StatusCause::required(field, ""));
        }
    }
    if !spec.names.plural.is_empty() && !crate::names::is_dns_label(&spec.names.plural) {
        causes.push(StatusCause::invalid(
            "spec.names.plural",
            &Value::from(spec.names.plural.clone()),
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        ));
    }
    if spec.versions.is_empty() {
        causes.push(StatusCause::invalid(
            "spec.versions",
            &json!([]),
            "must have exactly one version marked as storage version",
        ));
    }
    let storage = spec.versions.iter().filter(|v| v.storage).count();
    if !spec.versions.is_empty() && storage != 1 {
        causes.push(StatusCause::invalid(
            "spec.versions",
            &serde_json::to_value(&spec.versions).unwrap_or(Value::Null),
            "must have exactly one version marked as storage version",
        ));
    }
    if !spec.versions.is_empty() && !spec.versions.iter().any(|v| v.served) {
        causes.push(StatusCause::invalid(
            "spec.versions",
            &serde_json::to_value(&spec.versions).unwrap_or(Value::Null),
            "must have at least one version marked as served",
        ));
    }
    let mut seen = BTreeMap::new();
    for (i, version) in spec.versions.iter().enumerate() {
        let field = format!("spec.versions[{i}]");
        if seen.insert(version.name.clone(), i).is_some() {
            causes.push(StatusCause::duplicate(
                format!("{field}.name"),
                &Value::from(version.name.clone()),
            ));
        }
        // DNS-1035: a DNS label that starts with a letter.
        let starts_alphabetic = version.name.starts_with(|c: char| c.is_ascii_lowercase());
        if !starts_alphabetic || !crate::names::is_dns_label(&version.name) {
            causes.push(StatusCause::invalid(
                format!("{field}.name"),
                &Value::from(version.name.clone()),
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            ));
        }
        match version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
        {
            None => causes.push(StatusCause::required(
                format!("{field}.schema.openAPIV3Schema"),
                "schemas are required",
            )),
            Some(schema) => {
                if let Err(errors) = crate::crd::validate_structural(schema) {
                    for error in errors {
                        let path = if error.path.is_empty() {
                            format!("{field}.schema.openAPIV3Schema")
                        } else {
                            format!("{field}.schema.openAPIV3Schema.{}", error.path)
                        };
                        causes.push(StatusCause::new(
                            crate::meta::CauseType::FieldValueInvalid,
                            path,
                            error.message,
                        ));
                    }
                }
                check_patterns(
                    schema,
                    &format!("{field}.schema.openAPIV3Schema"),
                    &mut causes,
                );
            }
        }
    }
    causes
}

/// Every `pattern` in a schema must compile, or objects could never be checked against it.
fn check_patterns(schema: &JSONSchemaProps, path: &str, causes: &mut Vec<StatusCause>) {
    if let Some(pattern) = &schema.pattern
        && let Err(e) = regex::Regex::new(pattern)
    {
        causes.push(StatusCause::invalid(
            format!("{path}.pattern"),
            &Value::from(pattern.clone()),
            &format!("must be a valid regular expression: {e}"),
        ));
    }
    for (name, property) in &schema.properties {
        check_patterns(property, &format!("{path}.properties[{name}]"), causes);
    }
    if let Some(crate::schema::JSONSchemaPropsOrArray::Schema(items)) = schema.items.as_deref() {
        check_patterns(items, &format!("{path}.items"), causes);
    }
    if let Some(crate::schema::JSONSchemaPropsOrBool::Schema(extra)) =
        schema.additional_properties.as_deref()
    {
        check_patterns(extra, &format!("{path}.additionalProperties"), causes);
    }
}
