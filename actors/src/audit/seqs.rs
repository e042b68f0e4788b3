//! Where a writer's seqs come from: taken ahead in blocks, so that a batch under load costs
//! one round trip (its insert), not two.
//!
//! A seq that no record holds yet is either a live writer's, about to be used, or a dead
//! writer's (or a failed batch's), never to be used; the ledger voids it once it has been
//! missing for [`HOLE_GRACE`]. The two are told apart by age alone: a writer uses a seq only
//! until [`MARGIN`] before [`HOLE_GRACE`] has passed since it asked for it, so a seq that old
//! is surely nobody's — no lease to write, renew or clean up. A live writer's unused seqs
//! hold the tree back for at most the grace, and should a batch still come too late (the
//! process paused between the check and the insert), the primary key on seq decides: the
//! void wins and the batch goes in again at new seqs.
//!
//! A block covers about [`AHEAD`] of the writer's recent traffic, so a burst that ends
//! leaves few seqs unused (each becomes a void), and the next block is taken beside a
//! batch's insert once half of the held ones are used, so a batch seldom waits for one. A writer with less than one record per
//! [`AHEAD`] takes exactly the seqs of each batch, as before: one extra round trip, and no
//! seq taken for a record that may never come.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::writer::{step, BatchError};
use super::HOLE_GRACE;

/// How long before [`HOLE_GRACE`] runs out a writer stops starting batches at a block's
/// seqs: room for the insert to commit.
const MARGIN: Duration = Duration::from_millis(500);
/// How much of the writer's recent traffic one block covers.
const AHEAD: Duration = Duration::from_millis(50);
/// The largest block.
const MAX_BLOCK: usize = 1024;

/// Takes `$1` seqs.
const TAKE: &str = "SELECT nextval('audit_records_seq') FROM generate_series(1, $1::bigint)";

/// The seqs a writer holds: blocks it took ahead, each usable until its deadline.
#[derive(Debug, Default)]
pub(super) struct Reserved {
    blocks: VecDeque<Block>,
    /// Records per second, smoothed over the last reservations.
    rate: f64,
    /// When the writer last took seqs from the database, and how many it used since.
    last_taken: Option<Instant>,
    used_since: usize,
}

#[derive(Debug)]
struct Block {
    seqs: VecDeque<i64>,
    usable_until: Instant,
}

impl Reserved {
    /// `n` seqs for a batch, ascending: from the blocks held, or from the database (one
    /// round trip, which takes a whole block when traffic is high enough).
    pub(super) async fn next(
        &mut self,
        pool: &deadpool_postgres::Pool,
        n: usize,
    ) -> Result<Vec<i64>, BatchError> {
        self.drop_expired();
        if self.held() < n {
            self.refill(pool, n - self.held()).await?;
        }
        self.used_since += n;
        let mut seqs = Vec::with_capacity(n);
        while seqs.len() < n {
            let Some(block) = self.blocks.front_mut() else {
                break;
            };
            match block.seqs.pop_front() {
                Some(seq) => seqs.push(seq),
                None => {
                    self.blocks.pop_front();
                }
            }
        }
        if seqs.len() < n {
            return Err(BatchError::Failed);
        }
        Ok(seqs)
    }

    fn held(&self) -> usize {
        self.blocks.iter().map(|b| b.seqs.len()).sum()
    }

    /// Forgets blocks past their deadline; their unused seqs become the ledger's to void.
    fn drop_expired(&mut self) {
        let now = Instant::now();
        let before = self.held();
        self.blocks.retain(|b| b.usable_until > now);
        let dropped = before - self.held();
        if dropped > 0 {
            metrics::counter!("interlock_audit_seqs_unused_total").increment(dropped as u64);
        }
    }

    /// Takes the next block while the held seqs still cover half of [`AHEAD`], so that a
    /// batch seldom waits for one; meant to run beside the batch's insert.
    pub(super) async fn take_ahead(&mut self, pool: &deadpool_postgres::Pool) {
        let ahead = self.ahead();
        if ahead <= 1 || self.held() * 2 > ahead {
            return;
        }
        if let Err(e) = self.refill(pool, 0).await {
            // The next batch takes its seqs itself, and fails there if it must.
            tracing::debug!(error = %e, "could not take audit seqs ahead");
        }
    }

    /// How many seqs [`AHEAD`] of the recent traffic are.
    fn ahead(&self) -> usize {
        ((self.rate * AHEAD.as_secs_f64()).ceil() as usize).min(MAX_BLOCK)
    }

    /// Takes at least `missing` more seqs, as many as [`AHEAD`] of the recent traffic.
    async fn refill(
        &mut self,
        pool: &deadpool_postgres::Pool,
        missing: usize,
    ) -> Result<(), BatchError> {
        let now = Instant::now();
        if let Some(last) = self.last_taken {
            let seen = self.used_since as f64 / now.duration_since(last).as_secs_f64().max(1e-3);
            self.rate = if self.rate == 0.0 {
                seen
            } else {
                (self.rate + seen) / 2.0
            };
        }
        self.last_taken = Some(now);
        self.used_since = 0;
        let size = missing.max(self.ahead());
        if size == 0 {
            return Ok(());
        }
        let seqs = take(pool, size).await?;
        if seqs.len() > missing {
            metrics::histogram!("interlock_audit_seq_block").record(seqs.len() as f64);
        }
        self.blocks.push_back(Block {
            seqs: seqs.into(),
            usable_until: now + HOLE_GRACE - MARGIN,
        });
        Ok(())
    }
}

/// `n` seqs from `audit_records_seq`, ascending: the writer's until the ledger's grace.
pub(super) async fn take(pool: &deadpool_postgres::Pool, n: usize) -> Result<Vec<i64>, BatchError> {
    let asked = Instant::now();
    let client = pool.get().await?;
    step("checkout", asked.elapsed());
    let asked = Instant::now();
    let take = client.prepare_cached(TAKE).await?;
    let mut seqs: Vec<i64> = client
        .query(&take, &[&(n as i64)])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    seqs.sort_unstable();
    step("seqs", asked.elapsed());
    Ok(seqs)
}
