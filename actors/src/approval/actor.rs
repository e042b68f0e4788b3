//! The actor behind [`super::ApprovalHandle`].

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};
use futures_util::FutureExt;
use uuid::Uuid;

use super::ApprovalRunner;
use crate::supervise::supervisable;

pub struct ApprovalQueue {
    runner: Arc<dyn ApprovalRunner>,
    sweep_every: Duration,
}

supervisable!(ApprovalQueue);

impl ApprovalQueue {
    pub(super) fn new(runner: Arc<dyn ApprovalRunner>, sweep_every: Duration) -> Self {
        Self {
            runner,
            sweep_every,
        }
    }

    /// Runs one approved write as a task of its own, not the actor's: an execution in
    /// flight survives a restart of the queue (it is never cut off halfway, and the
    /// recovery of the next incarnation leaves it alone: it is `executing` on this live
    /// instance). If the execution itself panics, whether the write committed is unknown:
    /// the runner marks it `outcome_unknown`.
    fn run(&self, id: Uuid) {
        let runner = self.runner.clone();
        actix_rt::spawn(async move {
            if AssertUnwindSafe(runner.execute(id))
                .catch_unwind()
                .await
                .is_err()
            {
                tracing::error!(%id, "executing an approved write panicked");
                runner.abandoned(id).await;
            }
        });
    }
}

impl Actor for ApprovalQueue {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let runner = self.runner.clone();
        // Recovery first; the approved-but-never-started ones run right after.
        ctx.wait(
            async move { runner.recover().await }
                .into_actor(self)
                .map(|ids, act, _| {
                    for id in ids {
                        act.run(id);
                    }
                }),
        );
        ctx.run_interval(self.sweep_every, |act, ctx| {
            let runner = act.runner.clone();
            ctx.spawn(
                async move {
                    let n = runner.expire_due().await;
                    if n > 0 {
                        tracing::info!(expired = n, "pending approvals expired");
                    }
                }
                .into_actor(act),
            );
        });
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Execute(pub Uuid);

impl Handler<Execute> for ApprovalQueue {
    type Result = ();

    fn handle(&mut self, msg: Execute, _: &mut Context<Self>) {
        // Runs concurrently with other executions; the runner's CAS makes each run once.
        self.run(msg.0);
    }
}
