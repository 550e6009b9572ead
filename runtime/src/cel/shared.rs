//! Lists and maps of a rule's variables (`self`, admission's `object`, ...) that the
//! interpreter shares instead of copying.
//!
//! The `cel` crate owns what a comprehension binds: each step clones the element it visits into
//! the loop variable (`self.ports.all(p, ...)` clones every port), and its own lists and maps
//! clone entry by entry. A value built from the object under validation never changes while the
//! rules run, so [`Shared`] holds it behind an `Arc`: a clone is a count, whatever its size. It
//! is the crate's own list or map in every other respect: each operation is the inner value's,
//! and the interpreter sees it as that built-in (`as_builtin`), so functions that take a list
//! or a map, and equality with literals, treat it alike. Upstream's `UnstructuredToVal` shares
//! the object the same way, by wrapping it rather than converting it. Variables bound from the
//! crate's plain values ([`from_value`]) are shared alike.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::traits::{Adder, Container, Indexer, Iterable, Sizer, Zeroer};
use cel::common::types::{CelList, CelMap, CelMapKey, Type};
use cel::common::value::{Builtin, BuiltinRef, Val};

/// A list or map of the object under validation, shared between the clones the interpreter makes.
#[derive(Debug)]
pub(crate) struct Shared<T>(Arc<T>);

impl<T> Shared<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(Arc::new(value))
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

/// `Val` for a shared built-in: every operation the built-in's own; cloning shares it, and
/// taking it out of a box (to move an element out of a temporary) unwraps or copies it once.
macro_rules! shared_val {
    ($inner:ident) => {
        impl<'v> Val for Shared<$inner<'v>> {
            fn get_type(&self) -> &Type {
                self.0.get_type()
            }

            fn cel_type() -> &'static Type {
                <$inner<'v> as Val>::cel_type()
            }

            fn as_adder<'b, 'w>(&'b self) -> Option<&'b (dyn Adder + 'w)>
            where
                Self: 'w,
            {
                self.0.as_adder()
            }

            fn as_container(&self) -> Option<&dyn Container> {
                self.0.as_container()
            }

            fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn Indexer + 'w)>
            where
                Self: 'w,
            {
                self.0.as_indexer()
            }

            fn into_indexer<'w>(self: Box<Self>) -> Option<Box<dyn Indexer + 'w>>
            where
                Self: 'w,
            {
                Box::new(Arc::unwrap_or_clone(self.0)).into_indexer()
            }

            fn as_iterable<'b, 'w>(&'b self) -> Option<&'b (dyn Iterable + 'w)>
            where
                Self: 'w,
            {
                self.0.as_iterable()
            }

            fn as_sizer(&self) -> Option<&dyn Sizer> {
                self.0.as_sizer()
            }

            fn as_zeroer(&self) -> Option<&dyn Zeroer> {
                self.0.as_zeroer()
            }

            fn equals(&self, other: &dyn Val) -> bool {
                self.0.equals(other)
            }

            fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
            where
                Self: 'w,
            {
                Box::new(self.clone())
            }

            fn as_builtin<'b, 'w>(&'b self) -> BuiltinRef<'b, 'w>
            where
                Self: 'w,
            {
                self.0.as_builtin()
            }

            fn into_builtin<'w>(self: Box<Self>) -> Option<Builtin<'w>>
            where
                Self: 'w,
            {
                Box::new(Arc::unwrap_or_clone(self.0)).into_builtin()
            }
        }
    };
}

shared_val!(CelList);
shared_val!(CelMap);

/// `value` made the crate's own with its lists and maps shared, as [`super::value::to_val`]
/// makes an object's: a variable bound so is walked and indexed without copies, and a loop
/// over one of its lists takes the list (`cost::Metered`) for a count. Only a function value,
/// which no variable holds, has no such form.
pub(crate) fn from_value(value: cel::Value) -> Result<Box<dyn Val>, cel::ExecutionError> {
    match value {
        cel::Value::List(items) => {
            let items = Arc::unwrap_or_clone(items)
                .into_iter()
                .map(from_value)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Box::new(Shared::new(CelList::from(items))))
        }
        cel::Value::Map(map) => {
            let entries = Arc::unwrap_or_clone(map.map)
                .into_iter()
                .map(|(key, value)| Ok((key.into(), from_value(value)?)))
                .collect::<Result<HashMap<CelMapKey, _>, cel::ExecutionError>>()?;
            Ok(Box::new(Shared::new(CelMap::from(entries))))
        }
        other => other.try_into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::cel::value::{to_cel, to_val};
    use crate::cel::{Activation, PER_CALL_LIMIT, SELF, compile};

    // Shared lists and maps behave as the crate's own: equal to literals from either side,
    // found by `in`, sized, indexed, iterated, added to, and handed out as results.
    #[test]
    fn shared_values_are_the_crates_lists_and_maps() {
        let object = json!({"ports": [{"name": "http", "port": 80}], "tags": ["a", "b"]});
        for (rule, expected) in [
            ("self.ports[0] == {'name': 'http', 'port': 80}", true),
            ("{'name': 'http', 'port': 80} == self.ports[0]", true),
            ("{'name': 'http', 'port': 80} in self.ports", true),
            (
                "self.ports.exists(p, p.name == 'http' && 'port' in p)",
                true,
            ),
            ("self.tags + ['c'] == ['a', 'b', 'c']", true),
            ("size(self.ports) == 1 && self.tags.size() == 2", true),
            ("self.ports.map(p, p).all(p, p == self.ports[0])", true),
            ("self.tags == ['b', 'a']", false),
        ] {
            let program = compile(rule, &[SELF]).unwrap();
            let activation = Activation::of_vals(vec![(SELF, to_val(None, &object, false))]);
            let evaluated = program.evaluate_in(&activation, PER_CALL_LIMIT);
            assert_eq!(evaluated.result, Ok(cel::Value::Bool(expected)), "{rule}");
        }
        // A variable bound from the crate's plain values (as admission binds `object`) is
        // shared alike.
        let bound = to_cel(None, &object, false);
        for (rule, expected) in [
            (
                "self.ports.all(p, p.port == 80) && self.tags == ['a', 'b']",
                true,
            ),
            ("self.ports[0] == {'name': 'http', 'port': 80}", true),
            ("self.tags.map(t, t + t) == ['aa', 'bb']", true),
            ("self.tags.exists(t, t == 'c')", false),
        ] {
            let program = compile(rule, &[SELF]).unwrap();
            let evaluated = program.evaluate(&[(SELF, bound.clone())], PER_CALL_LIMIT);
            assert_eq!(evaluated.result, Ok(cel::Value::Bool(expected)), "{rule}");
        }
        let program = compile("self.ports[0]", &[SELF]).unwrap();
        let activation = Activation::of_vals(vec![(SELF, to_val(None, &object, false))]);
        let port = program.evaluate_in(&activation, PER_CALL_LIMIT).result;
        assert!(
            matches!(&port, Ok(cel::Value::Map(map)) if map.map.len() == 2),
            "{port:?}"
        );
    }
}
