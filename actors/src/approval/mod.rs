//! The approval queue: the state machine ([`state`]) and the actor that executes approved
//! writes and sweeps expired ones.
//!
//! Exactly-once execution does not rest on this actor: the runner claims an approval with a
//! compare-and-set (`approved` → `executing`) in the control database, so two replicas, or
//! two approvers clicking together, cannot both run it. The actor serializes this replica's
//! executions, owns the expiry timer, and recovers at start-up (`executing` left by a dead
//! gateway → `outcome_unknown`; `approved` never started → executed now).
//!
//! Supervised as `approval_queue`: a restarted queue recovers from the control database
//! exactly as at start-up. Executions run as tasks of their own, so a restart neither cuts
//! one off nor repeats it (it is `executing` on a live instance, which recovery leaves
//! alone, and the claim is a compare-and-set).

mod actor;
pub mod state;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

pub use actor::ApprovalQueue;
pub use state::{
    decide, withdraw, ApprovalState, ApproverChoice, DecisionInput, DecisionRefused,
    WithdrawRefused,
};

use crate::supervise::{Home, Slot, Supervision};
use crate::ActorError;

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What the gateway plugs into the queue: claiming and running one approval, the expiry
/// sweep and start-up recovery. Implementations never panic; failures are logged and stored.
pub trait ApprovalRunner: Send + Sync + 'static {
    /// Claims (CAS) and executes one approved write; no-op when another worker claimed it.
    fn execute(&self, id: Uuid) -> BoxFuture<()>;
    /// Marks pending approvals past their expiry as expired; returns how many.
    fn expire_due(&self) -> BoxFuture<u64>;
    /// Start-up: `executing` → `outcome_unknown`; returns approved ids still to run.
    fn recover(&self) -> BoxFuture<Vec<Uuid>>;
    /// An execution of `id` by this instance ended without an outcome (it panicked): if it
    /// is still `executing`, it becomes `outcome_unknown` (never re-run).
    fn abandoned(&self, id: Uuid) -> BoxFuture<()>;
}

#[derive(Clone)]
pub struct ApprovalHandle {
    slot: Slot<ApprovalQueue>,
}

impl ApprovalHandle {
    /// Starts the queue under `supervision` (it recovers at once).
    pub fn start(
        runner: Arc<dyn ApprovalRunner>,
        sweep_every: Duration,
        supervision: &Supervision,
    ) -> Self {
        let slot =
            supervision.supervise("approval_queue".into(), Home::Approvals, 1024, move |_| {
                ApprovalQueue::new(runner.clone(), sweep_every)
            });
        Self { slot }
    }

    /// Asks the queue to execute an approval that just became approved.
    pub async fn execute(&self, id: Uuid) -> Result<(), ActorError> {
        let request = self.slot.addr().send(actor::Execute(id));
        request
            .timeout(Duration::from_secs(5))
            .await
            .map_err(|e| ActorError::Mailbox(format!("approval queue: {e}")))
    }
}
