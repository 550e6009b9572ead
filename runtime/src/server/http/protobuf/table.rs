//! The field-number table of the Kubernetes built-in types (`fields.txt`, written by
//! `scripts/protobuf_fields.py`), parsed once on first use.
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
}

impl Message {
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

    #[test]
    fn kinds_resolve() {
        let table = Table::get();
        let rows = [
            ("v1", "ConfigMap", true),
            ("apps/v1", "Deployment", true),
            ("autoscaling/v1", "Scale", true),
            ("v1", "DeleteOptions", true),
            ("meta.k8s.io/v1", "DeleteOptions", true),
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
        let (_, config_map) = table.message_of("v1", "ConfigMap").unwrap();
        let data = config_map.fields[&2];
        assert_eq!(
            (data.name, data.kind, data.cardinality),
            ("data", Kind::String, Cardinality::Map)
        );
    }
}
