//! The rules that compute cells, one per kind of cell upstream's printers write. The generic
//! ones read the paths a column gives them; the ones named after a kind read that kind's fields
//! themselves, as upstream's `printX` function for the kind does.

use std::borrow::Cow;

use jiff::Timestamp;
use serde_json::Value;

use super::format::{self, at, int_at, str_at};

/// A named way to compute a cell. Columns name a rule in snake case (`ratio`), the derive
/// attribute `printer_column(cell = "ratio(.status.readyReplicas, .spec.replicas)")` and the
/// printer data alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// The object's name: the Name column (format `name`). Tables start with one; a kind whose
    /// columns name it puts it where it stands instead (an Event's is last).
    Name,
    /// The string at the path, `""` when missing.
    Text,
    /// The string at the path, `<none>` when missing or empty.
    TextOrNone,
    /// The integer at the path, 0 when missing (a number cell).
    Int,
    /// The age of the timestamp at the path (`translateTimestampSince`): `5m`, `<unknown>`.
    Age,
    /// `a/b` of the integers at the two paths (READY `1/3`).
    Ratio,
    /// How many entries the maps or lists at the paths hold together (a ConfigMap's DATA
    /// counts `data` and `binaryData`).
    Count,
    /// The `name` of each item of the list at the path, joined by `,` (CONTAINERS).
    Names,
    /// The `image` of each item of the list at the path, joined by `,` (IMAGES).
    Images,
    /// The `LabelSelector` at the path (`FormatLabelSelector`), `<none>` when empty.
    LabelSelector,
    /// The label map at the path (`FormatLabels`: a map selector, node selector, labels),
    /// `<none>` when empty.
    Labels,
    /// The optional boolean at the path: `True`, `False` or `<unset>` (`printBoolPtr`).
    BoolPtr,
    /// The strings of the list at the path joined by `,`, `<none>` when empty.
    Join,
}

impl Rule {
    /// Whether the rule reads `paths` paths: a column written with another count is refused
    /// where it is declared (by the derive, and by the generator for the printer data).
    pub const fn takes(self, paths: usize) -> bool {
        match self {
            Self::Name => paths == 0,
            Self::Ratio => paths == 2,
            Self::Count => paths >= 1,
            Self::Text
            | Self::TextOrNone
            | Self::Int
            | Self::Age
            | Self::Names
            | Self::Images
            | Self::LabelSelector
            | Self::Labels
            | Self::BoolPtr
            | Self::Join => paths == 1,
        }
    }

    /// The cell of `object` at time `now`, reading `paths` (as many as [`Rule::takes`]).
    pub fn apply(self, object: &Value, paths: &[Cow<'static, str>], now: Timestamp) -> Value {
        let path = |i: usize| paths.get(i).map_or("", |p| p.as_ref());
        match self {
            Self::Name => Value::from(str_at(object, ".metadata.name")),
            Self::Text => Value::from(str_at(object, path(0))),
            Self::TextOrNone => Value::from(format::or_none(str_at(object, path(0)))),
            Self::Int => Value::from(int_at(object, path(0))),
            Self::Age => Value::from(format::age(at(object, path(0)), now)),
            Self::Ratio => Value::from(format!(
                "{}/{}",
                int_at(object, path(0)),
                int_at(object, path(1))
            )),
            Self::Count => Value::from(
                paths
                    .iter()
                    .map(|p| format::len_at(object, p))
                    .sum::<usize>(),
            ),
            Self::Names => Value::from(format::join_field(
                format::array_at(object, path(0)),
                "name",
            )),
            Self::Images => Value::from(format::join_field(
                format::array_at(object, path(0)),
                "image",
            )),
            Self::LabelSelector => Value::from(format::label_selector(at(object, path(0)))),
            Self::Labels => Value::from(format::labels(format::map_at(object, path(0)))),
            Self::BoolPtr => Value::from(format::bool_ptr(at(object, path(0)))),
            Self::Join => Value::from(format::or_none(
                format::array_at(object, path(0))
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cell(rule: Rule, paths: &[&'static str], object: &Value) -> Value {
        let paths: Vec<Cow<'static, str>> = paths.iter().map(|p| Cow::Borrowed(*p)).collect();
        let now: Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
        rule.apply(object, &paths, now)
    }

    #[test]
    fn generic_rules_read_missing_fields_as_zero_values() {
        // A Deployment just created: no status yet (printDeployment prints 0/3).
        let deployment = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "web", "image": "nginx"}, {"name": "log", "image": "busybox"}
        ]}}}});
        let ready = [".status.readyReplicas", ".spec.replicas"];
        assert_eq!(cell(Rule::Ratio, &ready, &deployment), json!("0/3"));
        let updated = [".status.updatedReplicas"];
        assert_eq!(cell(Rule::Int, &updated, &deployment), json!(0));
        let containers = [".spec.template.spec.containers"];
        assert_eq!(
            cell(Rule::Names, &containers, &deployment),
            json!("web,log")
        );
        assert_eq!(
            cell(Rule::Images, &containers, &deployment),
            json!("nginx,busybox")
        );
        assert_eq!(
            cell(Rule::TextOrNone, &[".status.podIP"], &deployment),
            json!("<none>")
        );
        assert_eq!(
            cell(Rule::BoolPtr, &[".spec.suspend"], &deployment),
            json!("<unset>")
        );
    }

    #[test]
    fn count_adds_every_path() {
        let config_map = json!({"data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        let paths = [".data", ".binaryData"];
        assert_eq!(cell(Rule::Count, &paths, &config_map), json!(3));
        assert_eq!(cell(Rule::Count, &paths, &json!({})), json!(0));
    }

    #[test]
    fn arity_is_checked_per_rule() {
        assert!(Rule::Ratio.takes(2) && !Rule::Ratio.takes(1));
        assert!(Rule::Count.takes(3) && !Rule::Count.takes(0));
        assert!(Rule::Age.takes(1) && !Rule::Age.takes(2));
    }
}
