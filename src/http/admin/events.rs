//! `GET /admin/events`: server-sent events for consoles — circuit changes and actor restarts
//! (operators) and approval lifecycle events (approvers see their sources only).

use std::time::Duration;

use actix_web::{web, HttpResponse};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::auth::{Admin, Staff};
use crate::http::sse::SseBody;
use crate::AppState;

pub async fn stream(caller: Admin<Staff>, state: web::Data<AppState>) -> HttpResponse {
    let mut rx = state.events.subscribe();
    let token = CancellationToken::new();
    let (body, tx) = SseBody::new(token.clone(), Duration::from_secs(15));
    actix_rt::spawn(async move {
        let _ = tx.send(web::Bytes::from_static(b": connected\n\n")).await;
        loop {
            let event = tokio::select! {
                e = rx.recv() => e,
                _ = token.cancelled() => return,
            };
            let event = match event {
                Ok(e) => e,
                Err(RecvError::Lagged(n)) => {
                    let note = format!("event: lagged\ndata: {{\"missed\": {n}}}\n\n");
                    if tx.send(web::Bytes::from(note)).await.is_err() {
                        return;
                    }
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            if (event.operator_only() && !caller.is_operator()) || !caller.sees(event.source()) {
                continue;
            }
            let data = serde_json::to_string(&event).unwrap_or_default();
            if tx
                .send(web::Bytes::from(format!(
                    "event: {}\ndata: {data}\n\n",
                    event.name()
                )))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    HttpResponse::Ok()
        .insert_header(("Content-Type", "text/event-stream"))
        .insert_header(("Cache-Control", "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(body)
}
