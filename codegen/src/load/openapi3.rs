//! A folder of OpenAPI 3.0 documents, as `/openapi/v3/<group-version>` serves them.
//!
//! Every `*.json` file in the folder is one document; they are read in file-name order so merge
//! results and error messages do not depend on directory iteration order. Each document repeats
//! the shared definitions it references; [`super::Merger`] checks the copies agree.

use std::path::{Path, PathBuf};

use super::document::{Parts, load_document};
use super::error::{Cx, LoadError, Source};
use super::parse_json;
use super::schema::Dialect;

/// Loads every document of the folder.
pub(crate) fn load_folder(dir: &Path) -> Result<Vec<(Source, Parts)>, LoadError> {
    let io = |source| LoadError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let is_json = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if is_json && path.is_file() {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(LoadError::EmptyFolder {
            path: dir.to_path_buf(),
        });
    }
    files.sort();
    let mut out = Vec::with_capacity(files.len());
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|source| LoadError::Io {
            path: path.clone(),
            source,
        })?;
        let source = Source::file(&path);
        let value = parse_json(&source, &text)?;
        let cx = Cx {
            source: &source,
            what: "spec",
        };
        let parts = load_document(&cx, &value, Dialect::OpenApi3)?;
        out.push((source, parts));
    }
    Ok(out)
}
