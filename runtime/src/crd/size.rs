//! The size budget of client-side apply: `kubectl apply` stores the whole object as JSON in the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation, and all annotations of an
//! object together may hold at most 262,144 bytes. A CRD over that fails to apply, so
//! descriptions are trimmed, then removed, until it fits, and the caller is told.

use std::fmt;

use super::CustomResourceDefinition;
use crate::schema::{JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool};

/// The most bytes all annotations of one object may hold together.
pub const ANNOTATION_BUDGET: usize = 262_144;

/// Descriptions are first cut to their first sentence, at most this many characters.
const TRIMMED_CHARS: usize = 80;

/// What fitting a CRD into [`ANNOTATION_BUDGET`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeWarning {
    /// The CRD's name.
    pub name: String,
    /// Its compact JSON size before trimming.
    pub before: usize,
    /// Its size after.
    pub after: usize,
    /// How many descriptions were shortened.
    pub trimmed: usize,
    /// How many descriptions were removed.
    pub removed: usize,
}

impl SizeWarning {
    /// Whether the CRD still exceeds the budget with every description gone.
    pub fn still_too_large(&self) -> bool {
        self.after > ANNOTATION_BUDGET
    }
}

impl fmt::Display for SizeWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CRD {} is {} bytes, over the {ANNOTATION_BUDGET}-byte annotation budget of \
             client-side apply: shortened {} and removed {} schema descriptions, now {} bytes",
            self.name, self.before, self.trimmed, self.removed, self.after
        )?;
        if self.still_too_large() {
            f.write_str(
                "; it still does not fit: use server-side apply (kubectl apply --server-side)",
            )?;
        }
        Ok(())
    }
}

fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(0, |bytes| bytes.len())
}

/// Shortens, then removes, schema descriptions (deepest first, longest first at equal depth)
/// until `crd` serializes within [`ANNOTATION_BUDGET`]. Returns one warning when anything was
/// done (or when even that was not enough), none when the CRD already fit.
pub fn fit_to_budget(crd: &mut CustomResourceDefinition) -> Vec<SizeWarning> {
    let before = json_len(crd);
    if before <= ANNOTATION_BUDGET {
        return Vec::new();
    }
    let name = crd.metadata.name.clone().unwrap_or_default();
    let mut size = before;
    let mut slots = Vec::new();
    for version in &mut crd.spec.versions {
        if let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        {
            collect(schema, 0, &mut slots);
        }
    }
    slots.sort_by(|(da, a), (db, b)| {
        let len = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        db.cmp(da).then(len(b).cmp(&len(a)))
    });
    let (mut trimmed, mut removed) = (0, 0);
    for (_, slot) in &mut slots {
        if size <= ANNOTATION_BUDGET {
            break;
        }
        let Some(text) = slot.as_deref() else {
            continue;
        };
        let short = first_sentence(text);
        if short.len() < text.len() {
            size -= json_len(text) - json_len(&short);
            **slot = Some(short);
            trimmed += 1;
        }
    }
    for (_, slot) in &mut slots {
        if size <= ANNOTATION_BUDGET {
            break;
        }
        if let Some(text) = slot.take() {
            // The key, its quotes, the colon and the comma go too.
            size -= json_len(&text) + "\"description\":,".len();
            removed += 1;
        }
    }
    vec![SizeWarning {
        name,
        before,
        after: json_len(crd),
        trimmed,
        removed,
    }]
}

/// The first sentence of `text`, cut at a word boundary to at most [`TRIMMED_CHARS`].
fn first_sentence(text: &str) -> String {
    let sentence_end = text
        .find(". ")
        .map(|i| i + 1)
        .into_iter()
        .chain(text.find('\n'))
        .min()
        .unwrap_or(text.len());
    let sentence = text.get(..sentence_end).unwrap_or(text).trim_end();
    if sentence.chars().count() <= TRIMMED_CHARS {
        return sentence.to_owned();
    }
    let cut: String = sentence.chars().take(TRIMMED_CHARS).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{}...", cut.trim_end())
}

fn collect<'a>(
    schema: &'a mut JSONSchemaProps,
    depth: usize,
    out: &mut Vec<(usize, &'a mut Option<String>)>,
) {
    let JSONSchemaProps {
        description,
        properties,
        items,
        additional_properties,
        ..
    } = schema;
    if description.is_some() {
        out.push((depth, description));
    }
    for child in properties.values_mut() {
        collect(child, depth + 1, out);
    }
    if let Some(JSONSchemaPropsOrArray::Schema(child)) = items.as_deref_mut() {
        collect(child, depth + 1, out);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(child)) = additional_properties.as_deref_mut() {
        collect(child, depth + 1, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentences() {
        let cases = [
            ("Short.", "Short."),
            ("One. Two.", "One."),
            ("Line one\nline two", "Line one"),
            (
                &"word ".repeat(40),
                "word word word word word word word word word word word word word word word word...",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(first_sentence(text), want, "{text:?}");
        }
    }
}
