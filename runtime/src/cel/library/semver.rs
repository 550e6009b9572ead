//! Kubernetes' semver library: `isSemver` and `semver` (each with an optional `normalize`), and
//! on versions `major`, `minor`, `patch`, `isGreaterThan`, `isLessThan`, `compareTo` and `==`.
//!
//! Versions parse as upstream's `github.com/blang/semver/v4` `Parse` does, with its error
//! messages, and compare as it does: by precedence, build metadata ignored. Normalizing drops a
//! leading `v`, leading zeros, and fills a missing minor or patch with 0.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/semverlib.go`, `k8s.io/apiserver/pkg/cel/semver.go`.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{BOOL_TYPE, STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value};

use super::{no_overload, traversed_arg, value_overload};

/// The CEL type name of a version.
const TYPE_NAME: &str = "kubernetes.Semver";

/// A semantic version, as `blang/semver` holds one but for its build metadata, which is
/// checked when parsed and takes no part in comparisons (no function reads it).
#[derive(Debug, Clone)]
struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Identifier>,
}

/// One dot-separated part of a prerelease.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Identifier {
    Numeric(u64),
    Alphanumeric(String),
}

impl Semver {
    /// blang's `Version.Compare`: major, minor, patch, then a version without a prerelease
    /// above one with; prereleases part by part, numbers below words, a longer one above its
    /// prefix.
    fn precedence(&self, other: &Semver) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => {
                    for (a, b) in self.pre.iter().zip(&other.pre) {
                        let order = match (a, b) {
                            (Identifier::Numeric(a), Identifier::Numeric(b)) => a.cmp(b),
                            (Identifier::Numeric(_), Identifier::Alphanumeric(_)) => Ordering::Less,
                            (Identifier::Alphanumeric(_), Identifier::Numeric(_)) => {
                                Ordering::Greater
                            }
                            (Identifier::Alphanumeric(a), Identifier::Alphanumeric(b)) => a.cmp(b),
                        };
                        if order.is_ne() {
                            return order;
                        }
                    }
                    self.pre.len().cmp(&other.pre.len())
                }
            })
    }
}

impl PartialEq for Semver {
    /// Upstream's `Semver.Equal`: equal precedence, whatever the build metadata.
    fn eq(&self, other: &Self) -> bool {
        self.precedence(other).is_eq()
    }
}

impl Eq for Semver {}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

const DIGITS: &str = "0123456789";
/// What prerelease and build identifiers may hold.
const ALPHANUMERIC: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789";

fn contains_only(text: &str, set: &str) -> bool {
    text.chars().all(|c| set.contains(c))
}

fn has_leading_zeroes(text: &str) -> bool {
    text.len() > 1 && text.starts_with('0')
}

/// Go's `strconv.ParseUint(text, 10, 64)` of digits, with its error text.
fn parse_uint(text: &str) -> Result<u64, String> {
    let quoted = format!("{text:?}");
    match text.parse::<u64>() {
        Ok(n) if !text.is_empty() => Ok(n),
        _ if text.is_empty() => Err(format!(
            "strconv.ParseUint: parsing {quoted}: invalid syntax"
        )),
        _ => Err(format!(
            "strconv.ParseUint: parsing {quoted}: value out of range"
        )),
    }
}

/// A major, minor or patch number.
fn number(text: &str, which: &str) -> Result<u64, String> {
    if !contains_only(text, DIGITS) {
        return Err(format!(
            "Invalid character(s) found in {which} number {text:?}"
        ));
    }
    if has_leading_zeroes(text) {
        let mut which = which.to_owned();
        which[..1].make_ascii_uppercase();
        return Err(format!(
            "{which} number must not contain leading zeroes {text:?}"
        ));
    }
    parse_uint(text)
}

/// blang's `NewPRVersion`.
fn prerelease(text: &str) -> Result<Identifier, String> {
    if text.is_empty() {
        return Err("Prerelease is empty".to_owned());
    }
    if contains_only(text, DIGITS) {
        if has_leading_zeroes(text) {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {text:?}"
            ));
        }
        return parse_uint(text).map(Identifier::Numeric);
    }
    if contains_only(text, ALPHANUMERIC) {
        return Ok(Identifier::Alphanumeric(text.to_owned()));
    }
    Err(format!("Invalid character(s) found in prerelease {text:?}"))
}

/// blang's `semver.Parse`, strict: `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`.
fn parse(text: &str) -> Result<Semver, String> {
    if text.is_empty() {
        return Err("Version string empty".to_owned());
    }
    let parts: Vec<&str> = text.splitn(3, '.').collect();
    let [major, minor, rest] = parts[..] else {
        return Err("No Major.Minor.Patch elements found".to_owned());
    };
    let major = number(major, "major")?;
    let minor = number(minor, "minor")?;
    let (rest, build) = match rest.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (rest, None),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((patch, pre)) => (patch, Some(pre)),
        None => (rest, None),
    };
    let patch = number(patch, "patch")?;
    let pre = match pre {
        Some(pre) => pre.split('.').map(prerelease).collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    for part in build.map(|b| b.split('.')).into_iter().flatten() {
        if part.is_empty() {
            return Err("Build meta data is empty".to_owned());
        }
        if !contains_only(part, ALPHANUMERIC) {
            return Err(format!(
                "Invalid character(s) found in build meta data {part:?}"
            ));
        }
    }
    Ok(Semver {
        major,
        minor,
        patch,
        pre,
    })
}

/// Upstream's `normalizeAndParse`: without a leading `v`, leading zeros dropped from each of the
/// first three parts, a missing minor or patch filled with 0, then [`parse`].
fn normalize_and_parse(text: &str) -> Result<Semver, String> {
    let text = text.strip_prefix('v').unwrap_or(text);
    let mut parts: Vec<String> = text
        .splitn(3, '.')
        .map(|part| {
            if part.len() <= 1 {
                return part.to_owned();
            }
            let trimmed = part.trim_start_matches('0');
            match trimmed.chars().next() {
                Some(c) if c.is_ascii_digit() => trimmed.to_owned(),
                _ => format!("0{trimmed}"),
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|last| last.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_owned());
        }
        parts.resize(3, "0".to_owned());
    }
    parse(&parts.join("."))
}

fn wrap(version: Semver) -> Value {
    Value::Opaque(Arc::new(version))
}

fn version_at<'a>(
    function: &str,
    args: &'a [Value],
    i: usize,
) -> Result<&'a Semver, ExecutionError> {
    match args.get(i) {
        Some(Value::Opaque(o)) => o
            .downcast_ref::<Semver>()
            .ok_or_else(|| no_overload(function)),
        _ => Err(no_overload(function)),
    }
}

/// The text at argument 0, charged as a traversal, parsed as the function's `normalize`
/// argument (argument 1, false when absent) says.
fn parsed(function: &str, args: &[Value]) -> Result<Result<Semver, String>, ExecutionError> {
    let text = traversed_arg(function, args, 0, 1)?;
    let normalize = match args.get(1) {
        None => false,
        Some(Value::Bool(normalize)) => *normalize,
        Some(_) => return Err(no_overload(function)),
    };
    Ok(match normalize {
        true => normalize_and_parse(text),
        false => parse(text),
    })
}

/// Registers the library. The comparisons are typed on versions, so they must be registered
/// before the quantity library's, which take any value.
pub(super) fn register(env: &mut Env) {
    let texts = |normalized: bool| match normalized {
        true => vec![STRING_TYPE, BOOL_TYPE],
        false => vec![STRING_TYPE],
    };
    for (normalized, suffix) in [(false, "string"), (true, "string_bool")] {
        let _ = env.add_overload(
            "isSemver",
            &format!("is_semver_{suffix}"),
            texts(normalized),
            value_overload!(is_semver),
        );
        let _ = env.add_overload(
            "semver",
            &format!("{suffix}_to_semver"),
            texts(normalized),
            value_overload!(to_semver),
        );
    }
    let version = || Type::new_opaque_type(TYPE_NAME);
    let members: [(&str, usize, cel::common::functions::Function); 6] = [
        ("major", 0, value_overload!(major)),
        ("minor", 0, value_overload!(minor)),
        ("patch", 0, value_overload!(patch)),
        ("isGreaterThan", 1, value_overload!(is_greater_than)),
        ("isLessThan", 1, value_overload!(is_less_than)),
        ("compareTo", 1, value_overload!(compare_to)),
    ];
    for (name, arity, f) in members {
        let _ = env.add_member_overload(
            name,
            &format!("semver_{name}"),
            version(),
            (0..arity).map(|_| version()).collect(),
            f,
        );
    }
}

fn is_semver(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(parsed("isSemver", args)?.is_ok()))
}

fn to_semver(args: &[Value]) -> Result<Value, ExecutionError> {
    parsed("semver", args)?
        .map(wrap)
        .map_err(|message| ExecutionError::function_error("semver", message))
}

/// A number as CEL's int, as upstream converts it (`types.Int(v.Major)`, wrapping past
/// `i64::MAX`).
fn int(n: u64) -> Value {
    Value::Int(n as i64)
}

fn major(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(int(version_at("major", args, 0)?.major))
}

fn minor(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(int(version_at("minor", args, 0)?.minor))
}

fn patch(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(int(version_at("patch", args, 0)?.patch))
}

fn ordering(function: &str, args: &[Value]) -> Result<Ordering, ExecutionError> {
    Ok(version_at(function, args, 0)?.precedence(version_at(function, args, 1)?))
}

fn is_greater_than(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(ordering("isGreaterThan", args)?.is_gt()))
}

fn is_less_than(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(ordering("isLessThan", args)?.is_lt()))
}

fn compare_to(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(ordering("compareTo", args)? as i64))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_all, eval};
    use super::*;

    // Upstream: k8s.io/apiserver/pkg/cel/library/semver_test.go (TestSemver), and the examples
    // of semverlib.go's documentation.
    #[test]
    fn semver_library() {
        assert_all(&[
            ("isSemver('1.0.0')", true),
            ("isSemver('1.0.0-beta.1+build.5')", true),
            ("isSemver('hello')", false),
            ("isSemver('1.0')", false),
            ("isSemver('v1.0.0')", false),
            ("isSemver('01.0.0')", false),
            ("isSemver('v1.0', true)", true),
            ("isSemver('1.0', true)", true),
            ("isSemver('01.01.01', true)", true),
            ("isSemver('1-beta', true)", false),
            ("semver('1.0', true) == semver('1.0.0')", true),
            ("semver('01.01.01', true) == semver('1.1.1')", true),
            ("semver('1.2.3').major() == 1", true),
            ("semver('1.2.3').minor() == 2", true),
            ("semver('1.2.3').patch() == 3", true),
            ("semver('1.2.3').compareTo(semver('1.2.3')) == 0", true),
            ("semver('1.2.3').compareTo(semver('2.0.0')) == -1", true),
            ("semver('1.2.3').compareTo(semver('0.1.2')) == 1", true),
            ("semver('1.2.3').isGreaterThan(semver('1.2.2'))", true),
            ("semver('1.2.3').isLessThan(semver('1.2.4'))", true),
            ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", true),
            (
                "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))",
                true,
            ),
            (
                "semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))",
                true,
            ),
            ("semver('1.0.0-2').isLessThan(semver('1.0.0-11'))", true),
            // Build metadata takes no part in precedence, equality included.
            ("semver('1.0.0+a') == semver('1.0.0+b')", true),
            ("semver('1.0.0') == semver('1.0.1')", false),
            // Quantities keep their own comparisons beside versions'.
            ("quantity('1Ki').compareTo(quantity('1024')) == 0", true),
        ]);
    }

    // blang/semver v4 `Parse`'s errors, as `semver()` reports them.
    #[test]
    fn invalid_versions_fail_with_blangs_messages() {
        for (text, message) in [
            ("", "Version string empty"),
            ("1.0", "No Major.Minor.Patch elements found"),
            ("a.0.0", r#"Invalid character(s) found in major number "a""#),
            (
                "01.0.0",
                r#"Major number must not contain leading zeroes "01""#,
            ),
            (
                "1.01.0",
                r#"Minor number must not contain leading zeroes "01""#,
            ),
            (
                "1.0.01",
                r#"Patch number must not contain leading zeroes "01""#,
            ),
            ("1..0", r#"strconv.ParseUint: parsing "": invalid syntax"#),
            ("1.0.0-", "Prerelease is empty"),
            (
                "1.0.0-01",
                r#"Numeric PreRelease version must not contain leading zeroes "01""#,
            ),
            (
                "1.0.0-a_b",
                r#"Invalid character(s) found in prerelease "a_b""#,
            ),
            ("1.0.0+", "Build meta data is empty"),
            (
                "1.0.0+a_b",
                r#"Invalid character(s) found in build meta data "a_b""#,
            ),
            (
                "99999999999999999999.0.0",
                r#"strconv.ParseUint: parsing "99999999999999999999": value out of range"#,
            ),
        ] {
            assert_eq!(parse(text).err().as_deref(), Some(message), "{text:?}");
            // The evaluation's error comes formatted for debugging, its quotes escaped.
            let error = eval(&format!("semver({text:?})")).unwrap_err();
            let escaped = format!("{message:?}");
            let escaped = &escaped[1..escaped.len() - 1];
            assert!(error.contains(escaped), "{text:?}: {error}");
        }
        assert_eq!(
            normalize_and_parse("1.0-beta").err().as_deref(),
            Some("short version cannot contain PreRelease/Build meta data")
        );
        let kept = parse("1.2.3-rc.1+build.7").unwrap();
        assert_eq!((kept.major, kept.minor, kept.patch), (1, 2, 3));
        assert_eq!(
            kept.pre,
            [
                Identifier::Alphanumeric("rc".into()),
                Identifier::Numeric(1)
            ]
        );
    }
}
