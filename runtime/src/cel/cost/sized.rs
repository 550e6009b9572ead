//! What a call costs when its work grows with the sizes of its operands: comparing and
//! concatenating strings, `contains`, `in` on a list, conversions between strings
//! and bytes, and the crate's strings and lists extensions. Each is charged as cel-go's
//! `CostTracker.costCall`, its lists library's trackers and Kubernetes' `library.CallCost`
//! charge it, from the sizes of the values the call receives, so that a loop over a large string
//! reaches the cost limit as soon as it would upstream instead of traversing the string a
//! million times first, and `sort()` of a long list stops before it sorts.
//!
//! The crate's functions cannot be wrapped, so their operands are:
//! - a charge that depends on one operand passes it through `@cost_size(operand, charge)`;
//! - a charge that combines two passes each through `@cost_operand(operand, call, charge and
//!   role)`. Whichever of the two is evaluated first (the crate evaluates a member call's
//!   arguments before its target) leaves its size on a per-thread stack, and the second takes it
//!   and charges the call. As on cel-go's own stack, an entry an absorbed error left behind
//!   (`x.contains(1/0 == 1 ? 'a' : 'b') || true`) is replaced by the next evaluation of the same
//!   call, so the stack holds at most one entry per measured call of the program.
//!
//! A call the static estimate bounds at [`UNMEASURED_COST`] units or fewer is left alone:
//! charged as one node, its work is bounded by its operands' declared sizes, and measuring it
//! would take longer than the work it measures.
//!
//! Kapi's own library functions (`matches`, `url`, `quantity`, ...) charge what they traverse
//! themselves.
//!
//! Upstream: cel-go `interpreter/runtimecost.go` (`costCall`), `ext/lists.go` (its
//! `ProgramOptions`' trackers), `common/cost.go`
//! (`StringTraversalCostFactor`, `RegexStringLengthCostFactor`), k8s
//! `apiserver/pkg/cel/library/cost.go` (`CallCost`).

use std::cell::RefCell;

use cel::common::ast::{CallExpr, Expr, IdedExpr, LiteralValue};
use cel::common::types::{CelInt, CelString, DYN_TYPE, INT_TYPE, Kind};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError};

use super::{constant, passed_through};

/// The function one measured operand is passed through.
const SIZE: &str = "@cost_size";
/// The function each of two measured operands is passed through.
const OPERAND: &str = "@cost_operand";

/// The most a call may be estimated to cost and still be charged as a single node: a
/// comparison of two strings of at most 80 characters, which the estimate counts as 320 bytes
/// (Kubernetes sizes a string's `maxLength` at four bytes a character); a traversal that short
/// takes less time than evaluating a node.
pub(in crate::cel) const UNMEASURED_COST: u64 = 32;

thread_local! {
    /// Operands evaluated before their partner: the call's node id, the role, the sizes.
    static WAITING: RefCell<Vec<(i64, Role, Sizes)>> = const { RefCell::new(Vec::new()) };
}

/// What a charge reads of one of two operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sizes {
    /// Its size (see [`size`]).
    size: u64,
    /// The elements of a list, 1 for anything else.
    count: u64,
}

/// How a call's operands make its cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i64)]
pub(in crate::cel) enum Charge {
    /// A string's characters at 0.1 each (`startsWith`, `lowerAscii`, `bytes(s)`, ...).
    Chars = 0,
    /// A string's characters at 0.2 each: the traversal and the result (`replace`, `split`).
    CharsTwice = 1,
    /// The bytes of a bytes value at 0.1 each (`string(b)`).
    Bytes = 2,
    /// The joined string at 0.2 a character: a list's strings, and its separator between
    /// them (`join`).
    Joined = 3,
    /// A list's elements, one each (`in`).
    Elements = 4,
    /// The smaller of two sizes at 0.1 (`==`, `!=`, ordering).
    Smaller = 5,
    /// Two strings' or two bytes values' sizes together at 0.1 (`+`); two lists' lengths
    /// together at 0.1, since the crate copies both where cel-go does not (it charges 1).
    Concatenated = 6,
    /// A text's and a substring's sizes, each at 0.1, multiplied (`contains`).
    Substring = 7,
    /// A new list: one unit an element of the operand, a list's or as many as an int says
    /// (`lists.range(n)`), beside the call and the list's creation (`reverse`, `flatten()`,
    /// `slice`, which kapi charges by the list it walks where cel-go charges the slice). A
    /// string's `reverse` is its characters at 0.1.
    Allocated = 8,
    /// A list's length times a depth (`flatten(depth)`), beside the call and the new list.
    Flattened = 9,
    /// Twice the square of a list's length, 2.1 times for strings and bytes, beside the call and
    /// the new list: every pair compared (`sort`, `distinct`, and `sortBy` by its keys).
    SelfCompared = 10,
}

const CHARGES: [Charge; 11] = [
    Charge::Chars,
    Charge::CharsTwice,
    Charge::Bytes,
    Charge::Joined,
    Charge::Elements,
    Charge::Smaller,
    Charge::Concatenated,
    Charge::Substring,
    Charge::Allocated,
    Charge::Flattened,
    Charge::SelfCompared,
];

/// What a call that creates a list pays beside its elements: the call and the list's creation
/// (cel-go's `callCost` and `ListCreateBaseCost`).
const LIST_CALL: u64 = 1 + 10;

/// Which operand of two a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    First,
    Second,
}

/// An operand of a call: its target or one of its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operand {
    Target,
    Arg(usize),
}

/// How a call is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Measure {
    One(Operand, Charge),
    Two(Operand, Operand, Charge),
}

/// How the call `call` is charged by its operands' sizes, if it is (upstream's table).
fn measure(call: &CallExpr) -> Option<Measure> {
    use Operand::{Arg, Target};
    let member = call.target.is_some();
    Some(match (call.func_name.as_str(), member, call.args.len()) {
        ("_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_", false, 2) => {
            Measure::Two(Arg(0), Arg(1), Charge::Smaller)
        }
        ("_+_", false, 2) => Measure::Two(Arg(0), Arg(1), Charge::Concatenated),
        ("@in", false, 2) => Measure::One(Arg(1), Charge::Elements),
        ("startsWith" | "endsWith", true, 1) => Measure::One(Arg(0), Charge::Chars),
        ("contains", true, 1) => Measure::Two(Target, Arg(0), Charge::Substring),
        ("string", false, 1) => Measure::One(Arg(0), Charge::Bytes),
        ("bytes", false, 1) => Measure::One(Arg(0), Charge::Chars),
        // `strings.quote(s)` and `lists.range(n)`, parsed as calls on `strings` and `lists`.
        ("quote", true, 1) if namespaced(call, "strings") => Measure::One(Arg(0), Charge::Chars),
        ("range", true, 1) if namespaced(call, "lists") => Measure::One(Arg(0), Charge::Allocated),
        (
            "lowerAscii" | "upperAscii" | "substring" | "trim" | "charAt" | "indexOf"
            | "lastIndexOf" | "format",
            true,
            _,
        ) => Measure::One(Target, Charge::Chars),
        ("reverse" | "flatten", true, 0) | ("slice", true, 2) => {
            Measure::One(Target, Charge::Allocated)
        }
        ("flatten", true, 1) => Measure::Two(Target, Arg(0), Charge::Flattened),
        ("sort" | "distinct", true, 0) => Measure::One(Target, Charge::SelfCompared),
        // `sortBy`'s expansion: the list, then its keys.
        ("@sortByAssociatedKeys", true, 1) => Measure::One(Arg(0), Charge::SelfCompared),
        ("replace", true, 2 | 3) | ("split", true, 1 | 2) => {
            Measure::One(Target, Charge::CharsTwice)
        }
        ("join", true, 0) => Measure::One(Target, Charge::Joined),
        ("join", true, 1) => Measure::Two(Target, Arg(0), Charge::Joined),
        _ => return None,
    })
}

/// Whether `call` is written `namespace.function(...)`.
fn namespaced(call: &CallExpr, namespace: &str) -> bool {
    matches!(call.target.as_deref(), Some(t) if matches!(&t.expr, Expr::Ident(n) if n == namespace))
}

/// Passes the operands of the call of node `id` through the functions that charge its size,
/// unless the call is cheap at any size its operands can have (`estimated` is the most it can
/// cost by itself).
pub(super) fn measure_call(id: u64, call: &mut CallExpr, estimated: u64) {
    // A loop's accumulator (`@result`, a name CEL source cannot write) stays in place: the
    // crate recognises the steps that fold it by their shape.
    let accumulates = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(name) if name.starts_with('@'));
    if estimated <= UNMEASURED_COST || call.args.iter().any(accumulates) {
        return;
    }
    match measure(call) {
        Some(Measure::One(operand, charge)) => {
            if let Some(operand) = operand_of(call, operand) {
                passed_through(SIZE, operand, &[charge as i64]);
            }
        }
        Some(Measure::Two(first, second, charge)) => {
            // Compared with a short literal, a value of any size costs what the literal does
            // (`object.metadata.name == 'web'` in a policy, where nothing bounds `object`).
            let short = |operand: Operand, call: &mut CallExpr| {
                operand_of(call, operand)
                    .and_then(|e| literal_size(e))
                    .is_some_and(|size| traversal(size, 1) <= UNMEASURED_COST)
            };
            if charge == Charge::Smaller && (short(first, call) || short(second, call)) {
                return;
            }
            let code = |role: Role| charge as i64 * 2 + i64::from(role == Role::Second);
            if let Some(operand) = operand_of(call, first) {
                passed_through(OPERAND, operand, &[id as i64, code(Role::First)]);
            }
            if let Some(operand) = operand_of(call, second) {
                passed_through(OPERAND, operand, &[id as i64, code(Role::Second)]);
            }
        }
        None => {}
    }
}

/// The size of a literal operand, as cel-go's `actualSize` would find it.
fn literal_size(expr: &IdedExpr) -> Option<u64> {
    match &expr.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.chars().count() as u64),
        Expr::Literal(LiteralValue::Bytes(b)) => Some(b.len() as u64),
        Expr::Literal(_) => Some(1),
        _ => None,
    }
}

fn operand_of(call: &mut CallExpr, operand: Operand) -> Option<&mut IdedExpr> {
    match operand {
        Operand::Target => call.target.as_deref_mut(),
        Operand::Arg(i) => call.args.get_mut(i),
    }
}

pub(super) fn register(env: &mut Env) {
    let _ = env.add_overload(
        SIZE,
        "@cost_size_dyn_int",
        vec![DYN_TYPE, INT_TYPE],
        size_of,
    );
    let _ = env.add_overload(
        OPERAND,
        "@cost_operand_dyn_int_int",
        vec![DYN_TYPE, INT_TYPE, INT_TYPE],
        operand,
    );
}

/// Runs `f` with no operand waiting, as a fresh evaluation starts, and puts back what waited.
pub(super) fn fresh<T>(f: impl FnOnce() -> T) -> T {
    let saved = WAITING.with(|w| std::mem::take(&mut *w.borrow_mut()));
    let result = f();
    WAITING.with(|w| *w.borrow_mut() = saved);
    result
}

/// `@cost_size(operand, charge)`: charges `charge` of the operand's size and hands it on.
fn size_of<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let charge = constant(&args, 1).and_then(|c| CHARGES.get(c as usize).copied());
    args.truncate(1);
    let value = args
        .pop()
        .ok_or_else(|| ExecutionError::function_error(SIZE, "missing operand"))?;
    if let Some(charge) = charge {
        super::charge_call(one(charge, value.as_ref()))?;
    }
    Ok(value)
}

/// `@cost_operand(operand, call, code)`: the first of a call's two operands waits for the
/// second, which charges the call; both are handed on.
fn operand<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let call = constant(&args, 1).unwrap_or_default();
    let code = constant(&args, 2).unwrap_or_default();
    let role = if code % 2 == 0 {
        Role::First
    } else {
        Role::Second
    };
    let charge = CHARGES.get((code / 2) as usize).copied();
    args.truncate(1);
    let value = args
        .pop()
        .ok_or_else(|| ExecutionError::function_error(OPERAND, "missing operand"))?;
    let Some(charge) = charge else {
        return Ok(value);
    };
    let sizes = Sizes {
        size: size(charge, value.as_ref()),
        count: match value.get_type().kind() {
            Kind::List => sized(value.as_ref()),
            _ => 1,
        },
    };
    let partner = WAITING.with(|waiting| {
        let mut waiting = waiting.borrow_mut();
        let found = waiting.iter().rposition(|(c, _, _)| *c == call);
        match found {
            // The partner of this evaluation: it and whatever an error left above it go.
            Some(at) if waiting[at].1 != role => {
                let partner = waiting[at].2;
                waiting.truncate(at);
                Some(partner)
            }
            // Left by an evaluation that failed before its partner ran.
            Some(at) => {
                waiting[at].2 = sizes;
                None
            }
            None => {
                waiting.push((call, role, sizes));
                None
            }
        }
    });
    if let Some(partner) = partner {
        let (first, second) = match role {
            Role::First => (sizes, partner),
            Role::Second => (partner, sizes),
        };
        super::charge_call(two(charge, first, second))?;
    }
    Ok(value)
}

/// The size of one of two operands, as cel-go's `actualSize` has it: a string's characters,
/// a bytes value's or a collection's length, 1 for anything else. A comparison reads at most
/// the shorter operand, so it takes a string's bytes, known without counting (the characters
/// for ASCII); `contains` traverses only strings; `join` the characters of a list's strings.
fn size(charge: Charge, value: &dyn Val) -> u64 {
    let kind = value.get_type().kind();
    match (charge, kind) {
        (Charge::Smaller, Kind::String) => value
            .downcast_ref::<CelString>()
            .map_or_else(|| sized(value), |s| s.inner().len() as u64),
        // `flatten`'s depth.
        (Charge::Flattened, Kind::Int) => int(value),
        (Charge::Smaller | Charge::Concatenated | Charge::Flattened, _) => sized(value),
        (Charge::Joined, Kind::List) => joined(value),
        (_, Kind::String | Kind::Bytes) => sized(value),
        _ => 1,
    }
}

/// The characters of the strings of the list `value`.
fn joined(value: &dyn Val) -> u64 {
    let mut total = 0u64;
    if let Some(items) = value.as_iterable() {
        let mut items = items.iter();
        while let Some(item) = items.next() {
            total = total.saturating_add(sized(item));
        }
    }
    total
}

/// The value of an int, 0 if negative.
fn int(value: &dyn Val) -> u64 {
    value
        .downcast_ref::<CelInt>()
        .map_or(1, |n| (*n.inner()).max(0) as u64)
}

/// What a value says its size is, 1 if it has none (cel-go's `actualSize`).
fn sized(value: &dyn Val) -> u64 {
    value
        .as_sizer()
        .map_or(1, |s| (*s.size().inner()).max(0) as u64)
}

/// What `charge` makes of one operand's value; a value the charge does not apply to costs one
/// node (`string(x)` of anything but bytes, `indexOf` on a list).
fn one(charge: Charge, value: &dyn Val) -> u64 {
    match (charge, value.get_type().kind()) {
        (Charge::Chars, Kind::String) | (Charge::Bytes, Kind::Bytes) => traversal(sized(value), 1),
        (Charge::CharsTwice, Kind::String) => traversal(sized(value), 2),
        (Charge::Joined, Kind::List) => traversal(joined(value), 2),
        (Charge::Elements, Kind::List) => sized(value),
        (Charge::Allocated, Kind::List) => sized(value).saturating_add(LIST_CALL),
        (Charge::Allocated, Kind::Int) => int(value).saturating_add(LIST_CALL),
        (Charge::Allocated, Kind::String) => traversal(sized(value), 1),
        (Charge::SelfCompared, Kind::List) => self_compared(value),
        _ => 1,
    }
}

/// Every pair of the list `value`'s elements compared, twice (cel-go's
/// `trackListSelfCompare`, whose product it truncates).
fn self_compared(value: &dyn Val) -> u64 {
    let length = sized(value);
    let first = value
        .as_iterable()
        .and_then(|items| items.iter().next().map(|first| first.get_type().kind()));
    let tenths = match first {
        Some(Kind::String | Kind::Bytes) => 21,
        _ => 20,
    };
    (length.saturating_mul(length).saturating_mul(tenths) / 10).saturating_add(LIST_CALL)
}

/// What `charge` makes of two operands' sizes.
fn two(charge: Charge, first: Sizes, second: Sizes) -> u64 {
    let (a, b) = (first.size, second.size);
    match charge {
        Charge::Smaller => traversal(a.min(b), 1),
        Charge::Concatenated => traversal(a.saturating_add(b), 1),
        Charge::Substring => traversal(a, 1).saturating_mul(traversal(b, 1)),
        Charge::Flattened => a.saturating_mul(b).saturating_add(LIST_CALL),
        // The list's strings, and the separator between each two of them.
        Charge::Joined => {
            let separators = b.saturating_mul(first.count.saturating_sub(1));
            traversal(a.saturating_add(separators), 2)
        }
        _ => 1,
    }
}

/// `size` characters traversed at `tenths` tenth of a unit each, rounded up.
pub(super) fn traversal(size: u64, tenths: u64) -> u64 {
    size.saturating_mul(tenths).div_ceil(10)
}
