//! `List<T>`: the collection wrapper every kind shares, written as `<Kind>List`.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Resource;
use crate::meta::ListMeta;

/// A list of objects of one kind, as returned by a list request.
///
/// It serializes with `apiVersion` of the item kind, `kind: <Kind>List`, `metadata` and `items`
/// (always present, `[]` when empty). Reading ignores `apiVersion` and `kind`, as clients do.
#[derive(Debug, Clone, PartialEq)]
pub struct List<T> {
    /// Resource version, continue token and remaining item count of the list.
    pub metadata: ListMeta,
    /// The objects.
    pub items: Vec<T>,
}

impl<T> Default for List<T> {
    fn default() -> Self {
        Self {
            metadata: ListMeta::default(),
            items: Vec::new(),
        }
    }
}

impl<T: Resource> Serialize for List<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("List", 4)?;
        s.serialize_field("apiVersion", &T::api_version())?;
        s.serialize_field("kind", &format_args!("{}List", T::KIND))?;
        s.serialize_field("metadata", &self.metadata)?;
        s.serialize_field("items", &self.items)?;
        s.end()
    }
}

impl<'de, T: Resource> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor<T>(PhantomData<T>);

        impl<'de, T: Resource> Visitor<'de> for ListVisitor<T> {
            type Value = List<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a {}List object", T::KIND)
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<List<T>, A::Error> {
                let mut list = List::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match key.as_ref() {
                        "metadata" => list.metadata = map.next_value()?,
                        // `null` items is what Go writes for a nil slice in old servers.
                        "items" => list.items = map.next_value::<Option<_>>()?.unwrap_or_default(),
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(list)
            }
        }

        deserializer.deserialize_map(ListVisitor(PhantomData))
    }
}
