//! JSON Patch (RFC 6902): parsing a patch document into operations and applying them in order
//! to a JSON value, with RFC 6901 pointers (`~0`/`~1` escapes, `-` for the end of an array).
//!
//! A document that is not a JSON array of objects is malformed (upstream answers 400); anything
//! that goes wrong while applying, including a malformed single operation, a missing path and a
//! failed `test`, is an application error (upstream answers 422).

use serde_json::{Map, Value};

use crate::server::objects::go_text;

/// Upstream's cap on the operations of one patch (more is 413).
pub(crate) const MAX_OPERATIONS: usize = 10_000;

/// Upstream's cap on how much one patch's `copy` operations may add, counted as the JSON size
/// of each copied value (`JSONPatchMaxCopyBytes`, 3 MiB). Without it a short patch that copies
/// a member into itself over and over doubles the document each time.
pub(crate) const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Why a JSON patch could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JsonPatchError {
    /// The document is not a JSON array of objects.
    #[error("{0}")]
    Malformed(String),
    /// More operations than [`MAX_OPERATIONS`].
    #[error("The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {0}")]
    TooManyOperations(usize),
    /// An operation could not be applied.
    #[error("{0}")]
    Apply(String),
}

fn apply_err(message: impl Into<String>) -> JsonPatchError {
    JsonPatchError::Apply(message.into())
}

/// One parsed operation. Fields are checked when the operation is applied, as upstream does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Operation(Map<String, Value>);

/// Parses a patch document: a JSON array of operation objects.
pub(crate) fn parse(body: &[u8]) -> Result<Vec<Operation>, JsonPatchError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| JsonPatchError::Malformed(format!("error decoding patch: {e}")))?;
    let Value::Array(items) = value else {
        return Err(JsonPatchError::Malformed(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch".to_owned(),
        ));
    };
    if items.len() > MAX_OPERATIONS {
        return Err(JsonPatchError::TooManyOperations(items.len()));
    }
    items
        .into_iter()
        .map(|item| match item {
            Value::Object(map) => Ok(Operation(map)),
            other => Err(JsonPatchError::Malformed(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                go_text::json_kind(&other)
            ))),
        })
        .collect()
}

impl Operation {
    fn op(&self) -> Result<&str, JsonPatchError> {
        self.0
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| apply_err("operation missing or has a non-string \"op\""))
    }

    fn pointer(&self, field: &str) -> Result<Vec<String>, JsonPatchError> {
        let text = self
            .0
            .get(field)
            .and_then(Value::as_str)
            .ok_or_else(|| apply_err(format!("operation missing \"{field}\" string")))?;
        parse_pointer(text)
    }

    fn value(&self, op: &str) -> Result<Value, JsonPatchError> {
        self.0
            .get("value")
            .cloned()
            .ok_or_else(|| apply_err(format!("{op} operation missing \"value\"")))
    }
}

/// Splits an RFC 6901 pointer into unescaped reference tokens.
pub(crate) fn parse_pointer(text: &str) -> Result<Vec<String>, JsonPatchError> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = text.strip_prefix('/') else {
        return Err(apply_err(format!(
            "JSON pointer {text:?} must be empty or start with '/'"
        )));
    };
    rest.split('/')
        .map(|token| {
            let mut out = String::with_capacity(token.len());
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => out.push('~'),
                    Some('1') => out.push('/'),
                    _ => {
                        return Err(apply_err(format!(
                            "JSON pointer {text:?} has an invalid '~' escape"
                        )));
                    }
                }
            }
            Ok(out)
        })
        .collect()
}

fn display(tokens: &[String]) -> String {
    tokens
        .iter()
        .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// An array index token: decimal digits without a leading zero (RFC 6901).
fn index(token: &str, len: usize, path: &[String]) -> Result<usize, JsonPatchError> {
    let valid = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    let parsed = if valid {
        token.parse::<usize>().ok()
    } else {
        None
    };
    match parsed {
        Some(i) if i < len => Ok(i),
        Some(_) => Err(apply_err(format!(
            "index out of bounds at {}",
            display(path)
        ))),
        None => Err(apply_err(format!(
            "invalid array index {token:?} at {}",
            display(path)
        ))),
    }
}

fn get<'a>(doc: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut current = doc;
    for token in path {
        current = match current {
            Value::Object(map) => map.get(token)?,
            Value::Array(items) => items.get(index(token, items.len(), path).ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

fn get_mut<'a>(doc: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut current = doc;
    for token in path {
        current = match current {
            Value::Object(map) => map.get_mut(token)?,
            Value::Array(items) => {
                let i = index(token, items.len(), path).ok()?;
                items.get_mut(i)?
            }
            _ => return None,
        };
    }
    Some(current)
}

/// The parent container of `path` and the last token; `None` for the root.
fn parent<'a>(
    doc: &'a mut Value,
    path: &'a [String],
    op: &str,
) -> Result<Option<(&'a mut Value, &'a str)>, JsonPatchError> {
    let Some((last, init)) = path.split_last() else {
        return Ok(None);
    };
    let container = get_mut(doc, init).ok_or_else(|| {
        apply_err(format!(
            "{op} operation does not apply: doc is missing path: {}",
            display(path)
        ))
    })?;
    Ok(Some((container, last)))
}

fn add(doc: &mut Value, path: &[String], value: Value) -> Result<(), JsonPatchError> {
    let Some((container, last)) = parent(doc, path, "add")? else {
        *doc = value;
        return Ok(());
    };
    match container {
        Value::Object(map) => {
            map.insert(last.to_owned(), value);
            Ok(())
        }
        Value::Array(items) => {
            if last == "-" {
                items.push(value);
                return Ok(());
            }
            // Inserting at `len` appends, so the bound is one past the last index.
            let i = index(last, items.len() + 1, path)?;
            items.insert(i, value);
            Ok(())
        }
        _ => Err(apply_err(format!(
            "add operation does not apply: doc is missing path: {}",
            display(path)
        ))),
    }
}

fn remove(doc: &mut Value, path: &[String]) -> Result<Value, JsonPatchError> {
    let missing = || {
        apply_err(format!(
            "remove operation does not apply: doc is missing path: {}",
            display(path)
        ))
    };
    let Some((container, last)) = parent(doc, path, "remove")? else {
        return Err(apply_err(
            "remove operation can not remove the whole document",
        ));
    };
    match container {
        Value::Object(map) => map.shift_remove(last).ok_or_else(missing),
        Value::Array(items) => {
            let i = index(last, items.len(), path)?;
            Ok(items.remove(i))
        }
        _ => Err(missing()),
    }
}

fn replace(doc: &mut Value, path: &[String], value: Value) -> Result<(), JsonPatchError> {
    let target = get_mut(doc, path).ok_or_else(|| {
        apply_err(format!(
            "replace operation does not apply: doc is missing key: {}",
            display(path)
        ))
    })?;
    *target = value;
    Ok(())
}

/// JSON equality with numbers compared by value, so `1` and `1.0` are equal (RFC 6902 §4.6).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// The length of `value` written as compact JSON, without writing it anywhere.
fn json_size(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// The value a `test` operation compares with. A missing member of an existing object reads as
/// `null`, as in upstream's JSON Patch library: `kube::runtime::finalizer` adds the first
/// finalizer after testing `/metadata/finalizers` against `null`. A missing parent, or an index
/// past the end of an array, fails the operation.
fn tested<'a>(doc: &'a Value, path: &[String]) -> Result<&'a Value, JsonPatchError> {
    static NULL: Value = Value::Null;
    if let Some(found) = get(doc, path) {
        return Ok(found);
    }
    let missing = || {
        apply_err(format!(
            "test operation does not apply: is missing path: {}",
            display(path)
        ))
    };
    let (_, init) = path.split_last().ok_or_else(missing)?;
    match get(doc, init) {
        Some(Value::Object(_)) => Ok(&NULL),
        _ => Err(missing()),
    }
}

/// Applies the operations in order; the first failure aborts and leaves `doc` unspecified.
pub(crate) fn apply(doc: &mut Value, operations: &[Operation]) -> Result<(), JsonPatchError> {
    let mut copied = 0usize;
    for operation in operations {
        let op = operation.op()?;
        match op {
            "add" => add(doc, &operation.pointer("path")?, operation.value(op)?)?,
            "remove" => {
                remove(doc, &operation.pointer("path")?)?;
            }
            "replace" => replace(doc, &operation.pointer("path")?, operation.value(op)?)?,
            "move" => {
                let from = operation.pointer("from")?;
                let path = operation.pointer("path")?;
                if from == path {
                    if get(doc, &from).is_none() {
                        return Err(apply_err(format!(
                            "move operation does not apply: doc is missing from path: {}",
                            display(&from)
                        )));
                    }
                    continue;
                }
                if path.len() > from.len() && path.starts_with(&from) {
                    return Err(apply_err(format!(
                        "move operation can not move {} into its own child {}",
                        display(&from),
                        display(&path)
                    )));
                }
                let value = remove(doc, &from)?;
                add(doc, &path, value)?;
            }
            "copy" => {
                let from = operation.pointer("from")?;
                let path = operation.pointer("path")?;
                let source = get(doc, &from).ok_or_else(|| {
                    apply_err(format!(
                        "copy operation does not apply: doc is missing from path: {}",
                        display(&from)
                    ))
                })?;
                // Counted before the clone, so an oversized copy never allocates.
                copied = copied.saturating_add(json_size(source));
                if copied > MAX_COPY_BYTES {
                    return Err(apply_err(format!(
                        "Unable to complete the copy, the accumulated size increase of copy is \
                         {copied}, exceeding the limit {MAX_COPY_BYTES}"
                    )));
                }
                add(doc, &path, source.clone())?;
            }
            "test" => {
                let path = operation.pointer("path")?;
                let want = operation.value(op)?;
                if !json_equal(tested(doc, &path)?, &want) {
                    return Err(apply_err(format!(
                        "testing value {} failed: test failed",
                        display(&path)
                    )));
                }
            }
            other => return Err(apply_err(format!("Unexpected kind: {other}"))),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn run(doc: Value, patch: Value) -> Result<Value, JsonPatchError> {
        let ops = parse(&serde_json::to_vec(&patch).unwrap())?;
        let mut doc = doc;
        apply(&mut doc, &ops)?;
        Ok(doc)
    }

    /// RFC 6902 Appendix A: (document, patch, result or `None` for an error).
    fn rfc_examples() -> Vec<(&'static str, Value, Value, Option<Value>)> {
        vec![
            (
                "A.1 add object member",
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/baz", "value": "qux"}]),
                Some(json!({"baz": "qux", "foo": "bar"})),
            ),
            (
                "A.2 add array element",
                json!({"foo": ["bar", "baz"]}),
                json!([{"op": "add", "path": "/foo/1", "value": "qux"}]),
                Some(json!({"foo": ["bar", "qux", "baz"]})),
            ),
            (
                "A.3 remove object member",
                json!({"baz": "qux", "foo": "bar"}),
                json!([{"op": "remove", "path": "/baz"}]),
                Some(json!({"foo": "bar"})),
            ),
            (
                "A.4 remove array element",
                json!({"foo": ["bar", "qux", "baz"]}),
                json!([{"op": "remove", "path": "/foo/1"}]),
                Some(json!({"foo": ["bar", "baz"]})),
            ),
            (
                "A.5 replace value",
                json!({"baz": "qux", "foo": "bar"}),
                json!([{"op": "replace", "path": "/baz", "value": "boo"}]),
                Some(json!({"baz": "boo", "foo": "bar"})),
            ),
            (
                "A.6 move value",
                json!({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}),
                json!([{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]),
                Some(json!({"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}})),
            ),
            (
                "A.7 move array element",
                json!({"foo": ["all", "grass", "cows", "eat"]}),
                json!([{"op": "move", "from": "/foo/1", "path": "/foo/3"}]),
                Some(json!({"foo": ["all", "cows", "eat", "grass"]})),
            ),
            (
                "A.8 test success",
                json!({"baz": "qux", "foo": ["a", 2, "c"]}),
                json!([
                    {"op": "test", "path": "/baz", "value": "qux"},
                    {"op": "test", "path": "/foo/1", "value": 2}
                ]),
                Some(json!({"baz": "qux", "foo": ["a", 2, "c"]})),
            ),
            (
                "A.9 test error",
                json!({"baz": "qux"}),
                json!([{"op": "test", "path": "/baz", "value": "bar"}]),
                None,
            ),
            (
                "A.10 add nested member object",
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/child", "value": {"grandchild": {}}}]),
                Some(json!({"foo": "bar", "child": {"grandchild": {}}})),
            ),
            (
                "A.11 ignore unrecognized elements",
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}]),
                Some(json!({"foo": "bar", "baz": "qux"})),
            ),
            (
                "A.12 add to nonexistent target",
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/baz/bat", "value": "qux"}]),
                None,
            ),
            (
                "A.14 ~ escape ordering",
                json!({"/": 9, "~1": 10}),
                json!([{"op": "test", "path": "/~01", "value": 10}]),
                Some(json!({"/": 9, "~1": 10})),
            ),
            (
                "A.15 comparing strings and numbers",
                json!({"/": 9, "~1": 10}),
                json!([{"op": "test", "path": "/~01", "value": "10"}]),
                None,
            ),
            (
                "A.16 add array value",
                json!({"foo": ["bar"]}),
                json!([{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}]),
                Some(json!({"foo": ["bar", ["abc", "def"]]})),
            ),
        ]
    }

    #[test]
    fn rfc_6902_appendix_examples() {
        for (name, doc, patch, want) in rfc_examples() {
            let got = run(doc, patch);
            match want {
                Some(want) => assert_eq!(got.as_ref().ok(), Some(&want), "{name}: {got:?}"),
                None => assert!(
                    matches!(got, Err(JsonPatchError::Apply(_))),
                    "{name}: {got:?}"
                ),
            }
        }
    }

    #[test]
    fn malformed_documents_and_bad_operations() {
        assert!(matches!(parse(b"{}"), Err(JsonPatchError::Malformed(_))));
        assert!(matches!(parse(b"[1]"), Err(JsonPatchError::Malformed(_))));
        assert!(matches!(parse(b"[{"), Err(JsonPatchError::Malformed(_))));
        let many = serde_json::to_vec(&vec![json!({"op": "test"}); MAX_OPERATIONS + 1]).unwrap();
        assert_eq!(
            parse(&many),
            Err(JsonPatchError::TooManyOperations(MAX_OPERATIONS + 1))
        );
        let cases = [
            json!([{"op": "frobnicate", "path": "/a"}]),
            json!([{"path": "/a"}]),
            json!([{"op": "add", "path": "/a"}]),
            json!([{"op": "add", "path": "a", "value": 1}]),
            json!([{"op": "remove", "path": "/missing"}]),
            json!([{"op": "replace", "path": "/missing", "value": 1}]),
            json!([{"op": "remove", "path": "/list/01"}]),
            json!([{"op": "remove", "path": "/list/-1"}]),
            json!([{"op": "add", "path": "/list/3", "value": 1}]),
            json!([{"op": "move", "from": "/obj", "path": "/obj/child"}]),
            json!([{"op": "copy", "from": "/missing", "path": "/b"}]),
            json!([{"op": "test", "path": "/missing", "value": 1}]),
            json!([{"op": "test", "path": "/missing/deeper", "value": null}]),
            json!([{"op": "test", "path": "/list/2", "value": null}]),
            json!([{"op": "add", "path": "/a~2", "value": 1}]),
        ];
        for patch in cases {
            let got = run(json!({"list": [1, 2], "obj": {}}), patch.clone());
            assert!(
                matches!(got, Err(JsonPatchError::Apply(_))),
                "{patch}: {got:?}"
            );
        }
    }

    #[test]
    fn pointers_root_and_numbers() {
        assert_eq!(parse_pointer("/a~1b/~0c").unwrap(), ["a/b", "~c"]);
        assert_eq!(parse_pointer("").unwrap(), Vec::<String>::new());
        assert_eq!(
            run(
                json!({"a": 1}),
                json!([{"op": "replace", "path": "", "value": [1]}])
            )
            .unwrap(),
            json!([1])
        );
        assert_eq!(
            run(
                json!({"n": 1}),
                json!([{"op": "test", "path": "/n", "value": 1.0}])
            )
            .unwrap(),
            json!({"n": 1})
        );
        assert_eq!(
            run(
                json!({"a": {"b": 1}}),
                json!([{"op": "copy", "from": "/a", "path": "/c"}, {"op": "replace", "path": "/c/b", "value": 2}])
            )
            .unwrap(),
            json!({"a": {"b": 1}, "c": {"b": 2}})
        );
    }

    /// What `kube::runtime::finalizer` sends to add the first finalizer: a `test` of `null` on
    /// a member the object does not have, then an `add` (upstream's library reads the missing
    /// member as null).
    #[test]
    fn a_missing_member_tests_as_null() {
        let finalizer = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/cleanup"]}
        ]);
        assert_eq!(
            run(json!({"metadata": {"name": "a"}}), finalizer.clone()).unwrap(),
            json!({"metadata": {"name": "a", "finalizers": ["example.com/cleanup"]}})
        );
        // Present members compare as before: an explicit null passes, a list does not.
        assert!(run(json!({"metadata": {"finalizers": null}}), finalizer.clone()).is_ok());
        let taken = run(json!({"metadata": {"finalizers": ["x"]}}), finalizer);
        assert_eq!(
            taken,
            Err(JsonPatchError::Apply(
                "testing value /metadata/finalizers failed: test failed".to_owned()
            ))
        );
        assert_eq!(
            run(
                json!({}),
                json!([{"op": "test", "path": "/metadata/finalizers", "value": null}])
            ),
            Err(JsonPatchError::Apply(
                "test operation does not apply: is missing path: /metadata/finalizers".to_owned()
            ))
        );
    }

    /// A short patch that copies an array into itself 25 times would double the document 25
    /// times (a 1.6 KB patch grew a server to 24 GB); the copies stop at upstream's 3 MiB.
    #[test]
    fn copies_are_bounded_by_their_accumulated_size() {
        let doubling: Vec<Value> = (0..25)
            .map(|_| json!({"op": "copy", "from": "/a", "path": "/a/-"}))
            .collect();
        let got = run(json!({"a": ["x".repeat(64)]}), Value::Array(doubling));
        let Err(JsonPatchError::Apply(message)) = got else {
            panic!("the doubling patch must fail: {got:?}");
        };
        assert!(
            message.starts_with(
                "Unable to complete the copy, the accumulated size increase of copy is "
            ) && message.ends_with(&format!("exceeding the limit {MAX_COPY_BYTES}")),
            "{message}"
        );
        // Copies below the limit, however many, are applied.
        let small: Vec<Value> = (0..1000)
            .map(|i| json!({"op": "copy", "from": "/a", "path": format!("/c{i}")}))
            .collect();
        let done = run(json!({"a": "x".repeat(1000)}), Value::Array(small)).unwrap();
        assert_eq!(done.as_object().unwrap().len(), 1001);
        assert_eq!(json_size(&json!({"a": [1, "b"]})), 13);
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-z]{0,4}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-z~/]{1,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn escape(key: &str) -> String {
        key.replace('~', "~0").replace('/', "~1")
    }

    proptest! {
        #[test]
        fn add_then_remove_restores_and_test_sees_the_value(
            doc in prop::collection::btree_map("[a-z~/]{1,3}", json_value(), 0..4),
            key in "[a-z~/]{1,3}",
            value in json_value(),
        ) {
            let doc = Value::Object(doc.into_iter().collect());
            prop_assume!(doc.get(&key).is_none());
            let path = format!("/{}", escape(&key));
            let added = run(doc.clone(), json!([
                {"op": "add", "path": path, "value": value},
                {"op": "test", "path": path, "value": value},
            ])).unwrap();
            prop_assert_eq!(added.get(&key), Some(&value));
            let removed = run(added, json!([{"op": "remove", "path": path}])).unwrap();
            prop_assert_eq!(removed, doc);
        }

        #[test]
        fn move_is_copy_then_remove(
            doc in prop::collection::btree_map("[a-z]{1,3}", json_value(), 1..5),
            to in "[A-Z]{1,3}",
        ) {
            let doc = Value::Object(doc.into_iter().collect());
            let from = doc.as_object().and_then(|m| m.keys().next().cloned()).unwrap();
            let moved = run(doc.clone(), json!([{"op": "move", "from": format!("/{from}"), "path": format!("/{to}")}])).unwrap();
            let copied = run(doc, json!([
                {"op": "copy", "from": format!("/{from}"), "path": format!("/{to}")},
                {"op": "remove", "path": format!("/{from}")},
            ])).unwrap();
            prop_assert_eq!(moved, copied);
        }
    }
}
