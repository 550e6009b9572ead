//! One policy evaluated for one binding and parameter object, as upstream's `validator.Validate`
//! (`policy/validating/validator.go`) with its CEL activation (`plugin/cel/activation.go`,
//! `composition.go`): the variables `object`, `oldObject`, `request`, `namespaceObject`,
//! `params` (declared only when the policy has a `paramKind`) and `variables` (the policy's
//! named expressions, each seeing those before it); then the match conditions, the
//! validations with their messages, and the audit annotations.
//!
//! Cost: each expression stops at upstream's `PerCallLimit`; the variables and validations of
//! one evaluation share `RuntimeCELCostBudget` (past it, the evaluation fails with upstream's
//! `validation failed due to running out of cost budget, no further validation rules will be
//! run`), and the audit annotations get a budget of their own, as upstream's.
//!
//! `authorizer` and `authorizer.requestResource` (upstream's authorization library, bound
//! by `admission::authorizer`) are there for every expression but the message expressions.

use std::collections::BTreeMap;
use std::sync::Arc;

use ::cel::Value as Cel;
use ::cel::objects::{Key, Map};

use super::config::Policy;
use crate::cel::{self, Activation, EvalError, PER_CALL_LIMIT, RUNTIME_COST_BUDGET};
use crate::server::admission::webhook::matching::conditions;

/// The upstream names of the variables every expression of a policy may read.
pub(super) const OBJECT: &str = "object";
pub(super) const OLD_OBJECT: &str = "oldObject";
pub(super) const REQUEST: &str = "request";
pub(super) const NAMESPACE_OBJECT: &str = "namespaceObject";
pub(super) const PARAMS: &str = "params";
pub(super) const VARIABLES: &str = "variables";
pub(super) const AUTHORIZER: &str = crate::server::admission::authorizer::AUTHORIZER;

/// The most bytes of an audit annotation's value kept (`maxAuditAnnotationValueLength`).
const MOST_ANNOTATION_BYTES: usize = 10 * 1024;

/// The message of an evaluation past its budget.
pub(super) const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// The names a policy's expressions are compiled with: `params` only with a `paramKind`;
/// `authorizer` but for message expressions.
pub(super) fn names(has_params: bool, authorizer: bool) -> Vec<&'static str> {
    let mut names = vec![OBJECT, OLD_OBJECT, REQUEST, NAMESPACE_OBJECT, VARIABLES];
    if has_params {
        names.push(PARAMS);
    }
    if authorizer {
        names.push(AUTHORIZER);
    }
    names
}

/// What the request gives every policy: the objects, the request and the namespace, as CEL
/// values.
pub(super) struct Inputs {
    pub(super) object: Cel,
    pub(super) old_object: Cel,
    pub(super) request: Cel,
    pub(super) namespace_object: Cel,
    /// `authorizer` and `authorizer.requestResource`.
    pub(super) authorizer: Vec<(&'static str, Cel)>,
}

/// A validation's verdict that is not an admission: a refusal (`reason` only for a failed
/// validation, not an error) with its message, or an error under `failurePolicy: Fail`, both
/// handled by the binding's validation actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Decision {
    /// The validation's index (0 for an error of the whole evaluation).
    pub(super) index: usize,
    pub(super) message: String,
    pub(super) reason: Option<String>,
}

/// What one evaluation found.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// The refusals, which the binding's actions route.
    pub(super) decisions: Vec<Decision>,
    /// The audit annotations published (key, value).
    pub(super) annotations: Vec<(String, String)>,
    /// Audit annotations that failed to evaluate under `failurePolicy: Fail`: refusals
    /// whatever the binding's actions.
    pub(super) annotation_errors: Vec<String>,
}

impl Outcome {
    fn failing(ignore: bool, message: String) -> Self {
        let mut outcome = Outcome::default();
        if !ignore {
            outcome.decisions.push(Decision {
                index: 0,
                message,
                reason: None,
            });
        }
        outcome
    }
}

/// The cost left to an evaluation.
pub(super) struct Budget(u64);

impl Budget {
    /// Runs `program` within the per-call limit and what is left; `Err` when the budget ran
    /// out (not the per-call limit, which is the expression's own error).
    pub(super) fn run(
        &mut self,
        program: &cel::Program,
        activation: &Activation,
    ) -> Result<Result<Cel, String>, ()> {
        let limit = PER_CALL_LIMIT.min(self.0);
        let evaluated = program.evaluate_in(activation, limit);
        if evaluated.cost > self.0
            || (evaluated.result == Err(EvalError::CostLimit) && limit < PER_CALL_LIMIT)
        {
            self.0 = 0;
            return Err(());
        }
        self.0 -= evaluated.cost;
        Ok(evaluated.result.map_err(|e| match e {
            EvalError::CostLimit => "operation cancelled: actual cost limit exceeded".to_owned(),
            EvalError::Failed(e) => e,
        }))
    }
}

/// What a policy's variables and match conditions leave for its own expressions: the
/// variables bound (`variables` among them), the variables that failed (with the error a read
/// of one reports) and the budget left.
pub(super) struct Prepared {
    pub(super) bound: Vec<(&'static str, Cel)>,
    pub(super) failed: BTreeMap<String, String>,
    pub(super) budget: Budget,
}

/// Whether a policy goes on to its own expressions.
pub(super) enum Prelude {
    Run(Prepared),
    /// A match condition is false: the policy does not apply.
    Skip,
    /// The budget ran out or a match condition failed: the message.
    Fail(String),
}

/// The start every policy's evaluation shares, as upstream's composited compiler and
/// `matchconditions.Matcher`: the request's variables and `params` bound, the policy's
/// `variables` evaluated in order (each seeing those before it) within `budget`, then its
/// match conditions.
pub(super) fn prepare(policy: &Policy, inputs: &Inputs, params: &Cel, budget: u64) -> Prelude {
    let spec = &policy.spec;
    let names = names(spec.param_kind.is_some(), true);
    let mut bound: Vec<(&'static str, Cel)> = vec![
        (OBJECT, inputs.object.clone()),
        (OLD_OBJECT, inputs.old_object.clone()),
        (REQUEST, inputs.request.clone()),
        (NAMESPACE_OBJECT, inputs.namespace_object.clone()),
        (PARAMS, params.clone()),
    ];
    bound.extend(inputs.authorizer.iter().cloned());
    let mut budget = Budget(budget);
    // Variables, each seeing those before it; a failure is kept to report where it is read.
    let mut values: BTreeMap<String, Cel> = BTreeMap::new();
    let mut failed: BTreeMap<String, String> = BTreeMap::new();
    for variable in &spec.variables {
        let mut with = bound.clone();
        with.push((VARIABLES, map_of(&values)));
        match cel::compile_shared(&variable.expression, &names) {
            Err(e) => {
                failed.insert(
                    variable.name.clone(),
                    format!(
                        "composited variable {:?} fails to compile: {e}",
                        variable.name
                    ),
                );
            }
            Ok(program) => match budget.run(&program, &Activation::new(&with)) {
                Err(()) => return Prelude::Fail(OUT_OF_BUDGET.to_owned()),
                Ok(Ok(value)) => {
                    values.insert(variable.name.clone(), value);
                }
                Ok(Err(e)) => {
                    failed.insert(
                        variable.name.clone(),
                        format!(
                            "composited variable {:?} fails to evaluate: {e}",
                            variable.name
                        ),
                    );
                }
            },
        }
    }
    bound.push((VARIABLES, map_of(&values)));

    if !spec.match_conditions.is_empty() {
        let activation = Activation::new(&bound);
        let expressions = spec.match_conditions.iter().map(|c| c.expression.as_str());
        match conditions(expressions, &activation, &names) {
            Ok(true) => {}
            Ok(false) => return Prelude::Skip,
            Err(message) => return Prelude::Fail(message),
        }
    }
    Prelude::Run(Prepared {
        bound,
        failed,
        budget,
    })
}

/// Evaluates `policy` with `params` (null for none).
pub(super) fn validate(policy: &Policy, inputs: &Inputs, params: &Cel) -> Outcome {
    validate_within(policy, inputs, params, RUNTIME_COST_BUDGET)
}

/// [`validate`] with a budget of `budget` (the runtime budget but in tests, as upstream's
/// `runtimeCELCostBudget` parameter).
fn validate_within(policy: &Policy, inputs: &Inputs, params: &Cel, budget: u64) -> Outcome {
    let spec = &policy.spec;
    let ignore = policy.ignores_failures();
    let names = names(spec.param_kind.is_some(), true);
    let total = budget;
    let Prepared {
        bound,
        failed,
        mut budget,
    } = match prepare(policy, inputs, params, total) {
        Prelude::Run(prepared) => prepared,
        Prelude::Skip => return Outcome::default(),
        Prelude::Fail(message) => return Outcome::failing(ignore, message),
    };
    let activation = Activation::new(&bound);

    let mut outcome = Outcome::default();
    let message_names = self::names(spec.param_kind.is_some(), false);
    for (index, validation) in spec.validations.iter().enumerate() {
        let expression = &validation.expression;
        let failure = |error: String| Decision {
            index,
            message: format!("expression '{expression}' resulted in error: {error}"),
            reason: None,
        };
        let program = match cel::compile_shared(expression, &names) {
            Ok(program) => program,
            Err(e) => {
                if !ignore {
                    outcome.decisions.push(Decision {
                        index,
                        message: format!("compilation error: compilation failed: {e}"),
                        reason: None,
                    });
                }
                continue;
            }
        };
        if let Some(error) = failed
            .iter()
            .find(|(name, _)| program.selects(VARIABLES, name))
            .map(|(_, e)| e.clone())
        {
            if !ignore {
                outcome.decisions.push(failure(error));
            }
            continue;
        }
        let value = match budget.run(&program, &activation) {
            Err(()) => return Outcome::failing(ignore, OUT_OF_BUDGET.to_owned()),
            Ok(Err(e)) => {
                if !ignore {
                    outcome.decisions.push(failure(e));
                }
                continue;
            }
            Ok(Ok(value)) => value,
        };
        if value == Cel::Bool(true) {
            continue;
        }
        let mut message = String::new();
        if !validation.message_expression.trim().is_empty()
            && let Ok(program) = cel::compile_shared(&validation.message_expression, &message_names)
        {
            match budget.run(&program, &activation) {
                Err(()) => {
                    if !ignore {
                        outcome.decisions.push(Decision {
                            index,
                            message: format!("failed messageExpression: {OUT_OF_BUDGET}"),
                            reason: None,
                        });
                    }
                    continue;
                }
                Ok(Ok(Cel::String(text))) => {
                    let text = text.trim();
                    if text.len() <= cel::MAX_MESSAGE_EXPRESSION_BYTES && !text.contains('\n') {
                        message = text.to_owned();
                    }
                }
                // A message expression that fails or gives no string falls back to the
                // message, as upstream's (which only logs it).
                Ok(_) => {}
            }
        }
        if message.is_empty() {
            message = validation.message.trim().to_owned();
        }
        if message.is_empty() {
            message = format!("failed expression: {}", expression.trim());
        }
        outcome.decisions.push(Decision {
            index,
            message,
            reason: Some(
                validation
                    .reason
                    .clone()
                    .unwrap_or_else(|| "Invalid".to_owned()),
            ),
        });
    }

    let mut budget = Budget(total);
    for annotation in &spec.audit_annotations {
        let source = annotation.value_expression.trim();
        let result = match cel::compile_shared(source, &names) {
            Err(e) => Err(format!("compilation error: compilation failed: {e}")),
            Ok(program) => match budget.run(&program, &activation) {
                Err(()) => Err(OUT_OF_BUDGET.to_owned()),
                Ok(Err(e)) => Err(format!("expression '{source}' resulted in error: {e}")),
                Ok(Ok(value)) => Ok(value),
            },
        };
        match result {
            Ok(Cel::String(text)) => {
                let text = text.trim();
                if !text.is_empty() {
                    outcome
                        .annotations
                        .push((annotation.key.clone(), truncated(text).to_owned()));
                }
            }
            Ok(Cel::Null) => {}
            Ok(other) => outcome.annotation_errors.push(format!(
                "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                annotation.value_expression,
                type_name(&other)
            )),
            Err(_) if ignore => {}
            Err(e) => outcome.annotation_errors.push(e),
        }
    }
    if ignore {
        outcome.annotation_errors.clear();
    }
    outcome
}

/// The first [`MOST_ANNOTATION_BYTES`] of `text`, cut at a character boundary.
fn truncated(text: &str) -> &str {
    if text.len() <= MOST_ANNOTATION_BYTES {
        return text;
    }
    let mut end = MOST_ANNOTATION_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The `variables` map.
fn map_of(values: &BTreeMap<String, Cel>) -> Cel {
    Cel::Map(Map {
        map: Arc::new(
            values
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), v.clone()))
                .collect(),
        ),
    })
}

/// cel-go's name of a value's type, as its errors print it.
fn type_name(value: &Cel) -> &'static str {
    match value {
        Cel::List(_) => "list",
        Cel::Map(_) => "map",
        Cel::Function(..) => "function",
        Cel::Int(_) => "int",
        Cel::UInt(_) => "uint",
        Cel::Float(_) => "double",
        Cel::String(_) => "string",
        Cel::Bytes(_) => "bytes",
        Cel::Bool(_) => "bool",
        Cel::Duration(_) => "google.protobuf.Duration",
        Cel::Timestamp(_) => "google.protobuf.Timestamp",
        Cel::Null => "null_type",
        Cel::Opaque(_) | Cel::Struct(_) => "object",
    }
}

#[cfg(test)]
mod tests;
