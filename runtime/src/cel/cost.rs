//! The runtime cost of an evaluation, counted in a per-thread meter: a program's nodes once, the
//! loop step of every comprehension iteration that ran, and what the library functions charge
//! for the sizes they work on. Evaluation is synchronous, so the meter of the running thread is
//! the meter of the running program.
//!
//! Iterations are metered by the range they walk, not by their steps: each comprehension's range
//! is rewritten to `@cost(range, step nodes)` (a name CEL source cannot write), which hands the
//! loop a [`Metered`] range. Its iterator charges an element's step when the loop asks for the
//! next element, so an iteration costs a counter's addition rather than a function call, and
//! the loop steps keep the shapes the interpreter recognises (`@result && p`, `@result + [e]`).
//! Past the limit the range ends, every loop winds down, and [`metered`] reports the overrun.
//!
//! Upstream: `k8s.io/apiserver/pkg/apis/cel/config.go` (`PerCallLimit`,
//! `RuntimeCELCostBudget`); cel-go's `interpreter/runtimecost.go` charges one unit per
//! evaluated node and the sizes of strings and lists its functions traverse.

use std::cell::Cell;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::common::traits::{self, Iterable, Sizer};
use cel::common::types::{CelInt, DYN_TYPE, INT_TYPE, Type};
use cel::common::value::{CowVal, Val};
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
    let _ = env.add_overload(COST, "@cost_dyn_int", vec![DYN_TYPE, INT_TYPE], meter_range);
}

/// `@cost(range, nodes)`: `range` metered at `nodes` per iteration; a range that cannot be
/// iterated is handed on as it is, so the loop reports it as the crate would.
fn meter_range<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let per_step = args
        .get(1)
        .and_then(|n| n.downcast_ref::<CelInt>())
        .map_or(1, |n| (*n.inner()).max(1) as u64);
    args.truncate(1);
    let range = args
        .pop()
        .ok_or_else(|| ExecutionError::function_error(COST, "missing operand"))?;
    if range.as_iterable().is_none() {
        return Ok(range);
    }
    Ok(CowVal::owned(Metered {
        range: range.into_owned(),
        per_step,
    }))
}

/// A comprehension's range whose iterator charges [`Metered::per_step`] for every element
/// whose step ran. It is only ever iterated (and sized, for the crate's preallocation).
#[derive(Debug)]
struct Metered<'v> {
    range: Box<dyn Val + 'v>,
    per_step: u64,
}

impl<'v> Val for Metered<'v> {
    fn get_type(&self) -> &Type {
        self.range.get_type()
    }

    fn cel_type() -> &'static Type {
        &DYN_TYPE
    }

    fn as_iterable<'b, 'w>(&'b self) -> Option<&'b (dyn Iterable + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        self.range.as_sizer()
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(Metered {
            range: self.range.clone_as_boxed(),
            per_step: self.per_step,
        })
    }
}

impl<'v> Iterable for Metered<'v> {
    fn iter<'b, 'w>(&'b self) -> Box<dyn traits::Iterator<'b, 'w> + 'b>
    where
        Self: 'w,
    {
        Box::new(MeteredIter::<'b, 'v> {
            inner: self.range.as_iterable().map(Iterable::iter),
            per_step: self.per_step,
            stepped: false,
        })
    }
}

/// The iterator of a [`Metered`] range.
struct MeteredIter<'b, 'v> {
    inner: Option<Box<dyn traits::Iterator<'b, 'v> + 'b>>,
    per_step: u64,
    /// Whether an element was handed out: asked for another (or the end), the loop has run
    /// its step. An element the loop stopped at (its condition false) is never charged.
    stepped: bool,
}

impl<'b, 'v: 'w, 'w> traits::Iterator<'b, 'w> for MeteredIter<'b, 'v> {
    fn next(&mut self) -> Option<&'b (dyn Val + 'w)> {
        if std::mem::take(&mut self.stepped) && charge(self.per_step).is_err() {
            self.inner = None;
        }
        let item = self.inner.as_mut()?.next();
        self.stepped = item.is_some();
        item
    }
}

/// Meters every comprehension under `expr` (see the module's documentation); returns the
/// number of nodes of the expression as written.
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
            let per_step = instrument(&mut comprehension.loop_step);
            nodes += per_step;
            meter(&mut comprehension.iter_range, per_step);
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

/// Replaces `range` with `@cost(range, per_step)`.
fn meter(range: &mut IdedExpr, per_step: u64) {
    let inner = std::mem::take(range);
    let id = inner.id;
    *range = IdedExpr {
        id,
        expr: Expr::Call(CallExpr {
            func_name: COST.to_owned(),
            target: None,
            args: vec![
                inner,
                IdedExpr {
                    id,
                    expr: Expr::Literal(LiteralValue::Int(CelInt::from(per_step as i64))),
                },
            ],
        }),
    };
}
