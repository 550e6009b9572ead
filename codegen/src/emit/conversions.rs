//! Built-in resources served in several versions or groups and stored once
//! (`specs/conversions/kubernetes.yaml`): each family becomes a `kapi::conversion::Family` static
//! in the output's root `families` module, and every kind of a family member names it with a
//! `family` attribute.
//!
//! [`Conversions::from_yaml_str`] parses text; reading the file is
//! [`load_conversions`](crate::load::load_conversions)'s.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use heck::ToUpperCamelCase;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use serde_json::Value;

use super::data_file::DataText;
use crate::load::LoadError;

/// The rule names the runtime's `kapi::conversion::Rule` has, as the file writes them.
pub(crate) const RULES: &[&str] = &[
    "ingress_backend",
    "horizontal_pod_autoscaler_v1",
    "horizontal_pod_autoscaler_v2beta1",
    "rbac_subject_v1alpha1",
    "endpoint_topology_v1beta1",
    "custom_resource_definition_v1beta1",
];

/// Every family the file describes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Conversions {
    /// The families, in file order.
    pub families: Vec<FamilyData>,
}

/// One resource stored once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyData {
    /// The plural every member is served as.
    pub resource: String,
    /// The `apiVersion` objects are stored in.
    pub storage: String,
    /// Every other `apiVersion`, with its steps to `storage`.
    pub versions: Vec<(String, Vec<StepData>)>,
}

/// One step of a version's way to the stored version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepData {
    /// Where the step applies (dotted, `[*]` through lists; empty for the object).
    pub at: String,
    /// What it does.
    pub change: ChangeData,
}

/// What a step does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeData {
    /// Moves the value at `from` to `to`.
    Move {
        /// Where the served version has it.
        from: String,
        /// Where the stored version has it.
        to: String,
    },
    /// A named rule: the snake-case name of a `kapi::conversion::Rule` variant.
    Rule(String),
}

impl FamilyData {
    /// The name of the family's static: its storage group and resource, e.g.
    /// `NETWORKING_K8S_IO_INGRESSES` (`CORE_EVENTS` for the core group).
    pub fn static_name(&self) -> String {
        let group = self
            .storage
            .rsplit_once('/')
            .map_or("core", |(group, _)| group);
        screaming(&format!("{group}_{}", self.resource))
    }

    fn has(&self, api_version: &str) -> bool {
        self.storage == api_version || self.versions.iter().any(|(v, _)| v == api_version)
    }
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

impl Conversions {
    /// The static name of the family serving `plural` at `group`/`version`, if any.
    pub fn family_of(&self, group: &str, version: &str, plural: &str) -> Option<String> {
        let api_version = api_version(group, version);
        self.families
            .iter()
            .find(|f| f.resource == plural && f.has(&api_version))
            .map(FamilyData::static_name)
    }

    /// Parses the YAML list described in `specs/conversions/README.md`; `path` names the input
    /// in errors.
    pub fn from_yaml_str(path: &Path, text: &str) -> Result<Self, LoadError> {
        let file = DataText::new("conversions", path);
        let mut families = Vec::new();
        for (i, entry) in file.entries(text)?.iter().enumerate() {
            let at = format!("/{i}");
            let map = file.object(entry, &at, &["resource", "storage", "versions"])?;
            let required = |key: &str| {
                file.text(map, key, &at)?
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| {
                        file.invalid(format!("{at}/{key}"), "expected a non-empty string")
                    })
            };
            let resource = required("resource")?;
            let storage = required("storage")?;
            let versions_at = format!("{at}/versions");
            let Some(Value::Object(listed)) = map.get("versions") else {
                return Err(file.invalid(versions_at, "expected a map of apiVersion to steps"));
            };
            let mut versions = Vec::new();
            for (version, steps) in listed {
                let steps_at = format!("{versions_at}/{version}");
                if *version == storage {
                    return Err(file.invalid(steps_at, "the storage version needs no steps"));
                }
                let steps = match steps {
                    Value::Null => Vec::new(),
                    Value::Array(steps) => steps
                        .iter()
                        .enumerate()
                        .map(|(j, step)| parse_step(&file, step, &format!("{steps_at}/{j}")))
                        .collect::<Result<_, _>>()?,
                    _ => return Err(file.invalid(steps_at, "expected a list of steps")),
                };
                versions.push((version.clone(), steps));
            }
            families.push(FamilyData {
                resource,
                storage,
                versions,
            });
        }
        let mut names: Vec<String> = families.iter().map(FamilyData::static_name).collect();
        names.sort();
        if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(file.invalid("", format!("two families are named {}", twice[0])));
        }
        Ok(Self { families })
    }

    /// `pub mod families { ... }`: a static for each family named in `used`, for the output's
    /// root; nothing when none is.
    pub(crate) fn module(&self, krate: &TokenStream, used: &BTreeSet<String>) -> TokenStream {
        let families: Vec<&FamilyData> = self
            .families
            .iter()
            .filter(|f| used.contains(&f.static_name()))
            .collect();
        if families.is_empty() {
            return TokenStream::new();
        }
        // A list of steps several versions share (a YAML anchor's) is written once, as a
        // constant named after its first use.
        let mut uses: BTreeMap<String, usize> = BTreeMap::new();
        for f in &families {
            for (_, steps) in f.versions.iter().filter(|(_, steps)| !steps.is_empty()) {
                *uses
                    .entry(steps_tokens(krate, steps).to_string())
                    .or_default() += 1;
            }
        }
        let mut shared: BTreeMap<String, Ident> = BTreeMap::new();
        let mut consts = Vec::new();
        for f in &families {
            for (version, steps) in &f.versions {
                let tokens = steps_tokens(krate, steps);
                let text = tokens.to_string();
                if uses.get(&text).is_some_and(|n| *n > 1) && !shared.contains_key(&text) {
                    let name = format!("{}_FROM_{}", f.static_name(), screaming(version));
                    let name = Ident::new(&name, Span::call_site());
                    consts.push(quote! {
                        const #name: &[#krate::conversion::Step] = #tokens;
                    });
                    shared.insert(text, name);
                }
            }
        }
        let statics = families.iter().map(|f| {
            let name = Ident::new(&f.static_name(), Span::call_site());
            let resource = &f.resource;
            let storage = &f.storage;
            let doc = format!(
                " `{resource}`, stored as `{storage}` and served as {}.",
                f.versions
                    .iter()
                    .map(|(v, _)| format!("`{v}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let versions = f.versions.iter().map(|(version, steps)| {
                let tokens = steps_tokens(krate, steps);
                let steps = match shared.get(&tokens.to_string()) {
                    Some(name) => quote!(#name),
                    None => tokens,
                };
                quote!(#krate::conversion::Version {
                    api_version: #version,
                    steps: #steps,
                })
            });
            quote! {
                #[doc = #doc]
                pub static #name: #krate::conversion::Family = #krate::conversion::Family {
                    resource: #resource,
                    storage: #storage,
                    versions: &[#(#versions),*],
                };
            }
        });
        let statics = quote!(#(#consts)* #(#statics)*);
        quote! {
            /// Resources served in several versions or groups and stored once, in one version,
            /// converted on the way in and out (`kapi::conversion`).
            pub mod families {
                #statics
            }
        }
    }
}

/// `&[step, ...]`.
fn steps_tokens(krate: &TokenStream, steps: &[StepData]) -> TokenStream {
    let steps = steps.iter().map(|s| step_tokens(krate, s));
    quote!(&[#(#steps),*])
}

/// `networking.k8s.io/v1beta1` as `NETWORKING_K8S_IO_V1BETA1`.
fn screaming(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

fn step_tokens(krate: &TokenStream, step: &StepData) -> TokenStream {
    let at = &step.at;
    match &step.change {
        ChangeData::Move { from, to } => {
            quote!(#krate::conversion::Step::moved(#at, #from, #to))
        }
        ChangeData::Rule(rule) => {
            let variant = Ident::new(&rule.to_upper_camel_case(), Span::call_site());
            quote!(#krate::conversion::Step::rule(#at, #krate::conversion::Rule::#variant))
        }
    }
}

fn parse_step(file: &DataText, step: &Value, at: &str) -> Result<StepData, LoadError> {
    let map = file.object(step, at, &["at", "move", "to", "rule"])?;
    let place = file.text(map, "at", at)?.unwrap_or_default();
    let change = match (
        file.text(map, "move", at)?,
        file.text(map, "to", at)?,
        file.text(map, "rule", at)?,
    ) {
        (Some(from), Some(to), None) => ChangeData::Move { from, to },
        (None, None, Some(rule)) => {
            if !RULES.contains(&rule.as_str()) {
                return Err(file.invalid(
                    format!("{at}/rule"),
                    format!(
                        "unknown rule {rule:?} (expected one of {})",
                        RULES.join(", ")
                    ),
                ));
            }
            ChangeData::Rule(rule)
        }
        _ => {
            return Err(file.invalid(at, "expected `move` with `to`, or `rule`, and nothing else"));
        }
    };
    Ok(StepData { at: place, change })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Conversions, String> {
        Conversions::from_yaml_str(Path::new("conversions.yaml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn families_parse_with_moves_rules_and_shared_steps() {
        let c = parse(
            "- resource: ingresses\n  storage: networking.k8s.io/v1\n  versions:\n    \
             networking.k8s.io/v1beta1: &steps\n      - {at: spec, move: backend, to: defaultBackend}\n      \
             - {at: spec.defaultBackend, rule: ingress_backend}\n    extensions/v1beta1: *steps\n\
             - resource: events\n  storage: v1\n  versions:\n    events.k8s.io/v1beta1:\n",
        )
        .unwrap();
        assert_eq!(c.families.len(), 2);
        assert_eq!(c.families[0].versions[1].1.len(), 2);
        assert_eq!(
            c.family_of("extensions", "v1beta1", "ingresses").as_deref(),
            Some("NETWORKING_K8S_IO_INGRESSES")
        );
        assert_eq!(
            c.family_of("", "v1", "events").as_deref(),
            Some("CORE_EVENTS")
        );
        assert_eq!(c.family_of("apps", "v1", "deployments"), None);
    }

    #[test]
    fn errors_name_the_file_and_the_place() {
        let unknown =
            parse("- resource: x\n  storage: a/v1\n  versions:\n    a/v2:\n      - {rule: nope}\n")
                .unwrap_err();
        assert!(
            unknown.contains("conversions.yaml") && unknown.contains("/0/versions/a~1v2/0/rule")
                || unknown.contains("/0/versions/a/v2/0/rule"),
            "{unknown}"
        );
        assert!(unknown.contains("unknown rule \"nope\""), "{unknown}");
        let both = parse(
            "- resource: x\n  storage: a/v1\n  versions:\n    a/v2:\n      - {move: a, rule: ingress_backend}\n",
        )
        .unwrap_err();
        assert!(
            both.contains("expected `move` with `to`, or `rule`"),
            "{both}"
        );
        let storage =
            parse("- resource: x\n  storage: a/v1\n  versions:\n    a/v1:\n").unwrap_err();
        assert!(
            storage.contains("the storage version needs no steps"),
            "{storage}"
        );
    }

    #[test]
    fn rules_render_as_runtime_variants() {
        let step = StepData {
            at: String::new(),
            change: ChangeData::Rule("horizontal_pod_autoscaler_v2beta1".into()),
        };
        let tokens = step_tokens(&quote!(kapi), &step).to_string();
        assert!(
            tokens.contains("Rule :: HorizontalPodAutoscalerV2beta1"),
            "{tokens}"
        );
    }
}
