//! Kubernetes' regex library: `find` and `findAll` (`matches` is the standard library's).
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/regex.go`.

use std::sync::Arc;

use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::{Env, ExecutionError, Value};

use super::{string_arg, value_overload};
use crate::cel::cost::charge;

pub(super) fn register(env: &mut Env) {
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

fn compiled(function: &str, args: &[Value]) -> Result<(String, ::regex::Regex), ExecutionError> {
    let text = string_arg(function, args, 0)?;
    let pattern = string_arg(function, args, 1)?;
    charge((text.len() as u64).saturating_mul(pattern.len().max(1) as u64) / 10 + 1)?;
    let re = ::regex::Regex::new(pattern)
        .map_err(|e| ExecutionError::function_error(function, format!("{e}")))?;
    Ok((text.to_owned(), re))
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
        ]);
    }
}
