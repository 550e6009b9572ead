//! Regular expressions: the standard library's `matches` and Kubernetes' `find` and `findAll`,
//! over one process-wide cache of compiled patterns.
//!
//! Rules almost always give their pattern as a literal, which cel-go compiles once with the
//! program; the crate's own `matches` compiled it on every call, which made a rule with
//! `matches` cost more than the rest of a create. Its feature is off and `matches` is here.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/regex.go`, cel-go's `matches`.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::{Env, ExecutionError, Value};

use super::{string_arg, value_overload};
use crate::cel::cost::charge_match;

pub(super) fn register(env: &mut Env) {
    let _ = env.add_overload(
        "matches",
        "matches",
        vec![STRING_TYPE, STRING_TYPE],
        value_overload!(matches),
    );
    let _ = env.add_member_overload(
        "matches",
        "matches_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        value_overload!(matches),
    );
    let _ = env.add_member_overload(
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        value_overload!(find),
    );
    let _ = env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        value_overload!(find_all),
    );
    let _ = env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        value_overload!(find_all),
    );
}

fn compiled(
    function: &str,
    args: &[Value],
) -> Result<(String, Arc<::regex::Regex>), ExecutionError> {
    let text = string_arg(function, args, 0)?;
    let pattern = string_arg(function, args, 1)?;
    charge_match(text, pattern.chars().count() as u64)?;
    let re = cached(pattern).map_err(|e| {
        ExecutionError::function_error(function, format!("'{pattern}' not a valid regex:\n{e}"))
    })?;
    Ok((text.to_owned(), re))
}

/// How many compiled patterns the cache keeps; past it, it starts over (a process serving
/// more distinct patterns than this compiles some again, and memory stays bounded).
const CACHED_PATTERNS: usize = 1024;

/// Compiled patterns, shared rather than cloned: a cloned `Regex` starts a pool of match
/// caches of its own, which each call would then build again.
static PATTERNS: LazyLock<Mutex<HashMap<String, Arc<::regex::Regex>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// `pattern` compiled, from the cache when it was compiled before.
fn cached(pattern: &str) -> Result<Arc<::regex::Regex>, ::regex::Error> {
    if let Some(re) = PATTERNS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(pattern)
    {
        return Ok(re.clone());
    }
    let re = Arc::new(::regex::Regex::new(pattern)?);
    let mut patterns = PATTERNS.lock().unwrap_or_else(PoisonError::into_inner);
    if patterns.len() >= CACHED_PATTERNS {
        patterns.clear();
    }
    patterns.insert(pattern.to_owned(), re.clone());
    Ok(re)
}

/// Whether the pattern matches anywhere in the string (RE2's semantics: unanchored).
fn matches(args: &[Value]) -> Result<Value, ExecutionError> {
    let (text, re) = compiled("matches", args)?;
    Ok(Value::Bool(re.is_match(&text)))
}

/// The first match of the pattern, or `""`.
fn find(args: &[Value]) -> Result<Value, ExecutionError> {
    let (text, re) = compiled("find", args)?;
    let found = re
        .find(&text)
        .map(|m| m.as_str().to_owned())
        .unwrap_or_default();
    Ok(Value::String(Arc::new(found)))
}

/// Every match (at most `n` when `n` is not negative).
fn find_all(args: &[Value]) -> Result<Value, ExecutionError> {
    let (text, re) = compiled("findAll", args)?;
    let limit = match args.get(2) {
        Some(Value::Int(n)) if *n >= 0 => *n as usize,
        _ => usize::MAX,
    };
    let found = re
        .find_iter(&text)
        .take(limit)
        .map(|m| Value::String(Arc::new(m.as_str().to_owned())))
        .collect();
    Ok(Value::List(Arc::new(found)))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::assert_all;

    // Upstream: k8s.io/apiserver/pkg/cel/library/library_test.go (regex cases).
    #[test]
    fn regex_library() {
        assert_all(&[
            ("'abc 123'.find('[0-9]+') == '123'", true),
            ("'abc'.find('[0-9]+') == ''", true),
            ("'123 abc 456'.findAll('[0-9]+') == ['123', '456']", true),
            ("'123 abc 456'.findAll('[0-9]+', 1) == ['123']", true),
            ("'1.2.3'.matches('^[0-9.]+$')", true),
            // Unanchored, as RE2's; the global form too.
            ("'abc 123'.matches('[0-9]')", true),
            ("matches('abc', '^b')", false),
            // The second use of a pattern comes from the cache and answers alike.
            (
                "'abc 123'.matches('[0-9]') && !'abc'.matches('[0-9]')",
                true,
            ),
        ]);
    }

    #[test]
    fn an_invalid_pattern_is_an_evaluation_error() {
        let error = super::super::test_support::eval("'a'.matches('[')").unwrap_err();
        assert!(error.contains("'[' not a valid regex"), "{error}");
    }
}
