//! One incarnation of a supervised actor: its own task on an arbiter, with a panic catcher
//! and an abort handle, reporting how it ended.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use actix::dev::channel;
use actix::{Addr, ArbiterHandle, Context};
use futures_util::future::{AbortHandle, Abortable};
use futures_util::FutureExt;
use tokio::sync::oneshot;

use super::Supervisable;

/// Builds the actor for an incarnation (0 at start-up, then 1, 2, … after each restart),
/// recovering whatever state its kind keeps outside the actor.
pub(super) type Factory<A> = Arc<dyn Fn(u64) -> A + Send + Sync>;

/// How an incarnation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Exit {
    Panicked(String),
    Stopped,
    /// It stopped answering heartbeats and was aborted.
    Stalled,
    /// It stopped answering heartbeats and its thread did not even let the abort through.
    Wedged,
    /// Its thread is gone.
    Lost,
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Panicked(m) => write!(f, "panicked: {m}"),
            Exit::Stopped => f.write_str("stopped"),
            Exit::Stalled => f.write_str("stalled: no heartbeat reply"),
            Exit::Wedged => f.write_str("wedged: its thread stopped answering"),
            Exit::Lost => f.write_str("its thread is gone"),
        }
    }
}

/// A started incarnation, as its supervisor sees it.
pub(super) struct Running {
    pub exit: oneshot::Receiver<Exit>,
    pub abort: AbortHandle,
}

/// Starts incarnation `n` on `arbiter`; its address is usable at once (messages wait in the
/// mailbox until the actor runs).
pub(super) fn start<A: Supervisable>(
    arbiter: &ArbiterHandle,
    factory: Factory<A>,
    n: u64,
    mailbox: usize,
) -> (Addr<A>, Running) {
    let (tx, rx) = channel::channel(mailbox);
    let (exit_tx, exit) = oneshot::channel();
    let (abort, registration) = AbortHandle::new_pair();
    // If the arbiter is gone the closure is dropped unrun, and with it `exit_tx`: the
    // supervisor reads that as `Exit::Lost`.
    arbiter.spawn_fn(move || {
        let actor = match std::panic::catch_unwind(AssertUnwindSafe(|| factory(n))) {
            Ok(actor) => actor,
            Err(payload) => {
                let _ = exit_tx.send(Exit::Panicked(message(payload.as_ref())));
                return;
            }
        };
        let running = Context::with_receiver(rx).into_future(actor);
        actix_rt::spawn(async move {
            let ended =
                Abortable::new(AssertUnwindSafe(running).catch_unwind(), registration).await;
            let _ = exit_tx.send(match ended {
                Ok(Ok(())) => Exit::Stopped,
                Ok(Err(payload)) => Exit::Panicked(message(payload.as_ref())),
                Err(_aborted) => Exit::Stalled,
            });
        });
    });
    (Addr::new(tx), Running { exit, abort })
}

fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
