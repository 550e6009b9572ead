//! What upstream's strict YAML decoding says of an apply body: the mapping keys it repeats.
//! The body is walked once per repeat reported, with serde's YAML deserializer, so a repeat is
//! named by the line its key stands on.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// What upstream's strict YAML decoding (`yaml.UnmarshalStrict` into a map) says of an
/// apply body: its repeated mapping keys, `line N: key "k" already set in map` each, in
/// document order; JSON bodies go through the same YAML parser. `None` when none repeats.
pub(crate) fn strict_yaml_problem(body: &[u8]) -> Option<String> {
    let mut lines = Vec::new();
    // Each pass stops at the first repeat it has not reported yet.
    while lines.len() < MAX_STRICT_PROBLEMS {
        let found = RefCell::new(None);
        let seed = YamlNode {
            skip: lines.len(),
            seen: &Cell::new(0),
            found: &found,
        };
        match seed.deserialize(serde_yaml_ng::Deserializer::from_slice(body)) {
            Ok(()) => break,
            Err(error) => match (found.into_inner(), error.location()) {
                (Some(message), Some(at)) => lines.push(format!("line {}: {message}", at.line())),
                _ => break,
            },
        }
    }
    if lines.is_empty() {
        None
    } else {
        Some(format!(
            "error converting YAML to JSON: yaml: unmarshal errors:\n  {}",
            lines.join("\n  ")
        ))
    }
}

/// How many repeated keys [`strict_yaml_problem`] reports at most.
const MAX_STRICT_PROBLEMS: usize = 100;

/// A YAML node walked for repeated keys: `skip` repeats are already reported, `seen`
/// counts the repeats met so far, `found` gets the message of the one that stops the walk.
#[derive(Clone, Copy)]
struct YamlNode<'s> {
    skip: usize,
    seen: &'s Cell<usize>,
    found: &'s RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for YamlNode<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for YamlNode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = HashSet::new();
        while map
            .next_key_seed(YamlKey {
                node: self,
                keys: &mut keys,
            })?
            .is_some()
        {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

/// A mapping key, checked against the keys before it in its mapping.
struct YamlKey<'s, 'k> {
    node: YamlNode<'s>,
    keys: &'k mut HashSet<String>,
}

impl<'de> DeserializeSeed<'de> for YamlKey<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        // Read as text, so the error raised here carries the key's own position.
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for YamlKey<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<(), E> {
        if self.keys.insert(key.to_owned()) {
            return Ok(());
        }
        let seen = self.node.seen.get();
        self.node.seen.set(seen + 1);
        if seen < self.node.skip {
            return Ok(());
        }
        let message = format!("key {} already set in map", Value::from(key));
        *self.node.found.borrow_mut() = Some(message.clone());
        Err(E::custom(message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_yaml_decoding_reports_every_repeated_key() {
        let rows: [(&str, Option<&str>); 5] = [
            ("a: 1\nb: 2\n", None),
            (
                "a: 1\nb:\n  c: 1\n  c: 2\na: 3\n",
                Some(
                    "error converting YAML to JSON: yaml: unmarshal errors:\n  line 4: key \"c\" already set in map\n  line 5: key \"a\" already set in map",
                ),
            ),
            (
                "{\"a\": 1, \"a\": 2}",
                Some(
                    "error converting YAML to JSON: yaml: unmarshal errors:\n  line 1: key \"a\" already set in map",
                ),
            ),
            (
                "items:\n- name: x\n  name: y\n- name: x\n",
                Some(
                    "error converting YAML to JSON: yaml: unmarshal errors:\n  line 3: key \"name\" already set in map",
                ),
            ),
            ("a: [", None),
        ];
        for (body, want) in rows {
            assert_eq!(
                strict_yaml_problem(body.as_bytes()).as_deref(),
                want,
                "{body}"
            );
        }
    }
}
