//! A byte-stream guard between a source connection and the PostgreSQL driver,
//! so that no single value can make the gateway hold more than the byte cap.
//!
//! tokio-postgres buffers a whole protocol message before it hands a row over,
//! so a 100 MB value would be 100 MB in the gateway's memory before the
//! executor's byte cap ever saw it. The guard reads the plaintext backend
//! message stream (above TLS) and parses each message header (type byte and
//! length) as the bytes pass. A `DataRow` that announces more than the row
//! limit is never handed to the driver: its bytes are skipped as they arrive,
//! and in its place the driver receives an `ErrorResponse` with SQLSTATE
//! [`ROW_TOO_LARGE`], which the executor turns into a byte-cap truncation. The
//! connection stays in step with the server (the rest of the reply is consumed
//! as usual up to `ReadyForQuery`), so it stays usable. An error message over
//! [`MAX_ERROR_MESSAGE`] (one can quote a huge value) is replaced the same way
//! ([`ERROR_TOO_LARGE`]), an oversized notice is dropped, and any other message
//! over [`MAX_OTHER_MESSAGE`] fails the connection.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, TlsConnect, TlsStream};

/// The SQLSTATE of the error that stands in for a row over the limit.
pub const ROW_TOO_LARGE: &str = "54IL1";

/// The SQLSTATE of the error that stands in for an oversized error message.
pub const ERROR_TOO_LARGE: &str = "54IL2";

/// The longest error or notice kept; longer ones are replaced or dropped.
pub const MAX_ERROR_MESSAGE: usize = 64 * 1024;

/// The longest message of any other kind a source may send (row descriptions and
/// the like); a longer one fails the connection.
pub const MAX_OTHER_MESSAGE: usize = 4 * 1024 * 1024;

/// Read granularity of the guard.
const CHUNK: usize = 16 * 1024;

enum State {
    /// Collecting the 5 header bytes of the next message.
    Header { bytes: [u8; 5], filled: usize },
    /// Inside a message body; `skip` when it is an oversized row.
    Body { remaining: usize, skip: bool },
}

/// The guarded stream.
pub struct RowGuard<S> {
    inner: S,
    row_limit: usize,
    state: State,
    /// Bytes ready for the driver, from `start`.
    pending: Vec<u8>,
    start: usize,
    scratch: Box<[u8]>,
}

impl<S> RowGuard<S> {
    pub fn new(inner: S, row_limit: usize) -> Self {
        RowGuard {
            inner,
            row_limit,
            state: State::Header {
                bytes: [0; 5],
                filled: 0,
            },
            pending: Vec::new(),
            start: 0,
            scratch: vec![0; CHUNK].into_boxed_slice(),
        }
    }

    /// Feeds bytes read from the server through the message parser.
    fn process(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            match &mut self.state {
                State::Header { bytes, filled } => {
                    let take = (5 - *filled).min(data.len());
                    bytes[*filled..*filled + take].copy_from_slice(&data[..take]);
                    *filled += take;
                    data = &data[take..];
                    if *filled < 5 {
                        continue;
                    }
                    let header = *bytes;
                    let length = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
                    let body = usize::try_from(length)
                        .ok()
                        .and_then(|l| l.checked_sub(4))
                        .ok_or_else(|| {
                            io::Error::new(io::ErrorKind::InvalidData, "malformed message length")
                        })?;
                    let skip = match (header[0], body) {
                        (b'D', n) if n > self.row_limit => {
                            self.pending.extend_from_slice(&stand_in_error(
                                ROW_TOO_LARGE,
                                "a result row is larger than the source's byte cap",
                            ));
                            true
                        }
                        // An error can quote a value of any size (a failed cast of a
                        // huge string): the caller's, so it must not fail the connection.
                        (b'E', n) if n > MAX_ERROR_MESSAGE => {
                            self.pending.extend_from_slice(&stand_in_error(
                                ERROR_TOO_LARGE,
                                "the database's error message was too large to keep",
                            ));
                            true
                        }
                        // Notices are optional: an oversized one is dropped.
                        (b'N', n) if n > MAX_ERROR_MESSAGE => true,
                        (b'D' | b'E' | b'N', _) => {
                            self.pending.extend_from_slice(&header);
                            false
                        }
                        (_, n) if n > MAX_OTHER_MESSAGE => {
                            return Err(io::Error::new(
                                io::ErrorKind::InvalidData,
                                "the source sent an oversized protocol message",
                            ))
                        }
                        _ => {
                            self.pending.extend_from_slice(&header);
                            false
                        }
                    };
                    self.state = if body == 0 {
                        State::Header {
                            bytes: [0; 5],
                            filled: 0,
                        }
                    } else {
                        State::Body {
                            remaining: body,
                            skip,
                        }
                    };
                }
                State::Body { remaining, skip } => {
                    let take = (*remaining).min(data.len());
                    if !*skip {
                        self.pending.extend_from_slice(&data[..take]);
                    }
                    *remaining -= take;
                    data = &data[take..];
                    if *remaining == 0 {
                        self.state = State::Header {
                            bytes: [0; 5],
                            filled: 0,
                        };
                    }
                }
            }
        }
        Ok(())
    }
}

/// An `ErrorResponse` message: severity, SQLSTATE `code`, message.
fn stand_in_error(code: &str, text: &str) -> Vec<u8> {
    let mut fields = Vec::new();
    for (tag, value) in [(b'S', "ERROR"), (b'V', "ERROR"), (b'C', code), (b'M', text)] {
        fields.push(tag);
        fields.extend_from_slice(value.as_bytes());
        fields.push(0);
    }
    fields.push(0);
    let mut message = vec![b'E'];
    let length = u32::try_from(fields.len() + 4).unwrap_or(u32::MAX);
    message.extend_from_slice(&length.to_be_bytes());
    message.extend_from_slice(&fields);
    message
}

/// Whether a driver error is the guard's stand-in for an oversized row.
pub fn is_row_too_large(e: &tokio_postgres::Error) -> bool {
    e.as_db_error()
        .is_some_and(|db| db.code().code() == ROW_TOO_LARGE)
}

impl<S: AsyncRead + Unpin> AsyncRead for RowGuard<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.start < this.pending.len() {
                let n = (this.pending.len() - this.start).min(buf.remaining());
                buf.put_slice(&this.pending[this.start..this.start + n]);
                this.start += n;
                if this.start == this.pending.len() {
                    this.pending.clear();
                    this.start = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut scratch = ReadBuf::new(&mut this.scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut scratch) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let filled = scratch.filled().len();
                    if filled == 0 {
                        return Poll::Ready(Ok(())); // end of stream
                    }
                    let scratch = std::mem::take(&mut this.scratch);
                    let processed = this.process(&scratch[..filled]);
                    this.scratch = scratch;
                    processed?;
                    // Nothing for the driver yet (a skipped row or a partial
                    // header): read on rather than report end of stream.
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for RowGuard<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<S: TlsStream + Unpin> TlsStream for RowGuard<S> {
    fn channel_binding(&self) -> ChannelBinding {
        self.inner.channel_binding()
    }
}

/// A TLS connector whose streams are guarded above TLS.
pub struct GuardTls<T> {
    pub inner: T,
    pub row_limit: usize,
}

impl<S, T> TlsConnect<S> for GuardTls<T>
where
    T: TlsConnect<S>,
    T::Future: Send + 'static,
    T::Stream: 'static,
{
    type Stream = RowGuard<T::Stream>;
    type Error = T::Error;
    type Future = Pin<Box<dyn std::future::Future<Output = Result<Self::Stream, T::Error>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let limit = self.row_limit;
        let future = self.inner.connect(stream);
        Box::pin(async move { future.await.map(|s| RowGuard::new(s, limit)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&u32::try_from(body.len() + 4).unwrap_or(0).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn run(stream: &[u8], limit: usize, chunk: usize) -> io::Result<Vec<u8>> {
        let mut guard = RowGuard::new((), limit);
        for piece in stream.chunks(chunk.max(1)) {
            guard.process(piece)?;
        }
        Ok(guard.pending)
    }

    #[test]
    fn small_rows_pass_unchanged_and_big_ones_become_one_error() {
        let small = message(b'D', &[7; 10]);
        let big = message(b'D', &[9; 1000]);
        let done = message(b'C', b"SELECT 2\0");
        let stream = [small.clone(), big, done.clone()].concat();
        for chunk in [1, 2, 3, 5, 7, 64, 4096] {
            let out = run(&stream, 100, chunk).unwrap_or_default();
            let stand_in = stand_in_error(
                ROW_TOO_LARGE,
                "a result row is larger than the source's byte cap",
            );
            assert_eq!(
                out,
                [small.clone(), stand_in, done.clone()].concat(),
                "chunk {chunk}"
            );
        }
        // At the limit exactly, the row passes.
        let edge = message(b'D', &[1; 100]);
        assert_eq!(run(&edge, 100, 3).unwrap_or_default(), edge);
    }

    #[test]
    fn oversized_errors_are_replaced_and_notices_dropped() {
        let error = message(b'E', &vec![b'x'; MAX_ERROR_MESSAGE + 1]);
        let notice = message(b'N', &vec![b'y'; MAX_ERROR_MESSAGE + 1]);
        let ready = message(b'Z', b"I");
        let out = run(&[notice, error, ready.clone()].concat(), 100, 1000).unwrap_or_default();
        let stand_in = stand_in_error(
            ERROR_TOO_LARGE,
            "the database's error message was too large to keep",
        );
        assert_eq!(out, [stand_in, ready].concat());
    }

    #[test]
    fn oversized_other_messages_and_bad_lengths_fail_the_stream() {
        let mut header = vec![b'T'];
        header.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(run(&header, 100, 5).is_err());
        let bad = [b'D', 0, 0, 0, 2];
        assert!(run(&bad, 100, 5).is_err());
    }
}
