//! cel-go's sets extension, part of Kubernetes' environment since 1.29: `sets.contains`,
//! `sets.equivalent` and `sets.intersects` on lists.
//!
//! Upstream: cel-go `ext/sets.go`; `k8s.io/apiserver/pkg/cel/environment/base.go` (`ext.Sets()`).

use cel::common::types::LIST_TYPE;
use cel::{Env, ExecutionError, Value};

use super::{no_overload, value_overload};
use crate::cel::cost::charge;

pub(super) fn register(env: &mut Env) {
    for (name, f) in [
        (
            "sets.contains",
            value_overload!(contains) as cel::common::functions::Function,
        ),
        ("sets.equivalent", value_overload!(equivalent)),
        ("sets.intersects", value_overload!(intersects)),
    ] {
        let _ = env.add_overload(
            name,
            &format!("{name}_list_list"),
            vec![LIST_TYPE, LIST_TYPE],
            f,
        );
    }
}

fn lists<'a>(
    function: &str,
    args: &'a [Value],
) -> Result<(&'a [Value], &'a [Value]), ExecutionError> {
    match (args.first(), args.get(1)) {
        (Some(Value::List(a)), Some(Value::List(b))) => {
            charge((a.len() as u64).saturating_mul(b.len() as u64))?;
            Ok((a, b))
        }
        _ => Err(no_overload(function)),
    }
}

/// Every element of the second list is in the first.
fn contains(args: &[Value]) -> Result<Value, ExecutionError> {
    let (a, b) = lists("sets.contains", args)?;
    Ok(Value::Bool(b.iter().all(|x| a.contains(x))))
}

fn equivalent(args: &[Value]) -> Result<Value, ExecutionError> {
    let (a, b) = lists("sets.equivalent", args)?;
    Ok(Value::Bool(
        b.iter().all(|x| a.contains(x)) && a.iter().all(|x| b.contains(x)),
    ))
}

fn intersects(args: &[Value]) -> Result<Value, ExecutionError> {
    let (a, b) = lists("sets.intersects", args)?;
    Ok(Value::Bool(b.iter().any(|x| a.contains(x))))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::assert_all;

    // Upstream: cel-go ext/sets_test.go.
    #[test]
    fn sets_extension() {
        assert_all(&[
            ("sets.contains([1, 2, 3], [2, 3])", true),
            ("sets.contains([1, 2], [3])", false),
            ("sets.contains([1], [])", true),
            ("sets.equivalent([1, 2], [2, 1, 1])", true),
            ("sets.equivalent([1, 2], [1])", false),
            ("sets.intersects([1, 2], [2, 5])", true),
            ("sets.intersects([1], [])", false),
        ]);
    }
}
