//! `[oauth]`: InterLock as an OAuth 2.1 protected resource (MCP authorization), beside API
//! keys. Every key is documented in `config/default.toml`.

use serde::{Deserialize, Serialize};

/// A value of `[oauth]` that cannot be used, naming its key (the configuration's
/// `ConfigError::Invalid` when settings load).
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration: `{key}`: {problem}")]
pub struct InvalidSetting {
    pub key: &'static str,
    pub problem: String,
}

/// A group (a value of `roles_claim`) that grants an InterLock role on a source.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupRole {
    pub group: String,
    pub source: String,
    pub role: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthSettings {
    pub enabled: bool,
    /// This gateway's resource identifier (the MCP endpoint's URL, RFC 8707); a token's
    /// `aud` must name it.
    pub resource: String,
    /// The one issuer whose tokens are accepted (`iss`).
    pub issuer: String,
    /// Authorization servers published in the metadata (empty: `[issuer]`).
    pub authorization_servers: Vec<String>,
    /// Where the issuer's keys are; empty: discovered from the issuer's metadata.
    pub jwks_uri: String,
    /// A local JWKS file instead (air-gapped sites); re-read on an unknown key id.
    pub jwks_file: String,
    /// Fewest milliseconds between two fetches of the keys for an unknown key id.
    pub jwks_refresh_min_interval_ms: u64,
    /// Signature algorithms accepted (asymmetric only: RS256, ES256, EdDSA …).
    pub algorithms: Vec<String>,
    /// Seconds of clock skew allowed on `exp`, `nbf` and `iat`.
    pub leeway_secs: u64,
    /// The longest a token may be valid, in seconds: `exp - iat` (without `iat`: what is
    /// left of it, `exp - now`, beyond the leeway). Longer-lived tokens are refused.
    pub max_token_lifetime_secs: u64,
    /// The claim naming the InterLock identity.
    pub identity_claim: String,
    /// A claim listing groups, mapped to roles by `group_roles` (empty: none).
    pub roles_claim: String,
    pub group_roles: Vec<GroupRole>,
    /// Create an agent identity the first time a valid token names an unknown one.
    pub auto_provision: bool,
    /// Answer every `POST /mcp` without an `Authorization` header 401 with the challenge
    /// (initialize and tools/list included), so standard MCP clients start their sign-in.
    pub challenge_unauthenticated: bool,
    /// The scope the tools (MCP, HTTP proxy) need.
    pub tools_scope: String,
    /// The scope the admin API needs.
    pub admin_scope: String,
    /// RFC 7662 introspection for tokens that are not JWTs (empty: refused).
    pub introspection_url: String,
    pub introspection_client_id: String,
    /// File holding the introspection client's secret.
    pub introspection_secret_file: String,
}

impl OAuthSettings {
    /// The authorization servers the metadata names.
    pub fn authorization_servers(&self) -> Vec<String> {
        if self.authorization_servers.is_empty() {
            vec![self.issuer.clone()]
        } else {
            self.authorization_servers.clone()
        }
    }

    /// Checks the section when it is enabled, naming the offending key.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        fn invalid(key: &'static str, problem: impl Into<String>) -> InvalidSetting {
            InvalidSetting {
                key,
                problem: problem.into(),
            }
        }
        if !self.enabled {
            return Ok(());
        }
        let url = |key: &'static str, value: &str| {
            let ok = value.starts_with("https://")
                || value.starts_with("http://127.0.0.1")
                || value.starts_with("http://localhost")
                || value.starts_with("http://[::1]");
            if ok {
                Ok(())
            } else {
                Err(invalid(
                    key,
                    format!("{value:?} must be an https URL (http only on loopback)"),
                ))
            }
        };
        url("oauth.resource", &self.resource)?;
        url("oauth.issuer", &self.issuer)?;
        if self.resource.contains('#') {
            return Err(invalid("oauth.resource", "must not contain a fragment"));
        }
        if !self.jwks_uri.is_empty() {
            url("oauth.jwks_uri", &self.jwks_uri)?;
        }
        if !self.jwks_uri.is_empty() && !self.jwks_file.is_empty() {
            return Err(invalid(
                "oauth.jwks_file",
                "give the keys either by jwks_uri or by jwks_file, not both",
            ));
        }
        if !self.introspection_url.is_empty() {
            url("oauth.introspection_url", &self.introspection_url)?;
        }
        if self.max_token_lifetime_secs == 0 {
            return Err(invalid(
                "oauth.max_token_lifetime_secs",
                "must be at least 1 (seconds)",
            ));
        }
        if self.algorithms.is_empty() {
            return Err(invalid("oauth.algorithms", "must name at least one"));
        }
        for alg in &self.algorithms {
            if !matches!(
                alg.as_str(),
                "RS256"
                    | "RS384"
                    | "RS512"
                    | "PS256"
                    | "PS384"
                    | "PS512"
                    | "ES256"
                    | "ES384"
                    | "EdDSA"
            ) {
                return Err(invalid(
                    "oauth.algorithms",
                    format!("{alg:?} is not an accepted asymmetric algorithm"),
                ));
            }
        }
        for (key, value) in [
            ("oauth.identity_claim", &self.identity_claim),
            ("oauth.tools_scope", &self.tools_scope),
            ("oauth.admin_scope", &self.admin_scope),
        ] {
            if value.trim().is_empty() || value.contains(char::is_whitespace) {
                return Err(invalid(key, "must be one non-empty word"));
            }
        }
        if !self.group_roles.is_empty() && self.roles_claim.is_empty() {
            return Err(invalid(
                "oauth.group_roles",
                "needs oauth.roles_claim (the claim listing the groups)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Settings;

    fn with(change: impl FnOnce(&mut super::OAuthSettings)) -> Result<(), String> {
        let mut s = Settings::load_with_env(None, Vec::new()).expect("defaults");
        s.oauth.enabled = true;
        s.oauth.resource = "https://gw.example.com/mcp".into();
        s.oauth.issuer = "https://login.example.com".into();
        change(&mut s.oauth);
        s.oauth.validate().map_err(|e| e.to_string())
    }

    type Change = Box<dyn FnOnce(&mut super::OAuthSettings)>;

    #[test]
    fn group_roles_load_from_a_config_file_in_either_toml_form() {
        for text in [
            "group_roles = [{ group = \"analysts\", source = \"shop\", role = \"analyst\" }]\n",
            "[[oauth.group_roles]]\ngroup = \"analysts\"\nsource = \"shop\"\nrole = \"analyst\"\n",
        ] {
            let dir = tempfile::tempdir().expect("dir");
            let path = dir.path().join("interlock.toml");
            let body = format!(
                "[oauth]\nenabled = true\nresource = \"https://gw.example.com/mcp\"\n\
                 issuer = \"https://login.example.com\"\nroles_claim = \"groups\"\n{text}"
            );
            // The array-of-tables form must follow the [oauth] keys it belongs beside.
            std::fs::write(&path, body).expect("write");
            let s = Settings::load_with_env(Some(&path), Vec::new()).expect(text);
            assert_eq!(
                s.oauth.group_roles,
                [super::GroupRole {
                    group: "analysts".into(),
                    source: "shop".into(),
                    role: "analyst".into(),
                }],
                "{text}"
            );
        }
    }

    #[test]
    fn oauth_settings_are_checked_when_enabled() {
        assert_eq!(with(|_| {}), Ok(()));
        let refused: Vec<(&str, Change)> = vec![
            (
                "oauth.resource",
                Box::new(|o| o.resource = "http://gw.example.com/mcp".into()),
            ),
            (
                "oauth.resource",
                Box::new(|o| o.resource = "https://gw/mcp#x".into()),
            ),
            ("oauth.issuer", Box::new(|o| o.issuer = String::new())),
            (
                "oauth.jwks_file",
                Box::new(|o| {
                    o.jwks_uri = "https://login.example.com/keys".into();
                    o.jwks_file = "/etc/keys.json".into();
                }),
            ),
            (
                "oauth.algorithms",
                Box::new(|o| o.algorithms = vec!["HS256".into()]),
            ),
            ("oauth.algorithms", Box::new(|o| o.algorithms = vec![])),
            (
                "oauth.max_token_lifetime_secs",
                Box::new(|o| o.max_token_lifetime_secs = 0),
            ),
            (
                "oauth.tools_scope",
                Box::new(|o| o.tools_scope = "two words".into()),
            ),
            (
                "oauth.group_roles",
                Box::new(|o| {
                    o.group_roles = vec![super::GroupRole {
                        group: "g".into(),
                        source: "s".into(),
                        role: "r".into(),
                    }];
                }),
            ),
        ];
        for (key, change) in refused {
            let e = with(change).expect_err(key);
            assert!(e.contains(key), "{key}: {e}");
        }
        // Loopback issuers may use http (the demo and tests).
        assert_eq!(with(|o| o.issuer = "http://127.0.0.1:9000".into()), Ok(()));
    }
}
