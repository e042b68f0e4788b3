//! Ingestion of document collections: a directory of Markdown, text and JSON files, or a
//! JSON-lines body posted through the API. Both produce normalised [`NewAsset`]s and refuse
//! the whole batch on the first bad document, naming the file or line, so a collection is
//! never half-loaded.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::asset::NewAsset;
use super::fields::{self, Defaults};
use super::frontmatter;

/// Largest file read by [`load_directory`].
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// File extensions [`load_directory`] ingests.
pub const EXTENSIONS: [&str; 4] = ["md", "markdown", "txt", "json"];

/// Why a document or a collection was refused.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("{path}: {size} bytes is larger than the {limit}-byte limit for one document")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{path}: not valid UTF-8 text")]
    NotUtf8 { path: String },
    #[error("{path}: {message}")]
    Document { path: String, message: String },
    #[error("line {line}: {message}")]
    Line { line: usize, message: String },
    #[error("asset id {id:?} is used by both {first} and {second}")]
    DuplicateId {
        id: String,
        first: String,
        second: String,
    },
}

/// Parses one document. `path_relative` (slash-separated, relative to the collection root)
/// selects the format by extension and supplies defaults: the id is the path without its
/// extension, the category is its directory. Markdown and text take an optional front matter
/// (see [`frontmatter`]) and default the title to the first `# ` heading, then to the id.
/// `.json` files hold one object with the fields of [`fields`], including `body`.
pub fn parse_document(path_relative: &str, text: &str) -> Result<NewAsset, IngestError> {
    let path = path_relative.replace('\\', "/");
    let invalid = |message: String| IngestError::Document {
        path: path.clone(),
        message,
    };
    let (stem, extension) = match path.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.contains('/') => {
            (stem.to_string(), ext.to_ascii_lowercase())
        }
        _ => (path.clone(), String::new()),
    };
    let category = stem.rsplit_once('/').map(|(dir, _)| dir.to_string());
    if extension == "json" {
        let value: Value =
            serde_json::from_str(text).map_err(|e| invalid(format!("invalid JSON: {e}")))?;
        let Value::Object(map) = value else {
            return Err(invalid("a JSON document must be an object".to_string()));
        };
        let defaults = Defaults {
            id: Some(stem),
            category,
            ..Defaults::default()
        };
        return fields::to_asset(map, defaults).map_err(invalid);
    }
    let (front, body) = frontmatter::split(text).map_err(invalid)?;
    let front = front.unwrap_or_default();
    let heading = first_heading(body);
    let mut body = body.to_string();
    let mut title = None;
    if !front.contains_key("title") {
        // The heading becomes the title and leaves the body, so snippets do not repeat it.
        if let Some((line, text)) = heading {
            body = body
                .lines()
                .filter(|l| *l != line)
                .collect::<Vec<_>>()
                .join("\n");
            title = Some(text);
        }
    }
    let defaults = Defaults {
        title: title.or_else(|| Some(stem.clone())),
        id: Some(stem),
        category,
        body: Some(body),
    };
    fields::to_asset(front, defaults).map_err(invalid)
}

/// The first `# ` heading: its whole line and its text.
fn first_heading(body: &str) -> Option<(&str, String)> {
    body.lines().find_map(|line| {
        let text = line.strip_prefix("# ")?.trim();
        (!text.is_empty()).then(|| (line, text.to_string()))
    })
}

/// Parses a JSON-lines body: one JSON object per line with the fields of [`fields`]; `id`
/// and `title` are required. Blank lines are skipped; errors name the 1-based line.
pub fn parse_json_lines(body: &str) -> Result<Vec<NewAsset>, IngestError> {
    let mut assets = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (index, line) in body.lines().enumerate() {
        let line_no = index + 1;
        let at = |message: String| IngestError::Line {
            line: line_no,
            message,
        };
        if line.trim().is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| at(format!("invalid JSON: {e}")))?;
        let Value::Object(map) = value else {
            return Err(at("each line must be a JSON object".to_string()));
        };
        let asset = fields::to_asset(map, Defaults::default()).map_err(at)?;
        if let Some(first) = seen.insert(asset.id.clone(), line_no) {
            return Err(IngestError::DuplicateId {
                id: asset.id,
                first: format!("line {first}"),
                second: format!("line {line_no}"),
            });
        }
        assets.push(asset);
    }
    Ok(assets)
}

/// Loads every `.md`, `.markdown`, `.txt` and `.json` file under `dir`, recursively, in
/// sorted path order. Hidden entries (names starting with `.`) and symbolic links are skipped
/// so a collection cannot reach outside its directory. Files over [`MAX_FILE_BYTES`] and
/// duplicate ids refuse the whole collection.
pub fn load_directory(dir: &Path) -> Result<Vec<NewAsset>, IngestError> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files)?;
    files.sort();
    let mut assets = Vec::with_capacity(files.len());
    let mut seen: HashMap<String, String> = HashMap::new();
    for (relative, full) in files {
        let io = |e: std::io::Error| IngestError::Io {
            path: relative.clone(),
            message: e.to_string(),
        };
        let size = std::fs::metadata(&full).map_err(io)?.len();
        if size > MAX_FILE_BYTES {
            return Err(IngestError::TooLarge {
                path: relative,
                size,
                limit: MAX_FILE_BYTES,
            });
        }
        let bytes = std::fs::read(&full).map_err(io)?;
        let text = String::from_utf8(bytes).map_err(|_| IngestError::NotUtf8 {
            path: relative.clone(),
        })?;
        let asset = parse_document(&relative, &text)?;
        if let Some(first) = seen.insert(asset.id.clone(), relative.clone()) {
            return Err(IngestError::DuplicateId {
                id: asset.id,
                first,
                second: relative,
            });
        }
        assets.push(asset);
    }
    Ok(assets)
}

/// Collects `(relative path, full path)` of ingestible files under `dir`.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> Result<(), IngestError> {
    let shown = |p: &Path| {
        p.strip_prefix(root)
            .map(|r| r.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default()
    };
    let io = |p: &Path, e: std::io::Error| IngestError::Io {
        path: if p == root {
            p.display().to_string()
        } else {
            shown(p)
        },
        message: e.to_string(),
    };
    for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let entry = entry.map_err(|e| io(dir, e))?;
        let path = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let kind = entry.file_type().map_err(|e| io(&path, e))?;
        if kind.is_dir() {
            collect(root, &path, out)?;
        } else if kind.is_file() {
            let ingestible = path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
            if ingestible {
                out.push((shown(&path), path));
            }
        }
    }
    Ok(())
}
