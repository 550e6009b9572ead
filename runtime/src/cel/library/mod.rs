//! Kubernetes' CEL libraries, one module per upstream library, each registering its overloads
//! on the environment. A function works on the crate's [`cel::Value`]s through
//! `value_overload!`, which converts its arguments and result; it charges the cost of the
//! sizes it traverses to the running evaluation.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/` (`lists.go`, `regex.go`, `urls.go`,
//! `quantity.go`, `ip.go`, `cidr.go`, `format.go`, `authz.go`, `semverlib.go`), cel-go's `ext/sets.go` and `environment/base.go` (which libraries the
//! environment has).

pub mod authz;
mod cidr;
mod format;
mod ip;
mod lists;
mod quantity;
mod regex;
mod semver;
mod sets;
mod urls;

use cel::{Env, ExecutionError, Value};

/// The functions the libraries declare, as CEL calls them (with `format`'s constants and the
/// authorization library's functions, the whole list is [`declares`]). The checker's crate
/// owns the names, which the derive's compile-time check reads too.
pub use kapi_cel_check::names::LIBRARY_FUNCTIONS as FUNCTIONS;

/// Whether a library declares the function `name` (as CEL calls it).
pub fn declares(name: &str) -> bool {
    kapi_cel_check::names::library_declares(name)
}

/// Wraps `fn(&[Value]) -> Result<Value, ExecutionError>` as an overload of the crate.
macro_rules! value_overload {
    ($f:path) => {{
        fn wrapper<'b, 'v>(
            args: Vec<cel::common::value::CowVal<'b, 'v>>,
        ) -> Result<cel::common::value::CowVal<'b, 'v>, cel::ExecutionError> {
            let values = args
                .iter()
                .map(|a| cel::Value::try_from(a.as_ref()))
                .collect::<Result<Vec<_>, _>>()?;
            let out: cel::Value = $f(&values)?;
            let boxed: Box<dyn cel::common::value::Val> = out.try_into()?;
            Ok(cel::common::value::CowVal::from(boxed))
        }
        wrapper as cel::common::functions::Function
    }};
}
pub(crate) use value_overload;

/// Registers every library on `env`.
pub(super) fn register(env: &mut Env) {
    lists::register(env);
    regex::register(env);
    urls::register(env);
    // Before quantity: both have `compareTo` and the like, typed here on versions.
    semver::register(env);
    quantity::register(env);
    ip::register(env);
    cidr::register(env);
    sets::register(env);
    format::register(env);
    authz::register(env);
}

/// The argument at `i` as a string.
pub(crate) fn string_arg<'a>(
    function: &str,
    args: &'a [Value],
    i: usize,
) -> Result<&'a str, ExecutionError> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s.as_str()),
        _ => Err(ExecutionError::function_error(function, "no such overload")),
    }
}

/// The argument at `i` as a string the function traverses at `tenths` of a cost unit per
/// character, charged (Kubernetes' `library.CallCost`).
pub(crate) fn traversed_arg<'a>(
    function: &str,
    args: &'a [Value],
    i: usize,
    tenths: u64,
) -> Result<&'a str, ExecutionError> {
    let text = string_arg(function, args, i)?;
    crate::cel::cost::charge_text(text, tenths)?;
    Ok(text)
}

/// cel-go's error of a call with arguments it has no overload for.
pub(crate) fn no_overload(function: &str) -> ExecutionError {
    ExecutionError::function_error(function, "no such overload")
}

#[cfg(test)]
pub(crate) mod test_support {
    /// Evaluates `source` (with no variables) in the environment.
    pub(crate) fn eval(source: &str) -> Result<cel::Value, String> {
        let program = super::super::compile(source, &[]).map_err(|e| e.0)?;
        program
            .evaluate(&[], super::super::PER_CALL_LIMIT)
            .result
            .map_err(|e| format!("{e:?}"))
    }

    /// Asserts that each `(expression, expected)` pair evaluates to `true == expected`.
    pub(crate) fn assert_all(cases: &[(&str, bool)]) {
        for (source, want) in cases {
            assert_eq!(eval(source), Ok(cel::Value::Bool(*want)), "{source}");
        }
    }
}
