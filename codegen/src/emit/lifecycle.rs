//! Lifecycle data of built-in kinds (`specs/lifecycle/kubernetes.yaml`): parsing and the
//! deprecation policy's default rule.
//!
//! [`Lifecycles::from_yaml_str`] parses text; reading the file is
//! [`load_lifecycle`](crate::load::load_lifecycle)'s, so emission itself only ever sees parsed data.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::data_file::DataText;
use crate::load::LoadError;
use crate::model::Gvk;

/// A Kubernetes minor release, `major.minor`.
pub type Release = (u16, u16);

/// Where an entry's values come from; decides whether the default rule fills gaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LifecycleSource {
    /// Upstream tags at least one of deprecated/removed/replacement.
    Tag,
    /// Upstream tags only `introduced`.
    DefaultRule,
    /// Values from the migration guide; absent values are unknown.
    MigrationGuide,
    /// Upstream generates no lifecycle for the package.
    None,
    /// Nothing trustworthy is known.
    Unresolved,
}

/// One kind's lifecycle as the file states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleEntry {
    /// Release that introduced the kind at this version.
    pub introduced: Option<Release>,
    /// Release that deprecated it, when stated.
    pub deprecated: Option<Release>,
    /// Release that removes it, when stated.
    pub removed: Option<Release>,
    /// The kind to migrate to.
    pub replacement: Option<Gvk>,
    /// Where the values come from.
    pub source: LifecycleSource,
}

/// Lifecycle entries by group, version and kind.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lifecycles {
    /// The entries as stated in the file.
    pub entries: BTreeMap<Gvk, LifecycleEntry>,
}

/// A kind's lifecycle after the default rule.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResolvedLifecycle {
    /// Release that introduced the kind at this version.
    pub introduced: Option<Release>,
    /// Release that deprecates it.
    pub deprecated: Option<Release>,
    /// Release that removes it.
    pub removed: Option<Release>,
    /// The kind to migrate to.
    pub replacement: Option<Gvk>,
}

impl Lifecycles {
    /// Parses the YAML list described in `specs/lifecycle/README.md`; `path` names the input in
    /// errors.
    pub fn from_yaml_str(path: &Path, text: &str) -> Result<Self, LoadError> {
        let file = DataText::new("lifecycle", path);
        let invalid = |pointer: String, message: String| file.invalid(pointer, message);
        let items = file.entries(text)?;
        let mut entries = BTreeMap::new();
        for (i, item) in items.iter().enumerate() {
            let at = format!("/{i}");
            let field = |key: &str| -> Result<Option<&str>, LoadError> {
                match item.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.as_str())),
                    Some(_) => Err(invalid(format!("{at}/{key}"), "expected a string".into())),
                }
            };
            let gvk_of = |v: &Value, at: &str| -> Result<Gvk, LoadError> {
                let part = |key: &str| match v.get(key) {
                    Some(Value::String(s)) => Ok(s.clone()),
                    None if key == "group" => Ok(String::new()),
                    _ => Err(invalid(format!("{at}/{key}"), "expected a string".into())),
                };
                Ok(Gvk::new(part("group")?, part("version")?, part("kind")?))
            };
            if !item.is_object() {
                return Err(invalid(at, "expected an object".into()));
            }
            let gvk = gvk_of(item, &at)?;
            let release = |key: &str| -> Result<Option<Release>, LoadError> {
                field(key)?
                    .map(|s| {
                        parse_release(s).ok_or_else(|| {
                            invalid(
                                format!("{at}/{key}"),
                                format!("expected \"MAJOR.MINOR\", found \"{s}\""),
                            )
                        })
                    })
                    .transpose()
            };
            let source = match field("source")? {
                Some("tag") => LifecycleSource::Tag,
                Some("default-rule") => LifecycleSource::DefaultRule,
                Some("migration-guide") => LifecycleSource::MigrationGuide,
                Some("none") => LifecycleSource::None,
                Some("unresolved") => LifecycleSource::Unresolved,
                other => {
                    return Err(invalid(
                        format!("{at}/source"),
                        format!(
                            "unknown source {other:?} (expected tag, default-rule, migration-guide, none or unresolved)"
                        ),
                    ));
                }
            };
            let replacement = match item.get("replacement") {
                None | Some(Value::Null) => None,
                Some(r) => Some(gvk_of(r, &format!("{at}/replacement"))?),
            };
            let entry = LifecycleEntry {
                introduced: release("introduced")?,
                deprecated: release("deprecated")?,
                removed: release("removed")?,
                replacement,
                source,
            };
            if entries.insert(gvk.clone(), entry).is_some() {
                return Err(invalid(at, format!("{gvk} is listed twice")));
            }
        }
        Ok(Self { entries })
    }

    /// The lifecycle of a kind: the stated values, with the default rule filling `deprecated`
    /// (introduced + 3 minors) and `removed` (deprecated + 3 minors) for beta versions whose source
    /// is `tag` or `default-rule`. Alpha versions get only what is stated, as upstream's generator
    /// no longer derives them; GA versions have no entries.
    pub fn resolve(&self, gvk: &Gvk) -> Option<ResolvedLifecycle> {
        let e = self.entries.get(gvk)?;
        let mut out = ResolvedLifecycle {
            introduced: e.introduced,
            deprecated: e.deprecated,
            removed: e.removed,
            replacement: e.replacement.clone(),
        };
        let derivable = matches!(
            e.source,
            LifecycleSource::Tag | LifecycleSource::DefaultRule
        );
        if derivable && is_beta(&gvk.version) {
            out.deprecated = out.deprecated.or(out.introduced.map(plus3));
            out.removed = out.removed.or(out.deprecated.map(plus3));
        }
        Some(out)
    }
}

fn plus3((major, minor): Release) -> Release {
    (major, minor.saturating_add(3))
}

/// `v1beta1`, `v2beta3`: a version whose qualifier is beta.
fn is_beta(version: &str) -> bool {
    version
        .trim_start_matches('v')
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .starts_with("beta")
}

/// `"1.22"` → `(1, 22)`.
pub(crate) fn parse_release(s: &str) -> Option<Release> {
    let (major, minor) = s.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
- {group: extensions, version: v1beta1, kind: Ingress, introduced: "1.1", deprecated: "1.14", removed: "1.22",
   replacement: {group: networking.k8s.io, version: v1, kind: Ingress}, source: tag}
- {group: a.k8s.io, version: v1beta1, kind: Derived, introduced: "1.20", source: default-rule}
- {group: a.k8s.io, version: v1beta2, kind: Partial, introduced: "1.20", deprecated: "1.25", source: tag}
- {group: a.k8s.io, version: v1alpha1, kind: Alpha, introduced: "1.20", source: default-rule}
- {group: a.k8s.io, version: v1beta1, kind: Guide, removed: "1.16", source: migration-guide}
"#;

    fn resolved(l: &Lifecycles, v: &str, k: &str, g: &str) -> Option<ResolvedLifecycle> {
        l.resolve(&Gvk::new(g, v, k))
    }

    #[test]
    fn default_rule_fills_beta_gaps_only() {
        let l = Lifecycles::from_yaml_str(Path::new("l.yaml"), TEXT).expect("parses");
        let cases = [
            (
                "extensions",
                "v1beta1",
                "Ingress",
                Some((1, 14)),
                Some((1, 22)),
            ),
            (
                "a.k8s.io",
                "v1beta1",
                "Derived",
                Some((1, 23)),
                Some((1, 26)),
            ),
            (
                "a.k8s.io",
                "v1beta2",
                "Partial",
                Some((1, 25)),
                Some((1, 28)),
            ),
            ("a.k8s.io", "v1alpha1", "Alpha", None, None),
            ("a.k8s.io", "v1beta1", "Guide", None, Some((1, 16))),
        ];
        for (g, v, k, deprecated, removed) in cases {
            let r = resolved(&l, v, k, g).expect(k);
            assert_eq!((r.deprecated, r.removed), (deprecated, removed), "{k}");
        }
        let ingress = resolved(&l, "v1beta1", "Ingress", "extensions").expect("ingress");
        assert_eq!(
            ingress.replacement,
            Some(Gvk::new("networking.k8s.io", "v1", "Ingress"))
        );
        assert!(resolved(&l, "v1", "Ingress", "extensions").is_none());
    }

    #[test]
    fn bad_entries_name_the_path() {
        let cases = [
            (
                "- {group: a, version: v1, kind: K, introduced: \"x\", source: tag}",
                "#/0/introduced",
            ),
            (
                "- {group: a, version: v1, kind: K, source: maybe}",
                "#/0/source",
            ),
            ("- {group: a, kind: K, source: tag}", "#/0/version"),
            ("{}", "#"),
        ];
        for (text, pointer) in cases {
            let err = Lifecycles::from_yaml_str(Path::new("l.yaml"), text).expect_err(text);
            assert!(err.to_string().contains(pointer), "{err}");
        }
    }

    #[test]
    fn beta_detection() {
        for (v, beta) in [
            ("v1beta1", true),
            ("v2beta3", true),
            ("v1alpha1", false),
            ("v1", false),
        ] {
            assert_eq!(is_beta(v), beta, "{v}");
        }
    }
}
