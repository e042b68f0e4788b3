//! `tools/list` pagination with opaque cursors.
//!
//! A cursor is the base64url encoding of `interlock-tools:v1:<offset>`.
//! Clients must treat it as opaque; InterLock accepts exactly the cursors it
//! issues (the decoded offset re-encodes to the same text and points inside the
//! list) and answers anything else with -32602 `invalid_cursor`, as the spec's
//! pagination utility asks. The catalog is fixed for the life of the process,
//! so an offset stays meaningful between pages; a cursor issued under another
//! page size is still valid, it just starts the next page at that offset.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;

use crate::mcp::error::RpcError;
use crate::mcp::tool_catalog::ToolCatalog;

const CURSOR_PREFIX: &str = "interlock-tools:v1:";

/// One page of tool definitions.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<'a> {
    /// The definitions on this page.
    pub tools: &'a [Value],
    /// The cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

fn encode(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{offset}"))
}

fn decode(cursor: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let offset: usize = text.strip_prefix(CURSOR_PREFIX)?.parse().ok()?;
    (encode(offset) == cursor).then_some(offset)
}

/// The page `params.cursor` asks for (`None` or `null`: the first page).
pub fn page<'a>(
    tool_catalog: &'a ToolCatalog,
    cursor: Option<&Value>,
) -> Result<Page<'a>, RpcError> {
    let all = tool_catalog.definitions();
    let start = match cursor {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => match decode(cursor) {
            Some(offset) if offset > 0 && offset < all.len() => offset,
            _ => return Err(RpcError::invalid_cursor()),
        },
        Some(_) => return Err(RpcError::invalid_cursor()),
    };
    let end = match tool_catalog.page_size() {
        Some(size) => start.saturating_add(size.get()).min(all.len()),
        None => all.len(),
    };
    let tools = all.get(start..end).unwrap_or_default();
    let next_cursor = (end < all.len()).then(|| encode(end));
    Ok(Page { tools, next_cursor })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroUsize;

    fn tool_catalog(size: usize) -> ToolCatalog {
        ToolCatalog::load()
            .expect("catalog loads")
            .with_page_size(NonZeroUsize::new(size))
    }

    #[test]
    fn walking_pages_visits_every_definition_once() {
        let tool_catalog = tool_catalog(5);
        let mut seen = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let page = page(&tool_catalog, cursor.as_ref()).expect("issued cursors are valid");
            assert!(page.tools.len() <= 5);
            seen.extend(page.tools.iter().cloned());
            match page.next_cursor {
                Some(next) => cursor = Some(Value::from(next)),
                None => break,
            }
        }
        assert_eq!(seen, tool_catalog.definitions());
    }

    #[test]
    fn foreign_cursors_are_invalid() {
        let tool_catalog = tool_catalog(5);
        let past_end = encode(tool_catalog.definitions().len());
        let padded = format!("{}=", encode(5));
        let cursors = [
            Value::from("garbage!"),
            Value::from(encode(0)),
            Value::from(past_end),
            Value::from(padded),
            Value::from(URL_SAFE_NO_PAD.encode("interlock-tools:v1:05")),
            Value::from(5),
        ];
        for cursor in cursors {
            let error = page(&tool_catalog, Some(&cursor)).err();
            let key = error.and_then(|e| e.data).map(|data| data["code"].clone());
            assert_eq!(key, Some(Value::from("invalid_cursor")), "{cursor}");
        }
    }
}
