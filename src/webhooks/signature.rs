//! Standard Webhooks signatures: `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "id.timestamp.body">`, keyed with the base64 part of a `whsec_` secret.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

const PREFIX: &str = "whsec_";

/// A new secret: 24 random bytes.
pub fn new_secret() -> String {
    let key: [u8; 24] = rand::random();
    format!("{PREFIX}{}", STANDARD.encode(key))
}

/// Whether `secret` is a usable `whsec_` secret.
pub fn valid_secret(secret: &str) -> bool {
    key(secret).is_some_and(|k| k.len() >= 16)
}

fn key(secret: &str) -> Option<Vec<u8>> {
    STANDARD.decode(secret.strip_prefix(PREFIX)?).ok()
}

/// The `webhook-signature` value of one delivery.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let mut mac = Hmac::<Sha256>::new_from_slice(&key(secret)?).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification.
    #[test]
    fn signs_as_the_specification_does() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body).as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
        assert!(valid_secret(&new_secret()));
        assert!(!valid_secret("whsec_not base64!"));
        assert!(!valid_secret("plain"));
    }
}
