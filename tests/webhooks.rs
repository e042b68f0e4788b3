//! Signed notifications: a loopback receiver checks every event's Standard Webhooks
//! signature, and a receiver that is down for a while gets every event once it is back,
//! exactly once per `webhook-id`, though gateway processes are killed and started in
//! between and two replicas deliver from the same outbox.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use common::approvals;
use common::env::{demo_env_with, DemoEnv};
use common::http::client;
use common::receiver::{Received, Receiver};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn env() -> DemoEnv {
    demo_env_with(|s| s.webhooks.allow_private = true, |_| {}).await
}

async fn register(env: &DemoEnv, url: &str) -> Value {
    let res = client()
        .post(env.gateway.url("/admin/webhooks"))
        .bearer_auth(&env.operator_key)
        .json(&json!({"url": url, "secret": SECRET,
                      "events": ["approval.created", "approval.decided", "approval.executed"]}))
        .send()
        .await
        .expect("register");
    assert_eq!(res.status(), 201);
    res.json().await.expect("json")
}

/// Registers an endpoint for `url` and returns its id.
async fn registered(env: &DemoEnv, url: &str) -> String {
    register(env, url).await["id"].as_str().unwrap().to_string()
}

/// Pauses or resumes `hook` (`action`: "pause" or "resume").
async fn set_paused(env: &DemoEnv, hook: &str, action: &str) {
    let (status, body) = env
        .operator_post(&format!("/admin/webhooks/{hook}/{action}"), json!({}))
        .await;
    assert_eq!(status, 200, "{action}: {body}");
}

/// Queues a `webhook.test` delivery to `hook`.
async fn queue_test(env: &DemoEnv, hook: &str) {
    let res = client()
        .post(env.gateway.url(&format!("/admin/webhooks/{hook}/test")))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 202);
}

/// Queues a write and approves it: three events (created, decided, executed).
async fn approved_write(env: &DemoEnv, order: i64) -> String {
    let sql = format!("UPDATE public.orders SET status = 'held' WHERE id = {order}");
    let id = approvals::queue(&env.gateway, &env.agent_key, "shop", &sql).await;
    let reason = json!({"reason": "webhook test"});
    approvals::approve(&env.gateway, &env.approver_key, &id, reason).await;
    id
}

/// Checks the signature the way a receiver would, independently of the gateway's code.
fn verify(r: &Received) -> Value {
    let id = &r.headers["webhook-id"];
    let ts = &r.headers["webhook-timestamp"];
    let key = STANDARD
        .decode(SECRET.trim_start_matches("whsec_"))
        .expect("key");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("mac");
    mac.update(format!("{id}.{ts}.").as_bytes());
    mac.update(&r.body);
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    assert_eq!(
        r.headers["webhook-signature"], expected,
        "signature of {id}"
    );
    let age = chrono::Utc::now().timestamp() - ts.parse::<i64>().expect("timestamp");
    assert!((0..60).contains(&age), "a fresh timestamp: {age}");
    serde_json::from_slice(&r.body).expect("json body")
}

/// The accepted deliveries about approval `id`, by event type.
fn accepted_for(receiver: &Receiver, id: &str) -> HashMap<String, Vec<Received>> {
    let mut by_type: HashMap<String, Vec<Received>> = HashMap::new();
    for r in receiver.received().into_iter().filter(|r| r.accepted) {
        let body = verify(&r);
        if body["data"]["id"] == id {
            by_type
                .entry(body["type"].as_str().expect("type").to_string())
                .or_default()
                .push(r);
        }
    }
    by_type
}

async fn wait_for_all(receiver: &Receiver, id: &str, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let got = accepted_for(receiver, id);
        if ["approval.created", "approval.decided", "approval.executed"]
            .iter()
            .all(|t| got.contains_key(*t))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not every event arrived: {:?}",
            got.keys().collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn every_event_arrives_signed() {
    let env = env().await;
    let receiver = Receiver::start().await;
    let hook = register(&env, &receiver.url).await;
    assert!(hook["id"].is_string(), "{hook}");
    let id = approved_write(&env, 21).await;
    wait_for_all(&receiver, &id, Duration::from_secs(15)).await;
    let executed = &accepted_for(&receiver, &id)["approval.executed"][0];
    let body = verify(executed);
    assert_eq!(body["data"]["state"], "executed", "{body}");
    // The rows it changed, as PostgreSQL counted them (issue 25 §1).
    assert_eq!(body["data"]["rows_affected"], 1, "{body}");
    assert_eq!(
        body["data"]["rows_changed"],
        json!({"public.orders": 1}),
        "{body}"
    );

    // Refusals: a URL that is not http(s), and an event nobody offers.
    for (bad, why) in [
        (
            json!({"url": "ftp://127.0.0.1/x", "events": ["approval.created"]}),
            "http",
        ),
        (
            json!({"url": receiver.url, "events": ["approval.maybe"]}),
            "unknown event",
        ),
    ] {
        let res = client()
            .post(env.gateway.url("/admin/webhooks"))
            .bearer_auth(&env.operator_key)
            .json(&bad)
            .send()
            .await
            .expect("register");
        assert_eq!(res.status(), 400);
        let text = res.text().await.unwrap_or_default();
        assert!(text.contains(why), "{text}");
    }
    // The delivery state is visible to operators.
    let listed: Value = client()
        .get(env.gateway.url("/admin/webhooks"))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert!(
        listed["webhooks"][0]["delivered"].as_i64().unwrap_or(0) >= 3,
        "{listed}"
    );
    assert!(
        !listed.to_string().contains(SECRET),
        "the secret is never listed"
    );
}

#[tokio::test]
async fn a_receiver_that_was_down_gets_every_event_once_across_restarts_and_replicas() {
    let env = env().await;
    let receiver = Receiver::start().await;
    receiver.set_up(false);
    register(&env, &receiver.url).await;
    let dir = tempfile::tempdir().expect("dir");
    let extra = "[webhooks]\nallow_private = true\n";
    // A second replica, as a process of its own, delivers from the same outbox.
    let mut second = common::process::spawn_gateway_with(&env, dir.path(), extra);
    let id = approved_write(&env, 22).await;
    // Attempts fail while the receiver is down...
    let deadline = Instant::now() + Duration::from_secs(10);
    while receiver.received().len() < 3 {
        assert!(Instant::now() < deadline, "no attempts while down");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // ...a replica dies and another starts, and then the receiver comes back.
    common::process::sigkill(&mut second);
    let _third = common::process::spawn_gateway_with(&env, dir.path(), extra);
    receiver.set_up(true);
    wait_for_all(&receiver, &id, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got = accepted_for(&receiver, &id);
    for (event, deliveries) in &got {
        assert_eq!(deliveries.len(), 1, "{event} accepted once: {deliveries:?}");
    }
    let refused_ids: Vec<String> = receiver
        .received()
        .iter()
        .filter(|r| !r.accepted)
        .map(|r| r.headers["webhook-id"].clone())
        .collect();
    let accepted_ids: Vec<String> = got
        .values()
        .flatten()
        .map(|r| r.headers["webhook-id"].clone())
        .collect();
    assert!(
        refused_ids.iter().all(|r| accepted_ids.contains(r)),
        "a retried delivery keeps its webhook-id"
    );
}

#[tokio::test]
async fn a_witness_receives_each_new_audit_checkpoint_signed_and_verifiable() {
    let receiver = Receiver::start().await;
    let keys = tempfile::tempdir().unwrap();
    let key_file = keys.path().join("checkpoint.key");
    std::fs::write(
        &key_file,
        interlock::ledger::CheckpointKey::generate("interlock.test/witness").unwrap(),
    )
    .unwrap();
    let path = key_file.display().to_string();
    let env = demo_env_with(
        |s| {
            s.webhooks.allow_private = true;
            s.audit.checkpoint_key_file = path;
            s.audit.checkpoint_interval_secs = 0;
        },
        |_| {},
    )
    .await;
    let res = client()
        .post(env.gateway.url("/admin/webhooks"))
        .bearer_auth(&env.operator_key)
        .json(&json!({"url": receiver.url, "secret": SECRET, "events": ["audit.checkpoint"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let vkey = client()
        .get(env.gateway.url("/audit/checkpoint-key"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let checkpoint = |env: &DemoEnv| {
        client()
            .post(env.gateway.url("/admin/audit/checkpoints"))
            .bearer_auth(&env.operator_key)
            .send()
    };
    let first: Value = checkpoint(&env).await.unwrap().json().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let events = loop {
        let got: Vec<Value> = receiver
            .received()
            .iter()
            .filter(|r| r.accepted)
            .map(verify)
            .filter(|b| b["type"] == "audit.checkpoint")
            .collect();
        if !got.is_empty() || Instant::now() > deadline {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(events.len(), 1, "{events:?}");
    let note = events[0]["data"]["note"].as_str().unwrap();
    assert_eq!(note, first["note"].as_str().unwrap());
    let read = interlock::ledger::note::verify(note, vkey.trim()).unwrap();
    assert_eq!(read.size, first["tree_size"].as_u64().unwrap());
    // The request was audited: the next checkpoint holds exactly that one more record.
    let second: Value = checkpoint(&env).await.unwrap().json().await.unwrap();
    assert_eq!(second["tree_size"].as_u64(), Some(read.size + 1));
}

/// The v1 signature of a delivery under `secret`.
fn signed_with(r: &Received, secret: &str) -> String {
    let key = STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .expect("key");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("mac");
    mac.update(
        format!(
            "{}.{}.",
            r.headers["webhook-id"], r.headers["webhook-timestamp"]
        )
        .as_bytes(),
    );
    mac.update(&r.body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// Sends a test delivery to `hook` and waits for the `n`-th accepted request.
async fn test_delivery(env: &DemoEnv, receiver: &Receiver, hook: &str, n: usize) -> Received {
    queue_test(env, hook).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let accepted: Vec<Received> = receiver
            .received()
            .into_iter()
            .filter(|r| r.accepted)
            .collect();
        if accepted.len() >= n {
            return accepted[n - 1].clone();
        }
        assert!(Instant::now() < deadline, "delivery {n} did not arrive");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_rotated_secret_signs_beside_the_old_one_for_its_grace_and_a_paused_endpoint_waits() {
    let env = env().await;
    let receiver = Receiver::start().await;
    let hook = registered(&env, &receiver.url).await;

    // Rotation with a grace: the next delivery carries a signature with each secret.
    let (status, rotated) = env
        .operator_post(
            &format!("/admin/webhooks/{hook}/rotate"),
            json!({"grace_secs": 2}),
        )
        .await;
    assert_eq!(status, 200, "{rotated}");
    let new_secret = rotated["secret"].as_str().unwrap().to_string();
    assert_ne!(new_secret, SECRET);
    assert!(rotated["previous_valid_until"].is_string());
    let both = test_delivery(&env, &receiver, &hook, 1).await;
    let sigs: Vec<&str> = both.headers["webhook-signature"].split(' ').collect();
    assert_eq!(
        sigs,
        [
            signed_with(&both, &new_secret).as_str(),
            signed_with(&both, SECRET).as_str()
        ],
        "new first, then the previous one"
    );
    // The list says until when the previous secret signs, and never shows a secret.
    let listed =
        common::http::get_json(&env.gateway.url("/admin/webhooks"), &env.operator_key).await;
    assert!(
        listed["webhooks"][0]["previous_until"].is_string(),
        "{listed}"
    );
    assert!(!listed.to_string().contains("whsec_"), "{listed}");
    // After the grace, the new secret alone.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let one = test_delivery(&env, &receiver, &hook, 2).await;
    assert_eq!(
        one.headers["webhook-signature"],
        signed_with(&one, &new_secret)
    );

    // Paused: deliveries wait in the outbox; resumed, they go out.
    set_paused(&env, &hook, "pause").await;
    let listed =
        common::http::get_json(&env.gateway.url("/admin/webhooks"), &env.operator_key).await;
    assert!(listed["webhooks"][0]["paused_at"].is_string(), "{listed}");
    queue_test(&env, &hook).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        receiver.received().len(),
        2,
        "nothing delivered while paused"
    );
    let listed =
        common::http::get_json(&env.gateway.url("/admin/webhooks"), &env.operator_key).await;
    assert_eq!(listed["webhooks"][0]["pending"], 1, "{listed}");
    set_paused(&env, &hook, "resume").await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while receiver.received().len() < 3 {
        assert!(
            Instant::now() < deadline,
            "the waiting delivery did not go out on resume"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Unknown endpoints and bad graces are named.
    let missing = "00000000-0000-0000-0000-000000000000";
    for (path, body, want) in [
        (format!("/admin/webhooks/{missing}/rotate"), json!({}), 404),
        (format!("/admin/webhooks/{missing}/pause"), json!({}), 404),
        (
            format!("/admin/webhooks/{hook}/rotate"),
            json!({"grace_secs": -1}),
            400,
        ),
        (
            format!("/admin/webhooks/{hook}/rotate"),
            json!({"grace_secs": 9_999_999}),
            400,
        ),
    ] {
        let (status, body) = env.operator_post(&path, body).await;
        assert_eq!(status, want, "{path}: {body}");
    }
}

/// A delivery's state in the outbox: (a failed attempt recorded, gave up, delivered).
async fn delivery_state(env: &DemoEnv, hook: &str) -> (bool, bool, bool) {
    let row = common::admin(&env.control_db)
        .await
        .query_one(
            "SELECT last_error IS NOT NULL, gave_up_at IS NOT NULL, delivered_at IS NOT NULL
               FROM webhook_deliveries WHERE webhook_id = $1::text::uuid",
            &[&hook],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

/// Retries end 24 hours after the event, but the time an endpoint spent paused is not part
/// of them: a delivery 30 hours old that waited all that time paused is still retried when
/// its first attempt after the resume fails, and arrives once the receiver is back; the same
/// delivery never paused is given up at that first failure.
#[tokio::test]
async fn time_spent_paused_does_not_use_up_a_deliverys_retries() {
    let env = env().await;
    let db = common::admin(&env.control_db).await;
    for paused in [true, false] {
        let receiver = Receiver::start().await;
        receiver.set_up(false);
        let hook = registered(&env, &receiver.url).await;
        set_paused(&env, &hook, "pause").await;
        queue_test(&env, &hook).await;
        // Thirty hours ago: the event, and (when it was) the pause.
        db.execute(
            "UPDATE webhook_deliveries SET created_at = created_at - interval '30 hours'
              WHERE webhook_id = $1::text::uuid",
            &[&hook],
        )
        .await
        .unwrap();
        let backdate = if paused {
            "UPDATE webhooks SET paused_at = paused_at - interval '30 hours' WHERE id = $1::text::uuid"
        } else {
            "UPDATE webhooks SET paused_at = NULL WHERE id = $1::text::uuid"
        };
        db.execute(backdate, &[&hook]).await.unwrap();
        if paused {
            set_paused(&env, &hook, "resume").await;
        }
        // The first attempt fails (the receiver is down), and its failure is recorded.
        let deadline = Instant::now() + Duration::from_secs(15);
        while !delivery_state(&env, &hook).await.0 {
            assert!(Instant::now() < deadline, "no failed attempt was recorded");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(!receiver.received().is_empty());
        let (_, gave_up, _) = delivery_state(&env, &hook).await;
        assert_eq!(
            gave_up, !paused,
            "paused for its 30 hours: {paused}; given up after one failure: {gave_up}"
        );
        if paused {
            // Still owed: it arrives once the receiver is back (the retry after 1 s).
            receiver.set_up(true);
            let deadline = Instant::now() + Duration::from_secs(15);
            while !delivery_state(&env, &hook).await.2 {
                assert!(Instant::now() < deadline, "the owed delivery never arrived");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert!(receiver.received().iter().any(|r| r.accepted));
        }
        // Each attempt is in the delivery's log, with the endpoint's status and how long
        // it took; the refused one with its error.
        let listed = common::http::get_json(
            &env.gateway
                .url(&format!("/admin/webhooks/{hook}/deliveries")),
            &env.operator_key,
        )
        .await;
        let log = listed["deliveries"][0]["attempt_log"].as_array().unwrap();
        let statuses: Vec<u64> = log.iter().map(|a| a["status"].as_u64().unwrap()).collect();
        // Refused until the receiver was back (how many times depends on timing), then
        // accepted when it was owed; given up after the one refusal when it was not.
        let (last, before) = statuses.split_last().unwrap();
        if paused {
            assert_eq!(*last, 200, "{listed}");
            assert!(
                !before.is_empty() && before.iter().all(|s| *s == 503),
                "{listed}"
            );
        } else {
            assert_eq!(statuses, [503], "{listed}");
        }
        assert!(
            log[0]["error"].as_str().unwrap().contains("HTTP 503"),
            "{listed}"
        );
        assert!(log.iter().all(|a| a["ms"].is_u64() && a["at"].is_string()));
    }
}

/// A delivery's log keeps its newest 20 attempts, oldest first (the endpoint paused, so only
/// this test attempts it).
#[tokio::test]
async fn a_deliverys_log_keeps_its_newest_twenty_attempts() {
    use interlock::control::webhooks::{attempt_failed, Attempt, ATTEMPTS_KEPT};
    let env = env().await;
    let receiver = Receiver::start().await;
    let hook = registered(&env, &receiver.url).await;
    set_paused(&env, &hook, "pause").await;
    queue_test(&env, &hook).await;
    let db = common::admin(&env.control_db).await;
    let id: uuid::Uuid = db
        .query_one(
            "SELECT id FROM webhook_deliveries WHERE webhook_id = $1::text::uuid",
            &[&hook],
        )
        .await
        .unwrap()
        .get(0);
    for n in 1..=25_u64 {
        let attempt = Attempt {
            at: chrono::Utc::now(),
            status: Some(500),
            error: Some(format!("attempt {n}")),
            ms: n,
        };
        attempt_failed(&db, id, &attempt, Some(chrono::Utc::now()))
            .await
            .unwrap();
    }
    let log: Value = db
        .query_one(
            "SELECT attempt_log FROM webhook_deliveries WHERE id = $1",
            &[&id],
        )
        .await
        .unwrap()
        .get(0);
    let kept: Vec<u64> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["ms"].as_u64().unwrap())
        .collect();
    assert_eq!(kept.len(), usize::try_from(ATTEMPTS_KEPT).unwrap());
    assert_eq!(
        kept,
        (6..=25).collect::<Vec<u64>>(),
        "the newest, oldest first"
    );
}
