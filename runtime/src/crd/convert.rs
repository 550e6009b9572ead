//! Conversion between versions of one kind through a hub version.
//!
//! Each version is its own Rust type. One of them is the hub (usually the storage version);
//! every other version converts to and from it with `From` impls, so n versions need 2(n-1)
//! impls instead of n(n-1). [`Conversions`] turns those impls into JSON-to-JSON functions the
//! server applies to serve every version from the stored one.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::Resource;

/// Marks the version every other version of the kind converts through.
pub trait Hub: Resource {}

/// Converts `object` to the hub and back: for a lossless pair of `From` impls this gives the
/// object unchanged, which tests should assert.
pub fn round_trip<K, H>(object: K) -> K
where
    H: Hub + From<K>,
    K: From<H>,
{
    K::from(H::from(object))
}

type Step = fn(Value) -> Result<Value, serde_json::Error>;

/// JSON conversion between the versions of one kind, through hub `H`.
#[derive(Debug, Clone)]
pub struct Conversions<H> {
    /// Version name → (to hub, from hub).
    spokes: BTreeMap<String, (Step, Step)>,
    hub: std::marker::PhantomData<fn() -> H>,
}

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConversionError {
    /// The object or target names a version that is not registered.
    #[error("no conversion registered for version {0:?}")]
    UnknownVersion(String),
    /// The object has no `apiVersion`.
    #[error("object has no apiVersion")]
    NoApiVersion,
    /// The object does not decode as its version's type.
    #[error("object does not decode: {0}")]
    Decode(#[from] serde_json::Error),
}

fn to_hub<K, H>(value: Value) -> Result<Value, serde_json::Error>
where
    K: Resource,
    H: Hub + From<K>,
{
    serde_json::to_value(H::from(serde_json::from_value::<K>(value)?))
}

fn from_hub<K, H>(value: Value) -> Result<Value, serde_json::Error>
where
    K: Resource + From<H>,
    H: Hub,
{
    serde_json::to_value(K::from(serde_json::from_value::<H>(value)?))
}

fn identity(value: Value) -> Result<Value, serde_json::Error> {
    Ok(value)
}

impl<H: Hub> Default for Conversions<H> {
    fn default() -> Self {
        Self::new()
    }
}

impl<H: Hub> Conversions<H> {
    /// Conversions with only the hub registered.
    pub fn new() -> Self {
        let mut spokes = BTreeMap::new();
        spokes.insert(H::VERSION.to_owned(), (identity as Step, identity as Step));
        Self {
            spokes,
            hub: std::marker::PhantomData,
        }
    }

    /// Registers version `K`, converted through the hub by its `From` impls.
    pub fn spoke<K>(mut self) -> Self
    where
        K: Resource + From<H>,
        H: From<K>,
    {
        self.spokes.insert(
            K::VERSION.to_owned(),
            (to_hub::<K, H> as Step, from_hub::<K, H> as Step),
        );
        self
    }

    /// The registered version names.
    pub fn versions(&self) -> impl Iterator<Item = &str> {
        self.spokes.keys().map(String::as_str)
    }

    /// Converts `object` (any registered version, read from its `apiVersion`) to `to_version`.
    pub fn convert(&self, object: Value, to_version: &str) -> Result<Value, ConversionError> {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or(ConversionError::NoApiVersion)?;
        let from_version = api_version
            .rsplit('/')
            .next()
            .unwrap_or(api_version)
            .to_owned();
        if from_version == to_version {
            return Ok(object);
        }
        let (up, _) = self
            .spokes
            .get(&from_version)
            .ok_or_else(|| ConversionError::UnknownVersion(from_version.clone()))?;
        let (_, down) = self
            .spokes
            .get(to_version)
            .ok_or_else(|| ConversionError::UnknownVersion(to_version.to_owned()))?;
        Ok(down(up(object)?)?)
    }
}
