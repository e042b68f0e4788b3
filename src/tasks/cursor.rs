//! `tasks/list` cursors: the last listed task's creation time and id, opaque to clients.

use base64::Engine;
use chrono::{DateTime, Utc};
use uuid::Uuid;

const ENGINE: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The cursor after a task created at `at` with id `id`.
pub fn encode(at: DateTime<Utc>, id: Uuid) -> String {
    ENGINE.encode(format!("{}|{id}", at.timestamp_micros()))
}

/// The task a cursor continues after, if it is one of ours.
pub fn decode(cursor: &str) -> Option<(DateTime<Utc>, Uuid)> {
    let text = String::from_utf8(ENGINE.decode(cursor).ok()?).ok()?;
    let (micros, id) = text.split_once('|')?;
    let at = DateTime::from_timestamp_micros(micros.parse().ok()?)?;
    Some((at, Uuid::parse_str(id).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_strangers_are_refused() {
        let at = DateTime::from_timestamp_micros(1_765_000_000_123_456).unwrap_or_default();
        let id = Uuid::new_v4();
        assert_eq!(decode(&encode(at, id)), Some((at, id)));
        for bad in ["", "!!", "bm90IGEgY3Vyc29y", &ENGINE.encode("12|nope")] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
