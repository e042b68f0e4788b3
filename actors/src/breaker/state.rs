//! The circuit breaker state machine, without I/O or clocks of its own: every method takes
//! `now`, so tests drive time explicitly.
//!
//! Closed: calls flow; outcomes go into a sliding window of `window` length. When the window
//! holds at least `min_calls` outcomes and the failure share reaches `failure_rate`, the
//! circuit opens. Open: calls are refused without touching the source until `open_for` has
//! passed. Half-open: up to `half_open_probes` calls are let through as probes; when that many
//! succeed the circuit closes, and any probe failure opens it again. An operator may force
//! the circuit open (it stays open until released) or closed.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::Serialize;

#[derive(Debug, Clone, Copy)]
pub struct BreakerConfig {
    pub window: Duration,
    pub min_calls: u32,
    /// Share of failures (0.0–1.0] that opens the circuit.
    pub failure_rate: f64,
    pub open_for: Duration,
    pub half_open_probes: u32,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            window: Duration::from_secs(30),
            min_calls: 10,
            failure_rate: 0.5,
            open_for: Duration::from_secs(10),
            half_open_probes: 3,
        }
    }
}

impl BreakerConfig {
    /// Refuses settings that would make the breaker meaningless.
    pub fn validate(&self) -> Result<(), String> {
        if self.window.is_zero() {
            return Err("window must be longer than zero".into());
        }
        if self.min_calls == 0 {
            return Err("min_calls must be at least 1".into());
        }
        if !(self.failure_rate > 0.0 && self.failure_rate <= 1.0) {
            return Err("failure_rate must be in (0, 1]".into());
        }
        if self.half_open_probes == 0 {
            return Err("half_open_probes must be at least 1".into());
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CircuitState {
    Closed,
    Open,
    HalfOpen,
}

impl CircuitState {
    pub fn as_str(self) -> &'static str {
        match self {
            CircuitState::Closed => "closed",
            CircuitState::Open => "open",
            CircuitState::HalfOpen => "half_open",
        }
    }
}

/// Whether a call may go to the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Allowed,
    /// Allowed as one of the half-open probes; its outcome decides the circuit.
    Probe,
    Rejected,
}

/// A state change, for logs, metrics and the events stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transition {
    pub from: CircuitState,
    pub to: CircuitState,
    pub reason: String,
}

/// What a restarted breaker continues from (see [`Breaker::restore`]).
#[derive(Debug, Clone, Copy)]
pub struct Restored {
    pub state: CircuitState,
    pub since: Instant,
    pub forced: bool,
    pub failures: u32,
    pub successes: u32,
}

const BUCKETS: u32 = 10;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    start: Instant,
    failures: u32,
    successes: u32,
}

#[derive(Debug, Clone)]
pub struct Breaker {
    config: BreakerConfig,
    state: CircuitState,
    since: Instant,
    /// Outcome counts in buckets of `window / BUCKETS`, oldest first: O(1) memory per
    /// bucket whatever the call rate.
    window: VecDeque<Bucket>,
    probes_in_flight: u32,
    probe_successes: u32,
    forced: Option<CircuitState>,
}

impl Breaker {
    pub fn new(config: BreakerConfig, now: Instant) -> Self {
        Self {
            config,
            state: CircuitState::Closed,
            since: now,
            window: VecDeque::new(),
            probes_in_flight: 0,
            probe_successes: 0,
            forced: None,
        }
    }

    /// A breaker continuing from what its previous actor published (after a restart): the
    /// same state since the same instant, still forced if it was, and the window's counts
    /// carried as one bucket starting now (so they age out a little later than they would
    /// have, never earlier). No probe is in flight: a half-open circuit may admit its probes
    /// again.
    pub fn restore(config: BreakerConfig, from: Restored, now: Instant) -> Self {
        let mut window = VecDeque::new();
        if from.state == CircuitState::Closed && from.failures + from.successes > 0 {
            window.push_back(Bucket {
                start: now,
                failures: from.failures,
                successes: from.successes,
            });
        }
        Self {
            config,
            state: from.state,
            since: from.since,
            window,
            probes_in_flight: 0,
            probe_successes: 0,
            forced: (from.forced && from.state == CircuitState::Open).then_some(CircuitState::Open),
        }
    }

    pub fn state(&self) -> CircuitState {
        self.state
    }

    pub fn since(&self) -> Instant {
        self.since
    }

    pub fn forced(&self) -> bool {
        self.forced.is_some()
    }

    /// (failures, successes) in the current window.
    pub fn counts(&self, now: Instant) -> (u32, u32) {
        let cutoff = now.checked_sub(self.config.window);
        self.window
            .iter()
            .filter(|b| cutoff.is_none_or(|c| b.start >= c))
            .fold((0, 0), |(f, s), b| (f + b.failures, s + b.successes))
    }

    /// Decides whether a call may go through now; may move open → half-open.
    pub fn admit(&mut self, now: Instant) -> (Admission, Option<Transition>) {
        match self.state {
            CircuitState::Closed => (Admission::Allowed, None),
            CircuitState::Open => {
                if self.forced.is_some() || now.duration_since(self.since) < self.config.open_for {
                    return (Admission::Rejected, None);
                }
                let t = self.transition(
                    CircuitState::HalfOpen,
                    now,
                    "open duration elapsed; probing".into(),
                );
                self.probes_in_flight = 1;
                (Admission::Probe, Some(t))
            }
            CircuitState::HalfOpen => {
                if self.probes_in_flight + self.probe_successes < self.config.half_open_probes {
                    self.probes_in_flight += 1;
                    (Admission::Probe, None)
                } else {
                    (Admission::Rejected, None)
                }
            }
        }
    }

    /// Records the outcome of an admitted call. `failure` must only be an upstream failure
    /// (connection refused/reset, timeout, shutdown, TLS) — never a refusal or SQL error.
    pub fn record(
        &mut self,
        admission: Admission,
        failure: bool,
        now: Instant,
    ) -> Option<Transition> {
        if admission == Admission::Probe {
            self.probes_in_flight = self.probes_in_flight.saturating_sub(1);
            if self.state != CircuitState::HalfOpen {
                return None;
            }
            if failure {
                return Some(self.transition(
                    CircuitState::Open,
                    now,
                    "a half-open probe failed".into(),
                ));
            }
            self.probe_successes += 1;
            if self.probe_successes >= self.config.half_open_probes {
                return Some(self.transition(
                    CircuitState::Closed,
                    now,
                    "half-open probes succeeded".into(),
                ));
            }
            return None;
        }
        if self.state != CircuitState::Closed {
            return None;
        }
        self.push(now, u32::from(failure), u32::from(!failure));
        self.prune(now);
        let (f, s) = self.counts(now);
        let total = f + s;
        if failure
            && total >= self.config.min_calls
            && f64::from(f) / f64::from(total) >= self.config.failure_rate
        {
            let reason = format!("{f} of the last {total} calls failed upstream");
            return Some(self.transition(CircuitState::Open, now, reason));
        }
        None
    }

    /// Adds `n` successes of calls admitted while closed, reported since the last time (the
    /// handle counts them without a message; see `BreakerHandle::record`). Successes never
    /// move the circuit; while it is not closed they belong to no window and are dropped.
    pub fn record_successes(&mut self, n: u32, now: Instant) {
        if n == 0 || self.state != CircuitState::Closed {
            return;
        }
        self.push(now, 0, n);
        self.prune(now);
    }

    /// An operator forces the circuit open (stays open until released) or closed.
    pub fn force(&mut self, to: CircuitState, reason: &str, now: Instant) -> Option<Transition> {
        self.forced = (to == CircuitState::Open).then_some(to);
        if self.state == to {
            return None;
        }
        Some(self.transition(to, now, format!("forced by operator: {reason}")))
    }

    /// Releases a forced state and starts over closed with an empty window.
    pub fn reset(&mut self, reason: &str, now: Instant) -> Option<Transition> {
        self.forced = None;
        self.window.clear();
        if self.state == CircuitState::Closed {
            return None;
        }
        Some(self.transition(
            CircuitState::Closed,
            now,
            format!("reset by operator: {reason}"),
        ))
    }

    fn transition(&mut self, to: CircuitState, now: Instant, reason: String) -> Transition {
        let from = self.state;
        self.state = to;
        self.since = now;
        self.probe_successes = 0;
        if to != CircuitState::HalfOpen {
            self.probes_in_flight = 0;
        }
        if to == CircuitState::Closed {
            self.window.clear();
        }
        Transition { from, to, reason }
    }

    fn push(&mut self, now: Instant, failures: u32, successes: u32) {
        let width = (self.config.window / BUCKETS).max(std::time::Duration::from_millis(1));
        let fresh = match self.window.back() {
            Some(b) => now.saturating_duration_since(b.start) >= width,
            None => true,
        };
        if fresh {
            self.window.push_back(Bucket {
                start: now,
                failures: 0,
                successes: 0,
            });
        }
        if let Some(b) = self.window.back_mut() {
            b.failures = b.failures.saturating_add(failures);
            b.successes = b.successes.saturating_add(successes);
        }
    }

    fn prune(&mut self, now: Instant) {
        if let Some(cutoff) = now.checked_sub(self.config.window) {
            while self.window.front().is_some_and(|b| b.start < cutoff) {
                self.window.pop_front();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BreakerConfig {
        BreakerConfig {
            window: Duration::from_secs(10),
            min_calls: 4,
            failure_rate: 0.5,
            open_for: Duration::from_secs(5),
            half_open_probes: 2,
        }
    }

    /// Successes counted by callers and taken in at once weigh as the same successes
    /// recorded one by one; while the circuit is not closed they are dropped.
    #[test]
    fn successes_taken_in_at_once_weigh_as_many_recorded_one_by_one() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        b.record_successes(3, t0);
        assert_eq!(b.counts(t0), (0, 3));
        assert_eq!(
            b.record(Admission::Allowed, true, t0),
            None,
            "1 of 4 failed"
        );
        assert_eq!(
            b.record(Admission::Allowed, true, t0),
            None,
            "2 of 5 failed"
        );
        assert!(
            b.record(Admission::Allowed, true, t0).is_some(),
            "3 of 6 failed"
        );
        assert_eq!(b.state(), CircuitState::Open);
        b.record_successes(5, t0);
        assert_eq!(b.counts(t0), (3, 3), "successes while open are dropped");
    }

    #[test]
    fn opens_only_after_min_calls_at_the_failure_rate() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        for _ in 0..3 {
            assert_eq!(
                b.record(Admission::Allowed, true, t0),
                None,
                "below min_calls"
            );
        }
        let t = b
            .record(Admission::Allowed, true, t0)
            .expect("opens at the 4th failure");
        assert_eq!((t.from, t.to), (CircuitState::Closed, CircuitState::Open));
        assert_eq!(b.admit(t0 + Duration::from_secs(1)).0, Admission::Rejected);
    }

    #[test]
    fn failures_outside_the_window_do_not_count() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        for _ in 0..3 {
            b.record(Admission::Allowed, true, t0);
        }
        let t1 = t0 + Duration::from_secs(20);
        for _ in 0..3 {
            assert_eq!(b.record(Admission::Allowed, true, t1), None);
        }
        assert_eq!(b.state(), CircuitState::Closed);
        assert_eq!(b.counts(t1), (3, 0));
    }

    #[test]
    fn a_low_failure_rate_keeps_it_closed() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        for i in 0..20 {
            b.record(Admission::Allowed, i % 3 == 2, t0);
        }
        assert_eq!(b.state(), CircuitState::Closed, "6 of 20 is below 50%");
    }

    #[test]
    fn open_half_open_closed_cycle_with_bounded_probes() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        for _ in 0..4 {
            b.record(Admission::Allowed, true, t0);
        }
        assert_eq!(b.state(), CircuitState::Open);
        let later = t0 + Duration::from_secs(6);
        let (a1, t) = b.admit(later);
        assert_eq!(a1, Admission::Probe);
        assert_eq!(t.map(|t| t.to), Some(CircuitState::HalfOpen));
        let (a2, _) = b.admit(later);
        assert_eq!(a2, Admission::Probe);
        assert_eq!(
            b.admit(later).0,
            Admission::Rejected,
            "probe budget is bounded"
        );
        assert_eq!(b.record(a1, false, later), None);
        let t = b.record(a2, false, later).expect("closes");
        assert_eq!(t.to, CircuitState::Closed);
        assert_eq!(b.admit(later).0, Admission::Allowed);
    }

    #[test]
    fn a_failed_probe_reopens() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        for _ in 0..4 {
            b.record(Admission::Allowed, true, t0);
        }
        let later = t0 + Duration::from_secs(6);
        let (a, _) = b.admit(later);
        let t = b.record(a, true, later).expect("reopens");
        assert_eq!(t.to, CircuitState::Open);
        assert_eq!(
            b.admit(later + Duration::from_secs(1)).0,
            Admission::Rejected
        );
    }

    #[test]
    fn forced_open_stays_open_until_reset() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        assert!(b.force(CircuitState::Open, "maintenance", t0).is_some());
        assert_eq!(
            b.admit(t0 + Duration::from_secs(3600)).0,
            Admission::Rejected
        );
        let t = b.reset("done", t0).expect("closes");
        assert_eq!(t.to, CircuitState::Closed);
        assert_eq!(b.admit(t0).0, Admission::Allowed);
    }

    #[test]
    fn invalid_configs_are_refused() {
        let bad = [
            BreakerConfig {
                min_calls: 0,
                ..cfg()
            },
            BreakerConfig {
                failure_rate: 0.0,
                ..cfg()
            },
            BreakerConfig {
                failure_rate: 1.5,
                ..cfg()
            },
            BreakerConfig {
                half_open_probes: 0,
                ..cfg()
            },
            BreakerConfig {
                window: Duration::ZERO,
                ..cfg()
            },
        ];
        for c in bad {
            assert!(c.validate().is_err(), "{c:?}");
        }
        assert!(cfg().validate().is_ok());
    }
}
