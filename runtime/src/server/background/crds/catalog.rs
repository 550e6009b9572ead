//! The catalog the stored CRDs make: which CRD gets which names in its group (compiled kinds
//! first, then the CRDs established under their names, then new claims in age order), and the
//! served kind of each served version of an accepted CRD, with a codec and validator driven
//! by its schema.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use serde::de::Error as _;
use serde_json::Value;

use crate::crd::instance::Rules;
use crate::crd::{ConversionWebhook, CustomResourceDefinition, CustomResourceDefinitionNames};
use crate::printer::{Cell, Releases};
use crate::registry::{RegisteredKind, Validator};
use crate::{GroupVersionKind, Lifecycle, PrinterColumn, Registry, ResourceInfo, Scope, Verb};

/// What the catalog decided about one CRD.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Verdict {
    /// The names the CRD's kinds are served under, if they are.
    pub(super) serving: Option<CustomResourceDefinitionNames>,
    /// The name already in use, as `NamesAccepted`'s reason and message.
    pub(super) conflict: Option<(&'static str, String)>,
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
/// with, as upstream does. `ratchet` as [`kind_of`]'s.
pub(super) fn catalog<'a>(
    base: &Registry,
    crds: impl Iterator<Item = &'a CustomResourceDefinition> + Clone,
    ratchet: bool,
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
                registry.insert_kind(kind_of(crd, names, &version.name, ratchet));
            }
            // Objects are then stored in the storage version and every other version is
            // served through the webhook (`objects::conversion_webhook`).
            if let Some(webhook) = ConversionWebhook::of(crd, &names.plural) {
                registry.insert_conversion_webhook(webhook);
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

/// The prepared schemas (patterns and CEL rules compiled) of the CRD versions served, by CRD
/// uid, generation and version: the catalog is rebuilt on every CRD change, a CRD's rules are
/// compiled again only when its spec changes. Entries live as long as a served kind holds them.
type Prepared = BTreeMap<(String, i64, String), Weak<Rules>>;

static PREPARED: LazyLock<Mutex<Prepared>> = LazyLock::new(Mutex::default);

fn prepared(
    crd: &CustomResourceDefinition,
    version: &str,
    schema: crate::schema::JSONSchemaProps,
) -> Arc<Rules> {
    let (Some(uid), Some(generation)) = (&crd.metadata.uid, crd.metadata.generation) else {
        return Arc::new(Rules::new(schema));
    };
    let key = (uid.clone(), generation, version.to_owned());
    let Ok(mut cache) = PREPARED.lock() else {
        return Arc::new(Rules::new(schema));
    };
    if let Some(rules) = cache.get(&key).and_then(Weak::upgrade) {
        return rules;
    }
    let rules = Arc::new(Rules::new(schema));
    cache.retain(|_, held| held.strong_count() > 0);
    cache.insert(key, Arc::downgrade(&rules));
    rules
}

/// The served kind of one version of `crd`; `ratchet` says whether its updates keep rules
/// that fail only on values they leave alone (CRDValidationRatcheting).
pub(super) fn kind_of(
    crd: &CustomResourceDefinition,
    names: &CustomResourceDefinitionNames,
    version: &str,
    ratchet: bool,
) -> RegisteredKind {
    let spec_version = crd.spec.versions.iter().find(|v| v.name == version);
    let rules: Option<Arc<Rules>> = spec_version
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.clone())
        .map(|schema| prepared(crd, version, schema));
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
                            cell: Cell::Path(Cow::Owned(c.json_path.clone())),
                            releases: Releases::ALL,
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
        // A CRD's defaults are its schema's, applied with its pruning and validation.
        defaults: Cow::Borrowed(&[]),
        field_labels: Default::default(),
        write_rules: crate::write_rules::WriteRules::CUSTOM,
        family: None,
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
            schema_rules.as_ref().map(|r| Arc::clone(r.schema()))
        })),
        validate: rules.map(|rules| {
            Arc::new(move |object: &Value, old: Option<&Value>| {
                rules.validate(object, old, ratchet)
            }) as Validator
        }),
        from_crd: true,
    }
}
