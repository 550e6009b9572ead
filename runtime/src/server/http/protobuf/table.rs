//! The field-number table of the Kubernetes built-in types (`fields.txt`, written by
//! `scripts/protobuf_fields.py`), parsed once on first use.
//!
//! It covers every kind that any served release (1.20, 1.28, 1.34, 1.36) serves,
//! meta.k8s.io/v1 and v1beta1 `PartialObjectMetadata` and `PartialObjectMetadataList`, the
//! discovery documents (meta/v1 `APIVersions`, `APIGroupList`, `APIGroup`, `APIResourceList`,
//! and apidiscovery.k8s.io/v2 and v2beta1 `APIGroupDiscoveryList`). The
//! numbers come from upstream's `generated.proto` files: those of Kubernetes 1.36.0, 1.34.1 and
//! 1.20.2 (kubernetes/api and kubernetes/apimachinery at their `kubernetes-1.X.Y` tags) and,
//! through the `k8s-pb` crate's prost structs, 1.35.0 down to 1.28.4 (k8s-pb 0.9.0 to 0.1.0),
//! merged newest first; the sources must agree on every number the table holds. The JSON names
//! are those of kapi-k8s's OpenAPI definitions. The script's doc lists the sources exactly and
//! says how to regenerate; `every_served_property_has_a_number` below fails for any served
//! property the table lacks. A field whose message type a release renamed refers to one message
//! for every release (the newest type, or an older one whose numbered fields include the
//! newest's: core/v1 `PersistentVolumeClaimSpec.resources` is `ResourceRequirements`, which 1.28
//! sends, with `claims`).
//!
//! The file is line-oriented:
//!
//! - `# ...` is a comment;
//! - `@<package>` starts a proto package (`api.core.v1`, `apimachinery.pkg.apis.meta.v1`);
//! - `<Type> [<group>/<version>/<Kind> ...]` starts a message type, with the kinds it is sent as
//!   (the core group is empty: `/v1/ConfigMap`), or `*` for a meta type any group may carry;
//! - `<number> <jsonName> <shape>` is a field of the type above. The shape is a cardinality
//!   prefix (`*` repeated, `%` a map from string keys, `^` a Go embedded struct whose fields
//!   are inline in JSON, its name then `-`), then the value kind: `s` string, `b` bool, `i`
//!   int32, `l` int64, `d` double, `y` bytes (base64 in JSON), `t` Time, `u` MicroTime, `q`
//!   Quantity, `n` IntOrString, `r` raw JSON (RawExtension, FieldsV1, apiextensions JSON), `v`
//!   Duration, `x` a message holding a string list (`ExtraValue`, `Verbs`), `A`/`B`/`S`
//!   apiextensions' JSONSchemaPropsOr{Array,Bool,StringArray}, or `m<Type>` a message (a bare
//!   type name is in the same package). A trailing `?` marks a field whose zero value is how Go
//!   writes "unset" (an `omitempty` value, not a pointer: Go puts it on the wire anyway), which
//!   the JSON form leaves out. A pointer's zero is a value the client set, and is kept. The
//!   script's doc gives the rule and its sources.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

/// A message type's name: `(package, type)`.
pub(crate) type Name = (&'static str, &'static str);

const SOURCE: &str = include_str!("fields.txt");

/// The value kind of a field (of each element, for repeated fields and maps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    String,
    Bool,
    Int32,
    Int64,
    Double,
    Bytes,
    Time,
    MicroTime,
    Quantity,
    IntOrString,
    RawJson,
    Duration,
    StringList,
    PropsOrArray,
    PropsOrBool,
    PropsOrStringArray,
    /// A message type.
    Message(Name),
}

/// How many values a field holds and how they appear in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cardinality {
    One,
    Repeated,
    Map,
    /// A Go embedded struct: a message on the wire, its fields merged into the parent in JSON.
    Inline,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) cardinality: Cardinality,
    pub(crate) zero_is_unset: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Message {
    /// The proto package, which bare type references and `A`/`B`/`S` resolve in.
    pub(crate) package: &'static str,
    pub(crate) fields: HashMap<u32, Field>,
    /// The field numbers in ascending order, the order messages are written in.
    order: Vec<u32>,
    /// Field numbers by JSON name (inline fields' own fields are in their message's index).
    by_name: HashMap<&'static str, u32>,
}

impl Message {
    /// The field named `name` in JSON, with its number (not looking into inline fields).
    pub(crate) fn named(&self, name: &str) -> Option<(u32, &Field)> {
        let number = *self.by_name.get(name)?;
        Some((number, self.fields.get(&number)?))
    }

    /// The fields in the order upstream's marshallers write them: by number.
    pub(crate) fn ordered(&self) -> impl Iterator<Item = (u32, &Field)> {
        self.order
            .iter()
            .filter_map(|number| Some((*number, self.fields.get(number)?)))
    }
}

#[derive(Debug, Default)]
pub(crate) struct Table {
    pub(crate) messages: HashMap<Name, Message>,
    /// `(group, version, kind)` → message name.
    kinds: HashMap<(&'static str, &'static str, &'static str), Name>,
    /// Kind → message name, for meta types every group may carry (`DeleteOptions`).
    any_group: HashMap<&'static str, Name>,
}

impl Table {
    /// The table compiled into the crate.
    pub(crate) fn get() -> &'static Table {
        static TABLE: OnceLock<Table> = OnceLock::new();
        TABLE.get_or_init(|| Table::parse(SOURCE))
    }

    /// The message a kind is encoded as. `api_version` is `group/version` or, for the core
    /// group, `version`.
    pub(crate) fn message_of(&self, api_version: &str, kind: &str) -> Option<(Name, &Message)> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let name = self
            .kinds
            .get(&(group, version, kind))
            .or_else(|| self.any_group.get(kind))?;
        Some((*name, self.messages.get(name)?))
    }

    /// Parses the table; lines that do not parse are skipped (the unit tests hold the committed
    /// file to having none).
    pub(crate) fn parse(source: &'static str) -> Table {
        let mut table = Table::default();
        let mut package = "";
        let mut current: Option<Name> = None;
        for line in source.lines() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(p) = line.strip_prefix('@') {
                package = p;
                current = None;
                continue;
            }
            let mut words = line.split(' ');
            let Some(first) = words.next() else { continue };
            if let Ok(number) = first.parse::<u32>() {
                let (Some(name), Some(shape), Some(message)) = (
                    words.next(),
                    words.next(),
                    current.and_then(|c| table.messages.get_mut(&c)),
                ) else {
                    continue;
                };
                if let Some(field) = parse_field(package, name, shape) {
                    message.fields.insert(number, field);
                }
                continue;
            }
            let full = (package, first);
            for head in words {
                if head == "*" {
                    table.any_group.insert(first, full);
                } else if let Some((group, rest)) = head.split_once('/')
                    && let Some((version, kind)) = rest.split_once('/')
                {
                    table.kinds.insert((group, version, kind), full);
                }
            }
            table.messages.insert(
                full,
                Message {
                    package,
                    ..Message::default()
                },
            );
            current = Some(full);
        }
        for message in table.messages.values_mut() {
            message.order = message.fields.keys().copied().collect();
            message.order.sort_unstable();
            message.by_name = message
                .fields
                .iter()
                .filter(|(_, field)| field.cardinality != Cardinality::Inline)
                .map(|(number, field)| (field.name, *number))
                .collect();
        }
        table
    }
}

fn parse_field(package: &'static str, name: &'static str, shape: &'static str) -> Option<Field> {
    let (shape, zero_is_unset) = match shape.strip_suffix('?') {
        Some(rest) => (rest, true),
        None => (shape, false),
    };
    let (cardinality, rest) = match shape.as_bytes().first()? {
        b'*' => (Cardinality::Repeated, &shape[1..]),
        b'%' => (Cardinality::Map, &shape[1..]),
        b'^' => (Cardinality::Inline, &shape[1..]),
        _ => (Cardinality::One, shape),
    };
    let kind = if cardinality == Cardinality::Inline {
        Kind::Message(qualify(package, rest))
    } else if let Some(reference) = rest.strip_prefix('m') {
        Kind::Message(qualify(package, reference))
    } else {
        match rest {
            "s" => Kind::String,
            "b" => Kind::Bool,
            "i" => Kind::Int32,
            "l" => Kind::Int64,
            "d" => Kind::Double,
            "y" => Kind::Bytes,
            "t" => Kind::Time,
            "u" => Kind::MicroTime,
            "q" => Kind::Quantity,
            "n" => Kind::IntOrString,
            "r" => Kind::RawJson,
            "v" => Kind::Duration,
            "x" => Kind::StringList,
            "A" => Kind::PropsOrArray,
            "B" => Kind::PropsOrBool,
            "S" => Kind::PropsOrStringArray,
            _ => return None,
        }
    };
    Some(Field {
        name,
        kind,
        cardinality,
        zero_is_unset,
    })
}

/// A reference as written in the table → `(package, type)`. Package-qualified names contain a
/// dot; a bare type name is in `package`.
fn qualify(package: &'static str, reference: &'static str) -> Name {
    reference.rsplit_once('.').unwrap_or((package, reference))
}

/// Calls `visit` with the JSON pointer (RFC 6901) of every `[]byte` field (`y`) that `value`,
/// an object of `kind` in `api_version` in its JSON form, holds: for encodings that write Go's
/// `[]byte` apart from strings (CBOR). Nothing is visited for a kind the table lacks.
pub(crate) fn byte_fields(
    api_version: &str,
    kind: &str,
    value: &Value,
    visit: &mut dyn FnMut(&str),
) {
    let table = Table::get();
    if let (Some((_, message)), Value::Object(object)) =
        (table.message_of(api_version, kind), value)
    {
        walk_bytes(table, message, object, &mut String::new(), visit, 0);
    }
}

/// Appends one RFC 6901 reference token, `~` and `/` escaped.
pub(crate) fn push_escaped(pointer: &mut String, token: &str) {
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// The nesting [`byte_fields`] follows; the built-ins' messages are far shallower.
const MAX_WALK_DEPTH: usize = 64;

fn walk_bytes(
    table: &Table,
    message: &Message,
    object: &serde_json::Map<String, Value>,
    pointer: &mut String,
    visit: &mut dyn FnMut(&str),
    depth: usize,
) {
    if depth > MAX_WALK_DEPTH {
        return;
    }
    for field in message.fields.values() {
        let nested = |name| table.messages.get(&name);
        if field.cardinality == Cardinality::Inline {
            if let Kind::Message(name) = field.kind
                && let Some(inner) = nested(name)
            {
                walk_bytes(table, inner, object, pointer, visit, depth + 1);
            }
            continue;
        }
        let Some(value) = object.get(field.name) else {
            continue;
        };
        let len = pointer.len();
        pointer.push('/');
        push_escaped(pointer, field.name);
        let each = |value: &Value, pointer: &mut String, visit: &mut dyn FnMut(&str)| match (
            field.kind, value,
        ) {
            (Kind::Bytes, Value::String(_)) => visit(pointer),
            (Kind::Message(name), Value::Object(object)) => {
                if let Some(inner) = nested(name) {
                    walk_bytes(table, inner, object, pointer, visit, depth + 1);
                }
            }
            _ => {}
        };
        match (field.cardinality, value) {
            (Cardinality::Repeated, Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let at = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&i.to_string());
                    each(item, pointer, visit);
                    pointer.truncate(at);
                }
            }
            (Cardinality::Map, Value::Object(entries)) => {
                for (key, item) in entries {
                    let at = pointer.len();
                    pointer.push('/');
                    push_escaped(pointer, key);
                    each(item, pointer, visit);
                    pointer.truncate(at);
                }
            }
            (Cardinality::One, value) => each(value, pointer, visit),
            _ => {}
        }
        pointer.truncate(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of the committed table parses and every message reference resolves.
    #[test]
    fn committed_table_is_whole() {
        let table = Table::get();
        assert!(table.messages.len() > 500, "{}", table.messages.len());
        let field_lines = SOURCE
            .lines()
            .filter(|l| {
                l.split(' ')
                    .next()
                    .is_some_and(|w| w.parse::<u32>().is_ok())
            })
            .count();
        let parsed: usize = table.messages.values().map(|m| m.fields.len()).sum();
        assert_eq!(parsed, field_lines);
        for (name, message) in &table.messages {
            for field in message.fields.values() {
                if let Kind::Message(target) = field.kind {
                    assert!(
                        table.messages.contains_key(&target),
                        "{name:?}.{}: {target:?}",
                        field.name
                    );
                }
            }
        }
    }

    /// The `?` rule: an optional value field's zero is dropped, a pointer's and a required
    /// field's are kept.
    #[test]
    fn zero_is_unset_only_for_omitempty_values() {
        let table = Table::get();
        let rows = [
            // Values the script lists, and optional strings.
            ("v1", "Event", "count", true),
            ("v1", "Event", "reason", true),
            ("apps/v1", "DeploymentStatus", "replicas", true),
            ("apps/v1", "DeploymentSpec", "minReadySeconds", true),
            ("v1", "PodSpec", "hostNetwork", true),
            // Pointers: an explicit zero or false means something.
            ("apps/v1", "DeploymentSpec", "replicas", false),
            ("v1", "PodSpec", "automountServiceAccountToken", false),
            ("v1", "SecurityContext", "allowPrivilegeEscalation", false),
            ("v1", "SecurityContext", "runAsUser", false),
            // Required: always written.
            ("v1", "ContainerPort", "containerPort", false),
            ("apps/v1", "ReplicaSetStatus", "replicas", false),
            ("v1", "Container", "name", false),
        ];
        for (api_version, type_name, field, want) in rows {
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            let package = if group.is_empty() {
                format!("api.core.{version}")
            } else {
                format!("api.{}.{version}", group.split('.').next().unwrap_or(group))
            };
            let message = table
                .messages
                .iter()
                .find(|((p, t), _)| *p == package && *t == type_name)
                .map(|(_, m)| m)
                .unwrap_or_else(|| panic!("{package}.{type_name}"));
            let found = message
                .fields
                .values()
                .find(|f| f.name == field)
                .unwrap_or_else(|| panic!("{type_name}.{field}"));
            assert_eq!(found.zero_is_unset, want, "{type_name}.{field}");
        }
    }

    /// Definitions by name.
    type Definitions = HashMap<String, serde_json::Value>;

    /// The OpenAPI definitions of each release kapi-k8s carries, by release (`v1_20`, ...).
    /// generated/k8s/src/definitions holds one JSON object per file, each file named by the
    /// releases whose definitions it holds (`v1_20_v1_28.rs`: the ones 1.20 and 1.28 share).
    fn release_definitions() -> HashMap<String, Definitions> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../generated/k8s/src/definitions");
        let mut out: HashMap<String, Definitions> = HashMap::new();
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let Some((_, rest)) = text.split_once("r##\"") else {
                continue;
            };
            let json = &rest[..rest.find("\"##").expect("closing \"##")];
            let serde_json::Value::Object(defs) = serde_json::from_str(json).unwrap() else {
                panic!("{path:?}: not an object");
            };
            let stem = path.file_stem().unwrap().to_str().unwrap();
            let releases = stem.split("_v").map(|r| r.trim_start_matches('v'));
            for release in releases {
                let release = out.entry(format!("v{release}")).or_default();
                release.extend(defs.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        let mut releases: Vec<&String> = out.keys().collect();
        releases.sort();
        assert_eq!(releases, ["v1_20", "v1_28", "v1_34", "v1_36"]);
        out
    }

    /// The definitions a property's schema refers to (`$ref`, through `items`,
    /// `additionalProperties` and `allOf`).
    fn refs(schema: &serde_json::Value, out: &mut Vec<String>) {
        if let Some(r) = schema.get("$ref").and_then(|r| r.as_str()) {
            out.push(r.rsplit('/').next().unwrap_or(r).to_string());
        }
        for key in ["items", "additionalProperties"] {
            if let Some(inner) = schema.get(key) {
                refs(inner, out);
            }
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            for inner in schema
                .get(key)
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten()
            {
                refs(inner, out);
            }
        }
    }

    /// A message's field by JSON name, looking into the Go embedded structs (`^`) it inlines.
    fn field_named(table: &Table, message: Name, json_name: &str, depth: usize) -> Option<Field> {
        let fields = &table.messages.get(&message)?.fields;
        if let Some(field) = fields.values().find(|f| f.name == json_name) {
            return Some(*field);
        }
        fields.values().find_map(|f| match (f.cardinality, f.kind) {
            (Cardinality::Inline, Kind::Message(inner)) if depth < 8 => {
                field_named(table, inner, json_name, depth + 1)
            }
            _ => None,
        })
    }

    /// OpenAPI properties the table cannot give a number, with the reason. Empty: every source
    /// the script takes has them all.
    const KNOWN_GAPS: &[(&str, &str)] = &[];

    /// Once answers are written in protobuf, a property without a field number is lost for
    /// protobuf clients. So, in each release (1.20, 1.28, 1.34, 1.36): every kind it serves
    /// resolves to a message, and every property of the kind's OpenAPI schema has a number in
    /// it, walking nested types through the message each field refers to. A kind's
    /// `apiVersion` and `kind` are the envelope's, not fields.
    #[test]
    fn every_served_property_has_a_number() {
        let table = Table::get();
        let mut gaps: Vec<String> = Vec::new();
        let mut kinds = 0;
        let mut walked = 0;
        for (release, defs) in release_definitions() {
            let gvks = |schema: &serde_json::Value| {
                let gvks = schema.get("x-kubernetes-group-version-kind");
                gvks.and_then(|v| v.as_array()).cloned().unwrap_or_default()
            };
            let mut todo: Vec<(&String, Name)> = Vec::new();
            for (name, schema) in &defs {
                for gvk in gvks(schema) {
                    let part = |key: &str| gvk.get(key).and_then(|v| v.as_str()).unwrap_or("");
                    let (group, version, kind) = (part("group"), part("version"), part("kind"));
                    let api_version = match group {
                        "" => version.to_string(),
                        _ => format!("{group}/{version}"),
                    };
                    kinds += 1;
                    match table.message_of(&api_version, kind) {
                        Some((message, _)) => todo.push((name, message)),
                        None => {
                            gaps.push(format!("{release} {group}/{version}/{kind}: no message"))
                        }
                    }
                }
            }
            let mut visited = std::collections::HashSet::new();
            while let Some((name, message)) = todo.pop() {
                if !visited.insert((name, message)) {
                    continue;
                }
                let schema = &defs[name];
                let is_kind = !gvks(schema).is_empty();
                let properties = schema.get("properties").and_then(|p| p.as_object());
                for (property, property_schema) in properties.into_iter().flatten() {
                    if is_kind && (property == "apiVersion" || property == "kind") {
                        continue;
                    }
                    let Some(field) = field_named(table, message, property, 0) else {
                        gaps.push(format!("{release} {name}.{property} (in {message:?})"));
                        continue;
                    };
                    if let Kind::Message(target) = field.kind {
                        let mut targets = Vec::new();
                        refs(property_schema, &mut targets);
                        for target_name in targets {
                            if let Some((name, _)) = defs.get_key_value(&target_name) {
                                todo.push((name, target));
                            }
                        }
                    }
                }
            }
            walked += visited.len();
        }
        assert!(kinds > 800, "{kinds} kinds");
        assert!(walked > 2000, "{walked} (definition, message) pairs walked");
        gaps.sort();
        gaps.dedup();
        let known: Vec<String> = KNOWN_GAPS.iter().map(|(g, _)| g.to_string()).collect();
        assert_eq!(gaps, known, "properties without a field number");
    }

    /// Numbers each kind of source contributes, as upstream's generated.proto files give them.
    #[test]
    fn numbers_of_removed_and_new_fields() {
        let table = Table::get();
        let number = |package: &'static str, type_name: &'static str, json_name: &str| {
            let message = &table.messages[&(package, type_name)];
            message
                .fields
                .iter()
                .find(|(_, f)| f.name == json_name)
                .map(|(n, _)| *n)
        };
        let core = "api.core.v1";
        let meta = "apimachinery.pkg.apis.meta.v1";
        let rows = [
            // kubernetes/apimachinery v0.20.2 pkg/apis/meta/v1/generated.proto:
            // `optional string clusterName = 15;` (removed in 1.25).
            (meta, "ObjectMeta", "clusterName", 15),
            // kubernetes/api v0.20.2 core/v1/generated.proto: `repeated string topologyKeys = 16;`
            (core, "ServiceSpec", "topologyKeys", 16),
            (core, "EphemeralVolumeSource", "readOnly", 2),
            // k8s-pb 0.1.0 (Kubernetes 1.28.4): PodResourceClaim.source, tag 2.
            (core, "PodResourceClaim", "source", 2),
            // kubernetes/api v0.36.0 core/v1/generated.proto:
            // `optional PodSchedulingGroup schedulingGroup = 43;`
            (core, "PodSpec", "schedulingGroup", 43),
            // kubernetes/apimachinery v0.36.0: ListMeta `optional ShardInfo shardInfo = 5;`
            (meta, "ListMeta", "shardInfo", 5),
            // kubernetes/api v0.36.0 resource/v1: DeviceAttribute `repeated int64 ints = 6;`
            ("api.resource.v1", "DeviceAttribute", "ints", 6),
            // kubernetes/api v0.20.2 policy/v1beta1: PodSecurityPolicySpec
            // `optional RunAsGroupStrategyOptions runAsGroup = 22;`
            (
                "api.policy.v1beta1",
                "PodSecurityPolicySpec",
                "runAsGroup",
                22,
            ),
            // kubernetes/apimachinery pkg/apis/meta/v1beta1/generated.proto: its
            // PartialObjectMetadataList numbers metadata 2 and items 1, v1's the other way.
            (
                "apimachinery.pkg.apis.meta.v1beta1",
                "PartialObjectMetadataList",
                "metadata",
                2,
            ),
            (
                "apimachinery.pkg.apis.meta.v1beta1",
                "PartialObjectMetadataList",
                "items",
                1,
            ),
            (meta, "PartialObjectMetadataList", "metadata", 1),
            (meta, "PartialObjectMetadataList", "items", 2),
            (meta, "PartialObjectMetadata", "metadata", 1),
        ];
        for (package, type_name, json_name, want) in rows {
            assert_eq!(
                number(package, type_name, json_name),
                Some(want),
                "{package}.{type_name}.{json_name}"
            );
        }
    }

    #[test]
    fn kinds_resolve() {
        let table = Table::get();
        let rows = [
            ("v1", "ConfigMap", true),
            ("apps/v1", "Deployment", true),
            ("autoscaling/v1", "Scale", true),
            ("v1", "DeleteOptions", true),
            ("meta.k8s.io/v1", "DeleteOptions", true),
            ("meta.k8s.io/v1", "PartialObjectMetadata", true),
            ("meta.k8s.io/v1", "PartialObjectMetadataList", true),
            ("meta.k8s.io/v1beta1", "PartialObjectMetadata", true),
            ("meta.k8s.io/v1beta1", "PartialObjectMetadataList", true),
            // Served by 1.20 only, 1.28 only, 1.34 only and 1.36 only.
            ("policy/v1beta1", "PodSecurityPolicy", true),
            ("resource.k8s.io/v1alpha2", "ResourceClaim", true),
            (
                "certificates.k8s.io/v1alpha1",
                "PodCertificateRequest",
                true,
            ),
            ("scheduling.k8s.io/v1alpha2", "PodGroup", true),
            ("apps/v1", "ConfigMap", false),
            ("widgets.kapi.dev/v1", "Widget", false),
        ];
        for (api_version, kind, known) in rows {
            assert_eq!(
                table.message_of(api_version, kind).is_some(),
                known,
                "{api_version} {kind}"
            );
        }
        let (name, _) = table
            .message_of("meta.k8s.io/v1beta1", "PartialObjectMetadataList")
            .unwrap();
        assert_eq!(
            name,
            (
                "apimachinery.pkg.apis.meta.v1beta1",
                "PartialObjectMetadataList"
            )
        );
        let (_, config_map) = table.message_of("v1", "ConfigMap").unwrap();
        let data = config_map.fields[&2];
        assert_eq!(
            (data.name, data.kind, data.cardinality),
            ("data", Kind::String, Cardinality::Map)
        );
    }
}
