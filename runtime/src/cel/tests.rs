use super::*;

// Upstream: cel-go `checker/checker.go` reports an unknown name as
// `undeclared reference to '<name>' (in container '')` with the source snippet.
#[test]
fn compile_errors_read_as_cel_go_writes_them() {
    let error = compile("self.x == foo", &[SELF]).unwrap_err();
    assert_eq!(
        error.0,
        "ERROR: <input>:1:11: undeclared reference to 'foo' (in container '')\n | self.x == foo\n | ..........^"
    );
    let error = compile("self.x ==", &[SELF]).unwrap_err();
    assert!(error.0.starts_with("ERROR: <input>:1:"), "{}", error.0);
    assert!(error.0.contains("\n | self.x =="), "{}", error.0);
    let error = compile("self.nope()", &[SELF]).unwrap_err();
    assert!(
        error.0.contains("undeclared reference to 'nope'"),
        "{}",
        error.0
    );
    assert!(compile("self.all(x, x > 0) && has(self.y)", &[SELF]).is_ok());
    assert!(compile("oldSelf == self", &[SELF]).is_err());
}

#[test]
fn transition_rules_are_the_ones_that_mention_old_self() {
    assert!(
        compile("self == oldSelf", &[SELF, OLD_SELF])
            .unwrap()
            .uses_old_self()
    );
    assert!(
        !compile("self == 1", &[SELF, OLD_SELF])
            .unwrap()
            .uses_old_self()
    );
}

// Upstream: k8s.io/apiserver/pkg/apis/cel/config.go (`PerCallLimit`); cel-go stops an
// evaluation past its limit with `operation cancelled: actual cost limit exceeded`.
#[test]
fn an_evaluation_past_its_cost_limit_stops() {
    let program = compile(
        "self.all(x, self.all(y, self.all(z, x + y + z >= 0)))",
        &[SELF],
    )
    .unwrap();
    let list = cel::Value::List(std::sync::Arc::new((0..60).map(cel::Value::Int).collect()));
    let evaluated = program.evaluate(&[(SELF, list.clone())], PER_CALL_LIMIT);
    assert_eq!(evaluated.result, Err(EvalError::CostLimit));
    let small = compile("self.all(x, x >= 0)", &[SELF]).unwrap();
    let evaluated = small.evaluate(&[(SELF, list)], PER_CALL_LIMIT);
    assert_eq!(evaluated.result, Ok(cel::Value::Bool(true)));
    assert!(
        evaluated.cost > 60 && evaluated.cost < 10_000,
        "{}",
        evaluated.cost
    );
}

// cel-go's runtime cost charges the iterations that ran: a loop its condition stops at the
// first element costs 99 steps less than one that reaches the hundredth, and a loop cut short
// by the limit fails the call even where the rest of the expression would not need its value.
#[test]
fn loops_cost_the_iterations_they_ran() {
    let list = cel::Value::List(std::sync::Arc::new((0..100).map(cel::Value::Int).collect()));
    let cost = |rule: &str| {
        let evaluated = compile(rule, &[SELF])
            .unwrap()
            .evaluate(&[(SELF, list.clone())], PER_CALL_LIMIT);
        assert_eq!(evaluated.result, Ok(cel::Value::Bool(true)), "{rule}");
        evaluated.cost
    };
    // The same over a list the expression built and bound to a loop variable, which is
    // metered step by step.
    for (first, last) in [
        ("self.exists(x, x == 0)", "self.exists(x, x == 99)"),
        (
            "[self.map(x, x)].all(l, l.exists(x, x == 0))",
            "[self.map(x, x)].all(l, l.exists(x, x == 99))",
        ),
    ] {
        let (first, last) = (cost(first), cost(last));
        assert!(last > first && (last - first) % 99 == 0, "{first} {last}");
    }
    let cut = compile(
        "self.all(x, self.all(y, self.all(z, x + y + z >= 0))) || true",
        &[SELF],
    )
    .unwrap()
    .evaluate(&[(SELF, list)], PER_CALL_LIMIT);
    assert_eq!(cut.result, Err(EvalError::CostLimit));
    assert!(cut.cost > PER_CALL_LIMIT, "{}", cut.cost);
}

// A loop over a variable's list (shared, so held for a count) is metered by its range; one
// over what names an enclosing loop's variable (which may be a list the expression built, which
// the crate would copy whole to hand over) step by step.
#[test]
fn loops_over_an_enclosing_loops_variable_are_metered_step_by_step() {
    // The calls the rewrite put in, counted in the expression's debug form.
    let calls = |expr: &Expression, name: &str| {
        format!("{expr:?}")
            .matches(&format!("func_name: \"{name}\""))
            .count()
    };
    for (rule, by_range, by_step) in [
        ("self.all(x, self.exists(y, x == y))", 2, 0),
        ("[self.map(x, x)].all(l, l.exists(y, y == 1))", 2, 1),
        ("self.all(x, [x].exists(y, y == x))", 1, 1),
    ] {
        let program = compile(rule, &[SELF]).unwrap();
        let expression = &program.expression;
        assert_eq!(calls(expression, "@cost_range"), by_range, "{rule}");
        assert_eq!(calls(expression, "@cost"), by_step, "{rule}");
    }
}

#[test]
fn macros_keep_their_meaning_when_metered() {
    let cases = [
        ("[1, 2, 3].all(x, x > 0)", true),
        ("[1, 2, 3].exists(x, x > 2)", true),
        ("[1, 2, 3].exists_one(x, x > 2)", true),
        ("[1, 2, 3].filter(x, x > 1) == [2, 3]", true),
        ("[1, 2, 3].map(x, x * 2) == [2, 4, 6]", true),
        ("[1, 2, 3].map(x, x > 1, x * 2) == [4, 6]", true),
        ("[0, 1].all(x, 1 / x > 1)", false),
        // Negation of a value, not only of a literal (`-_`).
        ("[1].all(x, -x < 0)", true),
        ("{'a': 1}.all(k, k == 'a')", true),
        ("'a-b'.split('-') == ['a', 'b']", true),
        ("'Ab'.lowerAscii() == 'ab'", true),
        // Optional field selection (Kubernetes enables cel-go's optional syntax).
        ("{'a': 1}.?a.orValue(2) == 1", true),
        ("{'a': 1}.?b.orValue(2) == 2", true),
        ("!{'a': 1}.?b.hasValue()", true),
    ];
    let error = compile("[0, 1].all(x, 1 / x > 0)", &[]).unwrap();
    assert_eq!(
        error.evaluate(&[], PER_CALL_LIMIT).result,
        Err(EvalError::Failed("division by zero".to_owned()))
    );
    for (source, want) in cases {
        let program = compile(source, &[]).unwrap();
        assert_eq!(
            program.evaluate(&[], PER_CALL_LIMIT).result,
            Ok(cel::Value::Bool(want)),
            "{source}"
        );
    }
}

#[test]
fn shared_programs_are_compiled_once_per_source_and_variables() {
    let first = compile_shared("self.size() > 1", &["self"]).unwrap_or_else(|e| panic!("{e}"));
    let again = compile_shared("self.size() > 1", &["self"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(Arc::ptr_eq(&first, &again));
    // Other declared variables are another program: `object` is undeclared here.
    assert!(compile_shared("self.size() > 1", &["object"]).is_err());
    assert_eq!(
        compile_shared("object.x ==", &["object"]).err(),
        compile("object.x ==", &["object"]).err()
    );
}
