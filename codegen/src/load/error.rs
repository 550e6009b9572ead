//! The loaders' error type and the two things every error names: the file and the JSON path.
//!
//! [`Ptr`] is a JSON pointer built lazily as a linked list on the stack, so walking a 4 MB spec
//! allocates no pointer strings until something actually fails.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::model::escape_pointer;

/// Why an input could not be loaded. Messages are lowercase and name the file and JSON path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file or folder could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not well-formed JSON or YAML.
    #[error("invalid {format} in {source_file}: {message}")]
    Syntax {
        /// `JSON` or `YAML`.
        format: &'static str,
        /// The file (and document, for multi-document YAML).
        source_file: Source,
        /// The parser's message.
        message: String,
    },
    /// A well-formed document whose content is not what the format requires.
    #[error("invalid {what} at {source_file} #{pointer}: {message}")]
    Invalid {
        /// What was being read: `schema`, `spec`, `path`, `CRD`.
        what: &'static str,
        /// The file (and document).
        source_file: Source,
        /// JSON pointer of the offending node.
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// A `$ref` names a definition no input defines.
    #[error("dangling $ref at {source_file} #{pointer}: no definition named {target}")]
    DanglingRef {
        /// The file (and document).
        source_file: Source,
        /// JSON pointer of the referring node.
        pointer: String,
        /// The missing definition name.
        target: String,
    },
    /// Two inputs define one name differently.
    #[error("conflicting definitions of {name} in {first} and {second}")]
    Conflict {
        /// The type name or GVK.
        name: String,
        /// Where it was first defined.
        first: Source,
        /// Where it was defined again.
        second: Source,
    },
    /// The input is none of the supported formats.
    #[error(
        "unrecognized input {}: expected a swagger.json, a folder of OpenAPI v3 documents or CRD manifests",
        path.display()
    )]
    Unrecognized {
        /// The input path.
        path: PathBuf,
    },
    /// A folder without any `*.json` document.
    #[error("no OpenAPI v3 documents (*.json) in {}", path.display())]
    EmptyFolder {
        /// The folder.
        path: PathBuf,
    },
}

/// A file, and for multi-document YAML the 1-based document number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The file as the caller named it.
    pub path: PathBuf,
    /// The document within a multi-document file.
    pub document: Option<usize>,
}

impl Source {
    /// A whole file.
    pub fn file(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            document: None,
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(n) = self.document {
            write!(f, " (document {n})")?;
        }
        Ok(())
    }
}

/// A JSON pointer under construction: each level borrows its parent.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ptr<'a> {
    Root,
    Key(&'a Ptr<'a>, &'a str),
    Index(&'a Ptr<'a>, usize),
}

impl<'a> Ptr<'a> {
    pub(crate) fn key(&'a self, key: &'a str) -> Ptr<'a> {
        Ptr::Key(self, key)
    }

    pub(crate) fn index(&'a self, i: usize) -> Ptr<'a> {
        Ptr::Index(self, i)
    }

    fn write(&self, out: &mut String) {
        match self {
            Ptr::Root => {}
            Ptr::Key(parent, key) => {
                parent.write(out);
                out.push('/');
                out.push_str(&escape_pointer(key));
            }
            Ptr::Index(parent, i) => {
                parent.write(out);
                out.push('/');
                out.push_str(&i.to_string());
            }
        }
    }
}

impl fmt::Display for Ptr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write(&mut s);
        f.write_str(&s)
    }
}

/// The file being read and the kind of thing it holds, so helpers can build errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cx<'a> {
    pub(crate) source: &'a Source,
    pub(crate) what: &'static str,
}

impl Cx<'_> {
    pub(crate) fn invalid(&self, at: &Ptr<'_>, message: impl Into<String>) -> LoadError {
        LoadError::Invalid {
            what: self.what,
            source_file: self.source.clone(),
            pointer: at.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn with_what(&self, what: &'static str) -> Self {
        Cx { what, ..*self }
    }
}

/// A short name for a JSON value's type, for messages.
pub(crate) fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_escape_segments() {
        let root = Ptr::Root;
        let paths = root.key("paths");
        let p = paths.key("/apis/apps/v1");
        let q = p.key("a~b");
        let r = q.index(3);
        assert_eq!(r.to_string(), "/paths/~1apis~1apps~1v1/a~0b/3");
        assert_eq!(Ptr::Root.to_string(), "");
    }

    #[test]
    fn messages_name_file_document_and_pointer() {
        let source = Source {
            path: "crds.yaml".into(),
            document: Some(2),
        };
        let cx = Cx {
            source: &source,
            what: "CRD",
        };
        let root = Ptr::Root;
        let spec = root.key("spec");
        let err = cx.invalid(&spec, "missing group");
        assert_eq!(
            err.to_string(),
            "invalid CRD at crds.yaml (document 2) #/spec: missing group"
        );
    }
}
