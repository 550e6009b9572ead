//! CustomResourceDefinitions a test server installs before it is handed out: read from YAML
//! (files or text, several documents each) or serialized from a derived kind's `crd()`, created
//! through the API as `kubectl apply` would, and waited on until `Established`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use kapi::server::RunningServer;
use serde::Deserialize as _;
use serde_json::Value;

use crate::Error;

/// Where the CRDs were created and read back.
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// How long a CRD may take to become `Established` before the start fails. The server's CRD
/// controller reacts to a watch, so this is milliseconds unless something is wrong.
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(10);

/// One place CRDs come from, as given to the builder.
#[derive(Debug, Clone)]
pub(crate) enum CrdSource {
    /// A YAML file with one or more documents.
    File(PathBuf),
    /// YAML text with one or more documents.
    Yaml(String),
    /// One CRD already serialized (from a derive's `crd()`), or why it could not be.
    Value(Result<Value, String>),
}

/// A CRD ready to create, with a description of where it came from for errors.
#[derive(Debug)]
pub(crate) struct Crd {
    origin: String,
    object: Value,
}

impl CrdSource {
    /// The CRDs of this source; each document must be a `CustomResourceDefinition`.
    pub(crate) fn read(&self) -> Result<Vec<Crd>, Error> {
        match self {
            Self::File(path) => {
                let origin = path.display().to_string();
                let text = std::fs::read_to_string(path).map_err(|e| Error::Crd {
                    origin: origin.clone(),
                    message: format!("cannot read the file: {e}"),
                })?;
                documents(&origin, &text)
            }
            Self::Yaml(text) => documents("YAML text", text),
            Self::Value(Ok(object)) => {
                let crd = Crd {
                    origin: "a serialized CRD".to_owned(),
                    object: object.clone(),
                };
                crd.check()?;
                Ok(vec![crd])
            }
            Self::Value(Err(message)) => Err(Error::Crd {
                origin: "a serialized CRD".to_owned(),
                message: message.clone(),
            }),
        }
    }
}

/// The non-empty YAML documents of `text`, each a CRD.
fn documents(origin: &str, text: &str) -> Result<Vec<Crd>, Error> {
    let mut crds = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let origin = format!("{origin} (document {})", index + 1);
        let object = Value::deserialize(document).map_err(|e| Error::Crd {
            origin: origin.clone(),
            message: format!("not YAML: {e}"),
        })?;
        if object.is_null() {
            continue;
        }
        let crd = Crd { origin, object };
        crd.check()?;
        crds.push(crd);
    }
    Ok(crds)
}

impl Crd {
    fn name(&self) -> &str {
        self.object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    fn check(&self) -> Result<(), Error> {
        let kind = self.object.get("kind").and_then(Value::as_str);
        if kind != Some("CustomResourceDefinition") {
            return Err(Error::Crd {
                origin: self.origin.clone(),
                message: format!(
                    "expected kind CustomResourceDefinition, found {}",
                    kind.map_or_else(|| "no kind".to_owned(), |k| format!("{k:?}"))
                ),
            });
        }
        Ok(())
    }
}

/// Creates every CRD, then waits until each is `Established`.
pub(crate) async fn install(server: &RunningServer, crds: &[Crd]) -> Result<(), Error> {
    for crd in crds {
        let (status, body) = exchange(server, Method::POST, CRDS, Some(&crd.object)).await?;
        if status != StatusCode::CREATED {
            return Err(Error::Crd {
                origin: crd.origin.clone(),
                message: format!("the server refused it ({status}): {}", message(&body)),
            });
        }
    }
    let deadline = Instant::now() + ESTABLISH_TIMEOUT;
    for crd in crds {
        let uri = format!("{CRDS}/{}", crd.name());
        loop {
            let (status, body) = exchange(server, Method::GET, &uri, None).await?;
            if status == StatusCode::OK && established(&body) {
                break;
            }
            if Instant::now() >= deadline {
                return Err(Error::Crd {
                    origin: crd.origin.clone(),
                    message: format!(
                        "{} was not Established within {ESTABLISH_TIMEOUT:?}: {}",
                        crd.name(),
                        body.get("status").unwrap_or(&Value::Null)
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    Ok(())
}

fn established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
}

fn message(status: &Value) -> &str {
    status
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("no message")
}

/// One in-process request with a JSON body and answer.
async fn exchange(
    server: &RunningServer,
    method: Method,
    uri: &str,
    body: Option<&Value>,
) -> Result<(StatusCode, Value), Error> {
    let body = match body {
        Some(value) => Body::from(serde_json::to_vec(value).map_err(Error::internal)?),
        None => Body::empty(),
    };
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(body)
        .map_err(Error::internal)?;
    let response = server.call(request).await;
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .map_err(Error::internal)?;
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}
