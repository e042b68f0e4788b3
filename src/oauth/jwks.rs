//! The issuer's signing keys (JWKS): from a configured URI, a local file, or discovered from
//! the issuer's metadata; cached, and fetched again (at most every
//! `jwks_refresh_min_interval_ms`) when a token names a key id the cache does not hold, so
//! a rotated key is picked up without a restart and random key ids cannot flood the issuer.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey};
use tokio::sync::Mutex;

use super::TokenError;

/// Largest JWKS or metadata document read, in bytes.
const MAX_DOCUMENT: usize = 1 << 20;

enum Origin {
    File(PathBuf),
    Uri(String),
    /// The issuer's metadata names the keys (RFC 8414, then OpenID discovery).
    Discover {
        issuer: String,
    },
}

pub struct Keys {
    origin: Origin,
    set: ArcSwap<JwkSet>,
    /// When the keys were last fetched and why that failed, if it did (serializes fetches).
    fetched: Mutex<Option<(Instant, Option<String>)>>,
    min_interval: Duration,
    http: reqwest::Client,
}

impl Keys {
    pub fn new(settings: &super::settings::OAuthSettings, http: reqwest::Client) -> Self {
        let origin = if !settings.jwks_file.is_empty() {
            Origin::File(PathBuf::from(&settings.jwks_file))
        } else if !settings.jwks_uri.is_empty() {
            Origin::Uri(settings.jwks_uri.clone())
        } else {
            Origin::Discover {
                issuer: settings.issuer.clone(),
            }
        };
        Keys {
            origin,
            set: ArcSwap::from_pointee(JwkSet { keys: Vec::new() }),
            fetched: Mutex::new(None),
            min_interval: Duration::from_millis(settings.jwks_refresh_min_interval_ms),
            http,
        }
    }

    /// The key a token signed with `alg` and naming `kid` must verify against, and the one
    /// algorithm that key admits.
    pub async fn key_for(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<(DecodingKey, Algorithm), TokenError> {
        if let Some(found) = pick(&self.set.load(), kid, alg)? {
            return Ok(found);
        }
        self.refresh().await?;
        match pick(&self.set.load(), kid, alg)? {
            Some(found) => Ok(found),
            None => Err(TokenError::Invalid(match kid {
                Some(kid) => format!(
                    "the token names signing key {:?}, which the issuer does not publish",
                    kid.chars().take(64).collect::<String>()
                ),
                None => {
                    "the token names no signing key (kid) and the issuer publishes several".into()
                }
            })),
        }
    }

    /// Fetches the keys again, unless they were fetched less than `min_interval` ago.
    async fn refresh(&self) -> Result<(), TokenError> {
        let mut fetched = self.fetched.lock().await;
        if let Some((at, failure)) = fetched.as_ref() {
            if at.elapsed() < self.min_interval {
                // Too soon to ask again; a failure stays a failure until then.
                return failure
                    .clone()
                    .map_or(Ok(()), |why| Err(TokenError::KeysUnavailable(why)));
            }
        }
        match self.fetch().await {
            Ok(set) => {
                self.set.store(Arc::new(set));
                *fetched = Some((Instant::now(), None));
                Ok(())
            }
            Err(why) => {
                tracing::warn!(error = %why, "the issuer's signing keys could not be fetched");
                metrics::counter!("interlock_oauth_jwks_errors_total").increment(1);
                *fetched = Some((Instant::now(), Some(why.clone())));
                Err(TokenError::KeysUnavailable(why))
            }
        }
    }

    async fn fetch(&self) -> Result<JwkSet, String> {
        let document = match &self.origin {
            Origin::File(path) => {
                std::fs::read(path).map_err(|e| format!("JWKS file {}: {e}", path.display()))?
            }
            Origin::Uri(uri) => self.get(uri).await?,
            Origin::Discover { issuer } => {
                let uri = self.discover(issuer).await?;
                self.get(&uri).await?
            }
        };
        serde_json::from_slice::<JwkSet>(&document).map_err(|e| format!("JWKS: {e}"))
    }

    /// The `jwks_uri` of the issuer's metadata (RFC 8414, then OpenID Connect discovery);
    /// the metadata must name the same issuer.
    async fn discover(&self, issuer: &str) -> Result<String, String> {
        let mut last = String::new();
        for url in metadata_urls(issuer) {
            let document = match self.get(&url).await {
                Ok(d) => d,
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            let meta: serde_json::Value =
                serde_json::from_slice(&document).map_err(|e| format!("{url}: {e}"))?;
            if meta["issuer"].as_str() != Some(issuer) {
                return Err(format!(
                    "{url} names issuer {}, not {issuer}",
                    meta["issuer"]
                ));
            }
            return meta["jwks_uri"]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{url} has no jwks_uri"));
        }
        Err(format!("issuer metadata not found: {last}"))
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, String> {
        let response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("{url}: HTTP {}", response.status()));
        }
        let body = response.bytes().await.map_err(|e| format!("{url}: {e}"))?;
        if body.len() > MAX_DOCUMENT {
            return Err(format!("{url}: larger than {MAX_DOCUMENT} bytes"));
        }
        Ok(body.to_vec())
    }
}

/// Where an issuer's metadata may be: RFC 8414 inserts the well-known name before the
/// issuer's path; OpenID Connect appends it.
fn metadata_urls(issuer: &str) -> Vec<String> {
    vec![
        super::well_known::url(issuer, "oauth-authorization-server"),
        format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        ),
    ]
}

/// The key for `kid` (or the only suitable key when the token names none), if the set holds
/// one; an error when it holds it but not for `alg`.
fn pick(
    set: &JwkSet,
    kid: Option<&str>,
    alg: Algorithm,
) -> Result<Option<(DecodingKey, Algorithm)>, TokenError> {
    let candidates: Vec<&Jwk> = match kid {
        Some(kid) => set
            .keys
            .iter()
            .filter(|k| k.common.key_id.as_deref() == Some(kid))
            .collect(),
        None => set
            .keys
            .iter()
            .filter(|k| key_algorithm(k).is_some())
            .collect(),
    };
    let key = match candidates.as_slice() {
        [] => return Ok(None),
        [one] => *one,
        _ => return Ok(None),
    };
    let Some(admitted) = key_algorithm(key) else {
        return Err(TokenError::Invalid(
            "the token's signing key is not a usable public key".into(),
        ));
    };
    if admitted != alg {
        return Err(TokenError::Invalid(format!(
            "the token says {alg:?} but its key is for {admitted:?}"
        )));
    }
    let decoding = DecodingKey::from_jwk(key)
        .map_err(|_| TokenError::Invalid("the token's signing key is malformed".into()))?;
    Ok(Some((decoding, admitted)))
}

/// The one algorithm a published key admits: its own `alg` when it names one, otherwise
/// the natural one for its type. Symmetric keys admit none: a JWKS is public.
fn key_algorithm(key: &Jwk) -> Option<Algorithm> {
    let named = key.common.key_algorithm.and_then(|a| match a {
        KeyAlgorithm::RS256 => Some(Algorithm::RS256),
        KeyAlgorithm::RS384 => Some(Algorithm::RS384),
        KeyAlgorithm::RS512 => Some(Algorithm::RS512),
        KeyAlgorithm::PS256 => Some(Algorithm::PS256),
        KeyAlgorithm::PS384 => Some(Algorithm::PS384),
        KeyAlgorithm::PS512 => Some(Algorithm::PS512),
        KeyAlgorithm::ES256 => Some(Algorithm::ES256),
        KeyAlgorithm::ES384 => Some(Algorithm::ES384),
        KeyAlgorithm::EdDSA => Some(Algorithm::EdDSA),
        _ => None,
    });
    let natural = match &key.algorithm {
        AlgorithmParameters::RSA(_) => Some(Algorithm::RS256),
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => Some(Algorithm::ES256),
            EllipticCurve::P384 => Some(Algorithm::ES384),
            _ => None,
        },
        AlgorithmParameters::OctetKeyPair(_) => Some(Algorithm::EdDSA),
        AlgorithmParameters::OctetKey(_) => None,
    };
    match (&key.algorithm, named) {
        (AlgorithmParameters::OctetKey(_), _) => None,
        (_, Some(named)) => Some(named),
        (_, None) => natural,
    }
}

#[cfg(test)]
mod tests {
    use super::metadata_urls;

    #[test]
    fn issuer_metadata_is_looked_up_where_both_standards_put_it() {
        assert_eq!(
            metadata_urls("https://login.example.com"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server",
                "https://login.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://login.example.com/tenant/1/"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server/tenant/1",
                "https://login.example.com/tenant/1/.well-known/openid-configuration"
            ]
        );
    }
}
