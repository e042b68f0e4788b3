//! The actor behind [`super::ApprovalHandle`].

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};
use uuid::Uuid;

use super::ApprovalRunner;

pub struct ApprovalQueue {
    runner: Arc<dyn ApprovalRunner>,
    sweep_every: Duration,
}

impl ApprovalQueue {
    pub(super) fn new(runner: Arc<dyn ApprovalRunner>, sweep_every: Duration) -> Self {
        Self {
            runner,
            sweep_every,
        }
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
                .map(|ids, act, ctx| {
                    for id in ids {
                        ctx.spawn(act.runner.execute(id).into_actor(act));
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

    fn handle(&mut self, msg: Execute, ctx: &mut Context<Self>) {
        // Runs concurrently with other executions; the runner's CAS makes each run once.
        ctx.spawn(self.runner.execute(msg.0).into_actor(self));
    }
}
