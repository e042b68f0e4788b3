//! The handle and its actor together: successes counted without a message still weigh in
//! every decision the actor makes, and reach the published window.

use std::time::{Duration, Instant};

use super::*;
use crate::supervise::SupervisionConfig;

fn config() -> BreakerConfig {
    BreakerConfig {
        window: Duration::from_secs(30),
        min_calls: 2,
        failure_rate: 0.5,
        open_for: Duration::from_secs(30),
        half_open_probes: 1,
    }
}

fn start() -> BreakerHandle {
    let supervision = Supervision::new(SupervisionConfig::default(), EventBus::default());
    BreakerHandle::start("shop", config(), EventBus::default(), &supervision).unwrap()
}

async fn answered(b: &BreakerHandle, n: usize) {
    for _ in 0..n {
        let permit = b.admit().await.unwrap();
        b.record(permit, SourceReport::Answered).await;
    }
}

async fn failed(b: &BreakerHandle) {
    let permit = b.admit().await.unwrap();
    b.record(permit, SourceReport::UpstreamFailure("refused".into()))
        .await;
}

/// Four successes, then two failures: 2 of 6 failed, below the rate, so the circuit stays
/// closed. Had the failures been judged without the successes counted before them (2 of 2),
/// it would open.
#[actix_rt::test]
async fn a_failure_is_judged_with_every_success_counted_before_it() {
    let b = start();
    answered(&b, 4).await;
    failed(&b).await;
    failed(&b).await;
    let s = b.snapshot();
    assert_eq!(s.state, CircuitState::Closed, "{s:?}");
    assert_eq!((s.window_failures, s.window_successes), (2, 4));
    failed(&b).await;
    failed(&b).await;
    assert_eq!(b.snapshot().state, CircuitState::Open, "4 of 8 failed");
}

/// With nothing else to bring the actor to them, counted successes reach the published
/// window within the settling interval.
#[actix_rt::test]
async fn counted_successes_reach_the_published_window_on_their_own() {
    let b = start();
    answered(&b, 3).await;
    let deadline = Instant::now() + actor::SETTLE_EVERY * 3;
    while b.snapshot().window_successes < 3 {
        assert!(
            Instant::now() < deadline,
            "not published: {:?}",
            b.snapshot()
        );
        actix_rt::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(b.snapshot().window_successes, 3);
}
