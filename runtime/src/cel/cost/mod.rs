//! The runtime cost of an evaluation, counted in a per-thread meter: a program's nodes once (each
//! as cel-go charges it), the loop step of every comprehension iteration that ran, and what
//! calls charge for the sizes they work on ([`sized`] for the crate's functions; kapi's library
//! charges its own). Evaluation is synchronous, so the meter of the running thread is
//! the meter of the running program.
//!
//! Iterations are metered by the range they walk where that range is free to hold: each such
//! comprehension's range is rewritten to `@cost_range(range, step nodes)` (names CEL source
//! cannot write), which hands the loop a [`Metered`] range whose iterator charges an element's
//! step when the loop asks for the next element, so an iteration costs an addition rather than
//! a function call and the loop steps keep the shapes the interpreter recognises (`@result &&
//! p`, `@result + [e]`). Past the limit the range ends, every loop winds down, and
//! `Program::evaluate_in` reports the overrun. A range that names a variable of an enclosing
//! comprehension may be a list the expression built, which the crate would copy whole to hand
//! over; those loops meter each step instead, by passing its operands through
//! `@cost(operand, nodes)`.
//! A range-metered step is charged whole, the branch a `filter` does not take included; a step
//! metered by its operands is charged for the operands evaluated.
//!
//! Upstream: `k8s.io/apiserver/pkg/apis/cel/config.go` (`PerCallLimit`,
//! `RuntimeCELCostBudget`); cel-go's `interpreter/runtimecost.go` charges one unit per
//! evaluated node and the sizes of strings and lists its functions traverse.

mod sized;

use std::cell::Cell;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::common::traits::{self, Iterable, Sizer};
use cel::common::types::{CelInt, DYN_TYPE, INT_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError};
use kapi_cel_check::estimate::CallCosts;

use sized::traversal;

/// The most one evaluation of one expression may cost (`PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// The most all the rules of one object may cost together (`RuntimeCELCostBudget`).
pub const RUNTIME_COST_BUDGET: u64 = 10_000_000;

/// cel-go's error for a call past its limit.
pub(super) const EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// The function the operands of a loop step are passed through.
const COST: &str = "@cost";
/// The function a loop's range is passed through.
const COST_RANGE: &str = "@cost_range";

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
    let result = sized::fresh(f);
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

/// Charges what a call costs by its operands' sizes, `units`, of which its node has paid one.
pub(crate) fn charge_call(units: u64) -> Result<(), ExecutionError> {
    if units > 1 {
        charge(units - 1)?;
    }
    Ok(())
}

/// Charges a call that traverses `text` at `tenths` of a unit per character (Kubernetes'
/// `library.CallCost` for parsing functions: `url`, `ip`, `quantity`, ...).
pub(crate) fn charge_text(text: &str, tenths: u64) -> Result<(), ExecutionError> {
    charge_call(sized::traversal(text.chars().count() as u64, tenths))
}

/// Charges matching `text` against a regular expression of `pattern` characters, as cel-go
/// charges `matches` (and Kubernetes `find` and a format's `validate`): the text's characters
/// plus one at 0.1, times the pattern's at 0.25.
pub(crate) fn charge_match(text: &str, pattern: u64) -> Result<(), ExecutionError> {
    let text = traversal((text.chars().count() as u64).saturating_add(1), 1);
    charge_call(text.saturating_mul(pattern.saturating_mul(25).div_ceil(100)))
}

pub(super) fn register(env: &mut Env) {
    sized::register(env);
    let _ = env.add_overload(COST, "@cost_dyn_int", vec![DYN_TYPE, INT_TYPE], tick);
    let _ = env.add_overload(
        COST_RANGE,
        "@cost_range_dyn_int",
        vec![DYN_TYPE, INT_TYPE],
        meter_range,
    );
}

/// `@cost(operand, nodes)`: charges `nodes` and hands `operand` on.
fn tick<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let units = constant(&args, 1).map_or(1, |n| n.max(1) as u64);
    charge(units)?;
    args.truncate(1);
    args.pop()
        .ok_or_else(|| ExecutionError::function_error(COST, "missing operand"))
}

/// `@cost_range(range, nodes)`: `range` metered at `nodes` per iteration; a range that cannot be
/// iterated is handed on as it is, so the loop reports it as the crate would.
fn meter_range<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let per_step = constant(&args, 1).map_or(1, |n| n.max(1) as u64);
    args.truncate(1);
    let range = args
        .pop()
        .ok_or_else(|| ExecutionError::function_error(COST_RANGE, "missing operand"))?;
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

/// Meters every comprehension under `expr` (see the module's documentation), and measures the
/// calls whose work grows with their operands where `calls` (each call's estimated cost) says
/// they can cost more than a node ([`sized`]); returns what the expression's nodes as written
/// cost, loops aside.
pub(super) fn instrument(expr: &mut IdedExpr, calls: &CallCosts) -> u64 {
    instrument_in(expr, &mut Vec::new(), calls)
}

/// [`instrument`] under the comprehensions whose variables `bound` names.
fn instrument_in(expr: &mut IdedExpr, bound: &mut Vec<String>, calls: &CallCosts) -> u64 {
    let mut nodes = node_cost(expr);
    match &mut expr.expr {
        Expr::Call(call) => {
            if let Some(target) = call.target.as_deref_mut() {
                nodes += instrument_in(target, bound, calls);
            }
            for arg in &mut call.args {
                nodes += instrument_in(arg, bound, calls);
            }
            sized::measure_call(expr.id, call, calls.max(expr.id));
        }
        Expr::Comprehension(comprehension) => {
            // The range and the accumulator's start are evaluated outside the loop's scope.
            let range_is_free = !mentions_any(&comprehension.iter_range, bound);
            nodes += instrument_in(&mut comprehension.iter_range, bound, calls)
                + instrument_in(&mut comprehension.accu_init, bound, calls);
            let depth = bound.len();
            bound.push(comprehension.iter_var.clone());
            bound.push(comprehension.accu_var.clone());
            nodes += instrument_in(&mut comprehension.loop_cond, bound, calls)
                + instrument_in(&mut comprehension.result, bound, calls);
            if range_is_free {
                let per_step = instrument_in(&mut comprehension.loop_step, bound, calls);
                nodes += per_step;
                passed_through(
                    COST_RANGE,
                    &mut comprehension.iter_range,
                    &[per_step as i64],
                );
            } else {
                let accu = comprehension.accu_var.clone();
                nodes += meter_step(&mut comprehension.loop_step, &accu, bound, calls);
            }
            bound.truncate(depth);
        }
        Expr::List(list) => {
            for element in &mut list.elements {
                nodes += instrument_in(element, bound, calls);
            }
        }
        Expr::Map(map) => {
            for entry in &mut map.entries {
                if let EntryExpr::MapEntry(entry) = &mut entry.expr {
                    nodes += instrument_in(&mut entry.key, bound, calls)
                        + instrument_in(&mut entry.value, bound, calls);
                }
            }
        }
        Expr::Struct(object) => {
            for entry in &mut object.entries {
                if let EntryExpr::StructField(field) = &mut entry.expr {
                    nodes += instrument_in(&mut field.value, bound, calls);
                }
            }
        }
        Expr::Select(select) => nodes += instrument_in(&mut select.operand, bound, calls),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
    nodes
}

/// What building a list, a map and an object costs (`ListCreateBaseCost`, ...).
const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;
const STRUCT_CREATE: u64 = 40;

/// What evaluating the node `expr` costs by itself, as cel-go's `CostTracker` charges it: a
/// literal nothing, an identifier or a field selection 1 (a `has()` test nothing), a call 1
/// (`&&`, `||` and `?:` nothing: their operands are charged), building a list, map or object
/// its base cost, a comprehension nothing beyond its parts.
fn node_cost(expr: &IdedExpr) -> u64 {
    match &expr.expr {
        Expr::Literal(_) | Expr::Unspecified | Expr::Comprehension(_) => 0,
        Expr::Select(select) if select.test => 0,
        Expr::Ident(_) | Expr::Select(_) => 1,
        Expr::Call(call) => match call.func_name.as_str() {
            "_&&_" | "_||_" | "_?_:_" => 0,
            _ => 1,
        },
        Expr::List(_) => LIST_CREATE,
        Expr::Map(_) => MAP_CREATE,
        Expr::Struct(_) => STRUCT_CREATE,
    }
}

/// Whether `expr` names any of `names` (counting an inner comprehension's own variables of the
/// same name: a cautious answer only costs the slower metering).
fn mentions_any(expr: &IdedExpr, names: &[String]) -> bool {
    if names.is_empty() {
        return false;
    }
    let any = |e: &IdedExpr| mentions_any(e, names);
    let entry = |entry: &EntryExpr| match entry {
        EntryExpr::MapEntry(entry) => any(&entry.key) || any(&entry.value),
        EntryExpr::StructField(field) => any(&field.value),
    };
    match &expr.expr {
        Expr::Ident(name) => names.contains(name),
        Expr::Call(call) => call.target.as_deref().is_some_and(any) || call.args.iter().any(any),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .any(any),
        Expr::List(list) => list.elements.iter().any(any),
        Expr::Map(map) => map.entries.iter().any(|e| entry(&e.expr)),
        Expr::Struct(object) => object.entries.iter().any(|e| entry(&e.expr)),
        Expr::Select(select) => any(&select.operand),
        Expr::Literal(_) | Expr::Unspecified => false,
    }
}

/// Meters a loop step without changing its shape: the accumulator and the operators that fold
/// it (`@result && p`, `@result + [e]`, `c ? @result + [e] : @result`) stay as they are, so the
/// crate still recognises them; the operands they evaluate are wrapped.
fn meter_step(step: &mut IdedExpr, accu: &str, bound: &mut Vec<String>, calls: &CallCosts) -> u64 {
    let is_accu = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(name) if name == accu);
    let step_cost = node_cost(step);
    if let Expr::Call(call) = &mut step.expr
        && call.target.is_none()
        && call.args.iter().any(|a| is_accu(a) || folds(a, accu))
    {
        let mut nodes = step_cost;
        for arg in &mut call.args {
            if is_accu(arg) {
                nodes += node_cost(arg);
            } else if folds(arg, accu) {
                nodes += meter_step(arg, accu, bound, calls);
            } else if let Expr::List(list) = &mut arg.expr {
                nodes += LIST_CREATE;
                for element in &mut list.elements {
                    nodes += wrap(element, bound, calls);
                }
            } else {
                nodes += wrap(arg, bound, calls);
            }
        }
        return nodes;
    }
    wrap(step, bound, calls)
}

/// Whether `expr` is a call on the accumulator (`@result + [e]`).
fn folds(expr: &IdedExpr, accu: &str) -> bool {
    matches!(&expr.expr, Expr::Call(call)
        if call.target.is_none()
            && call.args.first().is_some_and(|a| matches!(&a.expr, Expr::Ident(n) if n == accu)))
}

/// Replaces `expr` with `@cost(expr, nodes)`.
fn wrap(expr: &mut IdedExpr, bound: &mut Vec<String>, calls: &CallCosts) -> u64 {
    let nodes = instrument_in(expr, bound, calls);
    passed_through(COST, expr, &[nodes as i64]);
    nodes
}

/// Replaces `expr` with `function(expr, constants...)`.
fn passed_through(function: &str, expr: &mut IdedExpr, constants: &[i64]) {
    let inner = std::mem::take(expr);
    let id = inner.id;
    let mut args = vec![inner];
    args.extend(constants.iter().map(|&n| IdedExpr {
        id,
        expr: Expr::Literal(LiteralValue::Int(CelInt::from(n))),
    }));
    *expr = IdedExpr {
        id,
        expr: Expr::Call(CallExpr {
            func_name: function.to_owned(),
            target: None,
            args,
        }),
    };
}

/// The constant a rewrite passed as argument `i`.
fn constant(args: &[CowVal<'_, '_>], i: usize) -> Option<i64> {
    args.get(i)
        .and_then(|n| n.downcast_ref::<CelInt>())
        .map(|n| *n.inner())
}
