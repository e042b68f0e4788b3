//! What every supervised actor answers: the supervisor's heartbeat and, in test builds
//! (feature `fault-injection`), injected faults.

use actix::{Actor, Context, Handler, Message};

/// The supervisor's liveness probe: an actor that does not answer it within the stall limit
/// is aborted and restarted.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Heartbeat;

/// A fault a test makes an actor suffer (feature `fault-injection` only).
#[cfg(feature = "fault-injection")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Panics inside a message handler.
    Panic,
    /// Stops the actor (as if it had decided to).
    Stop,
    /// Stops handling messages for this long, without blocking its thread.
    Stall(std::time::Duration),
    /// Blocks its thread for this long (every actor on that thread stops with it).
    Wedge(std::time::Duration),
}

#[cfg(feature = "fault-injection")]
#[derive(Message)]
#[rtype(result = "()")]
pub struct Inject(pub Fault);

#[cfg(feature = "fault-injection")]
impl Fault {
    #[allow(clippy::panic)]
    pub(crate) fn strike<A: Actor<Context = Context<A>>>(self, ctx: &mut Context<A>) {
        use actix::AsyncContext;
        tracing::warn!(fault = ?self, "injecting a fault");
        match self {
            Fault::Panic => panic!("injected fault: panic"),
            Fault::Stop => actix::ActorContext::stop(ctx),
            Fault::Stall(d) => ctx.wait(actix::fut::wrap_future::<_, A>(tokio::time::sleep(d))),
            Fault::Wedge(d) => std::thread::sleep(d),
        }
    }
}

/// An actor the supervisor can run: a plain `Context` actor that answers heartbeats (and,
/// in test builds, takes injected faults). Implement it with [`supervisable!`].
#[cfg(not(feature = "fault-injection"))]
pub trait Supervisable: Actor<Context = Context<Self>> + Handler<Heartbeat> {}

/// An actor the supervisor can run: a plain `Context` actor that answers heartbeats (and,
/// in test builds, takes injected faults). Implement it with [`supervisable!`].
#[cfg(feature = "fault-injection")]
pub trait Supervisable:
    Actor<Context = Context<Self>> + Handler<Heartbeat> + Handler<Inject>
{
}

/// Makes an actor [`Supervisable`].
macro_rules! supervisable {
    ($actor:ty) => {
        impl actix::Handler<$crate::supervise::Heartbeat> for $actor {
            type Result = ();

            fn handle(&mut self, _: $crate::supervise::Heartbeat, _: &mut actix::Context<Self>) {}
        }

        #[cfg(feature = "fault-injection")]
        impl actix::Handler<$crate::supervise::Inject> for $actor {
            type Result = ();

            fn handle(&mut self, msg: $crate::supervise::Inject, ctx: &mut actix::Context<Self>) {
                msg.0.strike(ctx);
            }
        }

        impl $crate::supervise::Supervisable for $actor {}
    };
}

pub(crate) use supervisable;
