//! `tools/list` pagination: every page, in order, each result kept raw.
//!
//! Cursors are opaque: whatever string `nextCursor` holds — including `""` — is sent back as
//! `params.cursor` unchanged. Listing stops only when `nextCursor` is absent (a `null` is
//! read as absent). A cursor the server already issued in this listing means a loop and ends
//! the command with a protocol error, as does exceeding [`MAX_PAGES`].

use std::collections::HashSet;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::client::error::ClientError;
use crate::client::session::Session;
use crate::client::transport::BoxFuture;

/// Most pages one listing follows.
pub const MAX_PAGES: usize = 10_000;

/// Something that sends one request and returns its raw result (a [`Session`], or a fake in
/// tests).
pub trait Requester: Send {
    /// Sends `method` with `params`.
    fn request<'a>(
        &'a mut self,
        method: &'a str,
        params: Map<String, Value>,
    ) -> BoxFuture<'a, Result<Box<RawValue>, ClientError>>;
}

impl Requester for Session {
    fn request<'a>(
        &'a mut self,
        method: &'a str,
        params: Map<String, Value>,
    ) -> BoxFuture<'a, Result<Box<RawValue>, ClientError>> {
        Box::pin(Session::request(self, method, params))
    }
}

/// One received page.
#[derive(Debug)]
pub struct Page {
    /// The cursor sent to get it (`None` for the first page). Client metadata only.
    pub request_cursor: Option<String>,
    /// The result exactly as received.
    pub result: Box<RawValue>,
    /// Its `tools` array, parsed (for the flattened outputs).
    pub tools: Vec<Value>,
}

/// Reads `nextCursor`: `Ok(None)` when absent or null.
fn next_cursor(result: &Map<String, Value>) -> Result<Option<String>, ClientError> {
    match result.get("nextCursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(c)) => Ok(Some(c.clone())),
        Some(other) => Err(ClientError::InvalidResult(format!(
            "tools/list: nextCursor is not a string: {other}"
        ))),
    }
}

/// Checks one page and takes what the pager needs out of it.
fn read_page(raw: &RawValue) -> Result<(Vec<Value>, Option<String>), ClientError> {
    let value: Value = serde_json::from_str(raw.get())
        .map_err(|e| ClientError::InvalidResult(format!("tools/list: unreadable result: {e}")))?;
    let Value::Object(map) = value else {
        return Err(ClientError::InvalidResult(
            "tools/list: the result is not an object".into(),
        ));
    };
    match map.get("resultType") {
        None => {}
        Some(Value::String(t)) if t == "complete" => {}
        Some(other) => {
            return Err(ClientError::InvalidResult(format!(
                "tools/list: unsupported resultType {other}"
            )))
        }
    }
    let tools = match map.get("tools") {
        Some(Value::Array(tools)) => tools.clone(),
        _ => {
            return Err(ClientError::InvalidResult(
                "tools/list: the result has no tools array".into(),
            ))
        }
    };
    Ok((tools, next_cursor(&map)?))
}

/// Follows `tools/list` to the last page.
pub async fn list_tools(requester: &mut dyn Requester) -> Result<Vec<Page>, ClientError> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    let mut issued: HashSet<String> = HashSet::new();
    loop {
        let mut params = Map::new();
        if let Some(c) = &cursor {
            params.insert("cursor".into(), Value::String(c.clone()));
        }
        let result = requester.request("tools/list", params).await?;
        let (tools, next) = read_page(&result)?;
        pages.push(Page {
            request_cursor: cursor.take(),
            result,
            tools,
        });
        let Some(next) = next else { break };
        if !issued.insert(next.clone()) {
            return Err(ClientError::Protocol(format!(
                "tools/list: the server repeated cursor {next:?} after {} pages (pagination loop)",
                pages.len()
            )));
        }
        if pages.len() >= MAX_PAGES {
            return Err(ClientError::Protocol(format!(
                "tools/list: more than {MAX_PAGES} pages; stopped"
            )));
        }
        cursor = Some(next);
    }
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Answers scripted results and records the cursors it was sent.
    struct Fake {
        answers: VecDeque<&'static str>,
        sent: Vec<Option<Value>>,
    }

    impl Requester for Fake {
        fn request<'a>(
            &'a mut self,
            method: &'a str,
            params: Map<String, Value>,
        ) -> BoxFuture<'a, Result<Box<RawValue>, ClientError>> {
            assert_eq!(method, "tools/list");
            self.sent.push(params.get("cursor").cloned());
            let next = self.answers.pop_front().unwrap_or(r#"{"tools":[]}"#);
            Box::pin(async move { Ok(RawValue::from_string(next.to_owned()).unwrap()) })
        }
    }

    fn fake(answers: &[&'static str]) -> Fake {
        Fake {
            answers: answers.iter().copied().collect(),
            sent: Vec::new(),
        }
    }

    #[tokio::test]
    async fn empty_string_cursor_is_sent_back() {
        let mut f = fake(&[
            r#"{"tools":[{"name":"a"}],"nextCursor":""}"#,
            r#"{"tools":[{"name":"b"}], "nextCursor" : "c2" ,"ttlMs":5}"#,
            r#"{"tools":[{"name":"c"}],"_meta":{"x":1}}"#,
        ]);
        let pages = list_tools(&mut f).await.unwrap();
        assert_eq!(
            f.sent,
            vec![None, Some(Value::from("")), Some(Value::from("c2"))]
        );
        assert_eq!(pages.len(), 3);
        assert_eq!(pages[0].request_cursor, None);
        assert_eq!(pages[1].request_cursor.as_deref(), Some(""));
        assert_eq!(pages[2].request_cursor.as_deref(), Some("c2"));
        assert_eq!(
            pages[1].result.get(),
            r#"{"tools":[{"name":"b"}], "nextCursor" : "c2" ,"ttlMs":5}"#
        );
    }

    #[tokio::test]
    async fn null_cursor_ends_the_listing() {
        let mut f = fake(&[r#"{"tools":[],"nextCursor":null}"#]);
        assert_eq!(list_tools(&mut f).await.unwrap().len(), 1);
        assert_eq!(f.sent.len(), 1);
    }

    #[tokio::test]
    async fn repeated_cursor_is_a_loop() {
        let mut f = fake(&[
            r#"{"tools":[],"nextCursor":"a"}"#,
            r#"{"tools":[],"nextCursor":"b"}"#,
            r#"{"tools":[],"nextCursor":"a"}"#,
        ]);
        let err = list_tools(&mut f).await.unwrap_err();
        assert!(
            matches!(err, ClientError::Protocol(ref m) if m.contains("loop")),
            "{err}"
        );
        assert_eq!(f.sent.len(), 3);
    }

    #[tokio::test]
    async fn invalid_pages_are_invalid_results() {
        for bad in [
            "[]",
            r#"{"nextCursor":"x"}"#,
            r#"{"tools":{}}"#,
            r#"{"tools":[],"nextCursor":5}"#,
            r#"{"tools":[],"resultType":"input_required"}"#,
        ] {
            let mut f = fake(&[bad]);
            let err = list_tools(&mut f).await.unwrap_err();
            assert!(matches!(err, ClientError::InvalidResult(_)), "{bad}: {err}");
        }
    }

    #[tokio::test]
    async fn errors_propagate() {
        struct Broken;
        impl Requester for Broken {
            fn request<'a>(
                &'a mut self,
                _: &'a str,
                _: Map<String, Value>,
            ) -> BoxFuture<'a, Result<Box<RawValue>, ClientError>> {
                Box::pin(async { Err(ClientError::transport("down")) })
            }
        }
        let err = list_tools(&mut Broken).await.unwrap_err();
        assert!(matches!(err, ClientError::Transport(_)));
    }
}
