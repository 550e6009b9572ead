//! Static cost estimation: the least and the most an expression can cost, in the units the
//! runtime meter (`cost`) counts, before it ever runs. The sizes of strings, lists
//! and maps come from the declarations the checker recorded (a schema's `maxLength`,
//! `maxItems`, `maxProperties`, or the largest the 3 MiB request limit leaves room for), from
//! literals, and from what functions return; a size nothing bounds is unbounded.
//!
//! Each node costs as cel-go charges it: an identifier 1, a field selection on an object or
//! map 1 (a `has()` test nothing), a literal nothing, a call 1 plus its arguments unless its work grows with its
//! operands (string comparison, concatenation, `contains`, `matches`, `in`, the lists
//! extension's calls, which create lists and sort them, and Kubernetes' list, string, regex and
//! network functions, each traversal weighted by cel-go's factors),
//! `&&`/`||`/`?:` their operands, and a comprehension its range, accumulator and result plus
//! the range's size times one iteration.
//!
//! It also holds upstream's limits on estimated costs at CRD creation and their message, and
//! [`fully_typed`], which says when an estimate rests on no dyn value (what the derive needs
//! before it refuses a rule for its cost at compile time).
//!
//! Upstream: cel-go `checker/cost.go` (`coster`, `functionCost`), `ext/lists.go` (its
//! estimators), `common/cost.go`
//! (`StringTraversalCostFactor`, `RegexStringLengthCostFactor`), k8s
//! `apiserver/pkg/cel/library/cost.go` (`EstimateCallCost`), apiextensions
//! `validation/validation.go` (`getCostErrorMessage`) and `apiserver/pkg/apis/cel/config.go`.

use std::collections::HashMap;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use crate::checker::Checked;
use crate::types::Type;

/// The cost of traversing one character of a string (`StringTraversalCostFactor`).
const STRING_TRAVERSAL: f64 = 0.1;
/// The cost of one character of a regular expression (`RegexStringLengthCostFactor`).
const REGEX_LENGTH: f64 = 0.25;
/// The cost of creating a list (`ListCreateBaseCost`).
const LIST_CREATE: u64 = 10;
/// The longest pattern a named format's check may have (`MaxNameFormatRegexSize`).
const MAX_FORMAT_REGEX: u64 = 128;

/// The most one rule may be estimated to cost, times the most values it may run on
/// (`StaticEstimatedCostLimit`).
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// The most the rules of one schema may be estimated to cost together
/// (`StaticEstimatedCRDCostLimit`).
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;

/// Upstream's `getCostErrorMessage`: by what factor `cost` passes `limit`.
pub fn cost_message(name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// A range of costs, or of sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Estimate {
    /// The least.
    pub min: u64,
    /// The most.
    pub max: u64,
}

impl Estimate {
    const fn exact(n: u64) -> Estimate {
        Estimate { min: n, max: n }
    }

    const UNKNOWN: Estimate = Estimate {
        min: 0,
        max: u64::MAX,
    };

    fn add(self, other: Estimate) -> Estimate {
        Estimate {
            min: self.min.saturating_add(other.min),
            max: self.max.saturating_add(other.max),
        }
    }

    fn multiply(self, other: Estimate) -> Estimate {
        Estimate {
            min: self.min.saturating_mul(other.min),
            max: self.max.saturating_mul(other.max),
        }
    }

    fn union(self, other: Estimate) -> Estimate {
        Estimate {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }

    /// `self` times a fractional factor, rounded up, as cel-go's `MultiplyByCostFactor`.
    fn factor(self, factor: f64) -> Estimate {
        let scale = |n: u64| {
            let product = (n as f64 * factor).ceil();
            if product >= u64::MAX as f64 {
                u64::MAX
            } else {
                product as u64
            }
        };
        Estimate {
            min: scale(self.min),
            max: scale(self.max),
        }
    }
}

/// The estimated cost of a checked expression.
pub fn estimate(expr: &IdedExpr, checked: &Checked) -> Estimate {
    estimate_calls(expr, checked).0
}

/// The most each call of an expression can cost by itself as kapi's runtime meter charges it,
/// its operands' evaluation left out, by the id of the call's node: as the estimate prices it,
/// but list concatenation by the lists' lengths and `slice` by its list's. A call on a dyn
/// value, whose size its type does not bound, or on what a `flatten()` made, whose size the
/// estimate takes from the outer list as upstream's does, can cost anything ([`u64::MAX`]).
#[derive(Clone, Debug, Default)]
pub struct CallCosts(HashMap<u64, u64>);

impl CallCosts {
    /// The most the call of node `id` can cost by itself.
    pub fn max(&self, id: u64) -> u64 {
        self.0.get(&id).copied().unwrap_or(u64::MAX)
    }
}

/// [`estimate`], with what each call can cost by itself: what tells the runtime meter which
/// calls work on values large enough to be worth measuring.
pub fn estimate_calls(expr: &IdedExpr, checked: &Checked) -> (Estimate, CallCosts) {
    let mut coster = Coster {
        checked,
        sizes: HashMap::new(),
        calls: HashMap::new(),
    };
    let total = coster.cost(expr);
    (total, CallCosts(coster.calls))
}

/// Whether every node of `expr` has a type the checker knows through and through (an empty
/// list or map literal aside, whose items nothing reads): then no size [`estimate`] uses comes
/// from a dyn value, and the estimate is the one upstream makes on the same schema.
pub fn fully_typed(expr: &IdedExpr, checked: &Checked) -> bool {
    let mut typed = true;
    crate::syntax::visit(expr, &mut |e| {
        let empty_literal = match &e.expr {
            Expr::List(list) => list.elements.is_empty(),
            Expr::Map(map) => map.entries.is_empty(),
            _ => false,
        };
        if !empty_literal && !checked.type_of(e.id).is_concrete() {
            typed = false;
        }
    });
    typed
}

struct Coster<'c> {
    checked: &'c Checked,
    /// Sizes of what calls return, by node.
    sizes: HashMap<u64, Estimate>,
    /// The most each call costs by itself, by node.
    calls: HashMap<u64, u64>,
}

impl Coster<'_> {
    /// The size of the value of `expr`: a literal's, a call result's, a declared value's.
    fn size(&self, expr: &IdedExpr) -> Estimate {
        match &expr.expr {
            Expr::Literal(LiteralValue::String(s)) => {
                return Estimate::exact(s.chars().count() as u64);
            }
            Expr::Literal(LiteralValue::Bytes(b)) => return Estimate::exact(b.len() as u64),
            Expr::Literal(_) => return Estimate::exact(1),
            Expr::List(list) => return Estimate::exact(list.elements.len() as u64),
            Expr::Map(map) => return Estimate::exact(map.entries.len() as u64),
            _ => {}
        }
        if let Some(size) = self.sizes.get(&expr.id) {
            return *size;
        }
        if let Some(decl) = self.checked.decls.get(&expr.id) {
            return Estimate {
                min: 0,
                max: decl.max_elements,
            };
        }
        if scalar(&self.checked.type_of(expr.id)) {
            return Estimate::exact(1);
        }
        Estimate::UNKNOWN
    }

    fn cost(&mut self, expr: &IdedExpr) -> Estimate {
        match &expr.expr {
            Expr::Literal(_) | Expr::Unspecified => Estimate::default(),
            Expr::Ident(_) => Estimate::exact(1),
            Expr::Select(select) => {
                let operand = self.cost(&select.operand);
                // Kubernetes' environment gives `has()` no cost of its own
                // (`PresenceTestHasCost(false)`): only its operand counts.
                if select.test {
                    return operand;
                }
                match self.checked.type_of(select.operand.id) {
                    Type::Object(_) | Type::Map(..) | Type::Param(_) => {
                        operand.add(Estimate::exact(1))
                    }
                    _ => operand,
                }
            }
            Expr::Call(call) => self.call(expr, call),
            Expr::Comprehension(c) => {
                let mut sum = self.cost(&c.iter_range);
                sum = sum.add(self.cost(&c.accu_init));
                let per_iteration = self.cost(&c.loop_cond).add(self.cost(&c.loop_step));
                sum = sum.add(self.cost(&c.result));
                let count = self.size(&c.iter_range);
                let size = match &c.accu_init.expr {
                    Expr::Literal(_) => self.size(&c.accu_init),
                    _ => count,
                };
                self.sizes.insert(expr.id, size);
                sum.add(count.multiply(per_iteration))
            }
            Expr::List(list) => {
                let mut sum = Estimate::exact(LIST_CREATE);
                for element in &list.elements {
                    sum = sum.add(self.cost(element));
                }
                sum
            }
            Expr::Map(map) => {
                let mut sum = Estimate::exact(30);
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        sum = sum.add(self.cost(&entry.key)).add(self.cost(&entry.value));
                    }
                }
                sum
            }
            Expr::Struct(object) => {
                let mut sum = Estimate::exact(40);
                for entry in &object.entries {
                    if let EntryExpr::StructField(field) = &entry.expr {
                        sum = sum.add(self.cost(&field.value));
                    }
                }
                sum
            }
        }
    }

    fn call(&mut self, expr: &IdedExpr, call: &CallExpr) -> Estimate {
        // `format.dns1123Label()`, `sets.contains(a, b)`: a target the checker read as part of
        // a function's qualified name (it gave the target no type) is no value to evaluate.
        let qualified_call;
        let call = match call.target.as_deref() {
            Some(target) if !self.checked.types.contains_key(&target.id) => {
                match crate::syntax::qualified(target) {
                    Some(prefix) => {
                        qualified_call = CallExpr {
                            func_name: format!("{prefix}.{}", call.func_name),
                            target: None,
                            args: call.args.clone(),
                        };
                        &qualified_call
                    }
                    None => call,
                }
            }
            _ => call,
        };
        // `dyn(x)` only turns type checking off: it costs 1 and has `x`'s size.
        if call.func_name == "dyn"
            && call.target.is_none()
            && let [arg] = call.args.as_slice()
        {
            let cost = self.cost(arg).add(Estimate::exact(1));
            let size = self.size(arg);
            self.sizes.insert(expr.id, size);
            return cost;
        }
        let arg_costs: Vec<Estimate> = call.args.iter().map(|a| self.cost(a)).collect();
        let args_sum = arg_costs
            .iter()
            .fold(Estimate::default(), |sum, c| sum.add(*c));
        let target_cost = call
            .target
            .as_deref()
            .map(|t| self.cost(t))
            .unwrap_or_default();
        let (cost, size) = self.function(call, &arg_costs, args_sum);
        // A size the estimate takes from an operand's type says nothing of a dyn value's.
        let typed = call
            .target
            .iter()
            .map(|t| &**t)
            .chain(&call.args)
            .all(|e| self.checked.type_of(e.id).is_concrete());
        // The runtime meter charges list concatenation by the lists' lengths, which the crate
        // copies (cel-go charges 1: its lists are not copied).
        let concatenates_lists = call.func_name == "_+_"
            && call
                .args
                .iter()
                .any(|a| matches!(self.checked.type_of(a.id), Type::List(_)));
        // Upstream sizes what `flatten()` gives as its outer list, which bounds nothing of the
        // flattened list: a call on it is always measured.
        let flattened = call
            .target
            .iter()
            .map(|t| &**t)
            .chain(&call.args)
            .any(flattens);
        let own = if !typed || flattened {
            u64::MAX
        } else if call.func_name == "slice"
            && let Some(list) = call.target.as_deref()
        {
            // The runtime meter charges `slice` by the list the crate walks, all of it.
            self.size(list).add(Estimate::exact(1 + LIST_CREATE)).max
        } else if concatenates_lists {
            let both = call
                .args
                .iter()
                .fold(Estimate::default(), |sum, a| sum.add(self.size(a)));
            both.factor(STRING_TRAVERSAL).max
        } else {
            cost.max.saturating_sub(args_sum.max)
        };
        self.calls.insert(expr.id, own);
        if let Some(size) = size {
            self.sizes.insert(expr.id, size);
        }
        target_cost.add(cost)
    }

    /// The cost of one call (its arguments' included, its target's not) and the size of its
    /// result when known.
    fn function(
        &self,
        call: &CallExpr,
        arg_costs: &[Estimate],
        args_sum: Estimate,
    ) -> (Estimate, Option<Estimate>) {
        let one = Estimate::exact(1);
        let args = &call.args;
        let target = call.target.as_deref();
        let type_of = |e: &IdedExpr| self.checked.type_of(e.id);
        let textual = |t: &Type| matches!(t, Type::String | Type::Bytes);
        match (call.func_name.as_str(), target, args.len()) {
            ("_&&_" | "_||_", None, 2) => (
                Estimate {
                    min: arg_costs[0].min,
                    max: arg_costs[0].add(arg_costs[1]).max,
                },
                None,
            ),
            ("_?_:_", None, 3) => {
                let size = self.size(&args[1]).union(self.size(&args[2]));
                (
                    arg_costs[0].add(arg_costs[1].union(arg_costs[2])),
                    Some(size),
                )
            }
            ("_==_" | "_!=_", None, 2) => {
                let library = (call.func_name == "_==_")
                    .then(|| self.library_equality(&args[0], &args[1]))
                    .flatten();
                let cost = library.unwrap_or_else(|| self.compare(&args[0], &args[1]));
                (cost.add(args_sum), None)
            }
            ("_<_" | "_<=_" | "_>_" | "_>=_", None, 2)
                if textual(&type_of(&args[0])) || textual(&type_of(&args[1])) =>
            {
                (self.compare(&args[0], &args[1]).add(args_sum), None)
            }
            ("_+_", None, 2) => {
                let size = self.size(&args[0]).add(self.size(&args[1]));
                let left = type_of(&args[0]);
                let right = type_of(&args[1]);
                if matches!(left, Type::List(_)) || matches!(right, Type::List(_)) {
                    (one.add(args_sum), Some(size))
                } else if textual(&left) || textual(&right) {
                    (size.factor(STRING_TRAVERSAL).add(args_sum), Some(size))
                } else {
                    (one.add(args_sum), None)
                }
            }
            ("@in", None, 2) => (self.size(&args[1]).add(args_sum), None),
            // cel-go gives a conversion to string no result size; kapi bounds that of a
            // scalar by its longest text, so `'x is ' + string(self.x)` is not unbounded.
            ("string", None, 1) if scalar(&type_of(&args[0])) => {
                (one.add(args_sum), Some(Estimate { min: 0, max: 64 }))
            }
            ("startsWith" | "endsWith", Some(_), 1) => (
                self.size(&args[0]).factor(STRING_TRAVERSAL).add(args_sum),
                None,
            ),
            ("contains", Some(t), 1) => {
                let text = self.size(t).factor(STRING_TRAVERSAL);
                let sub = self.size(&args[0]).factor(STRING_TRAVERSAL);
                (text.multiply(sub).add(args_sum), None)
            }
            ("matches", Some(t), 1) | ("find" | "findAll", Some(t), 1 | 2) => {
                let text = self.size(t).add(one).factor(STRING_TRAVERSAL);
                let regex = self.size(&args[0]).factor(REGEX_LENGTH);
                let size = (call.func_name != "matches").then(|| Estimate {
                    min: 0,
                    max: self.size(t).max,
                });
                (text.multiply(regex).add(args_sum), size)
            }
            ("string", None, 1) if type_of(&args[0]) == Type::Bytes => {
                let size = self.size(&args[0]);
                (
                    size.factor(STRING_TRAVERSAL).add(args_sum),
                    Some(Estimate {
                        min: size.min / 4,
                        max: size.max,
                    }),
                )
            }
            ("bytes", None, 1) if type_of(&args[0]) == Type::String => {
                let size = self.size(&args[0]);
                (
                    size.factor(STRING_TRAVERSAL).add(args_sum),
                    Some(Estimate {
                        min: size.min,
                        max: size.max.saturating_mul(4),
                    }),
                )
            }
            ("strings.quote", None, 1) => {
                let size = self.size(&args[0]);
                (
                    size.factor(STRING_TRAVERSAL).add(args_sum),
                    Some(Estimate {
                        min: size.min.saturating_add(2),
                        max: size.max.saturating_mul(2).saturating_add(2),
                    }),
                )
            }
            ("format", Some(t), 1) => (self.size(t).factor(STRING_TRAVERSAL).add(args_sum), None),
            ("isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf", Some(t), _)
                if matches!(type_of(t), Type::List(_) | Type::Dyn) =>
            {
                let mut element = one;
                if let Type::List(e) = type_of(t)
                    && textual(&e)
                {
                    let element_size = self.element_size(t);
                    element = element.add(
                        Estimate {
                            min: 0,
                            max: element_size,
                        }
                        .factor(STRING_TRAVERSAL),
                    );
                }
                (self.size(t).multiply(element).add(args_sum), None)
            }
            // The lists extension (cel-go's lists library at version 3, which Kubernetes
            // serves): each call allocates its result list, priced per element it holds.
            ("slice", Some(t), 2) => {
                let start = uint_literal(&args[0]).unwrap_or(0);
                let end = uint_literal(&args[1]).unwrap_or(self.size(t).max);
                let size = Estimate::exact(end.saturating_sub(start));
                (allocating(size, 1.0).add(args_sum), Some(size))
            }
            ("lists.range", None, 1) => {
                let size = Estimate::exact(uint_literal(&args[0]).unwrap_or(u64::MAX));
                (allocating(size, 1.0).add(args_sum), Some(size))
            }
            ("reverse", Some(t), 0) if matches!(type_of(t), Type::List(_)) => {
                let size = self.size(t);
                (allocating(size, 1.0).add(args_sum), Some(size))
            }
            // Priced by the depth (any, unless a literal says) times the outer list's length,
            // as upstream; the result is given the outer list's size, as upstream gives it.
            ("flatten", Some(t), 0 | 1) => {
                let depth = args.first().map_or(Some(1), uint_literal);
                let size = self.size(t);
                let cost = allocating(size, depth.unwrap_or(u64::MAX) as f64);
                (cost.add(args_sum), Some(size))
            }
            // Compared with itself, element by element: the square of the list's length.
            ("distinct", Some(t), 0) => self.self_compared(t, false, args_sum),
            ("sort", Some(t), 0) => self.self_compared(t, true, args_sum),
            // `sortBy`'s expansion, compared by the keys.
            ("@sortByAssociatedKeys", Some(_), 1) => self.self_compared(&args[0], true, args_sum),
            (
                "lowerAscii" | "upperAscii" | "substring" | "trim" | "reverse" | "charAt"
                | "indexOf" | "lastIndexOf",
                Some(t),
                _,
            ) => {
                let size = self.size(t);
                let result = matches!(
                    call.func_name.as_str(),
                    "lowerAscii" | "upperAscii" | "substring" | "trim" | "reverse"
                )
                .then_some(size);
                (size.factor(STRING_TRAVERSAL).add(args_sum), result)
            }
            ("replace", Some(t), 2 | 3) => {
                let size = self.size(t);
                let with = self.size(&args[1]);
                let result = Estimate {
                    min: 0,
                    max: size
                        .max
                        .saturating_add(1)
                        .saturating_mul(with.max.max(1))
                        .saturating_add(size.max),
                };
                (
                    size.factor(2.0 * STRING_TRAVERSAL).add(args_sum),
                    Some(result),
                )
            }
            ("split", Some(t), 1 | 2) => {
                let size = self.size(t);
                (
                    size.factor(2.0 * STRING_TRAVERSAL).add(args_sum),
                    Some(Estimate {
                        min: 0,
                        max: size.max,
                    }),
                )
            }
            // The joined string: every element at its largest, and the separators between.
            ("join", Some(t), 0 | 1) => {
                let list = self.size(t);
                let mut size = list.multiply(Estimate {
                    min: 0,
                    max: self.element_size(t),
                });
                if let Some(separator) = args.first() {
                    let separators = Estimate {
                        min: list.min.saturating_sub(1),
                        max: list.max.saturating_sub(1),
                    };
                    size = size.add(self.size(separator).multiply(separators));
                }
                (size.factor(STRING_TRAVERSAL).add(args_sum), Some(size))
            }
            ("url", None, 1) => {
                let size = self.size(&args[0]);
                (size.factor(STRING_TRAVERSAL).add(args_sum), Some(size))
            }
            // Upstream's `EstimateCallCost` prices `cidr`, `isIP`, `isCIDR`, `ip`,
            // `ip.isCanonical`, `quantity` and `isQuantity` only when called on a target, which
            // they never are: estimated, each costs one (the runtime charges what it parses).
            // Comparing two addresses of 4 or 16 bytes; a CIDR's is masked and traversed once
            // more, plus one; a string operand is parsed first.
            ("containsIP" | "containsCIDR", Some(_), 1) => {
                let address = Estimate { min: 4, max: 16 };
                let mut cost = address.add(address).factor(STRING_TRAVERSAL);
                if call.func_name == "containsCIDR" {
                    cost = cost.add(address.factor(STRING_TRAVERSAL)).add(one);
                }
                if type_of(&args[0]) == Type::String {
                    cost = cost.add(self.size(&args[0]).factor(STRING_TRAVERSAL));
                }
                (cost.add(args_sum), None)
            }
            // A named format's check, priced as a regular expression of the longest pattern a
            // format may have (`MaxNameFormatRegexSize`).
            ("validate", Some(_), 1) => (
                self.size(&args[0])
                    .factor(STRING_TRAVERSAL)
                    .factor(MAX_FORMAT_REGEX as f64 * REGEX_LENGTH)
                    .add(args_sum),
                None,
            ),
            ("sets.contains" | "sets.equivalent" | "sets.intersects", None, 2) => (
                self.size(&args[0])
                    .multiply(self.size(&args[1]))
                    .add(args_sum),
                None,
            ),
            _ => (one.add(args_sum), None),
        }
    }

    /// A call of the lists extension that compares `list`'s elements with each other: twice the
    /// square of its length, a tenth more when `texts` says strings' comparisons count
    /// (`sort`, not `distinct`), with its result list. Upstream gives the result the squared
    /// size too.
    fn self_compared(
        &self,
        list: &IdedExpr,
        texts: bool,
        args_sum: Estimate,
    ) -> (Estimate, Option<Estimate>) {
        let size = self.size(list);
        let squared = size.multiply(size);
        let mut factor = 2.0;
        if texts
            && let Type::List(element) = self.checked.type_of(list.id)
            && matches!(*element, Type::String | Type::Bytes)
        {
            factor += STRING_TRAVERSAL;
        }
        (allocating(squared, factor).add(args_sum), Some(squared))
    }

    /// What `==` of two values of one of Kubernetes' library types costs, if they are (k8s
    /// library/cost.go `EstimateCallCost`): one for addresses, quantities, versions and the
    /// authorizer's values; a URL's size at 0.1 (upstream reads the right side's size for
    /// both). Upstream prices `!=` of them as any comparison.
    fn library_equality(&self, left: &IdedExpr, right: &IdedExpr) -> Option<Estimate> {
        let Type::Opaque(name, _) = self.checked.type_of(left.id) else {
            return None;
        };
        if !matches!(self.checked.type_of(right.id), Type::Opaque(other, _) if other == name) {
            return None;
        }
        match name {
            "net.IP" | "net.CIDR" | "kubernetes.Quantity" | "kubernetes.Semver" => {
                Some(Estimate::exact(1))
            }
            authz if authz.starts_with("kubernetes.authorization.") => Some(Estimate::exact(1)),
            "kubernetes.URL" => Some(
                Estimate {
                    min: 1,
                    max: self.size(right).max,
                }
                .factor(STRING_TRAVERSAL),
            ),
            _ => None,
        }
    }

    /// The most elements (characters, items) an element of the list `list` has, as declared.
    fn element_size(&self, list: &IdedExpr) -> u64 {
        self.checked
            .decls
            .get(&list.id)
            .and_then(|d| d.element())
            .map_or(Estimate::UNKNOWN.max, |d| d.max_elements)
    }

    /// The cost of comparing two values: their shorter size, traversed.
    fn compare(&self, left: &IdedExpr, right: &IdedExpr) -> Estimate {
        let smallest = self.size(left).max.min(self.size(right).max);
        Estimate {
            min: u64::from(smallest > 0),
            max: smallest,
        }
        .factor(STRING_TRAVERSAL)
    }
}

/// Whether `expr` calls `flatten` anywhere.
fn flattens(expr: &IdedExpr) -> bool {
    let mut found = false;
    crate::syntax::visit(expr, &mut |e| {
        found |= matches!(&e.expr, Expr::Call(c) if c.func_name == "flatten");
    });
    found
}

/// A call that allocates a list of `size` elements at `factor` each: the elements, the call
/// (1) and the list's creation (10) (cel-go's `estimateAllocatingListCall`).
fn allocating(size: Estimate, factor: f64) -> Estimate {
    size.factor(factor).add(Estimate::exact(1 + LIST_CREATE))
}

/// The value of an integer literal that is not negative (cel-go's `nodeAsUintValue`).
fn uint_literal(expr: &IdedExpr) -> Option<u64> {
    match &expr.expr {
        Expr::Literal(LiteralValue::Int(n)) => u64::try_from(*n.inner()).ok(),
        Expr::Literal(LiteralValue::UInt(n)) => Some(*n.inner()),
        _ => None,
    }
}

/// Whether values of `t` have a fixed size (cel-go's `isScalar`).
fn scalar(t: &Type) -> bool {
    match t {
        Type::Bool | Type::Double | Type::Duration | Type::Int | Type::Timestamp | Type::Uint => {
            true
        }
        Type::Opaque(crate::types::OPTIONAL, params) => params.first().is_some_and(scalar),
        _ => false,
    }
}
