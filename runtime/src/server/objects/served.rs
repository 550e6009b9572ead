//! Objects as served, in JSON, straight from their stored bytes.
//!
//! Serving a stored object means decoding it, converting it to the requested version, setting
//! `metadata.resourceVersion` and encoding it again (`stored::from_stored` and `to_vec`). When
//! the resource has no typed conversions and no schema to prune and default by (a custom
//! resource's) and the object was stored at the requested version (a
//! built-in family's objects are converted only when stored at another), the only change is
//! the resourceVersion, so [`ServedJson`] copies the stored bytes and inserts that one
//! field instead: no `Value` tree is built or dropped, which is most of the cost of a large list
//! and of a watch event. The store holds serde_json's compact output (`stored::to_stored`), so
//! the splice yields the bytes decode-and-encode would; any value the scanner does not
//! recognise (escaped keys, a `resourceVersion` already present, trailing data) takes the slow
//! path instead.
//!
//! The splice does not validate the JSON it copies, and need not: the embedded engine checks a
//! checksum on every value it returns (a damaged value is an error, answered with a 500, and
//! never reaches this module), and it rewrites a data directory written before checksums when
//! it opens it, so no unchecked value is ever served. We chose that migration over validating
//! old values here (`serde_json::from_slice::<IgnoredAny>`) because the store cannot tell this
//! module which values are old: validating would mean a full parse of every object, most of
//! what the splice saves. The checksums vouch for the bytes as they were at the upgrade, and
//! those were `to_stored`'s output. etcd answers for the values it stores.

use serde_json::Value;

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::objects::stored::{from_stored_converted, has_webhook};

/// Renders stored objects of one call's resource and version as served JSON.
pub(crate) struct ServedJson {
    /// The `apiVersion` an object must carry to be served without conversion.
    api_version: String,
    /// Whether the resource has no typed conversions or conversion webhook for the requested
    /// version.
    direct: bool,
}

impl ServedJson {
    /// The renderer for `call`'s resource and version.
    pub(crate) fn new(call: &Call) -> Self {
        let info = call.info();
        // Typed conversions and conversion webhooks change the stored bytes (a built-in's
        // family converts only objects stored at another version, which the splice declines).
        let converts = has_webhook(call)
            || call
                .registry
                .conversion(&info.gvk.group, &info.plural)
                .is_some_and(|c| c.has_version(&info.gvk.version));
        // A custom resource with a schema is pruned and defaulted on every read
        // (`stored::from_stored`): its stored bytes are not what is served.
        let coerced = call.target.kind.from_crd && call.target.kind.validate.is_some();
        Self {
            api_version: info.api_version(),
            direct: !converts && !coerced,
        }
    }

    /// The stored value as served with `resourceVersion` `rv`: the same bytes as encoding
    /// `from_stored`'s object. A value a conversion webhook converts must have been through
    /// `stored::converted_value` first.
    pub(crate) fn json(&self, call: &Call, stored: &[u8], rv: u64) -> Result<Vec<u8>, ApiError> {
        if self.direct
            && let Some(bytes) = splice_resource_version(stored, &self.api_version, rv)
        {
            return Ok(bytes);
        }
        let object = from_stored_converted(call, stored, rv)?;
        serde_json::to_vec(&object).map_err(ApiError::internal)
    }

    /// The served object and its JSON, for callers that also inspect it (selectors).
    pub(crate) fn json_and_value(
        &self,
        call: &Call,
        stored: &[u8],
        rv: u64,
    ) -> Result<(Vec<u8>, Value), ApiError> {
        if self.direct
            && let Some(bytes) = splice_resource_version(stored, &self.api_version, rv)
        {
            let value = serde_json::from_slice(&bytes).map_err(ApiError::internal)?;
            return Ok((bytes, value));
        }
        let object = from_stored_converted(call, stored, rv)?;
        let bytes = serde_json::to_vec(&object).map_err(ApiError::internal)?;
        Ok((bytes, object))
    }
}

/// `stored` (a JSON object) with `"resourceVersion":"<rv>"` appended to its `metadata`, when its
/// `apiVersion` is `api_version` and its metadata has no resourceVersion yet; `None` otherwise.
pub(crate) fn splice_resource_version(
    stored: &[u8],
    api_version: &str,
    rv: u64,
) -> Option<Vec<u8>> {
    let mut scan = Scan {
        bytes: stored,
        at: 0,
    };
    scan.expect(b'{')?;
    let mut metadata = None;
    let mut version_matches = None;
    if scan.peek()? == b'}' {
        return None;
    }
    loop {
        let key = scan.plain_string()?;
        scan.expect(b':')?;
        match key {
            b"metadata" if metadata.is_none() => {
                let empty = scan.metadata()?;
                metadata = Some((scan.at, empty));
            }
            b"apiVersion" if version_matches.is_none() => {
                scan.skip_ws();
                version_matches = Some(scan.plain_string()? == api_version.as_bytes());
            }
            b"metadata" | b"apiVersion" => return None,
            _ => scan.skip_value()?,
        }
        match scan.peek()? {
            b',' => scan.at += 1,
            b'}' => {
                scan.at += 1;
                break;
            }
            _ => return None,
        }
    }
    scan.skip_ws();
    if scan.at != stored.len() || version_matches != Some(true) {
        return None;
    }
    // `end` is just past the metadata's closing brace.
    let (end, empty) = metadata?;
    let close = end.checked_sub(1)?;
    let rv = rv.to_string();
    let mut out = Vec::with_capacity(stored.len() + rv.len() + 22);
    out.extend_from_slice(&stored[..close]);
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(b"\"resourceVersion\":\"");
    out.extend_from_slice(rv.as_bytes());
    out.push(b'"');
    out.extend_from_slice(&stored[close..]);
    Some(out)
}

/// A cursor over JSON text that finds value boundaries without building values.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.at).copied()
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        if self.peek()? != byte {
            return None;
        }
        self.at += 1;
        Some(())
    }

    /// Skips a string whose opening quote is at the cursor; whether it contained an escape.
    fn string(&mut self) -> Option<(&'a [u8], bool)> {
        self.expect(b'"')?;
        let start = self.at;
        let mut escaped = false;
        loop {
            match *self.bytes.get(self.at)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    self.at += 2;
                }
                _ => self.at += 1,
            }
        }
        let text = self.bytes.get(start..self.at)?;
        self.at += 1;
        Some((text, escaped))
    }

    /// A string without escapes (keys and the apiVersion compare as raw bytes then).
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        match self.string()? {
            (text, false) => Some(text),
            (_, true) => None,
        }
    }

    /// Skips the metadata object, refusing one that already has a resourceVersion; whether
    /// it is empty.
    fn metadata(&mut self) -> Option<bool> {
        self.expect(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(true);
        }
        loop {
            if self.plain_string()? == b"resourceVersion" {
                return None;
            }
            self.expect(b':')?;
            self.skip_value()?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(false);
                }
                _ => return None,
            }
        }
    }

    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.bytes.get(self.at)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.checked_sub(1)?;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                let start = self.at;
                while let Some(b) = self.bytes.get(self.at) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    self.at += 1;
                }
                (self.at > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What decode, set resourceVersion, encode produces (as `from_stored` without conversion).
    fn slow(stored: &[u8], rv: u64) -> Vec<u8> {
        let mut value: Value = serde_json::from_slice(stored).unwrap();
        value
            .as_object_mut()
            .unwrap()
            .get_mut("metadata")
            .unwrap()
            .as_object_mut()
            .unwrap()
            .insert("resourceVersion".into(), Value::from(rv.to_string()));
        serde_json::to_vec(&value).unwrap()
    }

    #[test]
    fn splice_matches_decode_and_encode() {
        let objects = [
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default", "labels": {"x": "y"}}, "data": {"k": "v \"quoted\" \\ {braces} [brackets]", "n": "1"}}),
            serde_json::json!({"kind": "ConfigMap", "metadata": {}, "apiVersion": "v1"}),
            serde_json::json!({"apiVersion": "v1", "metadata": {"name": "b", "annotations": {"a/b": "{\"json\": [1, 2]}"}}, "spec": {"n": [1, 2.5, -3e10, true, false, null, {"deep": [[[]]]}]}, "z": "é ☃ \u{1}"}),
            serde_json::json!({"metadata": {"name": "c", "finalizers": ["x"]}, "apiVersion": "v1", "status": {}}),
        ];
        for object in objects {
            let stored = serde_json::to_vec(&object).unwrap();
            for rv in [2, 12345, u64::MAX] {
                let spliced = splice_resource_version(&stored, "v1", rv)
                    .unwrap_or_else(|| panic!("no splice for {object}"));
                assert_eq!(
                    String::from_utf8(spliced).unwrap(),
                    String::from_utf8(slow(&stored, rv)).unwrap()
                );
            }
        }
    }

    #[test]
    fn splice_declines_what_it_cannot_do_exactly() {
        let rows: [(&[u8], &str); 11] = [
            (br#"{"apiVersion":"v2","metadata":{}}"#, "other version"),
            (br#"{"metadata":{}}"#, "no apiVersion"),
            (br#"{"apiVersion":"v1"}"#, "no metadata"),
            (
                br#"{"apiVersion":"v1","metadata":{"resourceVersion":"3"}}"#,
                "rv present",
            ),
            (
                br#"{"apiVersion":"v1","metadata":[]}"#,
                "metadata not an object",
            ),
            (
                br#"{"apiVersion":"v1","metadata":{},"metadata":{}}"#,
                "duplicate metadata",
            ),
            (
                br#"{"apiVersion":"v\u0031","metadata":{}}"#,
                "escaped version",
            ),
            (br#"{"apiVersion":"v1","metadata":{}} x"#, "trailing data"),
            (br#"{"apiVersion":"v1","metadata":{"name":"a""#, "truncated"),
            (br#"{}"#, "empty"),
            (br#"[1]"#, "not an object"),
        ];
        for (stored, why) in rows {
            assert_eq!(splice_resource_version(stored, "v1", 7), None, "{why}");
        }
        assert_eq!(
            splice_resource_version(br#"{"apiVersion":"v1","metadata":{}}"#, "v1", 7).unwrap(),
            br#"{"apiVersion":"v1","metadata":{"resourceVersion":"7"}}"#
        );
    }
}
