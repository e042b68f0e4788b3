//! InterLock as an OAuth 2.1 protected resource (MCP authorization, RFC 9728): bearer access
//! tokens from the configured issuer are accepted beside API keys.
//!
//! A JWT is verified against the issuer's published keys ([`jwks`]): an asymmetric
//! algorithm the key itself admits (never `none`, never HMAC), `iss` equal to the issuer,
//! `aud` naming this resource (RFC 8707: tokens minted for another service are refused),
//! `exp` and `nbf` with `leeway_secs`. Other tokens go to RFC 7662 introspection when it is
//! configured. The verified claims name the identity ([`Verified`]); the identity resolver
//! (`pipeline::identity`) does the rest. Tokens are never logged, audited or echoed.
//!
//! Beyond what the JWT library checks, and for introspected tokens alike
//! ([`OAuth::check_times`]): the JOSE header may not mark anything critical (`crit`: this
//! gateway implements no extension, RFC 7515 §4.1.11) nor ask for an unencoded payload
//! (`b64: false`, RFC 7797); `exp`, `nbf` and `iat`, when present, must be numbers (a
//! malformed one refuses the token rather than being ignored); `iat` may not be in the
//! future beyond the leeway (revocation goes by `iat`, so such a token would outlive it); the
//! token may not live longer than `max_token_lifetime_secs`; and the identity claim must be a
//! usable identity name (the rule of `control::identities::check_name`), checked before any
//! database work.

pub mod issuer;
pub mod jwks;
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
    /// Every claim, for policy conditions (`caller.claims`).
    pub claims: Map<String, Value>,
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
        check_header(&header)?;
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
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|e| TokenError::Invalid(self.describe(e.kind())))?;
        self.check_times(&claims, chrono::Utc::now().timestamp())?;
        Ok(claims)
    }

    /// The registered claims of an introspected token, checked as a JWT's would be.
    fn check_registered_claims(&self, claims: &Map<String, Value>) -> Result<(), TokenError> {
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
        self.check_times(claims, chrono::Utc::now().timestamp())
    }

    /// The time claims, as the JWT library does not check them: each of `exp`, `nbf`, `iat`
    /// present must be a NumericDate (a number); the token must not be expired or not yet
    /// valid, nor issued in the future, beyond the leeway; and it may not live longer than
    /// `max_token_lifetime_secs`: `exp - iat`, or without `iat` what is left of it
    /// (`exp - now`, beyond the leeway).
    fn check_times(&self, claims: &Map<String, Value>, now: i64) -> Result<(), TokenError> {
        use jsonwebtoken::errors::ErrorKind as K;
        let leeway = i64::try_from(self.settings.leeway_secs).unwrap_or(i64::MAX);
        let exp = numeric_date(claims, "exp")?;
        let nbf = numeric_date(claims, "nbf")?;
        let iat = numeric_date(claims, "iat")?;
        if exp.is_some_and(|exp| exp.saturating_add(leeway) < now) {
            return Err(TokenError::Invalid(self.describe(&K::ExpiredSignature)));
        }
        if nbf.is_some_and(|nbf| nbf > now.saturating_add(leeway)) {
            return Err(TokenError::Invalid(self.describe(&K::ImmatureSignature)));
        }
        if let Some(iat) = iat {
            if iat > now.saturating_add(leeway) {
                return Err(TokenError::Invalid(format!(
                    "the token's iat is {} s in the future, beyond oauth.leeway_secs ({} s): a \
                     token cannot be issued after it is used",
                    iat.saturating_sub(now),
                    self.settings.leeway_secs
                )));
            }
        }
        let max = i64::try_from(self.settings.max_token_lifetime_secs).unwrap_or(i64::MAX);
        if let Some(exp) = exp {
            let (lifetime, measured, limit) = match iat {
                Some(iat) => (exp.saturating_sub(iat), "exp - iat", max),
                None => (
                    exp.saturating_sub(now),
                    "exp - now",
                    max.saturating_add(leeway),
                ),
            };
            if lifetime > limit {
                return Err(TokenError::Invalid(format!(
                    "the token is valid for {lifetime} s ({measured}), longer than \
                     oauth.max_token_lifetime_secs ({max} s); ask the issuer for a \
                     shorter-lived token"
                )));
            }
        }
        Ok(())
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
            K::MissingRequiredClaim(c) => {
                format!("the token has no {c} claim (or one that is not a valid value)")
            }
            K::InvalidAlgorithm => "the token's algorithm does not match its key".into(),
            _ => "the token is not a valid JWT access token".into(),
        }
    }

    fn verified(&self, claims: &Map<String, Value>) -> Result<Verified, TokenError> {
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_string);
        let claim = &self.settings.identity_claim;
        let identity = text(claim)
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| {
                TokenError::Invalid(format!("the token has no {claim} claim naming an identity"))
            })?;
        // The rule identity names are created by, before anything looks the name up.
        crate::control::identities::check_name(&identity).map_err(|why| {
            TokenError::Invalid(format!(
                "the {claim} claim is not a usable identity name: {why}"
            ))
        })?;
        // The subject goes into audit records (JSON in PostgreSQL, which holds no NUL).
        if let Some(sub) = claims.get("sub").and_then(Value::as_str) {
            check_subject(sub)?;
        }
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
            issued_at: numeric_date(claims, "iat").ok().flatten(),
            expires_at: numeric_date(claims, "exp").ok().flatten(),
            claims: claims.clone(),
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

/// Longest `sub` accepted, in characters (OpenID Connect: at most 255 ASCII characters).
const MAX_SUBJECT_CHARS: usize = 255;

/// Whether the `sub` claim can be recorded (it names the caller in audit records).
fn check_subject(sub: &str) -> Result<(), TokenError> {
    let chars = sub.chars().count();
    let why = if chars > MAX_SUBJECT_CHARS {
        format!("it is {chars} characters long; at most {MAX_SUBJECT_CHARS}")
    } else if sub.chars().any(char::is_control) {
        "it contains a control character (NUL, newline, …)".into()
    } else {
        return Ok(());
    };
    Err(TokenError::Invalid(format!(
        "the sub claim is not a usable subject: {why}"
    )))
}

/// A NumericDate claim (RFC 7519 §2: a number of seconds, possibly fractional), in whole
/// seconds; `None` when absent. Anything else present (a string, `null`, …) refuses the
/// token: a check cannot be skipped by spelling the value differently.
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>, TokenError> {
    let malformed = || {
        TokenError::Invalid(format!(
            "the token's {name} claim is not a NumericDate (a number of seconds since the epoch)"
        ))
    };
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(Some(i)),
            // Beyond i64 or fractional: `as` saturates, and a finite f64 is a real date.
            (None, Some(f)) if f.is_finite() => Ok(Some(f.floor() as i64)),
            _ => Err(malformed()),
        },
        Some(_) => Err(malformed()),
    }
}

/// Refuses what the JOSE header asks for that the gateway does not implement: any `crit`
/// (RFC 7515 §4.1.11: a recipient must refuse critical extensions it does not understand,
/// and InterLock understands none) and an unencoded payload (`b64` other than `true`,
/// RFC 7797), which the JWT library would otherwise silently verify as if it were encoded.
fn check_header(header: &Value) -> Result<(), TokenError> {
    if header.get("crit").is_some() {
        return Err(TokenError::Invalid(
            "the token's header marks extensions critical (crit), and this gateway implements \
             none (RFC 7515 §4.1.11)"
                .into(),
        ));
    }
    match header.get("b64") {
        None | Some(Value::Bool(true)) => Ok(()),
        Some(_) => Err(TokenError::Invalid(
            "the token's header asks for an unencoded payload (b64, RFC 7797), which this \
             gateway does not implement"
                .into(),
        )),
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
    use super::{check_header, check_subject, numeric_date, peek_header, words, OAuth};
    use serde_json::json;

    #[test]
    fn header_extensions_the_gateway_does_not_implement_are_refused() {
        let cases = [
            (json!({"alg": "ES256"}), None),
            (json!({"alg": "ES256", "b64": true}), None),
            (json!({"alg": "ES256", "crit": ["exp"]}), Some("crit")),
            (json!({"alg": "ES256", "crit": []}), Some("crit")),
            (
                json!({"alg": "ES256", "crit": "b64", "b64": false}),
                Some("crit"),
            ),
            (json!({"alg": "ES256", "b64": false}), Some("b64")),
            (json!({"alg": "ES256", "b64": "false"}), Some("b64")),
        ];
        for (header, refused) in cases {
            let got = check_header(&header).err().map(|e| e.to_string());
            match refused {
                None => assert_eq!(got, None, "{header}"),
                Some(word) => assert!(got.is_some_and(|m| m.contains(word)), "{header}"),
            }
        }
    }

    #[test]
    fn numeric_dates_are_numbers_or_refuse_the_token() {
        let claims = json!({"a": 1_700_000_000, "b": 1_700_000_000.9, "c": "1700000000",
                            "d": null, "e": true, "f": -5, "g": 1e300});
        let claims = claims.as_object().cloned().unwrap_or_default();
        let cases = [
            ("a", Some(Some(1_700_000_000))),
            ("b", Some(Some(1_700_000_000))),
            ("c", None),
            ("d", None),
            ("e", None),
            ("f", Some(Some(-5))),
            ("g", Some(Some(i64::MAX))),
            ("absent", Some(None)),
        ];
        for (name, want) in cases {
            assert_eq!(numeric_date(&claims, name).ok(), want, "{name}");
        }
    }

    #[test]
    fn time_claims_bound_when_and_how_long_a_token_is_used() {
        let mut settings = crate::config::Settings::load_with_env(None, Vec::new())
            .map(|s| s.oauth)
            .unwrap_or_else(|e| panic!("defaults: {e}"));
        settings.enabled = true;
        settings.leeway_secs = 30;
        settings.max_token_lifetime_secs = 3600;
        let Ok(Some(oauth)) = OAuth::from_settings(&settings) else {
            panic!("verifier");
        };
        let now = 1_700_000_000_i64;
        // (claims, the word the refusal names; None: accepted)
        let cases = [
            (json!({"exp": now + 600, "iat": now}), None),
            (json!({"exp": now + 3600, "iat": now}), None),
            (json!({"exp": now + 600, "iat": now + 20}), None),
            (json!({"exp": now + 3620}), None),
            (json!({"exp": now + 600, "iat": now + 600}), Some("iat")),
            (
                json!({"exp": now + 3601, "iat": now}),
                Some("max_token_lifetime_secs"),
            ),
            (json!({"exp": now + 3700}), Some("exp - now")),
            (json!({"exp": now + 600, "iat": "now"}), Some("iat claim")),
            (json!({"exp": now + 600, "nbf": "now"}), Some("nbf claim")),
            (
                json!({"exp": now + 600, "nbf": now + 600}),
                Some("not valid yet"),
            ),
            (json!({"exp": now - 60}), Some("expired")),
            (json!({"exp": "later"}), Some("exp claim")),
        ];
        for (claims, refused) in cases {
            let map = claims.as_object().cloned().unwrap_or_default();
            let got = oauth.check_times(&map, now).err().map(|e| e.to_string());
            match refused {
                None => assert_eq!(got, None, "{claims}"),
                Some(word) => assert!(
                    got.as_deref().is_some_and(|m| m.contains(word)),
                    "{claims}: {got:?}"
                ),
            }
        }
    }

    #[test]
    fn subjects_must_be_recordable() {
        assert!(check_subject("user-7@example.com").is_ok());
        assert!(check_subject("a\0b").is_err());
        assert!(check_subject("a\nb").is_err());
        assert!(check_subject(&"s".repeat(256)).is_err());
    }

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
