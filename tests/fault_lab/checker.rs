//! The checker: reads the recorded history, the faults as they happened and what the
//! databases hold afterwards, and names every invariant that broke. Pure: the lab gathers,
//! this judges, and the tests at the end show each invariant able to fail on a history
//! with one violation injected.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::faults::{Applied, Kind};
use super::workload::{Call, Event, History, Probe};

/// One approval as the control database holds it at the end.
#[derive(Debug, Clone)]
pub struct ApprovalRow {
    pub id: String,
    /// The write's marker, read from its statement.
    pub marker: String,
    pub state: String,
    pub required: i32,
    pub approves: i64,
    pub rejects: i64,
    pub rows_affected: Option<i64>,
    pub error: Option<String>,
}

/// One execution's effect, as the write target records it: the write's marker and the `v`
/// it left; when its approval says it executed (none when the outcome is unknown).
#[derive(Debug, Clone)]
pub struct Effect {
    pub marker: String,
    pub v: i64,
    pub at: Option<DateTime<Utc>>,
}

/// What the databases and the fleet hold after the run.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Audit records per request id, for every answered call's id.
    pub audit: HashMap<String, i64>,
    pub approvals: Vec<ApprovalRow>,
    pub effects: Vec<Effect>,
    /// `lab_cell.v` at the end.
    pub cell_v: i64,
    /// `interlock audit verify`: Ok, or what it said.
    pub chain: Result<(), String>,
    /// Each live replica's circuit for the source at the end, as the fleet reports it.
    pub circuits: Vec<(String, String)>,
}

/// The documented bounds the invariants hold the fleet to.
#[derive(Debug, Clone)]
pub struct Bounds {
    pub replicas: usize,
    /// `control.dead_peer_timeout_secs`: a silent cut shorter than this (and a margin) may
    /// end before the replica can tell it from a quiet connection.
    pub dead_peer: Duration,
    /// After a fault heals, the replica serves again within this.
    pub recovery: Duration,
    /// After an approved write executes, no replica that was running serves an older value
    /// later than this (reconcile interval and degraded cache TTL, with a margin).
    pub coherence: Duration,
    /// After a revocation (or the heal that lets the replica hear of it), the key is
    /// refused everywhere within this.
    pub revocation: Duration,
    /// Every `/readyz` answers within this (a paused replica excepted).
    pub ready_within: Duration,
    /// A call entirely inside a fault that keeps its replica from auditing, by more than
    /// this on either side, must not be answered.
    pub grace: Duration,
    /// The limited identity's rate and burst, fleet-wide.
    pub rate: f64,
    pub burst: f64,
}

#[derive(Debug, Clone)]
pub struct Violation {
    pub invariant: &'static str,
    pub detail: String,
}

pub struct Run<'a> {
    pub history: &'a History,
    pub faults: &'a [Applied],
    pub revoked: Option<DateTime<Utc>>,
    pub snapshot: &'a Snapshot,
    pub bounds: &'a Bounds,
}

fn d(x: Duration) -> chrono::Duration {
    chrono::Duration::from_std(x).unwrap_or_default()
}

fn secs(x: chrono::Duration) -> f64 {
    x.num_milliseconds() as f64 / 1000.0
}

/// Every invariant; the violations found (none: the run kept every guarantee).
pub fn check(run: &Run) -> Vec<Violation> {
    let mut v = Vec::new();
    audited(run, &mut v);
    chain(run, &mut v);
    approved_only(run, &mut v);
    exactly_once(run, &mut v);
    settled(run, &mut v);
    coherent(run, &mut v);
    limits(run, &mut v);
    revocation(run, &mut v);
    circuits_converge(run, &mut v);
    no_answer_unaudited(run, &mut v);
    ready_prompt(run, &mut v);
    says_unready(run, &mut v);
    recovers(run, &mut v);
    others_serve(run, &mut v);
    v
}

fn violation(out: &mut Vec<Violation>, invariant: &'static str, detail: String) {
    out.push(Violation { invariant, detail });
}

fn answered<'a>(run: &Run<'a>) -> impl Iterator<Item = &'a Event> {
    run.history.events.iter().filter(|e| e.rows)
}

/// Every answered call has exactly one audit record.
fn audited(run: &Run, out: &mut Vec<Violation>) {
    for e in answered(run) {
        let n = e
            .request_id
            .as_ref()
            .and_then(|id| run.snapshot.audit.get(id))
            .copied()
            .unwrap_or(0);
        if n != 1 {
            violation(out, "audited", format!("{n} audit records for {e:?}"));
        }
    }
}

/// Every chain verifies.
fn chain(run: &Run, out: &mut Vec<Violation>) {
    if let Err(e) = &run.snapshot.chain {
        violation(out, "chain", e.clone());
    }
}

/// No write ran without its approvals.
fn approved_only(run: &Run, out: &mut Vec<Violation>) {
    let by_marker: HashMap<&str, &ApprovalRow> = run
        .snapshot
        .approvals
        .iter()
        .map(|a| (a.marker.as_str(), a))
        .collect();
    for e in &run.snapshot.effects {
        match by_marker.get(e.marker.as_str()) {
            None => violation(
                out,
                "approved_only",
                format!("an effect with no approval: {e:?}"),
            ),
            Some(a) => {
                let may_have_run = matches!(a.state.as_str(), "executed" | "outcome_unknown");
                if !may_have_run || a.approves < i64::from(a.required) || a.rejects > 0 {
                    violation(out, "approved_only", format!("{e:?} ran for {a:?}"));
                }
            }
        }
    }
}

/// No approved write ran twice or changed more rows than approved; every executed one ran.
fn exactly_once(run: &Run, out: &mut Vec<Violation>) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for e in &run.snapshot.effects {
        *counts.entry(e.marker.as_str()).or_default() += 1;
    }
    for (marker, n) in &counts {
        if *n > 1 {
            violation(out, "exactly_once", format!("{marker} ran {n} times"));
        }
    }
    for a in &run.snapshot.approvals {
        if a.state == "executed" {
            if counts.get(a.marker.as_str()).copied().unwrap_or(0) != 1 {
                violation(
                    out,
                    "exactly_once",
                    format!("executed but no effect: {a:?}"),
                );
            }
            if a.rows_affected != Some(1) {
                violation(
                    out,
                    "exactly_once",
                    format!("affected other than 1 row: {a:?}"),
                );
            }
        }
    }
    let effects = i64::try_from(run.snapshot.effects.len()).unwrap_or(i64::MAX);
    if run.snapshot.cell_v != effects {
        violation(
            out,
            "exactly_once",
            format!(
                "v is {} after {effects} recorded effects",
                run.snapshot.cell_v
            ),
        );
    }
}

/// Every queued write ends executed, rejected, expired, failed (with a reason) or, when its
/// executor died mid-run, outcome_unknown; none is lost or stuck.
fn settled(run: &Run, out: &mut Vec<Violation>) {
    for a in &run.snapshot.approvals {
        if !super::workload::terminal(&a.state) {
            violation(out, "settled", format!("stuck: {a:?}"));
        } else if a.state == "failed" && a.error.as_deref().is_none_or(str::is_empty) {
            violation(out, "settled", format!("failed without a reason: {a:?}"));
        }
    }
    for w in &run.history.writes {
        if let Some(id) = &w.approval_id {
            if !run.snapshot.approvals.iter().any(|a| &a.id == id) {
                violation(out, "settled", format!("a queued write is gone: {w:?}"));
            }
        }
    }
}

/// Whether `replica` was kept from hearing the fleet (paused, cut from or without the
/// control database) at some time in `[from, to]`.
fn deaf(run: &Run, replica: &str, from: DateTime<Utc>, to: DateTime<Utc>) -> bool {
    run.faults.iter().any(|f| {
        matches!(
            f.kind,
            Kind::Pause | Kind::ControlCut | Kind::ControlRestart
        ) && f.touches(replica)
            && f.from <= to
            && f.to >= from
    })
}

/// After an approved write executes, no replica that could hear of it serves an older value
/// later than the bound.
fn coherent(run: &Run, out: &mut Vec<Violation>) {
    let bound = d(run.bounds.coherence);
    for e in answered(run).filter(|e| e.call == Call::Cell) {
        let Some(seen) = e.value else { continue };
        let must = run
            .snapshot
            .effects
            .iter()
            .filter(|x| x.at.is_some_and(|t| t + bound <= e.at))
            .map(|x| x.v)
            .max()
            .unwrap_or(0);
        if seen < must && !deaf(run, e.replica, e.at - bound, e.end()) {
            violation(
                out,
                "coherent",
                format!(
                    "{} served v = {seen} at {}, {must} was written by then",
                    e.replica, e.at
                ),
            );
        }
    }
}

/// The limited identity's answered calls in every 10 s window stay within its fleet-wide
/// budget, plus, for a replica cut from Redis, the budget divided by the replicas.
fn limits(run: &Run, out: &mut Vec<Violation>) {
    let calls: Vec<DateTime<Utc>> = answered(run)
        .filter(|e| e.call == Call::Limited)
        .map(|e| e.at)
        .collect();
    let (Some(first), Some(last)) = (calls.iter().min(), calls.iter().max()) else {
        return;
    };
    let window = chrono::Duration::seconds(10);
    let b = run.bounds;
    let mut start = *first - window;
    while start <= *last {
        let end = start + window;
        let n = calls.iter().filter(|t| **t >= start && **t < end).count();
        let cut = run
            .faults
            .iter()
            .filter(|f| f.kind == Kind::RedisCut && f.from < end && f.to > start)
            .count();
        let own = (b.rate * 10.0 + b.burst) / b.replicas as f64;
        let allowed = b.rate * 10.0 + b.burst + own * cut as f64 + 1.0;
        if n as f64 > allowed {
            violation(
                out,
                "limits",
                format!("{n} calls answered in the 10 s from {start}, {allowed} allowed"),
            );
        }
        start += chrono::Duration::seconds(1);
    }
}

/// A revoked key is refused everywhere within the bound, counted from the revocation or,
/// for a replica that could not hear of it then, from the heal plus its recovery.
fn revocation(run: &Run, out: &mut Vec<Violation>) {
    let Some(revoked) = run.revoked else { return };
    let b = run.bounds;
    for e in answered(run).filter(|e| e.call == Call::Victim) {
        let heard = run
            .faults
            .iter()
            .filter(|f| {
                f.touches(e.replica)
                    && f.kind != Kind::RedisCut
                    && f.kind != Kind::SourceCut
                    && f.from <= revoked
                    && f.to >= revoked
            })
            .map(|f| f.to + d(b.recovery))
            .max()
            .unwrap_or(revoked);
        if e.at > heard + d(b.revocation) {
            violation(
                out,
                "revocation",
                format!(
                    "{} answered the revoked key {:.1} s after it was revoked: {e:?}",
                    e.replica,
                    secs(e.at - revoked)
                ),
            );
        }
    }
}

/// Circuits converge: at the end every replica reports its circuit closed.
fn circuits_converge(run: &Run, out: &mut Vec<Violation>) {
    let s = &run.snapshot;
    if s.circuits.len() != run.bounds.replicas
        || s.circuits.iter().any(|(_, state)| state != "closed")
    {
        violation(
            out,
            "circuits_converge",
            format!("at the end: {:?}", s.circuits),
        );
    }
}

/// No replica answers a governed call while it cannot audit.
fn no_answer_unaudited(run: &Run, out: &mut Vec<Violation>) {
    let grace = d(run.bounds.grace);
    for e in answered(run) {
        for f in run
            .faults
            .iter()
            .filter(|f| f.kind.blocks_audit() && f.touches(e.replica))
        {
            if e.at > f.from + grace && e.end() + grace < f.to {
                violation(
                    out,
                    "no_answer_unaudited",
                    format!("answered during {:?} of {:?}: {e:?}", f.kind, f.replica),
                );
            }
        }
    }
}

/// Whether the probe's answer could not come in time whatever the replica did: it was
/// paused, or the network to it was slowed.
fn held_up(run: &Run, p: &Probe) -> bool {
    let end = p.at + d(p.took);
    run.faults.iter().any(|f| {
        matches!(f.kind, Kind::Pause | Kind::SlowLink)
            && f.touches(p.replica)
            && f.from <= end
            && f.to >= p.at
    })
}

/// `/readyz` never hangs (a paused replica, or one behind a slowed link, aside).
fn ready_prompt(run: &Run, out: &mut Vec<Violation>) {
    for p in &run.history.probes {
        if p.took > run.bounds.ready_within && !held_up(run, p) {
            violation(out, "ready_prompt", format!("{p:?}"));
        }
    }
}

/// A replica without its control database for 3 s or more says so in `/readyz` (503, the
/// control database named: its check is bounded at 1.5 s), and one cut from it for longer
/// than the dead-peer timeout (and 2 s) notices its fleet channel is down.
fn says_unready(run: &Run, out: &mut Vec<Violation>) {
    let long = |f: &&Applied, at_least: Duration| f.to - f.from >= d(at_least);
    for f in run
        .faults
        .iter()
        .filter(|f| matches!(f.kind, Kind::ControlCut | Kind::ControlRestart))
        .filter(|f| long(f, Duration::from_secs(3)))
    {
        for r in (1..=run.bounds.replicas).map(|i| format!("r{i}")) {
            if !f.touches(&r) {
                continue;
            }
            let during: Vec<&Probe> = run
                .history
                .probes
                .iter()
                .filter(|p| p.replica == r && p.at > f.from && p.at < f.to)
                .collect();
            let unready = during.iter().any(|p| {
                p.status == 503
                    && p.body["reason"]
                        .as_str()
                        .is_some_and(|s| s.contains("control database"))
            });
            if !unready {
                violation(
                    out,
                    "says_unready",
                    format!("{r} never said 503 (control database) during {f:?}"),
                );
            }
            let noticed = run.history.probes.iter().any(|p| {
                p.replica == r
                    && p.at > f.from
                    && p.at < f.to + chrono::Duration::seconds(1)
                    && p.body["fleet"]["channel"]
                        .as_str()
                        .is_some_and(|c| c.starts_with("down"))
            });
            let noticeable = long(&f, run.bounds.dead_peer + Duration::from_secs(2));
            if f.kind == Kind::ControlCut && noticeable && !noticed {
                violation(
                    out,
                    "says_unready",
                    format!("{r} never noticed its fleet channel was down during {f:?}"),
                );
            }
        }
    }
}

/// After each fault heals, every replica it touched serves again within the bound,
/// whatever the fault's length.
fn recovers(run: &Run, out: &mut Vec<Violation>) {
    let bound = d(run.bounds.recovery);
    let last = run.history.events.iter().map(|e| e.at).max();
    for f in run.faults {
        for r in (1..=run.bounds.replicas).map(|i| format!("r{i}")) {
            if !f.touches(&r) || f.kind == Kind::RedisCut || last.is_none_or(|l| l < f.to + bound) {
                continue;
            }
            let back = answered(run)
                .filter(|e| e.replica == r && matches!(e.call, Call::Read | Call::Cell))
                .any(|e| e.at >= f.to && e.at <= f.to + bound);
            if !back {
                violation(
                    out,
                    "recovers",
                    format!(
                        "{r} did not serve within {:.1} s of the heal of {f:?}",
                        secs(bound)
                    ),
                );
            }
        }
    }
}

/// While a fault touches one replica, the others keep serving (an answered read in every
/// 3 s of the fault).
fn others_serve(run: &Run, out: &mut Vec<Violation>) {
    let slice = chrono::Duration::seconds(3);
    for f in run.faults.iter().filter(|f| f.replica.is_some()) {
        for r in (1..=run.bounds.replicas).map(|i| format!("r{i}")) {
            if f.touches(&r) {
                continue;
            }
            let mut at = f.from + chrono::Duration::seconds(1);
            while at + slice <= f.to {
                let served = answered(run).any(|e| {
                    e.replica == r
                        && matches!(e.call, Call::Read | Call::Cell)
                        && e.end() >= at
                        && e.end() < at + slice
                });
                if !served {
                    violation(
                        out,
                        "others_serve",
                        format!("{r} answered no read in the 3 s from {at} during {f:?}"),
                    );
                }
                at += slice;
            }
        }
    }
}

/// Each invariant, shown able to fail: a history that keeps every guarantee passes, and the
/// same history with one violation injected is caught by exactly the invariant it breaks.
#[cfg(test)]
mod shown_able_to_fail {
    use super::*;
    use crate::workload::Write;
    use serde_json::json;

    const T0: i64 = 1_800_000_000;

    fn at(s: f64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(T0 * 1000 + (s * 1000.0) as i64).unwrap()
    }

    fn event(call: Call, replica: &'static str, s: f64, rows: bool, n: usize) -> Event {
        Event {
            call,
            replica,
            at: at(s),
            took: Duration::from_millis(20),
            request_id: Some(format!("req-{n}")),
            status: 200,
            rows,
            value: None,
            approval_id: None,
            reason: String::new(),
        }
    }

    fn bounds() -> Bounds {
        Bounds {
            replicas: 3,
            dead_peer: Duration::from_secs(6),
            recovery: Duration::from_secs(10),
            coherence: Duration::from_secs(2),
            revocation: Duration::from_secs(1),
            ready_within: Duration::from_millis(2500),
            grace: Duration::from_millis(500),
            rate: 4.0,
            burst: 4.0,
        }
    }

    /// 60 s of a fleet of three that kept every promise: r1 cut from the control database
    /// from 10 s to 25 s (the victim revoked at 15 s), one write executed at 30 s.
    fn good() -> (History, Vec<Applied>, Option<DateTime<Utc>>, Snapshot) {
        let faults = vec![Applied {
            kind: Kind::ControlCut,
            replica: Some("r1"),
            from: at(10.0),
            to: at(25.0),
        }];
        let mut h = History::default();
        let mut n = 0;
        for tenth in 0..600 {
            let s = f64::from(tenth) / 10.0;
            for r in ["r1", "r2", "r3"] {
                let cut = r == "r1" && (10.0..27.0).contains(&s);
                n += 1;
                let mut e = event(Call::Cell, r, s, !cut, n);
                e.value = Some(if s >= 29.0 { 1 } else { 0 });
                h.events.push(e);
                if tenth % 5 == 0 {
                    n += 1;
                    h.events
                        .push(event(Call::Victim, r, s, !cut && s < 15.5, n));
                    n += 1;
                    // A quarter of the limited identity's budget.
                    h.events
                        .push(event(Call::Limited, r, s, !cut && tenth % 30 == 0, n));
                    let down = r == "r1" && (12.0..25.0).contains(&s);
                    h.probes.push(Probe {
                        replica: r,
                        at: at(s),
                        took: Duration::from_millis(30),
                        status: if down { 503 } else { 200 },
                        body: if down {
                            json!({"reason": "control database unreachable", "fleet": {"channel": "down since 12 s"}})
                        } else {
                            json!({"fleet": {"channel": "up"}})
                        },
                    });
                }
            }
        }
        h.writes.push(Write {
            marker: "w1".into(),
            approval_id: Some("a1".into()),
            decision: "approve",
            seen: Some("executed".into()),
        });
        let audit = h
            .events
            .iter()
            .filter(|e| e.rows)
            .map(|e| (e.request_id.clone().unwrap(), 1))
            .collect();
        let snapshot = Snapshot {
            audit,
            approvals: vec![ApprovalRow {
                id: "a1".into(),
                marker: "w1".into(),
                state: "executed".into(),
                required: 2,
                approves: 2,
                rejects: 0,
                rows_affected: Some(1),
                error: None,
            }],
            effects: vec![Effect {
                marker: "w1".into(),
                v: 1,
                at: Some(at(28.0)),
            }],
            cell_v: 1,
            chain: Ok(()),
            circuits: ["r1", "r2", "r3"]
                .iter()
                .map(|r| ((*r).to_string(), "closed".to_string()))
                .collect(),
        };
        (h, faults, Some(at(15.0)), snapshot)
    }

    /// The violations in the good history once `inject` has changed it.
    fn violations(
        inject: impl FnOnce(&mut History, &mut Vec<Applied>, &mut Snapshot),
    ) -> Vec<Violation> {
        let (mut h, mut f, revoked, mut s) = good();
        inject(&mut h, &mut f, &mut s);
        check(&Run {
            history: &h,
            faults: &f,
            revoked,
            snapshot: &s,
            bounds: &bounds(),
        })
    }

    /// The invariants that object, each once.
    fn caught(
        inject: impl FnOnce(&mut History, &mut Vec<Applied>, &mut Snapshot),
    ) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = violations(inject).iter().map(|v| v.invariant).collect();
        names.dedup();
        names
    }

    #[test]
    fn a_history_that_kept_every_promise_passes() {
        let v = violations(|_, _, _| {});
        assert!(v.is_empty(), "{v:#?}");
    }

    fn find(h: &mut History, call: Call, replica: &str, s: f64) -> usize {
        h.events
            .iter()
            .position(|e| e.call == call && e.replica == replica && e.at >= at(s))
            .unwrap()
    }

    /// Marks the events chosen as answered, each with its audit record (so that only the
    /// invariant under test can object).
    fn answer(h: &mut History, s: &mut Snapshot, chosen: impl Fn(&Event) -> bool) {
        for e in h.events.iter_mut().filter(|e| chosen(e)) {
            e.rows = true;
            s.audit.insert(e.request_id.clone().unwrap(), 1);
        }
    }

    /// Marks the first `call` on `replica` from `s` seconds on as answered.
    fn answer_one(h: &mut History, snapshot: &mut Snapshot, call: Call, replica: &str, s: f64) {
        let i = find(h, call, replica, s);
        let id = h.events[i].request_id.clone();
        answer(h, snapshot, |e| e.request_id == id);
    }

    #[test]
    fn each_injected_violation_is_caught_by_its_invariant() {
        type Inject = Box<dyn FnOnce(&mut History, &mut Vec<Applied>, &mut Snapshot)>;
        let cases: Vec<(&str, Inject)> = vec![
            (
                "audited",
                Box::new(|h, _, s| {
                    let id = h
                        .events
                        .iter()
                        .find(|e| e.rows)
                        .unwrap()
                        .request_id
                        .clone()
                        .unwrap();
                    s.audit.insert(id, 2);
                }),
            ),
            (
                "chain",
                Box::new(|_, _, s| s.chain = Err("seq 41: hash mismatch".into())),
            ),
            (
                "approved_only",
                Box::new(|_, _, s| s.approvals[0].approves = 1),
            ),
            (
                "exactly_once",
                Box::new(|_, _, s| {
                    s.effects.push(Effect {
                        marker: "w1".into(),
                        v: 2,
                        at: Some(at(59.0)),
                    });
                    s.cell_v = 2;
                }),
            ),
            (
                "settled",
                Box::new(|_, _, s| {
                    let mut stuck = s.approvals[0].clone();
                    (stuck.id, stuck.marker, stuck.state) =
                        ("a2".into(), "w2".into(), "approved".into());
                    s.approvals.push(stuck);
                }),
            ),
            (
                "coherent",
                Box::new(|h, _, _| {
                    let i = find(h, Call::Cell, "r2", 45.0);
                    h.events[i].value = Some(0);
                }),
            ),
            (
                "limits",
                Box::new(|h, _, s| answer(h, s, |e| e.call == Call::Limited && e.at > at(30.0))),
            ),
            (
                "revocation",
                Box::new(|h, _, s| answer_one(h, s, Call::Victim, "r2", 40.0)),
            ),
            (
                "circuits_converge",
                Box::new(|_, _, s| s.circuits[2].1 = "open".into()),
            ),
            (
                "no_answer_unaudited",
                Box::new(|h, _, s| answer_one(h, s, Call::Cell, "r1", 18.0)),
            ),
            (
                "ready_prompt",
                Box::new(|h, _, _| h.probes[7].took = Duration::from_secs(8)),
            ),
            (
                "says_unready",
                Box::new(|h, _, _| {
                    for p in h.probes.iter_mut().filter(|p| p.replica == "r1") {
                        p.status = 200;
                    }
                }),
            ),
            (
                "recovers",
                Box::new(|h, _, _| {
                    for e in h
                        .events
                        .iter_mut()
                        .filter(|e| e.replica == "r1" && e.at < at(36.0))
                    {
                        e.rows &= e.at < at(10.0);
                    }
                }),
            ),
            (
                "others_serve",
                Box::new(|h, _, _| {
                    for e in h
                        .events
                        .iter_mut()
                        .filter(|e| e.replica == "r3" && e.at > at(12.0) && e.at < at(17.0))
                    {
                        e.rows = false;
                    }
                }),
            ),
        ];
        for (name, inject) in cases {
            let caught = caught(inject);
            assert_eq!(caught, [name], "injected a violation of {name}");
        }
    }
}
