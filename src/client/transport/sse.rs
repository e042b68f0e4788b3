//! Request-scoped `text/event-stream` responses.
//!
//! An incremental parser of the server-sent-events format (WHATWG "event stream
//! interpretation"): lines end in LF, CRLF or CR; `:` starts a comment (keep-alives); `data:`
//! lines of one event are joined with LF; a blank line dispatches the event; `event:` names
//! it (default `message`). Only `message` events carry JSON-RPC messages. A partial event
//! at the end of the stream is discarded, as the format requires.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type (`message` unless an `event:` field named another).
    pub event: String,
    /// The data lines joined with LF.
    pub data: String,
}

/// Incremental event-stream parser.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    skip_lf: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in chunk {
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.skip_lf = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        let line = String::from_utf8_lossy(&line);
        if line.is_empty() {
            if self.has_data {
                let mut data = std::mem::take(&mut self.data);
                if data.ends_with('\n') {
                    data.pop();
                }
                let event = std::mem::take(&mut self.event);
                out.push(SseEvent {
                    event: if event.is_empty() {
                        "message".to_owned()
                    } else {
                        event
                    },
                    data,
                });
            } else {
                self.event.clear();
            }
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "event" => self.event = value.to_owned(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        chunks.iter().flat_map(|c| p.feed(c)).collect()
    }

    fn msg(data: &str) -> SseEvent {
        SseEvent {
            event: "message".into(),
            data: data.into(),
        }
    }

    #[test]
    fn message_event_with_keepalives() {
        let events = all(&[b": keep-alive\n\n: keep-alive\n\nevent: message\ndata: {\"a\":1}\n\n"]);
        assert_eq!(events, vec![msg("{\"a\":1}")]);
    }

    #[test]
    fn split_across_chunks_and_crlf() {
        let events = all(&[
            b"da",
            b"ta: {\"x\"",
            b":2}\r",
            b"\n\r\n",
            b"data:y\r\rdata: z\n",
        ]);
        assert_eq!(events, vec![msg("{\"x\":2}"), msg("y")]);
    }

    #[test]
    fn multi_line_data_and_named_events() {
        let events = all(&[b"event: ping\ndata: a\ndata:  b\n\nid: 4\ndata: c\n\n"]);
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: "ping".into(),
                    data: "a\n b".into()
                },
                msg("c")
            ]
        );
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_partial_tail_is_kept() {
        let mut p = SseParser::new();
        assert!(p.feed(b"event: x\n\ndata: 1").is_empty());
        assert_eq!(p.feed(b"\n\n"), vec![msg("1")]);
    }
}
