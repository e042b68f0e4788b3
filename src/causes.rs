//! An error in one line with what caused it: "error performing TLS handshake" says little
//! without "invalid peer certificate: UnknownIssuer", which drivers keep in the error's
//! source chain.

/// `e` followed by each of its causes that its text (or an earlier cause's) does not
/// already say: a pool error, say, repeats its backend's text.
pub fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        next = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::with_causes;

    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct E {
        text: &'static str,
        #[source]
        cause: Option<Box<E>>,
    }

    fn chain(texts: &[&'static str]) -> E {
        texts
            .iter()
            .rev()
            .fold(None, |cause, text| {
                Some(E {
                    text,
                    cause: cause.map(Box::new),
                })
            })
            .expect("at least one")
    }

    #[test]
    fn each_cause_is_said_once() {
        let cases: &[(&[&'static str], &str)] = &[
            (&["alone"], "alone"),
            (
                &["error performing TLS handshake", "invalid peer certificate"],
                "error performing TLS handshake: invalid peer certificate",
            ),
            (
                &[
                    "pool: handshake failed",
                    "handshake failed",
                    "bad certificate",
                ],
                "pool: handshake failed: bad certificate",
            ),
        ];
        for (texts, want) in cases {
            assert_eq!(with_causes(&chain(texts)), *want, "{texts:?}");
        }
    }
}
