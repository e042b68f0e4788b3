//! Tool arguments: `--arguments JSON`, `--arguments-file PATH` or `--arguments-stdin`.
//!
//! The three forms are mutually exclusive (clap enforces it; [`ArgumentsSource::from_flags`]
//! checks again for callers that build the options by hand). The text must be one JSON
//! object; anything else is a usage error and nothing is sent. Without any of them the tool
//! is called with `{}`.

use std::io::Read;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::client::error::ClientError;

/// Largest arguments text accepted from a file or stdin (bytes).
const MAX_ARGUMENTS: u64 = 16 * 1024 * 1024;

/// Where the tool arguments come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgumentsSource {
    /// None given: `{}`.
    Empty,
    /// `--arguments JSON`.
    Inline(String),
    /// `--arguments-file PATH` (`-` is not special: use `--arguments-stdin`).
    File(PathBuf),
    /// `--arguments-stdin`.
    Stdin,
}

impl ArgumentsSource {
    /// The source named by the three options; more than one is a usage error.
    pub fn from_flags(
        inline: Option<String>,
        file: Option<PathBuf>,
        stdin: bool,
    ) -> Result<Self, ClientError> {
        match (inline, file, stdin) {
            (None, None, false) => Ok(ArgumentsSource::Empty),
            (Some(j), None, false) => Ok(ArgumentsSource::Inline(j)),
            (None, Some(p), false) => Ok(ArgumentsSource::File(p)),
            (None, None, true) => Ok(ArgumentsSource::Stdin),
            _ => Err(ClientError::Usage(
                "--arguments, --arguments-file and --arguments-stdin are mutually exclusive".into(),
            )),
        }
    }

    /// Reads and checks the arguments object.
    pub fn read(&self) -> Result<Map<String, Value>, ClientError> {
        let (text, origin) = match self {
            ArgumentsSource::Empty => return Ok(Map::new()),
            ArgumentsSource::Inline(text) => (text.clone(), "--arguments".to_owned()),
            ArgumentsSource::File(path) => {
                let file = std::fs::File::open(path).map_err(|e| {
                    ClientError::Usage(format!("--arguments-file {}: {e}", path.display()))
                })?;
                (
                    read_bounded(file, &format!("--arguments-file {}", path.display()))?,
                    format!("--arguments-file {}", path.display()),
                )
            }
            ArgumentsSource::Stdin => (
                read_bounded(std::io::stdin().lock(), "--arguments-stdin")?,
                "--arguments-stdin".to_owned(),
            ),
        };
        parse_object(&text, &origin)
    }
}

fn read_bounded(reader: impl Read, origin: &str) -> Result<String, ClientError> {
    let mut text = String::new();
    reader
        .take(MAX_ARGUMENTS + 1)
        .read_to_string(&mut text)
        .map_err(|e| ClientError::Usage(format!("{origin}: {e}")))?;
    if text.len() as u64 > MAX_ARGUMENTS {
        return Err(ClientError::Usage(format!(
            "{origin}: larger than {MAX_ARGUMENTS} bytes"
        )));
    }
    Ok(text)
}

/// Parses `text` as one JSON object.
pub fn parse_object(text: &str, origin: &str) -> Result<Map<String, Value>, ClientError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(ClientError::Usage(format!(
            "{origin}: tool arguments must be a JSON object, not {}",
            match other {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Array(_) => "an array",
                Value::Object(_) => "an object",
            }
        ))),
        Err(e) => Err(ClientError::Usage(format!("{origin}: invalid JSON: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exclusive_flags() {
        assert_eq!(
            ArgumentsSource::from_flags(None, None, false).unwrap(),
            ArgumentsSource::Empty
        );
        assert!(ArgumentsSource::from_flags(Some("{}".into()), None, true).is_err());
        assert!(ArgumentsSource::from_flags(Some("{}".into()), Some("f".into()), false).is_err());
        assert!(ArgumentsSource::from_flags(None, Some("f".into()), true).is_err());
    }

    #[test]
    fn objects_only() {
        assert_eq!(
            parse_object(r#"{"a":1}"#, "x").unwrap(),
            json!({"a":1}).as_object().unwrap().clone()
        );
        for bad in ["[]", "1", "null", "\"s\"", "{", ""] {
            let e = parse_object(bad, "--arguments").unwrap_err();
            assert!(matches!(e, ClientError::Usage(_)), "{bad}");
        }
    }

    #[test]
    fn reads_a_file_and_reports_a_missing_one() {
        let dir = std::env::temp_dir().join(format!("il-args-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.json");
        std::fs::write(&path, r#" {"source_id": "shop"} "#).unwrap();
        let map = ArgumentsSource::File(path.clone()).read().unwrap();
        assert_eq!(map["source_id"], json!("shop"));
        let missing = ArgumentsSource::File(dir.join("missing.json")).read();
        assert!(matches!(missing, Err(ClientError::Usage(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn empty_is_an_empty_object() {
        assert!(ArgumentsSource::Empty.read().unwrap().is_empty());
    }
}
