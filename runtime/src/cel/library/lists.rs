//! Kubernetes' lists library: `isSorted`, `sum`, `min`, `max`, `indexOf` and `lastIndexOf` on
//! lists of comparable values; and cel-go's optional library's `first` and `last`, which the
//! `cel` crate lacks.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/lists.go`, cel-go `cel/library.go`
//! (`optionalLib`: `listOptionalFirst`, `listOptionalLast`).

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{CelInt, CelOptional, DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::{Env, ExecutionError, Value};

use super::{no_overload, value_overload};
use crate::cel::cost::charge;

pub(super) fn register(env: &mut Env) {
    let list = || LIST_TYPE;
    let _ = env.add_member_overload(
        "isSorted",
        "list_is_sorted",
        list(),
        vec![],
        value_overload!(is_sorted),
    );
    let _ = env.add_member_overload("sum", "list_sum", list(), vec![], value_overload!(sum));
    let _ = env.add_member_overload("min", "list_min", list(), vec![], value_overload!(min));
    let _ = env.add_member_overload("max", "list_max", list(), vec![], value_overload!(max));
    let _ = env.add_member_overload(
        "indexOf",
        "list_index_of",
        list(),
        vec![DYN_TYPE],
        value_overload!(index_of),
    );
    let _ = env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        list(),
        vec![DYN_TYPE],
        value_overload!(last_index_of),
    );
    let _ = env.add_member_overload("first", "list_first", list(), vec![], first);
    let _ = env.add_member_overload("last", "list_last", list(), vec![], last);
}

/// `first()`: the list's first element, or `optional.none()` when it is empty.
fn first<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    element("first", args, |_| 0)
}

/// `last()`: the list's last element, or `optional.none()` when it is empty.
fn last<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    element("last", args, |size| size - 1)
}

/// The element of a list at the index `at` gives of its size, as an optional: read by index,
/// so the call costs the same at any size.
fn element<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    at: fn(i64) -> i64,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list] = <[CowVal<'b, 'v>; 1]>::try_from(args).map_err(|_| no_overload(function))?;
    let list = list.as_ref();
    let size = *list
        .as_sizer()
        .ok_or_else(|| no_overload(function))?
        .size()
        .inner();
    if size == 0 {
        return Ok(CowVal::owned(CelOptional::none()));
    }
    let indexer = list.as_indexer().ok_or_else(|| no_overload(function))?;
    let item = indexer.get(&CelInt::from(at(size)))?;
    Ok(CowVal::owned(CelOptional::of(
        item.as_ref().clone_as_boxed(),
    )))
}

fn items<'a>(function: &str, args: &'a [Value]) -> Result<&'a Arc<Vec<Value>>, ExecutionError> {
    match args.first() {
        Some(Value::List(items)) => {
            charge(items.len() as u64)?;
            Ok(items)
        }
        _ => Err(no_overload(function)),
    }
}

fn compare(function: &str, a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    let ordering = match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.partial_cmp(y),
        (Value::UInt(x), Value::UInt(y)) => x.partial_cmp(y),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::String(x), Value::String(y)) => x.partial_cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.partial_cmp(y),
        (Value::Bytes(x), Value::Bytes(y)) => x.partial_cmp(y),
        (Value::Duration(x), Value::Duration(y)) => x.partial_cmp(y),
        (Value::Timestamp(x), Value::Timestamp(y)) => x.partial_cmp(y),
        _ => None,
    };
    ordering.ok_or_else(|| no_overload(function))
}

fn is_sorted(args: &[Value]) -> Result<Value, ExecutionError> {
    let items = items("isSorted", args)?;
    for pair in items.windows(2) {
        if compare("isSorted", &pair[0], &pair[1])? == Ordering::Greater {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

/// `sum` of ints, uints, doubles or durations; `0` of the list's type when empty (an empty
/// list sums to int 0).
fn sum(args: &[Value]) -> Result<Value, ExecutionError> {
    let items = items("sum", args)?;
    let overflow = || ExecutionError::function_error("sum", "integer overflow");
    let mut total = match items.first() {
        None | Some(Value::Int(_)) => Value::Int(0),
        Some(Value::UInt(_)) => Value::UInt(0),
        Some(Value::Float(_)) => Value::Float(0.0),
        Some(Value::Duration(_)) => Value::Duration(chrono::Duration::zero()),
        Some(_) => return Err(no_overload("sum")),
    };
    for item in items.iter() {
        total = match (total, item) {
            (Value::Int(t), Value::Int(x)) => Value::Int(t.checked_add(*x).ok_or_else(overflow)?),
            (Value::UInt(t), Value::UInt(x)) => {
                Value::UInt(t.checked_add(*x).ok_or_else(overflow)?)
            }
            (Value::Float(t), Value::Float(x)) => Value::Float(t + x),
            (Value::Duration(t), Value::Duration(x)) => {
                Value::Duration(t.checked_add(x).ok_or_else(overflow)?)
            }
            _ => return Err(no_overload("sum")),
        };
    }
    Ok(total)
}

fn extreme(function: &str, args: &[Value], keep: Ordering) -> Result<Value, ExecutionError> {
    let items = items(function, args)?;
    let mut best = items.first().cloned().ok_or_else(|| {
        ExecutionError::function_error(function, format!("{function} called on empty list"))
    })?;
    for item in items.iter().skip(1) {
        if compare(function, item, &best)? == keep {
            best = item.clone();
        }
    }
    Ok(best)
}

fn min(args: &[Value]) -> Result<Value, ExecutionError> {
    extreme("min", args, Ordering::Less)
}

fn max(args: &[Value]) -> Result<Value, ExecutionError> {
    extreme("max", args, Ordering::Greater)
}

/// The index of the first (or last) item equal to the argument, or -1.
fn position(function: &str, args: &[Value], last: bool) -> Result<Value, ExecutionError> {
    let items = items(function, args)?;
    let needle = args.get(1).ok_or_else(|| no_overload(function))?;
    let found = if last {
        items.iter().rposition(|x| x == needle)
    } else {
        items.iter().position(|x| x == needle)
    };
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn index_of(args: &[Value]) -> Result<Value, ExecutionError> {
    position("indexOf", args, false)
}

fn last_index_of(args: &[Value]) -> Result<Value, ExecutionError> {
    position("lastIndexOf", args, true)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_all, eval};

    // Upstream: k8s.io/apiserver/pkg/cel/library/lists_test.go (TestLists).
    #[test]
    fn lists_library() {
        assert_all(&[
            ("[1, 2, 3].isSorted()", true),
            ("[3, 1].isSorted()", false),
            ("['a', 'b'].isSorted()", true),
            ("[].isSorted()", true),
            ("[1, 2, 3].sum() == 6", true),
            ("[1.5, 2.5].sum() == 4.0", true),
            ("[].sum() == 0", true),
            (
                "[duration('1s'), duration('2s')].sum() == duration('3s')",
                true,
            ),
            ("[3, 1, 2].min() == 1", true),
            ("[3, 1, 2].max() == 3", true),
            ("['b', 'a'].min() == 'a'", true),
            ("[1, 2, 1].indexOf(1) == 0", true),
            ("[1, 2, 1].lastIndexOf(1) == 2", true),
            ("[1, 2].indexOf(5) == -1", true),
            // cel-go's optional library (cel-go cel/optional_test.go).
            ("[1, 2, 3].first() == optional.of(1)", true),
            ("[1, 2, 3].last() == optional.of(3)", true),
            ("[].first() == optional.none()", true),
            ("[].last().hasValue()", false),
            ("[[1], [2, 3]].last().value()[1] == 3", true),
        ]);
        assert!(
            eval("[].min()")
                .unwrap_err()
                .contains("min called on empty list")
        );
    }
}
