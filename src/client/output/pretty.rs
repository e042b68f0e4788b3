//! `--output pretty`: text for people. Not a contract; scripts should use the JSON formats.

use std::fmt::Write as _;

use serde_json::Value;

use crate::client::pager::Page;

/// Longest description line shown in a tool listing (characters).
const DESCRIPTION_WIDTH: usize = 100;

fn first_line(text: &str, width: usize) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    if line.chars().count() > width {
        let cut: String = line.chars().take(width.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

/// The tool inventory, one tool per entry.
pub fn tools_list(pages: &[Page]) -> String {
    let mut out = String::new();
    let mut count = 0usize;
    for tool in pages.iter().flat_map(|p| &p.tools) {
        count += 1;
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
        let title = tool
            .get("title")
            .or_else(|| tool.pointer("/annotations/title"))
            .and_then(Value::as_str);
        match title {
            Some(t) => {
                let _ = writeln!(out, "{name} — {t}");
            }
            None => {
                let _ = writeln!(out, "{name}");
            }
        }
        if let Some(d) = tool.get("description").and_then(Value::as_str) {
            let _ = writeln!(out, "    {}", first_line(d, DESCRIPTION_WIDTH));
        }
    }
    let _ = writeln!(
        out,
        "{count} tool{} ({} page{})",
        if count == 1 { "" } else { "s" },
        pages.len(),
        if pages.len() == 1 { "" } else { "s" }
    );
    out
}

/// The server description from [`crate::client::output::server_summary`].
pub fn server_info(summary: &Value) -> String {
    let mut out = String::new();
    let text = |key: &str| summary.get(key).and_then(Value::as_str).unwrap_or("?");
    let name = summary
        .pointer("/serverInfo/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let version = summary
        .pointer("/serverInfo/version")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let _ = writeln!(out, "Server        {name} {version}");
    let _ = writeln!(
        out,
        "Protocol      {} ({} over {})",
        text("protocolVersion"),
        text("operation"),
        text("transport")
    );
    if let Some(list) = summary.get("supportedVersions").and_then(Value::as_array) {
        let list: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
        let _ = writeln!(out, "Supported     {}", list.join(", "));
    }
    if let Some(caps) = summary.get("capabilities").and_then(Value::as_object) {
        let names: Vec<&str> = caps.keys().map(String::as_str).collect();
        let _ = writeln!(out, "Capabilities  {}", names.join(", "));
    }
    if let Some(reason) = summary.get("fallback").and_then(Value::as_str) {
        let _ = writeln!(out, "Fallback      {reason}");
    }
    if let Some(i) = summary.get("instructions").and_then(Value::as_str) {
        let _ = writeln!(out, "Instructions  {i}");
    }
    out
}

/// A text item: JSON text is indented, anything else printed as is.
fn text_item(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => {
            serde_json::to_string_pretty(&v).unwrap_or_else(|_| text.to_owned())
        }
        _ => text.to_owned(),
    }
}

fn other_item(item: &Value) -> String {
    let kind = item.get("type").and_then(Value::as_str).unwrap_or("?");
    let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
    match kind {
        "image" | "audio" => format!(
            "[{kind} {}, {} base64 characters]",
            field("mimeType"),
            field("data").len()
        ),
        "resource_link" => format!("[resource link {}]", field("uri")),
        "resource" => format!(
            "[resource {}]",
            item.pointer("/resource/uri")
                .and_then(Value::as_str)
                .unwrap_or("")
        ),
        other => format!("[{other} content]"),
    }
}

/// A `tools/call` result: its content items, or its structured content when it has no text.
pub fn call_result(result: &Value) -> String {
    let mut out = String::new();
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        let keys: Vec<&str> = result
            .get("inputRequests")
            .and_then(Value::as_object)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "Input required ({}); not resolved by this client.",
            if keys.is_empty() {
                "request state only".to_owned()
            } else {
                keys.join(", ")
            }
        );
        return out;
    }
    let items = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut texts = 0;
    for item in &items {
        match item.get("text").and_then(Value::as_str) {
            Some(t) if item.get("type").and_then(Value::as_str) == Some("text") => {
                texts += 1;
                let _ = writeln!(out, "{}", text_item(t));
            }
            _ => {
                let _ = writeln!(out, "{}", other_item(item));
            }
        }
    }
    if texts == 0 {
        if let Some(sc) = result.get("structuredContent") {
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(sc).unwrap_or_default()
            );
        }
    }
    out
}

/// One progress notification, for stderr.
pub fn progress(params: &Value) -> String {
    let amount = params.get("progress").and_then(Value::as_f64);
    let total = params.get("total").and_then(Value::as_f64);
    let message = params.get("message").and_then(Value::as_str);
    let mut line = String::from("progress:");
    match (amount, total) {
        (Some(p), Some(t)) => {
            let _ = write!(line, " {p}/{t}");
        }
        (Some(p), None) => {
            let _ = write!(line, " {p}");
        }
        _ => {}
    }
    if let Some(m) = message {
        let _ = write!(line, " {m}");
    }
    line
}
