//! CEL, as kube-apiserver evaluates it for the `x-kubernetes-validations` rules of CRDs, on the
//! `cel` crate: one environment (the standard library, the crate's strings and lists
//! extensions, and Kubernetes' own libraries in [`library`]) built once per process, rules
//! compiled once per CRD version, and evaluated against a custom resource's values mapped to CEL
//! the way upstream maps them ([`value`]).
//!
//! - [`compile`] parses an expression and type-checks it ([`checker`], on the types of
//!   [`types`]; both, with [`estimate`], live in the `kapi-cel-check` crate, which the derive's
//!   compile-time check of rules shares, and are re-exported here), with cel-go's error text (`ERROR:
//!   <input>:1:1: undeclared reference to 'foo' (in container '')`, `found no matching
//!   overload for '_+_' applied to '(int, string)'`); [`compile_on`] types `self` and
//!   `oldSelf` by the rule's schema, so fields it does not declare are refused (`undefined
//!   field 'x'`). What is dynamic (`int-or-string`, unknown fields, untyped variables) is
//!   checked when the expression runs, as upstream does.
//! - [`Program::evaluate`] runs a rule with `self` (and `oldSelf`) bound, counting its cost:
//!   one unit per node of the expression plus, for every iteration of a comprehension, the
//!   size of the expression it evaluates, and the sizes Kubernetes' library functions charge.
//!   A call past [`PER_CALL_LIMIT`] stops with cel-go's `operation cancelled: actual cost limit
//!   exceeded`. Before it runs, [`estimate`] bounds what a program can cost on the largest
//!   values its schema allows ([`Program::estimated_cost`]), which CRD validation holds
//!   against upstream's limits.
//! - [`validation`] walks a structural schema and its object as upstream's
//!   `apiextensions-apiserver/pkg/apiserver/schema/cel` does, and reports failures as field
//!   causes.
//!
//! Upstream: `k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel` (`compilation.go`,
//! `validation.go`), `k8s.io/apiserver/pkg/cel` (`library/*.go`, `types.go`,
//! `environment/base.go`), `k8s.io/apiserver/pkg/apis/cel/config.go` (the limits).
//!
//! May import: `schema`, `meta`, `quantity`, `duration`, `validation` (its string formats);
//! nothing of the server.

pub mod admission;
#[cfg(test)]
mod checker_tests;
mod cost;
mod fields;
pub mod library;
pub mod mutation;
mod schema_node;
mod shared;
pub mod validation;
pub mod value;

/// The syntax-tree queries of the checker's crate, under the name the runtime's modules use.
use kapi_cel_check::syntax as check;
pub use kapi_cel_check::{checker, estimate, types};

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use cel::parser::Expression;
use cel::{Context, Env, ExecutionError};

pub use checker::Variable;
pub use cost::{PER_CALL_LIMIT, RUNTIME_COST_BUDGET};
pub use estimate::Estimate;
pub use kapi_cel_check::{CompileError, OLD_SELF, SELF};
pub use types::{Decl, Type};

/// The most bytes a `messageExpression` may produce (`MaxEvaluatedMessageExpressionSizeBytes`).
pub const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

static ENVIRONMENT: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(build_environment()));

fn build_environment() -> Env {
    let mut env = Env::stdlib();
    // Registration only fails on a name declared twice, which the tests of `library` rule out.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    library::register(&mut env);
    cost::register(&mut env);
    env
}

/// The environment every rule is compiled and evaluated in.
pub fn environment() -> Arc<Env> {
    Arc::clone(&ENVIRONMENT)
}

/// A compiled rule (or message expression).
pub struct Program {
    source: String,
    expression: Expression,
    /// How many nodes the expression has: the cost of evaluating it once, loops aside.
    nodes: u64,
    uses_old_self: bool,
    /// The fields the source selects directly on a variable (`claims.email`), kept from
    /// before selections became indexes (`fields`).
    selections: Vec<(String, String)>,
    /// The type the checker inferred for the result (dyn when it could not tell).
    result: Type,
    /// The least and most the program can cost, estimated before it runs.
    estimated: Estimate,
    /// The environment the program runs in: the shared one, or a mutation's (`mutation`),
    /// which adds the struct types its literals construct.
    env: Arc<Env>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("source", &self.source)
            .field("nodes", &self.nodes)
            .finish_non_exhaustive()
    }
}

/// Compiles `source` with the variables `variables` declared (`self`, and `oldSelf` for a
/// rule), each of unknown type.
pub fn compile(source: &str, variables: &[&str]) -> Result<Program, CompileError> {
    let variables: Vec<Variable> = variables.iter().map(|v| Variable::dyn_named(v)).collect();
    compile_typed(source, &variables)
}

/// Compiles `source` with `variables` declared with their types: a type error (`undefined
/// field 'x'`, `found no matching overload for ...`) is a compile error.
pub fn compile_typed(source: &str, variables: &[Variable]) -> Result<Program, CompileError> {
    let (expression, checked) = kapi_cel_check::check_source(source, variables, &[])?;
    let mut program = finish(source, expression, &checked, environment());
    // Every value bound in the shared environment is a map, never a struct (mutations'
    // literals are): selections the checker typed can be indexes.
    fields::index_selections(&mut program.expression, &checked);
    Ok(program)
}

/// How many programs [`compile_shared`] keeps; past it the cache starts over.
const SHARED_CAPACITY: usize = 1024;

/// A source with its declared variables, and what compiling them gave.
type SharedPrograms = HashMap<(String, Vec<String>), Result<Arc<Program>, CompileError>>;

/// The programs [`compile_shared`] compiled.
static SHARED: LazyLock<Mutex<SharedPrograms>> = LazyLock::new(Mutex::default);

/// [`compile`], once per source and variables for the whole process: admission policies and
/// webhooks' match conditions are read from the store at every write they may concern, and
/// their expressions, which change only with the objects, need not be compiled again each
/// time. The cache is bounded (1,024 entries, then emptied).
pub fn compile_shared(source: &str, variables: &[&str]) -> Result<Arc<Program>, CompileError> {
    let key = (
        source.to_owned(),
        variables
            .iter()
            .map(|v| (*v).to_owned())
            .collect::<Vec<_>>(),
    );
    let lock = || {
        SHARED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some(found) = lock().get(&key) {
        return found.clone();
    }
    let compiled = compile(source, variables).map(Arc::new);
    let mut cache = lock();
    if cache.len() >= SHARED_CAPACITY {
        cache.clear();
    }
    cache.insert(key, compiled.clone());
    compiled
}

/// [`compile`] for a rule on a schema node (`resource` when it is the root of a resource):
/// `self` and `oldSelf` are typed by the schema.
pub fn compile_on(
    source: &str,
    schema: &crate::schema::JSONSchemaProps,
    resource: bool,
) -> Result<Program, CompileError> {
    compile_declared(
        source,
        &Decl::of_schema(schema, resource, "selfType"),
        false,
    )
}

/// [`compile`] for a rule on values `decl` declares: `self` and `oldSelf` are of its type
/// (`oldSelf` an optional of it with `optionalOldSelf`).
pub fn compile_declared(
    source: &str,
    decl: &Arc<Decl>,
    optional_old_self: bool,
) -> Result<Program, CompileError> {
    compile_typed(
        source,
        &kapi_cel_check::rule_variables(decl, optional_old_self),
    )
}

/// A parsed and checked expression made a program running in `env`: its cost estimated, the
/// runtime cost meter put in.
fn finish(
    source: &str,
    mut expression: Expression,
    checked: &checker::Checked,
    env: Arc<Env>,
) -> Program {
    let (estimated, calls) = estimate::estimate_calls(&expression, checked);
    let uses_old_self = check::mentions(&expression, OLD_SELF);
    let selections = check::selections(&expression);
    let nodes = cost::instrument(&mut expression, &calls);
    Program {
        source: source.to_owned(),
        expression,
        nodes,
        uses_old_self,
        selections,
        result: checked.result.clone(),
        estimated,
        env,
    }
}

/// How an evaluation went wrong.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// The call went past [`PER_CALL_LIMIT`].
    CostLimit,
    /// Any other error, with cel-go's wording where it differs from the crate's.
    Failed(String),
}

/// A finished evaluation: the value and what it cost.
#[derive(Debug)]
pub struct Evaluated {
    /// The result, or why there is none.
    pub result: Result<cel::Value, EvalError>,
    /// The cost the evaluation used, up to where it stopped.
    pub cost: u64,
}

impl Program {
    /// The source the program was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The type of the program's result, as the checker inferred it (dyn when unknown).
    pub fn result_type(&self) -> &Type {
        &self.result
    }

    /// The least and most the program can cost (cel-go's `EstimateCost`).
    pub fn estimated_cost(&self) -> Estimate {
        self.estimated
    }

    /// Whether the rule mentions `oldSelf`, which makes it a transition rule.
    pub fn uses_old_self(&self) -> bool {
        self.uses_old_self
    }

    /// Whether the program selects `field` of the variable `variable` (`claims.email`).
    pub fn selects(&self, variable: &str, field: &str) -> bool {
        self.selections
            .iter()
            .any(|(v, f)| v == variable && f == field)
    }

    /// Runs the program with `variables` bound, stopping past `limit` cost units.
    pub fn evaluate(&self, variables: &[(&str, cel::Value)], limit: u64) -> Evaluated {
        self.evaluate_in(&Activation::in_env(Arc::clone(&self.env), variables), limit)
    }

    /// The environment the program runs in, which its activation must be bound in.
    pub fn env(&self) -> Arc<Env> {
        Arc::clone(&self.env)
    }

    /// Runs the program against variables bound once for several programs.
    pub fn evaluate_in(&self, activation: &Activation<'_>, limit: u64) -> Evaluated {
        let (result, cost) = cost::metered(limit, self.nodes, || {
            cel::Value::resolve(&self.expression, &activation.context)
        });
        // Past the limit, a metered loop ends early rather than failing, so whatever the
        // evaluation returned is not its value.
        let result = match result {
            _ if cost > limit => Err(EvalError::CostLimit),
            Ok(value) => Ok(value),
            Err(ExecutionError::FunctionError { message, .. }) if message == cost::EXCEEDED => {
                Err(EvalError::CostLimit)
            }
            Err(other) => Err(EvalError::Failed(cel_go_error(&other))),
        };
        Evaluated { result, cost }
    }
}

/// Variables bound (converted to the crate's values) once, for the rules of one node; they may
/// borrow what they were made of (`'v`).
pub struct Activation<'v> {
    context: Context<'v, 'v>,
}

impl std::fmt::Debug for Activation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Activation").finish_non_exhaustive()
    }
}

impl Activation<'static> {
    /// Binds `variables`.
    pub fn new(variables: &[(&str, cel::Value)]) -> Self {
        Self::in_env(environment(), variables)
    }

    /// Binds `variables` in `env` (a program's own, [`Program::env`]).
    pub fn in_env(env: Arc<Env>, variables: &[(&str, cel::Value)]) -> Self {
        let mut context = Context::with_env(env);
        for (name, value) in variables {
            // A function value has no form as a variable: left unbound, a rule naming it
            // fails to evaluate rather than the server.
            if let Ok(value) = shared::from_value(value.clone()) {
                context.add_variable_as_val(*name, value);
            }
        }
        Activation { context }
    }
}

impl<'v> Activation<'v> {
    /// Binds values already made the crate's own ([`value::to_val`]), in the shared
    /// environment.
    pub fn of_vals(variables: Vec<(&str, Box<dyn cel::common::value::Val + 'v>)>) -> Self {
        let mut context = Context::with_env(environment());
        for (name, value) in variables {
            context.add_variable_as_val(name, value);
        }
        Activation { context }
    }
}

/// cel-go's text for the errors rules meet at run time, which upstream puts in its messages
/// (`no such key: foo evaluating rule: ...`).
fn cel_go_error(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::NoSuchOverload(_) => "no such overload".to_owned(),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        ExecutionError::IndexOutOfBounds(index) => {
            format!("index out of bounds: {}", value::display(index))
        }
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
