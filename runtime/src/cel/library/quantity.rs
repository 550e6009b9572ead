//! Kubernetes' quantity library: `isQuantity`, `quantity`, and on quantities `isInteger`,
//! `asInteger`, `asApproximateFloat`, `sign`, `add`, `sub`, `isGreaterThan`, `isLessThan`,
//! `compareTo`.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/quantity.go`, `k8s.io/apiserver/pkg/cel/quantity.go`.

use std::sync::Arc;

use cel::common::types::{DYN_TYPE, STRING_TYPE};
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value};

use super::{no_overload, traversed_arg, value_overload};
use crate::quantity::{Format, Quantity};

/// A quantity as a CEL value (`kubernetes.Quantity`).
#[derive(Debug, PartialEq, Eq)]
struct CelQuantity(Quantity);

impl Opaque for CelQuantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

fn wrap(q: Quantity) -> Value {
    Value::Opaque(Arc::new(CelQuantity(q)))
}

fn quantity_at(function: &str, args: &[Value], i: usize) -> Result<Quantity, ExecutionError> {
    match args.get(i) {
        Some(Value::Opaque(o)) => o
            .downcast_ref::<CelQuantity>()
            .map(|q| q.0)
            .ok_or_else(|| no_overload(function)),
        Some(Value::Int(n)) if i > 0 => Ok(Quantity::from_i64(*n, Format::DecimalSi)),
        _ => Err(no_overload(function)),
    }
}

pub(super) fn register(env: &mut Env) {
    let _ = env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        value_overload!(is_quantity),
    );
    let _ = env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        value_overload!(parse),
    );
    let members: [(&str, usize, cel::common::functions::Function); 9] = [
        ("isInteger", 0, value_overload!(is_integer)),
        ("asInteger", 0, value_overload!(as_integer)),
        ("asApproximateFloat", 0, value_overload!(as_float)),
        ("sign", 0, value_overload!(sign)),
        ("add", 1, value_overload!(add)),
        ("sub", 1, value_overload!(sub)),
        ("isGreaterThan", 1, value_overload!(is_greater_than)),
        ("isLessThan", 1, value_overload!(is_less_than)),
        ("compareTo", 1, value_overload!(compare_to)),
    ];
    for (name, arity, f) in members {
        let _ = env.add_member_overload(
            name,
            &format!("quantity_{name}"),
            DYN_TYPE,
            (0..arity).map(|_| DYN_TYPE).collect(),
            f,
        );
    }
}

fn is_quantity(args: &[Value]) -> Result<Value, ExecutionError> {
    let text = traversed_arg("isQuantity", args, 0, 1)?;
    Ok(Value::Bool(text.parse::<Quantity>().is_ok()))
}

fn parse(args: &[Value]) -> Result<Value, ExecutionError> {
    let text = traversed_arg("quantity", args, 0, 1)?;
    text.parse::<Quantity>()
        .map(wrap)
        .map_err(|e| ExecutionError::function_error("quantity", e.to_string()))
}

fn is_integer(args: &[Value]) -> Result<Value, ExecutionError> {
    let q = quantity_at("isInteger", args, 0)?;
    Ok(Value::Bool(q.as_i64().is_some()))
}

fn as_integer(args: &[Value]) -> Result<Value, ExecutionError> {
    let q = quantity_at("asInteger", args, 0)?;
    q.as_i64().map(Value::Int).ok_or_else(|| {
        ExecutionError::function_error(
            "asInteger",
            "cannot convert value to integer: value does not fit in an int64",
        )
    })
}

fn as_float(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Float(
        quantity_at("asApproximateFloat", args, 0)?.to_f64(),
    ))
}

fn sign(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(i64::from(
        quantity_at("sign", args, 0)?.signum(),
    )))
}

fn add(args: &[Value]) -> Result<Value, ExecutionError> {
    let (a, b) = (quantity_at("add", args, 0)?, quantity_at("add", args, 1)?);
    a.checked_add(b)
        .map(wrap)
        .ok_or_else(|| ExecutionError::function_error("add", "integer overflow"))
}

fn sub(args: &[Value]) -> Result<Value, ExecutionError> {
    let (a, b) = (quantity_at("sub", args, 0)?, quantity_at("sub", args, 1)?);
    a.checked_sub(b)
        .map(wrap)
        .ok_or_else(|| ExecutionError::function_error("sub", "integer overflow"))
}

fn ordering(function: &str, args: &[Value]) -> Result<std::cmp::Ordering, ExecutionError> {
    match args.get(1) {
        Some(Value::Opaque(_)) => {}
        _ => return Err(no_overload(function)),
    }
    Ok(quantity_at(function, args, 0)?.cmp(&quantity_at(function, args, 1)?))
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
    use super::super::test_support::assert_all;

    // Upstream: k8s.io/apiserver/pkg/cel/library/quantity_test.go (TestQuantity).
    #[test]
    fn quantity_library() {
        assert_all(&[
            ("isQuantity('20')", true),
            ("isQuantity('200M')", true),
            ("isQuantity('20Mi')", true),
            ("isQuantity('foo')", false),
            ("quantity('50M').isInteger()", true),
            ("quantity('50m').isInteger()", false),
            ("quantity('50M').asInteger() == 50000000", true),
            ("quantity('50.5').asApproximateFloat() == 50.5", true),
            ("quantity('-50M').sign() == -1", true),
            ("quantity('0').sign() == 0", true),
            (
                "quantity('50M').add(quantity('20M')) == quantity('70M')",
                true,
            ),
            ("quantity('50M').add(20000000) == quantity('70M')", true),
            (
                "quantity('50M').sub(quantity('20M')) == quantity('30M')",
                true,
            ),
            ("quantity('50M').isGreaterThan(quantity('20M'))", true),
            ("quantity('20M').isLessThan(quantity('50M'))", true),
            ("quantity('1Ki').compareTo(quantity('1024')) == 0", true),
            ("quantity('200M').compareTo(quantity('0.2G')) == 0", true),
        ]);
    }
}
