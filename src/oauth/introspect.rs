//! RFC 7662 token introspection, for access tokens that are not JWTs: the issuer says
//! whether the token is active and what it carries; the same audience, issuer and expiry
//! rules then apply as to a JWT.

use serde_json::{Map, Value};

use super::TokenError;

pub struct Introspection {
    pub url: String,
    pub client_id: String,
    /// Read from `introspection_secret_file` at start-up.
    pub secret: String,
}

impl Introspection {
    /// The claims of an active token (the introspection response), or why it is refused.
    pub async fn claims(
        &self,
        http: &reqwest::Client,
        token: &str,
    ) -> Result<Map<String, Value>, TokenError> {
        let response = http
            .post(&self.url)
            .basic_auth(&self.client_id, Some(&self.secret))
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await
            .map_err(|e| {
                TokenError::KeysUnavailable(format!("introspection: {}", without_url(&e)))
            })?;
        if !response.status().is_success() {
            return Err(TokenError::KeysUnavailable(format!(
                "introspection answered HTTP {}",
                response.status()
            )));
        }
        let body: Value = response.json().await.map_err(|e| {
            TokenError::KeysUnavailable(format!("introspection: {}", without_url(&e)))
        })?;
        let Value::Object(claims) = body else {
            return Err(TokenError::KeysUnavailable(
                "introspection answered something other than a JSON object".into(),
            ));
        };
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenError::Invalid(
                "the token is not active (expired, revoked or unknown to the issuer)".into(),
            ));
        }
        Ok(claims)
    }
}

/// A request error without its URL (which carries nothing secret, but keep errors short).
fn without_url(e: &reqwest::Error) -> String {
    let mut e = e.to_string();
    if let Some(i) = e.find(" for url") {
        e.truncate(i);
    }
    e
}
