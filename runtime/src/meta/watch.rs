//! `WatchEvent<T>`: one line of a watch stream, `{"type":"ADDED","object":{...}}`.
//!
//! Upstream keeps the type as a string and the object as raw bytes; here the type picks the
//! variant, so a consumer matches on `Added(pod)`, `Bookmark(b)` or `Error(status)` instead of
//! re-decoding. A bookmark is not a whole object: only its `kind`, `apiVersion`,
//! `metadata.resourceVersion` and annotations mean anything, so it gets its own small
//! [`Bookmark`] type; an `ERROR` event carries a [`Status`] (e.g. 410 `Expired`).

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Status;
use crate::wire::null_as_default;

/// The annotation a server sets (to `"true"`) on the bookmark that ends the initial events of a
/// watch with `sendInitialEvents=true`.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// The `type` of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum WatchEventType {
    /// An object was created (or, at the start of a watch, already existed).
    Added,
    /// An object was changed.
    Modified,
    /// An object was deleted, or stopped matching the watch's selectors.
    Deleted,
    /// Progress notification: the stream has seen everything up to a resource version.
    Bookmark,
    /// The watch failed; the object is a `Status`.
    Error,
}

impl WatchEventType {
    /// The wire spelling, e.g. `ADDED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
            Self::Bookmark => "BOOKMARK",
            Self::Error => "ERROR",
        }
    }
}

impl fmt::Display for WatchEventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event of a watch stream on objects of type `T`.
// A `Status` outweighs a bookmark, but real kinds outweigh both, and boxing would make the
// variant people match on for every failed watch clumsier for no saving.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<T> {
    /// `ADDED`: the object as created.
    Added(T),
    /// `MODIFIED`: the object after the change.
    Modified(T),
    /// `DELETED`: the object as last stored.
    Deleted(T),
    /// `BOOKMARK`: the resource version the stream has reached.
    Bookmark(Bookmark),
    /// `ERROR`: why the watch ended.
    Error(Status),
}

impl<T> WatchEvent<T> {
    /// The event's `type`.
    pub const fn event_type(&self) -> WatchEventType {
        match self {
            Self::Added(_) => WatchEventType::Added,
            Self::Modified(_) => WatchEventType::Modified,
            Self::Deleted(_) => WatchEventType::Deleted,
            Self::Bookmark(_) => WatchEventType::Bookmark,
            Self::Error(_) => WatchEventType::Error,
        }
    }

    /// The object of an `ADDED`, `MODIFIED` or `DELETED` event.
    pub fn object(&self) -> Option<&T> {
        match self {
            Self::Added(o) | Self::Modified(o) | Self::Deleted(o) => Some(o),
            Self::Bookmark(_) | Self::Error(_) => None,
        }
    }

    /// Converts the object of an `ADDED`, `MODIFIED` or `DELETED` event, keeping the others.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> WatchEvent<U> {
        match self {
            Self::Added(o) => WatchEvent::Added(f(o)),
            Self::Modified(o) => WatchEvent::Modified(f(o)),
            Self::Deleted(o) => WatchEvent::Deleted(f(o)),
            Self::Bookmark(b) => WatchEvent::Bookmark(b),
            Self::Error(s) => WatchEvent::Error(s),
        }
    }
}

impl<T: Serialize> Serialize for WatchEvent<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("WatchEvent", 2)?;
        s.serialize_field("type", self.event_type().as_str())?;
        match self {
            Self::Added(o) | Self::Modified(o) | Self::Deleted(o) => {
                s.serialize_field("object", o)?;
            }
            Self::Bookmark(b) => s.serialize_field("object", b)?,
            Self::Error(status) => s.serialize_field("object", status)?,
        }
        s.end()
    }
}

/// Decodes the `object` of an event whose `type` is already known.
struct ObjectSeed<T> {
    event_type: WatchEventType,
    marker: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for ObjectSeed<T> {
    type Value = WatchEvent<T>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        Ok(match self.event_type {
            WatchEventType::Added => WatchEvent::Added(T::deserialize(d)?),
            WatchEventType::Modified => WatchEvent::Modified(T::deserialize(d)?),
            WatchEventType::Deleted => WatchEvent::Deleted(T::deserialize(d)?),
            WatchEventType::Bookmark => WatchEvent::Bookmark(Bookmark::deserialize(d)?),
            WatchEventType::Error => WatchEvent::Error(Status::deserialize(d)?),
        })
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Type,
    Object,
    #[serde(other)]
    Other,
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for WatchEvent<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EventVisitor<T>(PhantomData<T>);

        impl<'de, T: DeserializeOwned> Visitor<'de> for EventVisitor<T> {
            type Value = WatchEvent<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a watch event with `type` and `object`")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut event_type: Option<WatchEventType> = None;
                let mut event: Option<WatchEvent<T>> = None;
                // Servers write `type` first, so the object decodes straight into its type;
                // only a reordered document pays for buffering the object.
                let mut buffered: Option<serde_json::Value> = None;
                while let Some(field) = map.next_key::<Field>()? {
                    match field {
                        Field::Type => {
                            if event_type.is_some() {
                                return Err(de::Error::duplicate_field("type"));
                            }
                            event_type = Some(map.next_value()?);
                        }
                        Field::Object => {
                            if event.is_some() || buffered.is_some() {
                                return Err(de::Error::duplicate_field("object"));
                            }
                            match event_type {
                                Some(event_type) => {
                                    event = Some(map.next_value_seed(ObjectSeed {
                                        event_type,
                                        marker: PhantomData,
                                    })?);
                                }
                                None => buffered = Some(map.next_value()?),
                            }
                        }
                        Field::Other => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                if let Some(event) = event {
                    return Ok(event);
                }
                let event_type = event_type.ok_or_else(|| de::Error::missing_field("type"))?;
                let object = buffered.ok_or_else(|| de::Error::missing_field("object"))?;
                ObjectSeed {
                    event_type,
                    marker: PhantomData,
                }
                .deserialize(object)
                .map_err(de::Error::custom)
            }
        }

        deserializer.deserialize_map(EventVisitor(PhantomData))
    }
}

/// The object of a `BOOKMARK` event: the watched kind with only a resource version.
///
/// Go servers send a whole empty object of the kind (`"spec":{}` and the like); those fields
/// carry nothing and are dropped when reading.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bookmark {
    /// The watched kind, e.g. `Pod`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The watched kind's `apiVersion`, e.g. `v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The resource version reached, and annotations such as
    /// [`INITIAL_EVENTS_END_ANNOTATION`].
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: BookmarkMeta,
}

/// The only metadata a bookmark carries.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BookmarkMeta {
    /// The resource version the stream has reached; a watch resumed from it misses nothing.
    #[serde(default, deserialize_with = "null_as_default")]
    pub resource_version: String,
    /// Annotations; omitted when empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
}

impl Bookmark {
    /// A bookmark for objects of `kind` in `api_version` at `resource_version`.
    pub fn new(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        resource_version: impl Into<String>,
    ) -> Self {
        Self {
            kind: Some(kind.into()),
            api_version: Some(api_version.into()),
            metadata: BookmarkMeta {
                resource_version: resource_version.into(),
                annotations: BTreeMap::new(),
            },
        }
    }

    /// Marks this bookmark as the end of the initial events (`sendInitialEvents=true`).
    #[must_use]
    pub fn initial_events_end(mut self) -> Self {
        self.metadata
            .annotations
            .insert(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned());
        self
    }

    /// Whether this bookmark ends the initial events: the annotation is present and `"true"`.
    pub fn is_initial_events_end(&self) -> bool {
        self.metadata
            .annotations
            .get(INITIAL_EVENTS_END_ANNOTATION)
            .is_some_and(|v| v == "true")
    }

    /// The resource version reached.
    pub fn resource_version(&self) -> &str {
        &self.metadata.resource_version
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::DynamicObject;
    use crate::meta::StatusReason;

    type Event = WatchEvent<DynamicObject>;

    fn pod(rv: &str) -> DynamicObject {
        let mut pod = DynamicObject::new("v1", "Pod").with_name("foo");
        pod.metadata.resource_version = Some(rv.into());
        pod
    }

    fn pod_json(rv: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "foo", "resourceVersion": rv}})
    }

    #[test]
    fn each_event_type_encodes_and_decodes() {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "too old resource version: 1 (2)", "reason": "Expired", "code": 410
        });
        let cases: Vec<(Event, Value)> = vec![
            (
                WatchEvent::Added(pod("1")),
                json!({"type": "ADDED", "object": pod_json("1")}),
            ),
            (
                WatchEvent::Modified(pod("2")),
                json!({"type": "MODIFIED", "object": pod_json("2")}),
            ),
            (
                WatchEvent::Deleted(pod("3")),
                json!({"type": "DELETED", "object": pod_json("3")}),
            ),
            (
                WatchEvent::Bookmark(Bookmark::new("v1", "Pod", "12746")),
                json!({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "12746"}}}),
            ),
            (
                WatchEvent::Error(serde_json::from_value(status.clone()).expect("status")),
                json!({"type": "ERROR", "object": status}),
            ),
        ];
        for (event, wire) in cases {
            assert_eq!(serde_json::to_value(&event).expect("encode"), wire);
            let back: Event = serde_json::from_value(wire.clone()).expect("decode");
            assert_eq!(back, event, "{wire}");
            // The wire text keeps `type` first, as servers write it.
            let text = serde_json::to_string(&event).expect("encode");
            assert!(text.starts_with(&format!("{{\"type\":\"{}\"", event.event_type())));
        }
    }

    #[test]
    fn error_event_exposes_status() {
        let wire = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "reason": "Expired", "code": 410}});
        let Event::Error(status) = serde_json::from_value(wire).expect("decode") else {
            panic!("not an error event");
        };
        assert_eq!(status.code, Some(410));
        assert_eq!(status.reason, Some(StatusReason::Expired));
    }

    #[test]
    fn object_before_type_is_accepted() {
        let text = r#"{"object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"9"}},"type":"BOOKMARK"}"#;
        let event: Event = serde_json::from_str(text).expect("decode");
        assert_eq!(event, WatchEvent::Bookmark(Bookmark::new("v1", "Pod", "9")));
        let text = r#"{"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"foo","resourceVersion":"5"}},"type":"ADDED"}"#;
        let event: Event = serde_json::from_str(text).expect("decode");
        assert_eq!(event, WatchEvent::Added(pod("5")));
    }

    #[test]
    fn malformed_events_are_errors() {
        let cases = [
            (r#"{"type":"CREATED","object":{}}"#, "unknown variant"),
            (r#"{"type":"ADDED"}"#, "missing field `object`"),
            (r#"{"object":{}}"#, "missing field `type`"),
            (
                r#"{"type":"ADDED","type":"ADDED","object":{}}"#,
                "duplicate field `type`",
            ),
            (
                r#"{"type":"ADDED","object":{},"object":{}}"#,
                "duplicate field `object`",
            ),
            (r#"{"type":"ADDED","object":[]}"#, "invalid type"),
            (
                r#"{"object":{"metadata":7},"type":"DELETED"}"#,
                "invalid type",
            ),
            (r#"{"type":"ERROR","object":{"code":"x"}}"#, "invalid type"),
            (r#"["ADDED",{}]"#, "invalid type"),
        ];
        for (text, want) in cases {
            let err = serde_json::from_str::<Event>(text).expect_err(text);
            assert!(err.to_string().contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn bookmark_from_go_server_drops_empty_fields_and_reads_annotation() {
        let wire = json!({"type": "BOOKMARK", "object": {
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"resourceVersion": "10245", "creationTimestamp": null,
                         "annotations": {"k8s.io/initial-events-end": "true"}},
            "spec": {"containers": null}, "status": {}
        }});
        let Event::Bookmark(b) = serde_json::from_value(wire).expect("decode") else {
            panic!("not a bookmark");
        };
        assert!(b.is_initial_events_end());
        assert_eq!(b.resource_version(), "10245");
        assert_eq!(b, Bookmark::new("v1", "Pod", "10245").initial_events_end());
        assert_eq!(
            serde_json::to_value(&b).expect("encode"),
            json!({"kind": "Pod", "apiVersion": "v1", "metadata": {
                "resourceVersion": "10245", "annotations": {"k8s.io/initial-events-end": "true"}}})
        );
        let mut not_end = Bookmark::new("v1", "Pod", "1");
        not_end
            .metadata
            .annotations
            .insert(INITIAL_EVENTS_END_ANNOTATION.into(), "false".into());
        assert!(!not_end.is_initial_events_end());
    }

    #[test]
    fn helpers() {
        let e: Event = WatchEvent::Modified(pod("4"));
        assert_eq!(e.event_type(), WatchEventType::Modified);
        assert_eq!(
            e.object()
                .and_then(|o| o.metadata.resource_version.as_deref()),
            Some("4")
        );
        let mapped = e.map(|o| o.metadata.name.unwrap_or_default());
        assert_eq!(mapped, WatchEvent::Modified("foo".to_owned()));
        let b: WatchEvent<String> = WatchEvent::Bookmark(Bookmark::default());
        assert_eq!(b.object(), None);
    }
}
