//! Printer columns: what `kubectl get` shows of an object, answered by the server as a `Table`.
//!
//! A column's cell is either the value at a JSON path, unchanged (a [`Cell::Path`], as
//! CustomResourceDefinitions' `additionalPrinterColumns` give it), or the text a named [`Rule`]
//! computes from the object ([`Cell::Rule`]), as kube-apiserver's printers compute the cells of
//! the built-ins (`pkg/printers/internalversion/printers.go`): `1/3` of a Deployment's READY,
//! `80/TCP` of a Service's PORT(S), `5m` of an AGE. The built-ins' columns are data
//! (`specs/printers/kubernetes.yaml`), baked by the generator into each kind's
//! [`ResourceInfo`](crate::ResourceInfo); each rule is one function ([`rule`], the formats
//! rules share in [`format`](mod@format), and the rules of one kind's cells in `kinds`, by area: `pod`,
//! `workloads`, `autoscaling`, `service`, `networking`, `node`, `storage`, `rbac`, `events`,
//! `admission`, `cluster`).

use std::borrow::Cow;

use jiff::Timestamp;
use serde_json::Value;

use crate::KubeVersion;

pub mod format;
mod kinds;
pub mod rule;

pub use rule::Rule;

/// How a column's cell is computed from an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// The value at a simple JSON path (`.spec.replicas`), unchanged; `null` when absent.
    Path(Cow<'static, str>),
    /// The value a rule computes from the object, reading the paths it is given.
    Rule(Rule, &'static [&'static str]),
}

impl Cell {
    /// A rule's cell, for a kind's static description: when `rule` does not read as many
    /// paths as given ([`Rule::takes`]), evaluating the constant panics with `mistake`, so a
    /// derive's wrong column is a compile error where the column is written.
    pub const fn rule(rule: Rule, paths: &'static [&'static str], mistake: &'static str) -> Self {
        if !rule.takes(paths.len()) {
            panic!("{}", mistake);
        }
        Self::Rule(rule, paths)
    }

    /// The cell of `object`, at time `now` (ages are relative to it).
    pub fn value(&self, object: &Value, now: Timestamp) -> Value {
        match self {
            Self::Path(path) => format::at(object, path).cloned().unwrap_or(Value::Null),
            Self::Rule(rule, paths) => rule.apply(object, paths, now),
        }
    }

    /// The path of a [`Cell::Path`].
    pub fn json_path(&self) -> Option<&str> {
        match self {
            Self::Path(path) => Some(path),
            Self::Rule(..) => None,
        }
    }
}

/// The releases a column is shown in: from `since` (inclusive) until `until` (exclusive), each
/// unbounded when absent. Upstream's printers changed over releases; a server answers with the
/// columns of the release it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Releases {
    /// The first release that shows the column.
    pub since: Option<KubeVersion>,
    /// The first release that no longer shows it.
    pub until: Option<KubeVersion>,
}

impl Releases {
    /// Every release.
    pub const ALL: Self = Self {
        since: None,
        until: None,
    };

    /// The releases from `since` until `until`, each a `(major, minor)` pair where `(0, 0)`
    /// leaves that end unbounded: the derive's compact form.
    #[doc(hidden)]
    pub const fn between(since: (u16, u16), until: (u16, u16)) -> Self {
        const fn bound((major, minor): (u16, u16)) -> Option<KubeVersion> {
            if major == 0 && minor == 0 {
                None
            } else {
                Some(KubeVersion::new(major, minor))
            }
        }
        Self {
            since: bound(since),
            until: bound(until),
        }
    }

    /// Whether release `at` shows the column.
    pub fn contains(&self, at: KubeVersion) -> bool {
        self.since.is_none_or(|since| since <= at) && self.until.is_none_or(|until| at < until)
    }
}
