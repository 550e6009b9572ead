//! The runtime's structural schema as the CEL checker reads it: `JSONSchemaProps` answers the
//! checker crate's `SchemaNode`, so rules of a CRD are typed by the schema it was stored with,
//! as the derive types them by the schema it writes.

use kapi_cel_check::SchemaNode;

use crate::schema::JSONSchemaProps;

impl SchemaNode for JSONSchemaProps {
    fn schema_type(&self) -> Option<&str> {
        self.type_.as_deref()
    }

    fn format(&self) -> Option<&str> {
        self.format.as_deref()
    }

    fn max_length(&self) -> Option<i64> {
        self.max_length
    }

    fn max_items(&self) -> Option<i64> {
        self.max_items
    }

    fn max_properties(&self) -> Option<i64> {
        self.max_properties
    }

    fn longest_enum(&self) -> Option<u64> {
        if self.enum_.is_empty() {
            return None;
        }
        Some(
            self.enum_
                .iter()
                .filter_map(|v| v.as_str())
                .map(|s| s.len() as u64)
                .max()
                .unwrap_or(0),
        )
    }

    fn items(&self) -> Option<&Self> {
        self.items_schema()
    }

    fn additional(&self) -> Option<&Self> {
        self.additional_schema()
    }

    fn has_additional_properties(&self) -> bool {
        self.additional_properties.is_some()
    }

    fn properties(&self) -> Vec<(&str, &Self)> {
        self.properties
            .iter()
            .map(|(name, schema)| (name.as_str(), schema))
            .collect()
    }

    fn requires(&self, name: &str) -> bool {
        self.required.iter().any(|r| r == name)
    }

    fn has_default(&self) -> bool {
        self.default.is_some()
    }

    fn int_or_string(&self) -> bool {
        self.x_kubernetes_int_or_string
    }

    fn embedded_resource(&self) -> bool {
        self.x_kubernetes_embedded_resource
    }

    fn preserve_unknown_fields(&self) -> bool {
        self.x_kubernetes_preserve_unknown_fields == Some(true)
    }
}
