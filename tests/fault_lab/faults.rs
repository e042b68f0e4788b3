//! The faults, and schedules of them: a fixed short schedule of every kind for CI, and a
//! seeded random one for soaks. The driver applies each fault, holds it, heals it, and
//! records when it was in force (wall-clock times, comparable with the history's and the
//! databases').

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::hosts::{Procs, REPLICAS};
use super::net::Lab;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The replica and the control database drop each other's packets.
    ControlCut,
    /// The replica and Redis drop each other's packets.
    RedisCut,
    /// The replica and the source drop each other's packets.
    SourceCut,
    /// The replica is stopped (SIGSTOP) and continued.
    Pause,
    /// The replica is killed (SIGKILL) and started again.
    Kill,
    /// The control database stops (fast shutdown) and starts again: every replica loses it.
    ControlRestart,
    /// The replica's link turns slow and lossy (both ways: control database, source,
    /// Redis, clients).
    SlowLink,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::ControlCut,
        Kind::RedisCut,
        Kind::SourceCut,
        Kind::Pause,
        Kind::Kill,
        Kind::ControlRestart,
        Kind::SlowLink,
    ];

    /// Whether the replica (or, for a fleet-wide fault, every replica) cannot audit while
    /// the fault is in force.
    pub fn blocks_audit(self) -> bool {
        matches!(
            self,
            Kind::ControlCut | Kind::ControlRestart | Kind::Pause | Kind::Kill
        )
    }
}

#[derive(Debug, Clone)]
pub struct Planned {
    pub kind: Kind,
    /// The faulted replica; none for a fleet-wide fault.
    pub replica: Option<&'static str>,
    pub hold: Duration,
    /// Quiet time after the heal.
    pub gap: Duration,
    /// Revoke the victim's key this far into the fault.
    pub revoke_after: Option<Duration>,
}

/// A fault as it happened.
#[derive(Debug, Clone)]
pub struct Applied {
    pub kind: Kind,
    pub replica: Option<&'static str>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

impl Applied {
    /// Whether the fault touched `replica` (a fleet-wide fault touches all).
    pub fn touches(&self, replica: &str) -> bool {
        self.replica.is_none_or(|r| r == replica)
    }
}

fn planned(kind: Kind, replica: Option<&'static str>, hold: u64, gap: u64) -> Planned {
    Planned {
        kind,
        replica,
        hold: Duration::from_secs(hold),
        gap: Duration::from_secs(gap),
        revoke_after: None,
    }
}

/// Every kind once, short: the schedule `.ci/run` runs. The victim's key is revoked in the
/// middle of the control cut, so one replica hears of it only after the heal.
pub fn short() -> Vec<Planned> {
    let mut s = vec![
        planned(Kind::ControlCut, Some("r1"), 15, 6),
        planned(Kind::RedisCut, Some("r2"), 10, 4),
        planned(Kind::SourceCut, Some("r3"), 12, 6),
        planned(Kind::Pause, Some("r1"), 8, 5),
        planned(Kind::Kill, Some("r2"), 2, 6),
        planned(Kind::ControlRestart, None, 4, 8),
        planned(Kind::SlowLink, Some("r3"), 12, 6),
    ];
    s[0].revoke_after = Some(Duration::from_secs(7));
    s
}

/// A seeded random schedule of about `total`: kinds, replicas, lengths and gaps drawn from
/// the seed, the revocation at a random fault. The same seed gives the same schedule.
pub fn seeded(seed: u64, total: Duration) -> Vec<Planned> {
    let mut rng = SplitMix(seed);
    let mut s = Vec::new();
    let mut spent = Duration::ZERO;
    while spent < total {
        let kind = Kind::ALL[rng.below(Kind::ALL.len() as u64) as usize];
        let replica = match kind {
            Kind::ControlRestart => None,
            _ => Some(REPLICAS[rng.below(REPLICAS.len() as u64) as usize]),
        };
        let hold = match kind {
            Kind::Kill => 1 + rng.below(4),
            Kind::ControlRestart => 1 + rng.below(8),
            _ => 3 + rng.below(25),
        };
        let p = planned(kind, replica, hold, 3 + rng.below(8));
        spent += p.hold + p.gap;
        s.push(p);
    }
    let at = rng.below(s.len() as u64) as usize;
    s[at].revoke_after = Some(s[at].hold / 2);
    s
}

/// splitmix64: small, seeded, enough to draw a schedule.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A slow link's rate: below what the workload sends through one replica, so it queues
/// and drops.
const SLOW_LINK: &str = "192kbit";

/// Applies each planned fault in turn; what happened, and when the victim's key was revoked.
pub fn drive(
    lab: &mut Lab,
    procs: &Procs,
    schedule: &[Planned],
    mut revoke: impl FnMut(&Lab),
) -> (Vec<Applied>, Option<DateTime<Utc>>) {
    let mut applied = Vec::new();
    let mut revoked = None;
    for p in schedule {
        let from = Utc::now();
        apply(lab, procs, p);
        match p.revoke_after {
            Some(after) if after < p.hold => {
                std::thread::sleep(after);
                revoke(lab);
                revoked = Some(Utc::now());
                std::thread::sleep(p.hold - after);
            }
            _ => std::thread::sleep(p.hold),
        }
        heal(lab, procs, p);
        applied.push(Applied {
            kind: p.kind,
            replica: p.replica,
            from,
            to: Utc::now(),
        });
        std::thread::sleep(p.gap);
    }
    (applied, revoked)
}

fn apply(lab: &mut Lab, procs: &Procs, p: &Planned) {
    let r = p.replica.unwrap_or("r1");
    match p.kind {
        Kind::ControlCut => lab.cut(r, "ctl"),
        Kind::RedisCut => lab.cut(r, "redis"),
        Kind::SourceCut => lab.cut(r, "src"),
        Kind::Pause => lab.signal(procs.replica(r), libc::SIGSTOP),
        Kind::Kill => {
            let i = procs.replica(r);
            lab.signal(i, libc::SIGKILL);
            assert!(
                lab.wait_exit(i, Duration::from_secs(5)),
                "{r} survived SIGKILL"
            );
        }
        Kind::SlowLink => lab.degrade(r, SLOW_LINK),
        Kind::ControlRestart => {
            lab.signal(procs.ctl, libc::SIGINT);
            assert!(
                lab.wait_exit(procs.ctl, Duration::from_secs(30)),
                "the control database did not stop"
            );
        }
    }
}

fn heal(lab: &mut Lab, procs: &Procs, p: &Planned) {
    let r = p.replica.unwrap_or("r1");
    match p.kind {
        Kind::ControlCut => lab.heal(r, "ctl"),
        Kind::RedisCut => lab.heal(r, "redis"),
        Kind::SourceCut => lab.heal(r, "src"),
        Kind::Pause => lab.signal(procs.replica(r), libc::SIGCONT),
        Kind::Kill => lab.respawn(procs.replica(r)),
        Kind::SlowLink => lab.restore(r),
        Kind::ControlRestart => {
            lab.respawn(procs.ctl);
            super::hosts::wait_database(lab, "ctl");
        }
    }
}
