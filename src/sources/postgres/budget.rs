//! The process-wide budget for result memory in flight. Every read or write
//! reserves its source's byte cap (plus the row guard's overhead) before it
//! runs and gives it back when it returns, so many concurrent large results
//! cannot together exceed the budget: a call that finds the budget spent waits
//! briefly, then is refused as unavailable.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default budget: 256 MiB.
pub const DEFAULT_BUDGET_BYTES: u64 = 256 * 1024 * 1024;

/// How long a call waits for budget before it is refused.
const WAIT: Duration = Duration::from_secs(5);

/// Budget is counted in KiB so that a permit count fits the semaphore.
const UNIT: u64 = 1024;

/// A memory budget: a semaphore of KiB units and its total.
pub struct Budget {
    semaphore: Arc<Semaphore>,
    total: u32,
}

fn units_of(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(UNIT).max(1)).unwrap_or(u32::MAX)
}

impl Budget {
    pub fn new(bytes: u64) -> Self {
        let max = u32::try_from(Semaphore::MAX_PERMITS).unwrap_or(u32::MAX);
        let total = units_of(bytes).min(max);
        Budget {
            semaphore: Arc::new(Semaphore::new(total as usize)),
            total,
        }
    }

    /// Reserves `bytes` (at most the whole budget, so that one call whose cap is above
    /// the budget can still run alone); `None` when the budget stayed spent for `wait`.
    pub async fn reserve(&self, bytes: u64, wait: Duration) -> Option<OwnedSemaphorePermit> {
        let units = units_of(bytes).min(self.total);
        tokio::time::timeout(wait, self.semaphore.clone().acquire_many_owned(units))
            .await
            .ok()
            .and_then(Result::ok)
    }
}

static BUDGET: OnceLock<Budget> = OnceLock::new();

/// Sets the process's budget (the first call wins: one budget per process).
pub fn init(bytes: u64) {
    let _ = BUDGET.set(Budget::new(bytes));
}

/// Reserves from the process's budget.
pub async fn reserve(bytes: u64) -> Option<OwnedSemaphorePermit> {
    BUDGET
        .get_or_init(|| Budget::new(DEFAULT_BUDGET_BYTES))
        .reserve(bytes, WAIT)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reservations_are_bounded_by_the_budget() {
        let mib = 1024 * 1024;
        let budget = Budget::new(3 * mib);
        let short = Duration::from_millis(50);
        let first = budget.reserve(2 * mib, short).await;
        assert!(first.is_some());
        assert!(
            budget.reserve(2 * mib, short).await.is_none(),
            "over budget waits, then fails"
        );
        assert!(
            budget.reserve(mib, short).await.is_some(),
            "what is left can be used"
        );
        drop(first);
        assert!(
            budget.reserve(2 * mib, short).await.is_some(),
            "released on drop"
        );
        let alone = Budget::new(mib);
        assert!(
            alone.reserve(100 * mib, short).await.is_some(),
            "a cap above the budget runs alone"
        );
    }
}
