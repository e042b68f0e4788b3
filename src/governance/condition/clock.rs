//! The clock the time facts of conditions read: the system clock, or a fixed instant a
//! test sets on the running gateway (never settable from outside the process).

use std::sync::Arc;

use arc_swap::ArcSwapOption;
use chrono::{DateTime, Utc};

#[derive(Debug, Default)]
pub struct Clock {
    fixed: ArcSwapOption<DateTime<Utc>>,
}

impl Clock {
    pub fn now(&self) -> DateTime<Utc> {
        self.fixed
            .load()
            .as_deref()
            .copied()
            .unwrap_or_else(Utc::now)
    }

    /// Fixes the clock at `at` (`None`: the system clock again).
    pub fn set(&self, at: Option<DateTime<Utc>>) {
        self.fixed.store(at.map(Arc::new));
    }
}
