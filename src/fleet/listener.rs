//! The fleet channel: `LISTEN` on a control-database connection of its own, reconnected
//! with backoff. Each (re)connection is followed by a reconcile, so whatever was said while
//! the channel was down is caught up from the tables.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;

use super::{reconcile, Fleet, Runtime};
use crate::control::fleet::CHANNEL;
use crate::control::pool::ControlConnect;

const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// Listens for as long as the gateway runs.
pub(super) async fn run(fleet: Fleet, runtime: Runtime, connect: ControlConnect) {
    let mut backoff = BACKOFF_MIN;
    loop {
        match listen(&fleet, &runtime, &connect).await {
            Ok(()) => {
                tracing::warn!("fleet channel connection ended; reconnecting");
                backoff = BACKOFF_MIN;
            }
            Err(e) => tracing::warn!(error = %e, "fleet channel unavailable; retrying"),
        }
        fleet.set_channel(false, &runtime);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// One connection's life: connect, `LISTEN`, reconcile, then apply every notification
/// until the connection ends.
async fn listen(
    fleet: &Fleet,
    runtime: &Runtime,
    connect: &ControlConnect,
) -> Result<(), tokio_postgres::Error> {
    let (tx, mut notifications) = mpsc::unbounded_channel();
    let (client, driver) = match &connect.tls {
        None => {
            let (client, connection) = connect.config.connect(tokio_postgres::NoTls).await?;
            (client, drive(connection, tx))
        }
        Some(tls) => {
            let (client, connection) = connect.config.connect(tls.clone()).await?;
            (client, drive(connection, tx))
        }
    };
    let listening = client.batch_execute(&format!("LISTEN {CHANNEL}")).await;
    if let Err(e) = listening {
        driver.abort();
        return Err(e);
    }
    fleet.set_channel(true, runtime);
    reconcile::once(fleet, runtime).await;
    while let Some(n) = notifications.recv().await {
        fleet.apply_notification(n.payload(), runtime).await;
    }
    drop(client);
    Ok(())
}

/// Drives the connection on a task of its own, handing its notifications over in order.
fn drive<S, T>(
    mut connection: tokio_postgres::Connection<S, T>,
    tx: mpsc::UnboundedSender<tokio_postgres::Notification>,
) -> tokio::task::JoinHandle<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send(n).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "fleet channel connection failed");
                    return;
                }
            }
        }
    })
}
