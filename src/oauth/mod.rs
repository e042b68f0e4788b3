//! InterLock as an OAuth 2.1 protected resource (MCP authorization, RFC 9728): bearer access
//! tokens from the configured issuer are accepted beside API keys.
//!
//! A JWT is verified against the issuer's published keys ([`jwks`]): an asymmetric
//! algorithm the key itself admits (never `none`, never HMAC), `iss` equal to the issuer,
//! `aud` naming this resource (RFC 8707: tokens minted for another service are refused),
//! `exp` and `nbf` with `leeway_secs`. Other tokens go to RFC 7662 introspection when it is
//! configured. The verified claims name the identity ([`Verified`]); the identity resolver
//! (`pipeline::identity`) does the rest. Tokens are never logged, audited or echoed.

pub mod challenge;
pub mod issuer;
pub mod jwks;
pub mod metadata;
pub mod settings;
pub mod well_known;

mod introspect;

use std::collections::HashSet;
use std::time::Duration;

use base64::Engine;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use settings::OAuthSettings;

/// Why a bearer token is not accepted. The text is safe to show the caller: it never
/// contains the token.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TokenError {
    /// 401 `invalid_token`.
    #[error("{0}")]
    Invalid(String),
    /// The issuer's keys (or its introspection endpoint) could not be reached: 503.
    #[error("the identity provider could not be reached to check the token ({0})")]
    KeysUnavailable(String),
}

/// What a verified token says about its bearer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub issuer: String,
    pub subject: String,
    /// The InterLock identity it names (`identity_claim`).
    pub identity: String,
    pub scopes: Vec<String>,
    /// The values of `roles_claim`.
    pub groups: Vec<String>,
    /// `iat`, seconds since the epoch.
    pub issued_at: Option<i64>,
    /// `exp`, seconds since the epoch.
    pub expires_at: Option<i64>,
}

pub struct OAuth {
    pub settings: OAuthSettings,
    keys: jwks::Keys,
    introspection: Option<introspect::Introspection>,
    http: reqwest::Client,
}

impl OAuth {
    /// The verifier `settings` describe (`None` when OAuth is off).
    pub fn from_settings(settings: &OAuthSettings) -> Result<Option<Self>, String> {
        if !settings.enabled {
            return Ok(None);
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .connect_timeout(Duration::from_secs(3))
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| format!("HTTP client for the identity provider: {e}"))?;
        let introspection = if settings.introspection_url.is_empty() {
            None
        } else {
            let secret = if settings.introspection_secret_file.is_empty() {
                String::new()
            } else {
                std::fs::read_to_string(&settings.introspection_secret_file)
                    .map_err(|e| {
                        format!(
                            "oauth.introspection_secret_file {}: {e}",
                            settings.introspection_secret_file
                        )
                    })?
                    .trim()
                    .to_string()
            };
            Some(introspect::Introspection {
                url: settings.introspection_url.clone(),
                client_id: settings.introspection_client_id.clone(),
                secret,
            })
        };
        Ok(Some(OAuth {
            keys: jwks::Keys::new(settings, http.clone()),
            settings: settings.clone(),
            introspection,
            http,
        }))
    }

    /// Verifies a bearer token (a JWT, or an opaque token by introspection).
    pub async fn verify(&self, token: &str) -> Result<Verified, TokenError> {
        let claims = if token.split('.').count() == 3 {
            self.verify_jwt(token).await?
        } else if let Some(introspection) = &self.introspection {
            let claims = introspection.claims(&self.http, token).await?;
            self.check_registered_claims(&claims)?;
            claims
        } else {
            return Err(TokenError::Invalid(
                "the bearer token is neither an API key nor a JWT access token".into(),
            ));
        };
        self.verified(&claims)
    }

    async fn verify_jwt(&self, token: &str) -> Result<Map<String, Value>, TokenError> {
        let header = peek_header(token)?;
        let alg_name: String = header["alg"]
            .as_str()
            .unwrap_or("")
            .chars()
            .take(16)
            .collect();
        let alg_name = alg_name.as_str();
        if !self.settings.algorithms.iter().any(|a| a == alg_name) {
            return Err(TokenError::Invalid(format!(
                "signature algorithm {alg_name:?} is not accepted (accepted: {})",
                self.settings.algorithms.join(", ")
            )));
        }
        let alg: Algorithm = alg_name
            .parse()
            .map_err(|_| TokenError::Invalid(format!("unknown algorithm {alg_name:?}")))?;
        let kid = header["kid"].as_str();
        let (key, admitted) = self.keys.key_for(kid, alg).await?;
        let mut validation = Validation::new(admitted);
        validation.algorithms = vec![admitted];
        validation.leeway = self.settings.leeway_secs;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|e| TokenError::Invalid(self.describe(e.kind())))
    }

    /// The registered claims of an introspected token, checked as a JWT's would be.
    fn check_registered_claims(&self, claims: &Map<String, Value>) -> Result<(), TokenError> {
        let now = chrono::Utc::now().timestamp();
        let leeway = i64::try_from(self.settings.leeway_secs).unwrap_or(0);
        let audiences: HashSet<&str> = match claims.get("aud") {
            Some(Value::String(a)) => [a.as_str()].into(),
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => HashSet::new(),
        };
        if !audiences.contains(self.settings.resource.as_str()) {
            return Err(TokenError::Invalid(
                self.describe(&jsonwebtoken::errors::ErrorKind::InvalidAudience),
            ));
        }
        if let Some(iss) = claims.get("iss").and_then(Value::as_str) {
            if iss != self.settings.issuer {
                return Err(TokenError::Invalid(
                    self.describe(&jsonwebtoken::errors::ErrorKind::InvalidIssuer),
                ));
            }
        }
        match claims.get("exp").and_then(Value::as_i64) {
            Some(exp) if exp + leeway < now => Err(TokenError::Invalid(
                self.describe(&jsonwebtoken::errors::ErrorKind::ExpiredSignature),
            )),
            _ => Ok(()),
        }
    }

    fn describe(&self, kind: &jsonwebtoken::errors::ErrorKind) -> String {
        use jsonwebtoken::errors::ErrorKind as K;
        match kind {
            K::ExpiredSignature => "the token has expired".into(),
            K::ImmatureSignature => "the token is not valid yet (nbf)".into(),
            K::InvalidAudience => format!(
                "the token was issued for another audience; its aud must be {} (RFC 8707)",
                self.settings.resource
            ),
            K::InvalidIssuer => format!(
                "the token was issued by another issuer; only {} is accepted",
                self.settings.issuer
            ),
            K::InvalidSignature => "the token's signature does not verify".into(),
            K::MissingRequiredClaim(c) => format!("the token has no {c} claim"),
            K::InvalidAlgorithm => "the token's algorithm does not match its key".into(),
            _ => "the token is not a valid JWT access token".into(),
        }
    }

    fn verified(&self, claims: &Map<String, Value>) -> Result<Verified, TokenError> {
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_string);
        let identity = text(&self.settings.identity_claim)
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| {
                TokenError::Invalid(format!(
                    "the token has no {} claim naming an identity",
                    self.settings.identity_claim
                ))
            })?;
        // `scope` is a space-separated string (RFC 9068); some issuers send `scp` or a list.
        let scopes = words(claims.get("scope").or_else(|| claims.get("scp")), true);
        let groups = match self.settings.roles_claim.as_str() {
            "" => Vec::new(),
            claim => words(claims.get(claim), false),
        };
        Ok(Verified {
            issuer: text("iss").unwrap_or_else(|| self.settings.issuer.clone()),
            subject: text("sub").unwrap_or_else(|| identity.clone()),
            identity,
            scopes,
            groups,
            issued_at: claims.get("iat").and_then(Value::as_i64),
            expires_at: claims.get("exp").and_then(Value::as_i64),
        })
    }
}

/// The strings of a claim that is a list of strings or one string (split at whitespace
/// when `split`).
fn words(claim: Option<&Value>, split: bool) -> Vec<String> {
    match claim {
        Some(Value::String(s)) if split => s.split_whitespace().map(str::to_string).collect(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// The JOSE header of a compact JWT, read without trusting it (to choose the key and to
/// refuse `none` and HMAC by name).
fn peek_header(token: &str) -> Result<Value, TokenError> {
    let malformed = || TokenError::Invalid("the token is not a well-formed JWT".into());
    let first = token.split('.').next().ok_or_else(malformed)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(first.trim_end_matches('='))
        .map_err(|_| malformed())?;
    let header: Value = serde_json::from_slice(&bytes).map_err(|_| malformed())?;
    if header.is_object() {
        Ok(header)
    } else {
        Err(malformed())
    }
}

#[cfg(test)]
mod tests {
    use super::{peek_header, words};
    use serde_json::json;

    #[test]
    fn scopes_and_groups_are_read_in_every_shape_issuers_send() {
        let cases = [
            (json!("a b  c"), true, vec!["a", "b", "c"]),
            (json!("team one"), false, vec!["team one"]),
            (json!(["a", 1, "b"]), true, vec!["a", "b"]),
            (json!(7), true, vec![]),
        ];
        for (claim, split, want) in cases {
            assert_eq!(words(Some(&claim), split), want, "{claim}");
        }
        assert!(words(None, true).is_empty());
    }

    #[test]
    fn a_header_is_read_only_from_a_well_formed_first_segment() {
        // (token, the header's alg when it reads as a JSON object)
        let cases: [(&str, Option<serde_json::Value>); 5] = [
            ("eyJhbGciOiJub25lIn0.e30.", Some(json!("none"))),
            ("e30", Some(serde_json::Value::Null)),
            ("", None),
            ("not base64!.x.y", None),
            ("WyJhIl0.e30.x", None),
        ];
        for (token, alg) in cases {
            let header = peek_header(token);
            assert_eq!(header.ok().map(|h| h["alg"].clone()), alg, "{token:?}");
        }
    }
}
