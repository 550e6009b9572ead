//! The runtime cost of an evaluation, counted in a per-thread meter: a program's nodes once, the
//! evaluated part of every comprehension iteration (its loop step is rewritten to pass its
//! operand through `@cost(operand, nodes)`, which cannot be written in CEL source), and what
//! the library functions charge for the sizes they work on. Evaluation is synchronous, so the
//! meter of the running thread is the meter of the running program.
//!
//! Upstream: `k8s.io/apiserver/pkg/apis/cel/config.go` (`PerCallLimit`,
//! `RuntimeCELCostBudget`); cel-go's `interpreter/runtimecost.go` charges one unit per
//! evaluated node and the sizes of strings and lists its functions traverse.

use std::cell::Cell;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::common::types::{CelInt, DYN_TYPE, INT_TYPE};
use cel::common::value::CowVal;
use cel::{Env, ExecutionError};

/// The most one evaluation of one expression may cost (`PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// The most all the rules of one object may cost together (`RuntimeCELCostBudget`).
pub const RUNTIME_COST_BUDGET: u64 = 10_000_000;

/// cel-go's error for a call past its limit.
pub(super) const EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// The function the loop steps are rewritten to call.
const COST: &str = "@cost";

thread_local! {
    static SPENT: Cell<u64> = const { Cell::new(0) };
    static LIMIT: Cell<u64> = const { Cell::new(u64::MAX) };
}

/// Runs `f` with a fresh meter that starts at `base` and stops at `limit`; returns what `f`
/// returned and the cost used.
pub(super) fn metered<T>(limit: u64, base: u64, f: impl FnOnce() -> T) -> (T, u64) {
    let saved = (SPENT.with(Cell::get), LIMIT.with(Cell::get));
    SPENT.with(|s| s.set(base));
    LIMIT.with(|l| l.set(limit));
    let result = f();
    let spent = SPENT.with(Cell::get);
    SPENT.with(|s| s.set(saved.0));
    LIMIT.with(|l| l.set(saved.1));
    (result, spent)
}

/// Charges `units` to the running evaluation; an error once it is past its limit.
pub(crate) fn charge(units: u64) -> Result<(), ExecutionError> {
    let spent = SPENT.with(|s| {
        let spent = s.get().saturating_add(units);
        s.set(spent);
        spent
    });
    if spent > LIMIT.with(Cell::get) {
        return Err(ExecutionError::function_error(COST, EXCEEDED));
    }
    Ok(())
}

pub(super) fn register(env: &mut Env) {
    let _ = env.add_overload(COST, "@cost_dyn_int", vec![DYN_TYPE, INT_TYPE], tick);
}

fn tick<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let units = args
        .get(1)
        .and_then(|n| n.downcast_ref::<CelInt>())
        .map_or(1, |n| (*n.inner()).max(1) as u64);
    charge(units)?;
    args.truncate(1);
    args.pop()
        .ok_or_else(|| ExecutionError::function_error(COST, "missing operand"))
}

/// Rewrites every comprehension's loop step to meter its iterations; returns the number of
/// nodes of the expression.
pub(super) fn instrument(expr: &mut IdedExpr) -> u64 {
    let mut nodes = 1;
    match &mut expr.expr {
        Expr::Call(call) => {
            if let Some(target) = call.target.as_deref_mut() {
                nodes += instrument(target);
            }
            for arg in &mut call.args {
                nodes += instrument(arg);
            }
        }
        Expr::Comprehension(comprehension) => {
            for part in [
                &mut comprehension.iter_range,
                &mut comprehension.accu_init,
                &mut comprehension.loop_cond,
                &mut comprehension.result,
            ] {
                nodes += instrument(part);
            }
            let accu = comprehension.accu_var.clone();
            nodes += meter_step(&mut comprehension.loop_step, &accu);
        }
        Expr::List(list) => {
            for element in &mut list.elements {
                nodes += instrument(element);
            }
        }
        Expr::Map(map) => {
            for entry in &mut map.entries {
                if let EntryExpr::MapEntry(entry) = &mut entry.expr {
                    nodes += instrument(&mut entry.key) + instrument(&mut entry.value);
                }
            }
        }
        Expr::Struct(object) => {
            for entry in &mut object.entries {
                if let EntryExpr::StructField(field) = &mut entry.expr {
                    nodes += instrument(&mut field.value);
                }
            }
        }
        Expr::Select(select) => nodes += instrument(&mut select.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
    nodes
}

/// Meters a loop step without changing its shape: the accumulator and the operators that fold
/// it (`@result && p`, `@result + [e]`, `c ? @result + [e] : @result`) stay as they are, so the
/// crate still recognises them; the operands they evaluate are wrapped.
fn meter_step(step: &mut IdedExpr, accu: &str) -> u64 {
    let is_accu = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(name) if name == accu);
    if let Expr::Call(call) = &mut step.expr
        && call.target.is_none()
        && call.args.iter().any(|a| is_accu(a) || folds(a, accu))
    {
        let mut nodes = 1;
        for arg in &mut call.args {
            if is_accu(arg) {
                nodes += 1;
            } else if folds(arg, accu) {
                nodes += meter_step(arg, accu);
            } else if let Expr::List(list) = &mut arg.expr {
                nodes += 1;
                for element in &mut list.elements {
                    nodes += wrap(element);
                }
            } else {
                nodes += wrap(arg);
            }
        }
        return nodes;
    }
    wrap(step)
}

/// Whether `expr` is a call on the accumulator (`@result + [e]`).
fn folds(expr: &IdedExpr, accu: &str) -> bool {
    matches!(&expr.expr, Expr::Call(call)
        if call.target.is_none()
            && call.args.first().is_some_and(|a| matches!(&a.expr, Expr::Ident(n) if n == accu)))
}

/// Replaces `expr` with `@cost(expr, nodes)`.
fn wrap(expr: &mut IdedExpr) -> u64 {
    let nodes = instrument(expr);
    let inner = std::mem::take(expr);
    let id = inner.id;
    *expr = IdedExpr {
        id,
        expr: Expr::Call(CallExpr {
            func_name: COST.to_owned(),
            target: None,
            args: vec![
                inner,
                IdedExpr {
                    id,
                    expr: Expr::Literal(LiteralValue::Int(CelInt::from(nodes as i64))),
                },
            ],
        }),
    };
    nodes
}
