//! What the specs do not say about kinds and the project's data files add: the lifecycle of the
//! built-ins' prerelease versions (`specs/lifecycle/`), their printer columns
//! (`specs/printers/`), the fields they default (`specs/defaults/`) and what writes do to their
//! generation and status (`specs/strategies/`), what writes must satisfy (`specs/validation/`)
//! the field labels their `fieldSelector` accepts (`specs/field_selectors/`) and the resources
//! stored once across versions and groups (`specs/conversions/`). Emission reads
//! them parsed; the front ends load the files.

use super::conversions::Conversions;
use super::defaults::Defaults;
use super::field_selectors::FieldSelectors;
use super::lifecycle::Lifecycles;
use super::printers::Printers;
use super::strategies::Strategies;
use super::validations::Validations;

/// Data about kinds from files beside the specs; empty when none are given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KindFacts {
    /// Deprecation and removal releases by group, version and kind.
    pub lifecycles: Lifecycles,
    /// Printer columns by group and kind.
    pub printers: Printers,
    /// Defaults by type.
    pub defaults: Defaults,
    /// Write rules by group and kind.
    pub strategies: Strategies,
    /// Checks by type.
    pub validations: Validations,
    /// Field labels by group, version and kind.
    pub field_selectors: FieldSelectors,
    /// Resources stored once across versions and groups.
    pub conversions: Conversions,
}
