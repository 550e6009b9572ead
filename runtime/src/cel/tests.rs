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

// cel-go's `CostTracker.costCall` and Kubernetes' `library.CallCost` charge a call whose work
// grows with its operands by their sizes: a string of 100,000 characters costs 10,000 units to
// traverse (`StringTraversalCostFactor` 0.1), twice that where the result is built as well
// (`replace`, `split`), and `contains` and `matches` multiply their two operands' charges.
// Literals cost nothing; an identifier costs 1.
#[test]
fn calls_cost_the_sizes_of_their_operands() {
    let text = cel::Value::String(Arc::new("a".repeat(100_000)));
    let cost = |rule: &str| {
        let evaluated = compile(rule, &[SELF])
            .unwrap()
            .evaluate(&[(SELF, text.clone())], PER_CALL_LIMIT);
        assert!(evaluated.result.is_ok(), "{rule}: {:?}", evaluated.result);
        evaluated.cost
    };
    for (rule, want) in [
        // 1 for `self`, 10,000 for the traversal.
        ("self.lowerAscii()", 10_001),
        ("self.replace('a', 'b')", 20_001),
        ("self.split('a')", 20_001),
        ("bytes(self)", 10_001),
        // The substring's charge (1 unit) times the text's.
        ("self.contains('b')", 10_001),
        // (100,000 + 1) / 10 rounded up, times the pattern's 4 characters at 0.25.
        ("self.matches('^a+$')", 10_002),
        // The shorter side of a comparison, both sides of a concatenation.
        ("self == self", 10_002),
        ("self == 'a'", 2),
        ("self + 'a'", 10_002),
        ("self.startsWith('a')", 2),
        ("isURL(self)", 10_001),
        // A DNS label's check, as a pattern of 30 characters (8 units) over the text; the
        // `format` before the call counts as an identifier.
        (
            "format.dns1123Label().validate(self).hasValue()",
            80_008 + 4,
        ),
        ("strings.quote(self)", 10_002),
        // The joined string: two letters and one separator between them, at 0.2, beside the
        // list's creation (10) and `self`.
        ("['a', 'b'].join(self)", 20_001 + 10 + 1),
        // A size is not a traversal.
        ("self.size()", 2),
    ] {
        assert_eq!(cost(rule), want, "{rule}");
    }
    // A loop that traverses the string on every step reaches the limit within a hundred steps
    // rather than after a million traversals.
    let list = cel::Value::List(Arc::new((0..1_000).map(cel::Value::Int).collect()));
    let evaluated = compile(
        "list.all(i, text.contains('b') == false)",
        &["list", "text"],
    )
    .unwrap()
    .evaluate(&[("list", list), ("text", text.clone())], PER_CALL_LIMIT);
    assert_eq!(evaluated.result, Err(EvalError::CostLimit));
    assert!(
        evaluated.cost < PER_CALL_LIMIT + 20_000,
        "{}",
        evaluated.cost
    );
}

// cel-go ext/lists.go (version 3) `ProgramOptions`: a call of the lists extension pays for the
// list it creates (its elements, the call and the list: 11) and, when it compares the
// elements with each other, twice the square of their number (a tenth more for strings).
#[test]
fn list_functions_cost_what_they_create_and_compare() {
    let ints = |n: i64| cel::Value::List(Arc::new((0..n).map(cel::Value::Int).collect()));
    let words = cel::Value::List(Arc::new(
        (0..100)
            .map(|i| cel::Value::String(Arc::new(format!("w{i}"))))
            .collect(),
    ));
    let run = |rule: &str| {
        compile(rule, &["list", "words"]).unwrap().evaluate(
            &[("list", ints(500)), ("words", words.clone())],
            PER_CALL_LIMIT,
        )
    };
    let cost = |rule: &str| {
        let evaluated = run(rule);
        assert!(evaluated.result.is_ok(), "{rule}: {:?}", evaluated.result);
        evaluated.cost
    };
    for (rule, want) in [
        // `list` (1), then the call.
        ("list.reverse()", 1 + 500 + 11),
        // kapi charges the list `slice` walks, where cel-go charges the slice.
        ("list.slice(0, 2)", 1 + 500 + 11),
        ("list.flatten()", 1 + 500 + 11),
        ("list.flatten(3)", 1 + 1_500 + 11),
        // The qualifier `lists` counts as an identifier.
        ("lists.range(300)", 1 + 300 + 11),
        ("list.distinct()", 1 + 500_000 + 11),
        ("list.sort()", 1 + 500_000 + 11),
        ("words.sort()", 1 + 21_000 + 11),
        ("'abc'.reverse()", 1),
    ] {
        assert_eq!(cost(rule), want, "{rule}");
    }
    // Comparing ints costs nothing of their values, however large, dyn ones (measured) too.
    let big = cel::Value::Int(1_000_000_000);
    let compared = compile("a > b", &["a", "b"])
        .unwrap()
        .evaluate(&[("a", big.clone()), ("b", big)], PER_CALL_LIMIT);
    assert_eq!(
        (compared.result, compared.cost),
        (Ok(cel::Value::Bool(false)), 3)
    );
    // `sortBy` pays for comparing its keys, beside the loop that makes them.
    let sorted_by = cost("words.sortBy(w, w)");
    assert!((21_011..23_000).contains(&sorted_by), "{sorted_by}");
    // Calls on a flattened list, which the estimate sizes as the outer one, are measured; so is
    // `slice`, whose walk of the whole list the estimate of a short slice leaves out.
    let typed = |rule: &str, n: i64| {
        let schema: crate::schema::JSONSchemaProps = serde_json::from_value(serde_json::json!({
            "type": "array", "maxItems": 100000, "items": {"type": "integer"}
        }))
        .unwrap();
        let decl = Decl::of_schema(&schema, true, "selfType");
        compile_declared(rule, &decl, false)
            .unwrap()
            .evaluate(&[(SELF, ints(n))], PER_CALL_LIMIT)
    };
    for rule in [
        "[self].flatten().distinct().size() > 0",
        "self.all(i, i in [self].flatten())",
        "self.all(i, self.slice(0, 1).size() == 1)",
    ] {
        let evaluated = typed(rule, 3_000);
        assert_eq!(evaluated.result, Err(EvalError::CostLimit), "{rule}");
    }
    // Sorting a list twice the length is past the limit of one evaluation before it starts.
    let evaluated = compile("list.sort()", &["list"])
        .unwrap()
        .evaluate(&[("list", ints(1_000))], PER_CALL_LIMIT);
    assert_eq!(evaluated.result, Err(EvalError::CostLimit));
    assert!(
        evaluated.cost <= 2_000_012,
        "charged before sorting: {}",
        evaluated.cost
    );
    // A loop that creates a large list on every step stops at the limit.
    let evaluated = run("list.all(i, lists.range(100000).size() > 0)");
    assert_eq!(evaluated.result, Err(EvalError::CostLimit));
}

// The two operands of `contains` meet on a per-thread stack whichever the crate evaluates
// first; an evaluation whose error `||` absorbed leaves its operand there, which the next
// evaluation of the same call replaces (as cel-go's `refValStack` drops what is left above).
#[test]
fn an_operand_an_absorbed_error_left_waiting_is_replaced() {
    let text = cel::Value::String(Arc::new("a".repeat(100_000)));
    let program = compile(
        "[0, 1].all(i, (i == 0 ? self[0] : self).contains('b') == false || true)",
        &[SELF],
    )
    .unwrap();
    let evaluated = program.evaluate(&[(SELF, text)], PER_CALL_LIMIT);
    assert_eq!(evaluated.result, Ok(cel::Value::Bool(true)));
    // One traversal (the step that found the string), the nodes of two steps besides.
    assert!(
        (10_000..10_100).contains(&evaluated.cost),
        "{}",
        evaluated.cost
    );
}

// Operands an absorbed error left waiting do not stop later calls being charged, however
// many (the stack holds one entry per measured call of the program).
#[test]
fn operands_left_waiting_do_not_turn_charging_off() {
    let text = cel::Value::String(Arc::new("a".repeat(100_000)));
    let list = cel::Value::List(Arc::new((0..1_000).map(cel::Value::Int).collect()));
    let absorbed = "((self == (1 / zero == 1 ? 'a' : 'b')) || true) && ".repeat(80);
    let rule = format!("{absorbed}list.all(i, (self + self).size() > 0)");
    let evaluated = compile(&rule, &[SELF, "zero", "list"]).unwrap().evaluate(
        &[(SELF, text), ("zero", cel::Value::Int(0)), ("list", list)],
        PER_CALL_LIMIT,
    );
    assert_eq!(evaluated.result, Err(EvalError::CostLimit));
}

// A call the schema keeps small is charged as one node: measuring a comparison of two names
// of at most 63 characters (26 units as upstream estimates it, a string's `maxLength` times
// four bytes) would cost more than it bounds.
#[test]
fn calls_on_values_the_schema_keeps_small_are_not_measured() {
    let measured = |max_length: u64| {
        let schema: crate::schema::JSONSchemaProps = serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {"names": {"type": "array", "maxItems": 16, "items": {
                "type": "string", "maxLength": max_length,
            }}},
        }))
        .unwrap();
        let program = compile_on(
            "self.names.all(a, self.names.exists_one(b, a == b))",
            &schema,
            false,
        )
        .unwrap();
        format!("{:?}", program.expression).contains("@cost_operand")
    };
    assert!(!measured(63));
    assert!(measured(10_000));
    // Nothing bounds a policy's `object`, but a comparison with a short literal is as cheap as
    // the literal.
    let measured = |source: &str| {
        let program = compile(source, &["object"]).unwrap();
        format!("{:?}", program.expression).contains("@cost_operand")
    };
    assert!(!measured("object.metadata.name == 'web'"));
    assert!(!measured("1 != object.spec.replicas"));
    assert!(measured(
        "object.metadata.name == object.metadata.generateName"
    ));
    assert!(measured("object.metadata.name == 'web' + object.kind"));
}
