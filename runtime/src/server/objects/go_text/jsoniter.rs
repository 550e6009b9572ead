//! The type errors of json-iterator (`github.com/json-iterator/go` v1.1.10), which
//! kube-apiserver 1.20 decodes JSON bodies with (k8s.io/apimachinery
//! `runtime/serializer/json`'s case-sensitive configuration) before 1.23 moved to
//! `sigs.k8s.io/json`: `v1.Deployment.Spec: v1.DeploymentSpec.Replicas: readUint32: unexpected
//! character: \u{fffd}, error found in #10 byte of ...|eplicas":"3"}}|..., bigger context
//! ...|<50 bytes either side>|...`.
//!
//! The body's bytes are walked as json-iterator decodes them, in document order, against the
//! kind's OpenAPI definition: the first value a field's Go type cannot start with is reported
//! as its reader reports it (`ReportError` in `iter.go`: the operation, the message, and the
//! bytes around the reader's position), then each decoder it unwinds through adds its part:
//! a struct field its Go name (`structFieldDecoder`), a struct its Go type before it
//! (`v1.DeploymentSpec.`), a slice its type (`[]v1.Container: `), a map nothing. Each of those
//! loops reads one more token on its way out; a `,` there would make it decode its next
//! element and wrap the message again, which this walk does not follow: it gives up (`None`),
//! as it does for values of types with decoders of their own (quantities, times, floats,
//! base64), numbers it would have to range-check, and a body that is not a JSON object, so
//! the caller keeps its own account of the misfit.
//!
//! Go field names are the JSON names capitalized, with the initialisms of Kubernetes' Go names
//! (`uid` → `UID`, `dnsPolicy` → `DNSPolicy`, `httpGet` → `HTTPGet`); `metadata` is the
//! embedded `ObjectMeta` or `ListMeta`.

use serde_json::Value;

use super::{TypeWalker, custom_decoder, go_named, reference, short_type};

/// Deeper than any served kind nests: give up rather than risk the stack.
const MAX_DEPTH: usize = 64;

/// Leading lowercase words of JSON names that Go spells as initialisms, as Kubernetes' API
/// types name their fields (a JSON name whose first word is one of these gets it in capitals).
const INITIALISMS: &[(&str, &str)] = &[
    ("api", "API"),
    ("aws", "AWS"),
    ("ca", "CA"),
    ("cidr", "CIDR"),
    ("csi", "CSI"),
    ("dns", "DNS"),
    ("fc", "FC"),
    ("fs", "FS"),
    ("gce", "GCE"),
    ("grpc", "GRPC"),
    ("http", "HTTP"),
    ("ip", "IP"),
    ("iscsi", "ISCSI"),
    ("nfs", "NFS"),
    ("rbd", "RBD"),
    ("se", "SE"),
    ("tcp", "TCP"),
    ("tls", "TLS"),
    ("udp", "UDP"),
    ("uid", "UID"),
    ("url", "URL"),
];

/// The built-in types that embed a struct inline (`json:",inline"`; the `^` fields of the
/// protobuf table): json-iterator decodes the embedded fields through one more field decoder,
/// which names the embedded struct too, and OpenAPI does not say which fields those are, so a
/// misfit under one of these is not followed.
const INLINE_EMBEDDING: &[&str] = &[
    "ConfigMapEnvSource",
    "ConfigMapKeySelector",
    "ConfigMapProjection",
    "ConfigMapVolumeSource",
    "DeviceAllocationConfiguration",
    "DeviceClaimConfiguration",
    "DeviceClassConfiguration",
    "EphemeralContainer",
    "IngressRule",
    "NamedRuleWithOperations",
    "PersistentVolumeSpec",
    "Probe",
    "RuleWithOperations",
    "SecretEnvSource",
    "SecretKeySelector",
    "SecretProjection",
    "Volume",
];

/// The Go name of the struct field `json_name` whose schema is `schema`.
fn go_field_name(json_name: &str, schema: &Value) -> String {
    if json_name == "metadata"
        && let Some(name) = reference(schema).map(short_type)
        && matches!(name, "ObjectMeta" | "ListMeta")
    {
        return name.to_owned();
    }
    let word_end = json_name
        .find(|c: char| !c.is_ascii_lowercase())
        .unwrap_or(json_name.len());
    let (word, rest) = json_name.split_at(word_end);
    if let Some((_, upper)) = INITIALISMS.iter().find(|(lower, _)| *lower == word) {
        return format!("{upper}{rest}");
    }
    let mut chars = json_name.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// What a schema decodes into, as far as this walk follows it.
enum GoValue<'a> {
    /// A struct of this definition, with its Go type name.
    Struct(&'a Value, String),
    /// A map from strings to values of this schema.
    Map(&'a Value),
    /// A slice of values of this schema, with its Go type name.
    Slice(&'a Value, String),
    String,
    Int32,
    Int64,
    Bool,
    /// A type whose reading is not followed (its own decoder, a float, bytes): skipped.
    Skipped,
}

/// A value its Go type could not take: the message so far and where the reader stands.
struct Misfit {
    text: String,
    /// Where the unwinding decoders read their next tokens.
    cursor: usize,
}

/// `Err(None)`: the walk gave up.
type Step = Result<(), Option<Misfit>>;

struct Walk<'b, 'r, 'a> {
    bytes: &'b [u8],
    pos: usize,
    types: TypeWalker<'r, 'a>,
}

/// json-iterator's type error for `bytes` decoded into the definition `name` (`schema`, its
/// references looked up by `resolve`), or `None` when every value fits or the walk gives up.
pub(crate) fn type_error<'a>(
    bytes: &[u8],
    name: &str,
    schema: &'a Value,
    resolve: &dyn Fn(&str) -> Option<&'a Value>,
) -> Option<String> {
    let mut walk = Walk {
        bytes,
        pos: 0,
        types: TypeWalker {
            resolve,
            decoders: false,
        },
    };
    match walk.decode(&GoValue::Struct(schema, go_named(name)), 0) {
        Ok(()) | Err(None) => None,
        Err(Some(misfit)) => Some(misfit.text),
    }
}

impl<'a> Walk<'_, '_, 'a> {
    fn classify(&self, schema: &'a Value) -> GoValue<'a> {
        if let Some(name) = reference(schema) {
            if custom_decoder(name) {
                return GoValue::Skipped;
            }
            return match (self.types.resolve)(name) {
                Some(definition) => self.classify_definition(definition, go_named(name)),
                None => GoValue::Skipped,
            };
        }
        self.classify_definition(schema, String::new())
    }

    fn classify_definition(&self, schema: &'a Value, name: String) -> GoValue<'a> {
        if schema.get("x-kubernetes-int-or-string").is_some()
            || schema.get("x-kubernetes-preserve-unknown-fields").is_some()
        {
            return GoValue::Skipped;
        }
        let format = schema.get("format").and_then(Value::as_str);
        match schema.get("type").and_then(Value::as_str) {
            Some("object") if schema.get("properties").is_some() && !name.is_empty() => {
                GoValue::Struct(schema, name)
            }
            Some("object") => match schema.get("additionalProperties") {
                Some(values) if values.is_object() => GoValue::Map(values),
                _ => GoValue::Skipped,
            },
            Some("array") => match (schema.get("items"), self.types.go_type(schema)) {
                (Some(items), Some(go_type)) => GoValue::Slice(items, go_type),
                _ => GoValue::Skipped,
            },
            Some("string") if format == Some("byte") => GoValue::Skipped,
            Some("string") => GoValue::String,
            Some("integer") if format == Some("int32") => GoValue::Int32,
            Some("integer") => GoValue::Int64,
            Some("boolean") => GoValue::Bool,
            _ => GoValue::Skipped,
        }
    }

    fn skip_space(&mut self) {
        while self
            .bytes
            .get(self.pos)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.pos += 1;
        }
    }

    /// json-iterator's `nextToken`: the next byte that is not white space, read.
    fn next_token(&mut self) -> Option<u8> {
        self.skip_space();
        let byte = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(byte)
    }

    /// The reader's error at the current position (`ReportError`).
    fn report(&self, operation: &str, message: &str) -> Option<Misfit> {
        let head = self.pos;
        let text =
            |from: usize, to: usize| String::from_utf8_lossy(&self.bytes[from..to]).into_owned();
        let peek_start = head.saturating_sub(10);
        let peek_end = (head + 10).min(self.bytes.len());
        let context_start = head.saturating_sub(50);
        let context_end = (head + 50).min(self.bytes.len());
        Some(Misfit {
            text: format!(
                "{operation}: {message}, error found in #{} byte of ...|{}|..., bigger context ...|{}|...",
                head - peek_start,
                text(peek_start, peek_end),
                text(context_start, context_end),
            ),
            cursor: head,
        })
    }

    /// `found <c>`, as json-iterator names the byte it could not take.
    fn found(byte: u8) -> String {
        String::from_utf8_lossy(&[byte]).into_owned()
    }

    /// One loop unwinding past a misfit reads its next token: a `,` would send it on to its
    /// next element, which is not followed.
    fn unwind(&mut self, mut misfit: Misfit) -> Option<Misfit> {
        self.pos = misfit.cursor;
        match self.next_token() {
            Some(b',') => None,
            _ => {
                misfit.cursor = self.pos;
                Some(misfit)
            }
        }
    }

    /// Skips `null` after its `n` was read.
    fn rest_of_null(&mut self) -> Step {
        self.pos = (self.pos + 3).min(self.bytes.len());
        Ok(())
    }

    fn decode(&mut self, go: &GoValue<'a>, depth: usize) -> Step {
        if depth > MAX_DEPTH {
            return Err(None);
        }
        match go {
            GoValue::Skipped => self.skip_value(),
            GoValue::String => match self.next_token() {
                Some(b'"') => {
                    self.pos -= 1;
                    self.skip_value()
                }
                Some(b'n') => self.rest_of_null(),
                Some(c) => Err(self.report(
                    "ReadString",
                    &format!("expects \" or n, but found {}", Self::found(c)),
                )),
                None => Err(None),
            },
            GoValue::Int32 | GoValue::Int64 => self.integer(matches!(go, GoValue::Int32)),
            GoValue::Bool => match self.next_token() {
                Some(b't' | b'f' | b'n') => {
                    self.pos -= 1;
                    self.skip_value()
                }
                Some(c) => Err(self.report(
                    "ReadBool",
                    &format!("expect t or f, but found {}", Self::found(c)),
                )),
                None => Err(None),
            },
            GoValue::Struct(schema, name) => self.structure(schema, name, depth),
            GoValue::Map(values) => self.map(values, depth),
            GoValue::Slice(items, name) => self.slice(items, name, depth),
        }
    }

    /// `ReadInt32` / `ReadInt64` (after `ReadNil`): digits, a float's `.` refused by
    /// `assertInteger`, anything else refused by `readUint32` / `readUint64` with the byte its
    /// digit table maps it to (0xff, which JSON shows as U+FFFD).
    fn integer(&mut self, int32: bool) -> Step {
        let operation = if int32 { "readUint32" } else { "readUint64" };
        let mut first = match self.next_token() {
            Some(b'n') => return self.rest_of_null(),
            Some(c) => c,
            None => return Err(None),
        };
        if first == b'-' {
            let Some(&c) = self.bytes.get(self.pos) else {
                return Err(None);
            };
            self.pos += 1;
            first = c;
        }
        if !first.is_ascii_digit() {
            return Err(self.report(operation, "unexpected character: \u{fffd}"));
        }
        let start = self.pos - 1;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            Some(b'.') => Err(self.report("assertInteger", "can not decode float as int")),
            Some(b'e' | b'E') => Err(None),
            _ => {
                // Out of range is its own message (`overflow`), not followed.
                let digits = std::str::from_utf8(&self.bytes[start..self.pos]).unwrap_or("");
                let fits = if int32 {
                    digits.len() <= 9
                } else {
                    digits.len() <= 18
                };
                if fits { Ok(()) } else { Err(None) }
            }
        }
    }

    /// A struct: `readObjectStart`, then each field by its exact name (json-iterator's
    /// case-sensitive configuration), unknown ones skipped.
    fn structure(&mut self, schema: &'a Value, name: &str, depth: usize) -> Step {
        if !self.open(b'{', b'}', "readObjectStart")? {
            return Ok(());
        }
        let properties = schema.get("properties");
        loop {
            let key = self.key()?;
            match properties.and_then(|p| p.get(&key)) {
                Some(field) => {
                    let go = self.classify(field);
                    if let Err(found) = self.decode(&go, depth + 1) {
                        // Top-level `apiVersion` and `kind` are read before the object is.
                        let top_type_meta =
                            depth == 0 && matches!(key.as_str(), "apiVersion" | "kind");
                        let embedding =
                            INLINE_EMBEDDING.contains(&name.rsplit('.').next().unwrap_or(name));
                        let found = found.filter(|_| !top_type_meta && !embedding);
                        let mut misfit = found.ok_or(None)?;
                        misfit.text = format!("{}: {}", go_field_name(&key, field), misfit.text);
                        let mut misfit = self.unwind(misfit).ok_or(None)?;
                        misfit.text = format!("{name}.{}", misfit.text);
                        return Err(Some(misfit));
                    }
                }
                None => self.skip_value()?,
            }
            match self.next_token() {
                Some(b',') => continue,
                Some(b'}') => return Ok(()),
                _ => return Err(None),
            }
        }
    }

    fn map(&mut self, values: &'a Value, depth: usize) -> Step {
        if !self.open(b'{', b'}', "ReadMapCB")? {
            return Ok(());
        }
        let go = self.classify(values);
        loop {
            self.key()?;
            if let Err(found) = self.decode(&go, depth + 1) {
                return Err(self.unwind(found.ok_or(None)?));
            }
            match self.next_token() {
                Some(b',') => continue,
                Some(b'}') => return Ok(()),
                _ => return Err(None),
            }
        }
    }

    fn slice(&mut self, items: &'a Value, name: &str, depth: usize) -> Step {
        let wrap = |mut misfit: Misfit| {
            misfit.text = format!("{name}: {}", misfit.text);
            misfit
        };
        if !self
            .open(b'[', b']', "decode slice")
            .map_err(|e| e.map(wrap))?
        {
            return Ok(());
        }
        let go = self.classify(items);
        loop {
            if let Err(found) = self.decode(&go, depth + 1) {
                let misfit = self.unwind(found.ok_or(None)?).ok_or(None)?;
                return Err(Some(wrap(misfit)));
            }
            match self.next_token() {
                Some(b',') => continue,
                Some(b']') => return Ok(()),
                _ => return Err(None),
            }
        }
    }

    /// A struct's, map's or slice's first token: `Ok(true)` when elements follow, `Ok(false)`
    /// for `null` or an empty one (its close read), the reader's misfit for anything else
    /// (`expect { or n, but found 1`).
    fn open(&mut self, open: u8, close: u8, operation: &str) -> Result<bool, Option<Misfit>> {
        match self.next_token() {
            Some(c) if c == open => {}
            Some(b'n') => return self.rest_of_null().map(|()| false),
            Some(c) => {
                let message = format!(
                    "expect {} or n, but found {}",
                    char::from(open),
                    Self::found(c)
                );
                return Err(self.report(operation, &message));
            }
            None => return Err(None),
        }
        self.skip_space();
        if self.bytes.get(self.pos) == Some(&close) {
            self.pos += 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// An object key and its `:`.
    fn key(&mut self) -> Result<String, Option<Misfit>> {
        self.skip_space();
        let start = self.pos;
        self.skip_value()?;
        let key: String = serde_json::from_slice(&self.bytes[start..self.pos]).map_err(|_| None)?;
        match self.next_token() {
            Some(b':') => Ok(key),
            _ => Err(None),
        }
    }

    /// Skips one JSON value (the body parsed as JSON before this walk).
    fn skip_value(&mut self) -> Step {
        self.skip_space();
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        while let Some(&byte) = self.bytes.get(self.pos) {
            self.pos += 1;
            if in_string {
                match byte {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => {
                        in_string = false;
                        if depth == 0 {
                            return Ok(());
                        }
                    }
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1).ok_or(None)?;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                _ if depth == 0 => {
                    // A scalar: up to the next delimiter.
                    while self.bytes.get(self.pos).is_some_and(|b| {
                        !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                    }) {
                        self.pos += 1;
                    }
                    return Ok(());
                }
                _ => {}
            }
        }
        Err(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn definitions() -> Value {
        json!({
            "io.k8s.api.apps.v1.Deployment": {"type": "object", "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
                "spec": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"}}},
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {
                "name": {"type": "string"}, "uid": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "io.k8s.api.apps.v1.DeploymentSpec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "paused": {"type": "boolean"},
                "template": {"$ref": "#/definitions/io.k8s.api.core.v1.PodTemplateSpec"}}},
            "io.k8s.api.core.v1.PodTemplateSpec": {"type": "object", "properties": {
                "spec": {"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec"}}},
            "io.k8s.api.core.v1.PodSpec": {"type": "object", "properties": {
                "dnsPolicy": {"type": "string"},
                "containers": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}}}},
            "io.k8s.api.core.v1.Container": {"type": "object", "properties": {
                "name": {"type": "string"},
                "ports": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.core.v1.ContainerPort"}}}},
            "io.k8s.api.core.v1.ContainerPort": {"type": "object", "properties": {
                "containerPort": {"type": "integer", "format": "int32"}}},
        })
    }

    fn error(body: &str) -> Option<String> {
        let defs = definitions();
        let resolve = |name: &str| defs.get(name);
        type_error(
            body.as_bytes(),
            "io.k8s.api.apps.v1.Deployment",
            &defs["io.k8s.api.apps.v1.Deployment"],
            &resolve,
        )
    }

    /// The shape of kubernetes-client/python#1023's and syndesisio/syndesis#5442's answers
    /// (`v1.DeploymentConfig.Spec: v1.DeploymentConfigSpec.Replicas: readUint32: unexpected
    /// character: \ufffd, error found in #10 byte of ...|eplicas":"0","select|..., bigger
    /// context ...|...|...`): a string where an int32 goes.
    #[test]
    fn a_string_for_an_int32() {
        let body = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":"3"}}"#;
        assert_eq!(
            error(body).unwrap(),
            "v1.Deployment.Spec: v1.DeploymentSpec.Replicas: readUint32: unexpected character: \u{fffd}, \
             error found in #10 byte of ...|eplicas\":\"3\"}}|..., bigger context \
             ...|ment\",\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":\"3\"}}|..."
        );
    }

    /// Slices name their type, maps nothing, `metadata` is the embedded `ObjectMeta`, and a
    /// float for an int is `assertInteger`'s.
    #[test]
    fn the_decoders_on_the_way_out() {
        let ports =
            r#"{"spec":{"template":{"spec":{"containers":[{"ports":[{"containerPort":1.5}]}]}}}}"#;
        let text = error(ports).unwrap();
        assert!(
            text.starts_with(
                "v1.Deployment.Spec: v1.DeploymentSpec.Template: v1.PodTemplateSpec.Spec: \
                 v1.PodSpec.Containers: []v1.Container: v1.Container.Ports: []v1.ContainerPort: \
                 v1.ContainerPort.ContainerPort: assertInteger: can not decode float as int, \
                 error found in #10 byte of ...|nerPort\":1.5}]}]}}}}|..."
            ),
            "{text}"
        );
        let labels = r#"{"metadata":{"labels":{"a":true}}}"#;
        assert!(
            error(labels)
                .unwrap()
                .starts_with("v1.Deployment.ObjectMeta: v1.ObjectMeta.Labels: ReadString: expects \" or n, but found t, error found in #10 byte of ...|"),
        );
        let paused = r#"{"spec":{"paused":"yes"}}"#;
        assert!(error(paused).unwrap().starts_with(
            "v1.Deployment.Spec: v1.DeploymentSpec.Paused: ReadBool: expect t or f, but found \""
        ));
        let not_a_list = r#"{"spec":{"template":{"spec":{"containers":{}}}}}"#;
        assert!(error(not_a_list).unwrap().contains(
            "v1.PodSpec.Containers: []v1.Container: decode slice: expect [ or n, but found {"
        ));
        let not_an_object = r#"{"spec":5}"#;
        assert!(
            error(not_an_object)
                .unwrap()
                .starts_with("v1.Deployment.Spec: readObjectStart: expect { or n, but found 5")
        );
        let initialism = r#"{"spec":{"template":{"spec":{"dnsPolicy":1}}}}"#;
        assert!(
            error(initialism)
                .unwrap()
                .contains("v1.PodSpec.DNSPolicy: ReadString")
        );
    }

    /// Where json-iterator would go on decoding (a `,` read on the way out) and re-wrap, or
    /// where the texts are not its readers', the walk gives up.
    #[test]
    fn gives_up_where_it_does_not_follow() {
        assert_eq!(error(r#"{"spec":{"replicas":3,"paused":true}}"#), None);
        assert_eq!(error(r#"{"metadata":{"name":1,"uid":"x"}}"#), None);
        assert_eq!(error(r#"{"spec":{"replicas":99999999999}}"#), None);
        assert_eq!(error(r#"{"kind":1}"#), None);
        // A misfit under a type that embeds a struct inline (a Volume's VolumeSource).
        let defs = json!({
            "io.k8s.api.core.v1.Volume": {"type": "object", "properties": {
                "name": {"type": "string"}, "configMap": {"type": "string"}}},
        });
        let resolve = |name: &str| defs.get(name);
        let volume = &defs["io.k8s.api.core.v1.Volume"];
        let body = br#"{"configMap":5}"#;
        assert_eq!(
            type_error(body, "io.k8s.api.core.v1.Volume", volume, &resolve),
            None
        );
        assert_eq!(
            error(r#"{"spec":{"replicas":null,"unknown":[1,{"a":"}"}]}}"#),
            None
        );
    }
}
