//! The `apiVersion` and `kind` fields of a typed kind, as zero-sized values.
//!
//! A generated or derived kind struct carries `api_version: ApiVersion<Self>` and
//! `kind: Kind<Self>`. They take no space, are always written with the kind's constants, and read
//! back leniently: a missing value is fine (list items from a server omit them), a matching value
//! is fine, and a different value is an error, so a `Deployment` never silently decodes a `Pod`.
//! This keeps kind structs on plain `#[derive(Serialize, Deserialize)]` with no buffering.

use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Resource;

macro_rules! type_tag {
    ($(#[$doc:meta])* $name:ident, $field:literal, $expected:expr) => {
        $(#[$doc])*
        pub struct $name<K>(PhantomData<fn() -> K>);

        impl<K> Default for $name<K> {
            fn default() -> Self {
                Self(PhantomData)
            }
        }

        impl<K> Clone for $name<K> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<K> Copy for $name<K> {}

        impl<K> PartialEq for $name<K> {
            fn eq(&self, _: &Self) -> bool {
                true
            }
        }

        impl<K> Eq for $name<K> {}

        impl<K: Resource> fmt::Debug for $name<K> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*$expected, f)
            }
        }

        impl<K: Resource> Serialize for $name<K> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&$expected)
            }
        }

        impl<'de, K: Resource> Deserialize<'de> for $name<K> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                // `null` reads as absent, as Go reads an empty string.
                let found = Option::<std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                match found.as_deref() {
                    None | Some("") => Ok(Self::default()),
                    Some(value) if value == &*$expected => Ok(Self::default()),
                    Some(value) => Err(serde::de::Error::custom(format_args!(
                        "{} {:?} does not match the expected {:?}",
                        $field, value, &*$expected
                    ))),
                }
            }
        }
    };
}

type_tag!(
    /// The `apiVersion` field of kind `K`: always `K::api_version()`.
    ApiVersion,
    "apiVersion",
    K::api_version()
);

type_tag!(
    /// The `kind` field of kind `K`: always `K::KIND`.
    Kind,
    "kind",
    std::borrow::Cow::Borrowed(K::KIND)
);
