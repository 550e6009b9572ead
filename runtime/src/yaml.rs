//! Objects as YAML for people (feature `yaml`): printed as `kubectl get -o yaml` prints them,
//! and read back from what people write.
//!
//! kubectl turns an object into YAML through a map, so its keys come out sorted at every level
//! (`apiVersion`, `data`, `kind`, `metadata`); [`to_string`] writes the same text, which makes
//! the output diff cleanly against kubectl's. Several objects are separate documents.
//!
//! ```
//! use kapi::meta::ObjectMeta;
//!
//! let meta = ObjectMeta { name: Some("web".into()), namespace: Some("prod".into()), ..Default::default() };
//! assert_eq!(kapi::yaml::to_string(&meta)?, "name: web\nnamespace: prod\n");
//! let read: ObjectMeta = kapi::yaml::from_str("name: web\nnamespace: prod\n")?;
//! assert_eq!(read, meta);
//! # Ok::<(), kapi::yaml::Error>(())
//! ```

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a value could not be written or read as YAML.
pub type Error = serde_yaml_ng::Error;

/// `value` as YAML, keys sorted as kubectl writes them.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, Error> {
    let mut tree = serde_json::to_value(value).map_err(<Error as serde::ser::Error>::custom)?;
    sort_keys(&mut tree);
    serde_yaml_ng::to_string(&tree)
}

/// Several values as YAML documents separated by `---`, as `kubectl get -o yaml` of several
/// objects given one by one.
pub fn to_string_all<'a, T, I>(values: I) -> Result<String, Error>
where
    T: Serialize + 'a,
    I: IntoIterator<Item = &'a T>,
{
    let mut out = String::new();
    for (i, value) in values.into_iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&to_string(value)?);
    }
    Ok(out)
}

/// A value from YAML text (one document).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    serde_yaml_ng::from_str(text)
}

/// Sorts every object's keys; the JSON tree keeps insertion order otherwise.
fn sort_keys(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.sort_keys();
            map.values_mut().for_each(sort_keys);
        }
        Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_level_and_documents_separated() {
        let config_map = json!({
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"namespace": "a", "name": "b"},
            "data": {"z": "1", "a": "2"},
            "list": [{"b": 1, "a": 2}],
        });
        let yaml = to_string(&config_map).unwrap();
        assert_eq!(
            yaml,
            "apiVersion: v1\ndata:\n  a: '2'\n  z: '1'\nkind: ConfigMap\nlist:\n- a: 2\n  b: 1\n\
             metadata:\n  name: b\n  namespace: a\n"
        );
        let both = to_string_all([&json!({"a": 1}), &json!({"b": 2})]).unwrap();
        assert_eq!(both, "a: 1\n---\nb: 2\n");
        let back: Value = from_str(&yaml).unwrap();
        assert_eq!(back, config_map);
        assert!(from_str::<Value>("a: [").is_err());
    }
}
