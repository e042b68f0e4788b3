//! Where a well-known document of a URL is: the name goes between the origin and the
//! path (RFC 8414 §3.1 for an issuer's metadata, RFC 9728 §3.1 for a protected resource's).

/// `<origin>/.well-known/<name><path>` for `url` (a trailing slash of its path dropped).
pub fn url(url: &str, name: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let start = trimmed.find("://").map_or(0, |i| i + 3);
    let (origin, path) = match trimmed[start..].find('/') {
        Some(slash) => trimmed.split_at(start + slash),
        None => (trimmed, ""),
    };
    format!("{origin}/.well-known/{name}{path}")
}

/// Where the protected-resource metadata of `resource` is (RFC 9728 §3.1).
pub fn protected_resource_metadata(resource: &str) -> String {
    url(resource, "oauth-protected-resource")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_well_known_name_goes_between_origin_and_path() {
        for (of, name, want) in [
            (
                "https://gw.example.com/mcp",
                "oauth-protected-resource",
                "https://gw.example.com/.well-known/oauth-protected-resource/mcp",
            ),
            (
                "http://127.0.0.1:8080",
                "oauth-protected-resource",
                "http://127.0.0.1:8080/.well-known/oauth-protected-resource",
            ),
            (
                "https://gw.example.com/",
                "oauth-protected-resource",
                "https://gw.example.com/.well-known/oauth-protected-resource",
            ),
            (
                "https://login.example.com/tenant/1/",
                "oauth-authorization-server",
                "https://login.example.com/.well-known/oauth-authorization-server/tenant/1",
            ),
        ] {
            assert_eq!(super::url(of, name), want, "{of}");
        }
    }
}
