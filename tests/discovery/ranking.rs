//! Ranking over the demo handbook: for questions an employee would ask, the obviously right
//! document comes first.

use serde_json::json;

use crate::fixtures::{handbook_db, query, reader, search};

#[tokio::test]
async fn best_document_first() {
    let pool = handbook_db().await;
    let cases = [
        ("how many vacation days do I get", "pto-policy"),
        ("how many vacation days", "pto-policy"),
        ("parental leave for new parents", "parental-leave"),
        ("I forgot my password", "password-reset"),
        ("reset Okta password", "password-reset"),
        ("who do I page when checkout is down", "incident-response"),
        ("incident severity levels", "incident-response"),
        ("submit expense report receipts", "expense-policy"),
        ("401k employer match", "retirement-401k"),
        ("401(k) match", "retirement-401k"),
        ("connect to VPN", "vpn-access"),
        ("customer refund", "return-policy-customers"),
        ("on-call compensation", "oncall-rotation"),
        ("keeping API tokens secret in Vault", "secrets-management"),
        ("dental insurance", "health-insurance"),
        ("discount for employees", "staff-discount"),
        ("per diem rates for Europe", "per-diem-rates"),
        ("gym membership", "wellness-stipend"),
        ("\"parental leave\"", "parental-leave"),
        ("deploy freeze black friday", "deploy-process"),
        ("lost laptop", "laptop-security"),
        ("conference ticket", "learning-budget"),
        ("holidays 2026", "public-holidays-2026"),
        ("work from home", "remote-work"),
    ];
    for (text, want) in cases {
        let result = search(&pool, &reader(), &query(json!({"query": text}))).await;
        let top: Vec<(&str, f64)> = result
            .results
            .iter()
            .take(3)
            .map(|h| (h.asset.id.as_str(), h.asset.score))
            .collect();
        let first = result.results.first().expect("at least one result");
        assert_eq!(first.asset.id, want, "{text}: {top:?}");
        assert!(first.asset.score > 0.0, "{text}");
        assert!(
            first.asset.snippet.contains('«'),
            "{text}: {}",
            first.asset.snippet
        );
        assert!(
            !first.asset.snippet.contains('<'),
            "{text}: snippets are plain text"
        );
        // Scores never increase down the list.
        assert!(
            result
                .results
                .windows(2)
                .all(|w| w[0].asset.score >= w[1].asset.score),
            "{text}"
        );
    }
}

#[tokio::test]
async fn strict_operators_are_honoured() {
    let pool = handbook_db().await;
    let cases: [(&str, &[&str]); 3] = [
        // A quoted phrase and an exclusion are taken as written, not loosened.
        // (the PTO policy mentions accrual; the holiday list mentions vacation days too)
        ("\"vacation days\" -accrual", &["public-holidays-2026"]),
        ("\"parental leave\"", &["parental-leave"]),
        (
            "okta or tailscale",
            &[
                "password-reset",
                "okta-sso",
                "vpn-access",
                "onboarding-first-week",
            ],
        ),
    ];
    for (text, want) in cases {
        let result = search(
            &pool,
            &reader(),
            &query(json!({"query": text, "limit": 100})),
        )
        .await;
        let mut got: Vec<&str> = result.results.iter().map(|h| h.asset.id.as_str()).collect();
        let mut want = want.to_vec();
        got.sort_unstable();
        want.sort_unstable();
        if text.contains(" or ") {
            assert!(want.iter().all(|w| got.contains(w)), "{text}: {got:?}");
        } else {
            assert_eq!(got, want, "{text}");
        }
    }
    // Without a query, results are listed newest first with the plain body head as snippet.
    let result = search(&pool, &reader(), &query(json!({"limit": 5}))).await;
    assert!(result
        .results
        .windows(2)
        .all(|w| w[0].asset.updated_at >= w[1].asset.updated_at));
    assert!(result
        .results
        .iter()
        .all(|h| h.asset.score == 0.0 && !h.asset.snippet.contains('«')));
}
