//! Which endpoints a webhook may be sent to: `http(s)` only, and not loopback, private,
//! link-local or otherwise internal addresses unless `webhooks.allow_private` says so.
//! Checked when an endpoint is registered and again before each delivery (a name may
//! resolve elsewhere later); a delivery then connects only to the addresses that were
//! checked ([`Target::pinned`]), so a name cannot resolve to an internal address between
//! the check and the connection.

use std::net::{IpAddr, SocketAddr};

/// A checked endpoint.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: reqwest::Url,
    /// The host and the addresses it was checked at (`None` with `allow_private`, where
    /// any address is allowed).
    pub pinned: Option<(String, Vec<SocketAddr>)>,
}

/// Checks `url`; the error says why it is refused.
pub async fn check(url: &str, allow_private: bool) -> Result<Target, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("only http and https URLs are allowed".into());
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("credentials in the URL are not allowed; use the signing secret".into());
    }
    let host = parsed
        .host_str()
        .ok_or("the URL has no host")?
        .trim_matches(|c| c == '[' || c == ']')
        .to_string();
    if allow_private {
        return Ok(Target {
            url: parsed,
            pinned: None,
        });
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| format!("{host} does not resolve: {e}"))?
        .collect();
    if let Some(addr) = addrs.iter().find(|a| internal(a.ip())) {
        return Err(format!(
            "{host} resolves to an internal address ({}); set webhooks.allow_private to allow it",
            addr.ip()
        ));
    }
    if addrs.is_empty() {
        return Err(format!("{host} resolves to no address"));
    }
    Ok(Target {
        url: parsed,
        pinned: Some((host, addrs)),
    })
}

fn internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                // 100.64.0.0/10 (carrier-grade NAT)
                || (v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64)
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                // fc00::/7 unique local, fe80::/10 link-local
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6.to_ipv4_mapped().is_some_and(|v4| internal(IpAddr::V4(v4)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[tokio::test]
    async fn only_public_http_endpoints_without_the_setting() {
        for (url, allowed) in [
            ("http://127.0.0.1:9/hook", false),
            ("http://[::1]:9/hook", false),
            ("http://10.1.2.3/hook", false),
            ("http://192.168.1.1/hook", false),
            ("http://169.254.169.254/latest", false),
            ("http://[fd00::1]/hook", false),
            ("http://[::ffff:127.0.0.1]/hook", false),
            ("ftp://8.8.8.8/hook", false),
            ("http://user:pw@8.8.8.8/hook", false),
            ("https://8.8.8.8/hook", true),
        ] {
            assert_eq!(check(url, false).await.is_ok(), allowed, "{url}");
        }
        assert!(check("http://127.0.0.1:9/hook", true).await.is_ok());
        assert!(check("mailto:x@example.com", true).await.is_err());
    }
}
