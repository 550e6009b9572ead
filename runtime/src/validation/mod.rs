//! Validation: what the API server refuses, with upstream's field paths and messages (a 422
//! `Invalid` whose causes say `spec.replicas: Invalid value: -1: must be greater than or equal
//! to 0`), as kube-apiserver's validation functions do for the built-ins
//! (`pkg/apis/<group>/validation`, and `k8s.io/apimachinery/pkg/api/validation` for object
//! metadata).
//!
//! Checks belong to types, as defaults do: a Container's checks exist once, in its static
//! [`TypeInfo`], and [`check_types`] walks a kind's type tree, so they
//! apply inside a Pod, a Deployment's template and a CronJob's job template alike, each error
//! at its full path (`spec.template.spec.containers[0].image`). A [`Check`] is data: a path
//! from the type and a [`Rule`] (required, a minimum, a port, one of some values, a string
//! [`Format`], unique names, immutable on update); a rule that is not a shape of data is one
//! named function ([`Named`], in `rules`). The built-ins' checks are data
//! (`specs/validation/kubernetes.yaml`); object metadata, which every kind shares, is checked
//! by [`check_metadata`]. A write through `/status` runs only its kind's status rules
//! ([`check_status`]).

mod field;
mod format;
mod meta;
mod rules;

pub use field::{Errors, FieldPath, Shown, go_quoted};
pub use format::Format;
pub use meta::{check_metadata, check_metadata_update};
#[cfg(feature = "server")]
pub(crate) use rules::restart_rules_in_use;
pub use rules::{Named, Workload};

use serde_json::Value;

use crate::KubeVersion;
use crate::merge::{Pruned, PrunedCache, TypeInfo, Wrap};
use crate::printer::Releases;

/// The message of a changed immutable field (`FieldImmutableErrorMsg`).
pub const IMMUTABLE: &str = "field is immutable";
/// The message of a negative count (`IsNegativeErrorMsg`).
const NEGATIVE: &str = "must be greater than or equal to 0";

/// One check of a type's field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// The field, a dotted path from the type (`.selector`, `.template.spec.restartPolicy`);
    /// empty for the type's value itself.
    pub path: &'static str,
    /// What the field must satisfy.
    pub rule: Rule,
    /// The releases that check it.
    pub releases: Releases,
}

impl Check {
    /// `rule` on the field at `path`, in every release.
    pub const fn new(path: &'static str, rule: Rule) -> Self {
        Self {
            path,
            rule,
            releases: Releases::ALL,
        }
    }

    /// Only from release `major.minor` on.
    pub const fn since(mut self, major: u16, minor: u16) -> Self {
        self.releases.since = Some(KubeVersion::new(major, minor));
        self
    }

    /// Only before release `major.minor`.
    pub const fn until(mut self, major: u16, minor: u16) -> Self {
        self.releases.until = Some(KubeVersion::new(major, minor));
        self
    }
}

/// What a field must satisfy. A missing field is its type's zero value, as a Go struct's is:
/// only [`Rule::Required`] and [`Rule::OneOf`] complain about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rule {
    /// Present and not empty: not null, `""`, `0` or `[]` (`Required value`).
    Required,
    /// A number at least this (`must be greater than or equal to N`).
    Minimum(i64),
    /// A number from the first to the second, inclusive; a missing one is 0
    /// (`must be between 1 and 65535, inclusive`).
    Range(i64, i64),
    /// A port number, 1 to 65535, when set and not 0.
    Port,
    /// A port number, or a port name when a string (a Service's `targetPort`).
    PortOrName,
    /// One of these strings; empty is `Required value`, others `Unsupported value`.
    OneOf(&'static [&'static str]),
    /// A string of this format, when set.
    Format(Format),
    /// Every key of the map has this format (the error at `<path>[<key>]`).
    KeysFormat(Format),
    /// No two items of the list have the same value in this field (`Duplicate value`).
    Unique(&'static str),
    /// An update leaves the field as it was (`field is immutable`); the value printed as the
    /// [`Shape`] says.
    Immutable(Shape),
    /// A rule that is code: one function each.
    Named(Named),
}

/// The Go type of a value in an error message (see [`Shown`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A string, number or boolean.
    Plain,
    /// A `map[string]string`.
    StringMap,
    /// A `*metav1.LabelSelector`.
    LabelSelector,
}

impl Shape {
    fn show(self, value: &Value) -> Shown<'_> {
        match self {
            Self::Plain => Shown::Plain(value),
            Self::StringMap => Shown::StringMap(value),
            Self::LabelSelector => Shown::LabelSelector(value),
        }
    }
}

/// Checks an object against the checks of its kind's types, reporting into `errors`; `old` is
/// the stored object on an update.
///
/// The walk follows the kind's type tree cut down to the types that have checks or lead to
/// some (see `merge::Pruned`), built on the tree's first use; a field's path is rendered only
/// when something is reported there or a named rule needs it.
pub fn check_types(root: &TypeInfo, new: &Value, old: Option<&Value>, errors: &mut Errors) {
    static TREES: PrunedCache<&'static [Check]> = PrunedCache::new();
    TREES.with(
        root,
        || Pruned::build(root, |ty| !ty.checks.is_empty(), |ty| ty.checks),
        |tree| walk(tree, 0, new, old, &At::Root, errors),
    );
}

/// Checks a write through a kind's `/status` against the rules of its root type that hold
/// status writes (a Pod's `ValidatePodStatusUpdate`), reporting into `errors`; `old` is the
/// stored object. The spec's checks do not run there: upstream's status strategies keep the
/// stored spec.
pub fn check_status(root: &TypeInfo, new: &Value, old: Option<&Value>, errors: &mut Errors) {
    let release = errors.release();
    for check in root.checks.iter() {
        if on_status(check) && check.releases.contains(release) {
            run(check, new, old, &At::Root, errors);
        }
    }
}

/// Checks a write through a pod's `/ephemeralcontainers` (`ValidatePodEphemeralContainersUpdate`):
/// the whole pod against its types' checks, as an update whose only change is its ephemeral
/// containers (which a main-resource update may not change), then that the ephemeral containers
/// already there stay as they were. `old` is the stored pod.
pub fn check_ephemeral_containers(
    root: &TypeInfo,
    new: &Value,
    old: Option<&Value>,
    errors: &mut Errors,
) {
    let Some(old) = old else {
        return check_types(root, new, None, errors);
    };
    // Upstream's own part comes last, but a static pod's error comes alone.
    let mut own = Errors::new(errors.release());
    if rules::ephemeral_containers_update(new, old, &mut own) {
        *errors = own;
        return;
    }
    let mut baseline = old.clone();
    if let Some(Value::Object(spec)) = baseline.get_mut("spec") {
        match new.pointer("/spec/ephemeralContainers") {
            Some(containers) => spec.insert("ephemeralContainers".into(), containers.clone()),
            None => spec.remove("ephemeralContainers"),
        };
    }
    check_types(root, new, Some(&baseline), errors);
    errors.extend(own);
}

/// Checks a write through a pod's `/resize` (`ValidatePodResize`): a pod with pod-level
/// resources, a static or a Windows pod is refused alone; otherwise the pod's metadata update
/// and its spec as on create (its types' checks against the stored pod carrying the written
/// spec, so that `ValidatePodUpdate`'s rules stay out), then what a resize may change. `old` is
/// the stored pod.
pub fn check_pod_resize(root: &TypeInfo, new: &Value, old: Option<&Value>, errors: &mut Errors) {
    let Some(old) = old else {
        return check_types(root, new, None, errors);
    };
    if let Some(alone) = rules::pod_resize_refused(new, old, errors.release()) {
        *errors = alone;
        return;
    }
    let mut baseline = old.clone();
    if let (Value::Object(pod), Some(spec)) = (&mut baseline, new.get("spec")) {
        pod.insert("spec".into(), spec.clone());
    }
    check_types(root, new, Some(&baseline), errors);
    rules::pod_resize(new, old, errors);
}

/// Whether a check holds writes through `/status` rather than the main resource.
fn on_status(check: &Check) -> bool {
    matches!(check.rule, Rule::Named(named) if named.on_status())
}

/// Where a walk is, as a chain of steps on the stack, rendered into a [`FieldPath`] on demand.
#[derive(Debug, Clone, Copy)]
enum At<'a> {
    Root,
    Field(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
    Key(&'a At<'a>, &'a str),
}

impl At<'_> {
    fn path(&self) -> FieldPath {
        // Room for most paths (`spec.template.spec.containers[0].ports[1]`), so that rendering
        // allocates once.
        let mut path = FieldPath::with_capacity(64);
        self.render(&mut path);
        path
    }

    /// Appends the steps from the root to here, outermost first.
    fn render(&self, path: &mut FieldPath) {
        match self {
            At::Root => {}
            At::Field(parent, name) => {
                parent.render(path);
                path.push_child(name);
            }
            At::Index(parent, i) => {
                parent.render(path);
                path.push_index(*i);
            }
            At::Key(parent, key) => {
                parent.render(path);
                path.push_key(key);
            }
        }
    }
}

fn walk(
    tree: &Pruned<&'static [Check]>,
    node: usize,
    new: &Value,
    old: Option<&Value>,
    at: &At<'_>,
    errors: &mut Errors,
) {
    let Some(node) = tree.nodes.get(node) else {
        return;
    };
    let release = errors.release();
    for check in node.data.iter().filter(|c| c.releases.contains(release)) {
        // A kind's name format is the create handler's, which also checks generated names; a
        // status rule runs on writes through `/status` only.
        if check.path != NAME_PATH && !on_status(check) {
            run(check, new, old, at, errors);
        }
    }
    for child in &node.children {
        let name = child.field.name;
        let Some(value) = new.get(name) else {
            continue;
        };
        let old = old.and_then(|o| o.get(name));
        let at = At::Field(at, name);
        walk_wrapped(tree, child.node, value, old, child.field.wrap, &at, errors);
    }
}

fn walk_wrapped(
    tree: &Pruned<&'static [Check]>,
    node: usize,
    new: &Value,
    old: Option<&Value>,
    wrap: &[Wrap],
    at: &At<'_>,
    errors: &mut Errors,
) {
    match (wrap.split_first(), new) {
        (None, _) => walk(tree, node, new, old, at, errors),
        (Some((Wrap::List, rest)), Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let old = old.and_then(|o| o.get(i));
                walk_wrapped(tree, node, item, old, rest, &At::Index(at, i), errors);
            }
        }
        (Some((Wrap::Map, rest)), Value::Object(map)) => {
            for (key, item) in map {
                let old = old.and_then(|o| o.get(key));
                walk_wrapped(tree, node, item, old, rest, &At::Key(at, key), errors);
            }
        }
        _ => {}
    }
}

/// The path of a kind's name-format check.
const NAME_PATH: &str = ".metadata.name";

/// The name format a kind's root checks give, if any.
pub fn name_format(root: &TypeInfo, release: KubeVersion) -> Option<Format> {
    root.checks.iter().find_map(|c| match c.rule {
        Rule::Format(format) if c.path == NAME_PATH && c.releases.contains(release) => Some(format),
        _ => None,
    })
}

/// The value at a dotted path from `holder`, if every step is there.
fn at_path<'v>(holder: &'v Value, dotted: &str) -> Option<&'v Value> {
    dotted
        .split('.')
        .filter(|s| !s.is_empty())
        .try_fold(holder, |value, step| value.get(step))
}

fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::Array(items)) => items.is_empty(),
        _ => false,
    }
}

fn run(check: &Check, holder: &Value, old: Option<&Value>, at: &At<'_>, errors: &mut Errors) {
    // The field's path, rendered only for a report.
    let path = || at.path().join(check.path);
    let value = at_path(holder, check.path);
    let release = errors.release();
    match check.rule {
        Rule::Required => {
            if is_empty(value) {
                errors.required(&path(), "");
            }
        }
        Rule::Minimum(min) => {
            if let Some(n) = value.and_then(Value::as_i64)
                && n < min
            {
                let detail = if min == 0 {
                    NEGATIVE.to_owned()
                } else {
                    format!("must be greater than or equal to {min}")
                };
                errors.invalid(&path(), Shown::Plain(&Value::from(n)), &detail);
            }
        }
        Rule::Range(low, high) => {
            let n = value.and_then(Value::as_i64).unwrap_or(0);
            if !(low..=high).contains(&n) {
                let detail = format!("must be between {low} and {high}, inclusive");
                errors.invalid(&path(), Shown::Plain(&Value::from(n)), &detail);
            }
        }
        Rule::Port => {
            if let Some(n) = value.and_then(Value::as_i64)
                && n != 0
            {
                port_number(n, path, errors);
            }
        }
        Rule::PortOrName => match value {
            Some(Value::Number(n)) => port_number(n.as_i64().unwrap_or(0), path, errors),
            Some(Value::String(name)) => {
                for message in Format::PortName.messages(name, release) {
                    errors.invalid(&path(), Shown::Plain(&Value::from(name.as_str())), &message);
                }
            }
            _ => {}
        },
        Rule::OneOf(values) => match value.and_then(Value::as_str) {
            None | Some("") => errors.required(&path(), ""),
            Some(v) if values.contains(&v) => {}
            Some(v) => errors.not_supported(&path(), &Value::from(v), values),
        },
        Rule::Format(format) => {
            if let Some(text) = value.and_then(Value::as_str) {
                for message in format.messages(text, release) {
                    errors.invalid(&path(), Shown::Plain(&Value::from(text)), &message);
                }
            }
        }
        Rule::KeysFormat(format) => {
            for key in value
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
            {
                for message in format.messages(key, release) {
                    errors.invalid(
                        &path().key(key),
                        Shown::Plain(&Value::from(key.as_str())),
                        &message,
                    );
                }
            }
        }
        Rule::Unique(field) => {
            let mut seen: Vec<&Value> = Vec::new();
            for (i, item) in value
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let Some(name) = item.get(field) else {
                    continue;
                };
                if seen.contains(&name) {
                    errors.duplicate(&path().index(i).child(field), name);
                } else {
                    seen.push(name);
                }
            }
        }
        Rule::Immutable(shape) => {
            if let Some(old) = old
                && at_path(old, check.path) != value
            {
                let value = value.unwrap_or(&Value::Null);
                errors.invalid(&path(), shape.show(value), IMMUTABLE);
            }
        }
        Rule::Named(named) => named.check(holder, old, &at.path(), errors),
    }
}

/// `IsValidPortNum`.
fn port_number(n: i64, path: impl FnOnce() -> FieldPath, errors: &mut Errors) {
    if !(1..=65535).contains(&n) {
        let detail = "must be between 1 and 65535, inclusive";
        errors.invalid(&path(), Shown::Plain(&Value::from(n)), detail);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::merge::field;

    const RELEASE: KubeVersion = KubeVersion::new(1, 34);

    static CONTAINER: TypeInfo = TypeInfo::new(&[]).checks(&[
        Check::new(".name", Rule::Required),
        Check::new(".name", Rule::Format(Format::DnsLabel)),
        Check::new(".image", Rule::Required),
    ]);
    static POD_SPEC: TypeInfo = TypeInfo::new(&[field("containers").items(&CONTAINER)]).checks(&[
        Check::new(".containers", Rule::Required),
        Check::new(".containers", Rule::Unique("name")),
        Check::new(
            ".restartPolicy",
            Rule::OneOf(&["Always", "OnFailure", "Never"]),
        ),
    ]);
    static POD: TypeInfo = TypeInfo::new(&[field("spec").of(&POD_SPEC)]);

    fn messages(object: &Value, old: Option<&Value>, root: &TypeInfo) -> Vec<String> {
        let mut errors = Errors::new(RELEASE);
        check_types(root, object, old, &mut errors);
        errors
            .into_causes()
            .into_iter()
            .map(|c| format!("{}: {}", c.field.unwrap(), c.message.unwrap()))
            .collect()
    }

    #[test]
    fn errors_carry_the_full_path_through_lists() {
        let pod = json!({"spec": {"restartPolicy": "Sometimes", "containers": [
            {"name": "web", "image": "nginx"},
            {"name": "web"},
            {"name": "Side_Car", "image": "x"}
        ]}});
        assert_eq!(
            messages(&pod, None, &POD),
            [
                "spec.containers[1].name: Duplicate value: \"web\"",
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                "spec.containers[1].image: Required value",
                "spec.containers[2].name: Invalid value: \"Side_Car\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ]
        );
        assert_eq!(
            messages(&json!({"spec": {"restartPolicy": "Always"}}), None, &POD),
            ["spec.containers: Required value"]
        );
    }

    #[test]
    fn immutable_fields_are_checked_against_the_old_object_only() {
        static SPEC: TypeInfo = TypeInfo::new(&[]).checks(&[
            Check::new(".selector", Rule::Immutable(Shape::LabelSelector)),
            Check::new(".replicas", Rule::Minimum(0)),
        ]);
        static DEPLOYMENT: TypeInfo = TypeInfo::new(&[field("spec").of(&SPEC)]);
        let old = json!({"spec": {"selector": {"matchLabels": {"app": "a"}}}});
        let new = json!({"spec": {"replicas": -1, "selector": {"matchLabels": {"app": "b"}}}});
        assert_eq!(
            messages(&new, Some(&old), &DEPLOYMENT),
            [
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"b\"}}: field is immutable",
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        assert_eq!(messages(&old, None, &DEPLOYMENT), Vec::<String>::new());
    }
}
