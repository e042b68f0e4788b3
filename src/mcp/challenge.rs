//! The `WWW-Authenticate` challenge a refusal answers with (RFC 6750): `Bearer` for a
//! missing or unknown credential, with `error="invalid_token"` for a token that did not
//! verify, and `error="insufficient_scope"` (403) for one without the route's scope. Every
//! adapter refuses with this bare challenge; the HTTP layer completes it with where the
//! protected-resource metadata is when OAuth is on (`http::challenge`).

/// The bare challenge of a refusal with `status` and `code`, if it has one.
pub fn for_refusal(status: u16, code: &str) -> Option<&'static str> {
    match (status, code) {
        (401, "invalid_token") => Some("Bearer error=\"invalid_token\""),
        (401, _) => Some("Bearer"),
        (403, "insufficient_scope") => Some("Bearer error=\"insufficient_scope\""),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::for_refusal;

    #[test]
    fn refusals_challenge_as_rfc_6750_says() {
        let cases = [
            (401, "unauthenticated", Some("Bearer")),
            (401, "invalid_token", Some("Bearer error=\"invalid_token\"")),
            (
                403,
                "insufficient_scope",
                Some("Bearer error=\"insufficient_scope\""),
            ),
            (403, "forbidden", None),
            (429, "rate_limited", None),
        ];
        for (status, code, want) in cases {
            assert_eq!(for_refusal(status, code), want, "{status} {code}");
        }
    }
}
