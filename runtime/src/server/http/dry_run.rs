//! The options every write carries besides its body: `dryRun` (run the whole write, answer
//! with what it would have stored, persist nothing) and `fieldValidation` (what unknown and
//! duplicate fields do), checked as upstream's option validation does. A value upstream does
//! not accept is a 422 `Invalid` on the options kind (`CreateOptions.meta.k8s.io "" is
//! invalid: dryRun: Unsupported value: ...`), before the body is looked at.
//!
//! Dry runs themselves are carried out where the writes happen (`object`, `list`, `patch`):
//! every check runs, the store is read (an existing name is still a 409), and the final
//! write is skipped.

use serde_json::Value;

use crate::meta::{CauseType, FieldValidation, StatusCause};

use crate::server::http::error::ApiError;
use crate::server::http::field_validation::Directive;

/// The one `dryRun` value upstream accepts.
const ALL: &str = "All";

/// The `fieldValidation` values upstream accepts, sorted as its message lists them.
const FIELD_VALIDATION_VALUES: &[&str] = &["", "Ignore", "Strict", "Warn"];

/// The API group of the option kinds named in a 422.
const META_GROUP: &str = "meta.k8s.io";

/// How a create, update or patch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WriteOptions {
    /// Everything but the final write.
    pub(crate) dry_run: bool,
    /// What unknown and duplicate fields do.
    pub(crate) validation: Directive,
}

/// The cause upstream gives for `dryRun` values other than `All`; the value is printed the
/// way Go prints a `[]string`.
fn dry_run_cause(values: &[String]) -> Option<StatusCause> {
    if values.iter().all(|v| v == ALL) {
        return None;
    }
    let listed: Vec<String> = values
        .iter()
        .map(|v| Value::from(v.as_str()).to_string())
        .collect();
    Some(StatusCause::new(
        CauseType::FieldValueNotSupported,
        "dryRun",
        format!(
            "Unsupported value: []string{{{}}}: supported values: {}",
            listed.join(", "),
            Value::from(ALL)
        ),
    ))
}

/// Checks the options of a create, update or patch; `kind` is the options kind a 422 names
/// (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
pub(crate) fn write_options(
    kind: &str,
    dry_run: &[String],
    field_validation: Option<&FieldValidation>,
) -> Result<WriteOptions, ApiError> {
    let mut causes: Vec<StatusCause> = dry_run_cause(dry_run).into_iter().collect();
    let validation = match field_validation.map(FieldValidation::as_str) {
        // Warn has been the default since 1.27.
        None | Some("" | "Warn") => Directive::Warn,
        Some("Ignore") => Directive::Ignore,
        Some("Strict") => Directive::Strict,
        Some(other) => {
            causes.push(StatusCause::not_supported(
                "fieldValidation",
                &Value::from(other),
                FIELD_VALIDATION_VALUES,
            ));
            Directive::Warn
        }
    };
    if !causes.is_empty() {
        return Err(ApiError::invalid(META_GROUP, kind, "", causes));
    }
    Ok(WriteOptions {
        dry_run: dry_run.iter().any(|v| v == ALL),
        validation,
    })
}

/// Checks the `dryRun` of a delete or deletecollection: whether it is a dry run, or a 422 on
/// `DeleteOptions`.
pub(crate) fn delete_dry_run(dry_run: &[String]) -> Result<bool, ApiError> {
    match dry_run_cause(dry_run) {
        Some(cause) => Err(ApiError::invalid(
            META_GROUP,
            "DeleteOptions",
            "",
            vec![cause],
        )),
        None => Ok(!dry_run.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| (*v).to_owned()).collect()
    }

    #[test]
    fn dry_run_values_follow_upstream() {
        let rows: &[(&[&str], Result<bool, &str>)] = &[
            (&[], Ok(false)),
            (&["All"], Ok(true)),
            (&["All", "All"], Ok(true)),
            (
                &["foo"],
                Err(
                    "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"foo\"}: supported values: \"All\"",
                ),
            ),
            (
                &["All", "x"],
                Err(
                    "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"All\", \"x\"}: supported values: \"All\"",
                ),
            ),
        ];
        for (values, want) in rows {
            let got = delete_dry_run(&strings(values));
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "{values:?}"),
                (Err(e), Err(message)) => {
                    assert_eq!(e.code().as_u16(), 422);
                    assert_eq!(e.into_status().message.as_deref(), Some(*message));
                }
                (got, want) => panic!("{values:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn field_validation_values_follow_upstream() {
        let rows = [
            (None, Some(Directive::Warn)),
            (Some(""), Some(Directive::Warn)),
            (Some("Warn"), Some(Directive::Warn)),
            (Some("Ignore"), Some(Directive::Ignore)),
            (Some("Strict"), Some(Directive::Strict)),
            (Some("strict"), None),
            (Some("bogus"), None),
        ];
        for (value, want) in rows {
            let fv = value.map(FieldValidation::from);
            let got = write_options("CreateOptions", &[], fv.as_ref());
            match (got, want) {
                (Ok(options), Some(want)) => {
                    assert_eq!(options.validation, want, "{value:?}");
                    assert!(!options.dry_run);
                }
                (Err(e), None) => {
                    assert_eq!(e.code().as_u16(), 422);
                    let message = e.into_status().message.unwrap_or_default();
                    assert_eq!(
                        message,
                        format!(
                            "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: {}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
                            Value::from(value.unwrap_or_default())
                        )
                    );
                }
                (got, want) => panic!("{value:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn both_bad_values_are_reported_together() {
        let fv = FieldValidation::from("nope");
        let e = write_options("PatchOptions", &strings(&["Some"]), Some(&fv)).unwrap_err();
        let status = e.into_status();
        let causes = status.details.map(|d| d.causes).unwrap_or_default();
        let fields: Vec<_> = causes.iter().filter_map(|c| c.field.as_deref()).collect();
        assert_eq!(fields, ["dryRun", "fieldValidation"]);
    }
}
