//! CLI commands that go through a running gateway's admin API (approvals, circuit status), so
//! they obey the same authorization and audit as the console. The key comes from
//! `INTERLOCK_API_KEY`; the gateway from `--endpoint` (or `INTERLOCK_ENDPOINT`).

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::output::{print_json, print_table};
use super::{ApprovalsCommand, RemoteArgs};

fn key() -> anyhow::Result<String> {
    std::env::var("INTERLOCK_API_KEY")
        .ok()
        .filter(|k| !k.trim().is_empty())
        .context("set INTERLOCK_API_KEY to an approver or operator key")
}

async fn request(
    remote: &RemoteArgs,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> anyhow::Result<Value> {
    request_within(
        remote,
        method,
        path,
        body,
        std::time::Duration::from_secs(30),
    )
    .await
}

/// [`request`] with its own time limit (a long replay takes longer than a listing).
pub(super) async fn request_within(
    remote: &RemoteArgs,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
    timeout: std::time::Duration,
) -> anyhow::Result<Value> {
    let url = format!("{}{path}", remote.endpoint.trim_end_matches('/'));
    let client = reqwest::Client::builder().timeout(timeout).build()?;
    let mut req = client.request(method, &url).bearer_auth(key()?);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req
        .send()
        .await
        .with_context(|| format!("cannot reach {url}"))?;
    let status = res.status();
    let value: Value = res.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let message = value["error"].as_str().unwrap_or("request failed");
        let state = value["state"]
            .as_str()
            .map(|s| format!(" (state: {s})"))
            .unwrap_or_default();
        bail!("{status}: {message}{state}");
    }
    Ok(value)
}

pub async fn approvals(remote: &RemoteArgs, cmd: ApprovalsCommand) -> anyhow::Result<()> {
    use reqwest::Method;
    match cmd {
        ApprovalsCommand::List { state, source } => {
            let mut path = format!(
                "/admin/approvals?state={}",
                state.as_deref().unwrap_or("pending")
            );
            if let Some(s) = source {
                path.push_str(&format!("&source={s}"));
            }
            let v = request(remote, Method::GET, &path, None).await?;
            let rows = v["approvals"].as_array().cloned().unwrap_or_default();
            print_table(
                &[
                    "ID",
                    "SOURCE",
                    "STATE",
                    "REQUESTER",
                    "APPROVALS",
                    "AGE_S",
                    "STATEMENT",
                ],
                rows.iter().map(|a| {
                    let stmt: String = a["statement_display"]
                        .as_str()
                        .unwrap_or("")
                        .chars()
                        .take(60)
                        .collect();
                    vec![
                        a["id"].as_str().unwrap_or("").to_string(),
                        a["source_id"].as_str().unwrap_or("").to_string(),
                        a["state"].as_str().unwrap_or("").to_string(),
                        a["requester"].as_str().unwrap_or("").to_string(),
                        format!("{}/{}", a["approvals"], a["approvals_required"]),
                        a["age_secs"].to_string(),
                        stmt.replace('\n', " "),
                    ]
                }),
            );
        }
        ApprovalsCommand::Show { id } => {
            print_json(
                &request(remote, Method::GET, &format!("/admin/approvals/{id}"), None).await?,
            )?;
        }
        ApprovalsCommand::Preview { id } => {
            print_json(
                &request(
                    remote,
                    Method::POST,
                    &format!("/admin/approvals/{id}/preview"),
                    None,
                )
                .await?,
            )?;
        }
        ApprovalsCommand::Approve {
            id,
            reason,
            max_rows,
        } => {
            let mut body = json!({"reason": reason});
            if let Some(m) = max_rows {
                body["max_rows"] = json!(m);
            }
            let v = request(
                remote,
                Method::POST,
                &format!("/admin/approvals/{id}/approve"),
                Some(body),
            )
            .await?;
            println!("approval {id}: {}", v["state"].as_str().unwrap_or("?"));
        }
        ApprovalsCommand::Reject { id, reason } => {
            let v = request(
                remote,
                Method::POST,
                &format!("/admin/approvals/{id}/reject"),
                Some(json!({"reason": reason})),
            )
            .await?;
            println!("approval {id}: {}", v["state"].as_str().unwrap_or("?"));
        }
    }
    Ok(())
}

/// `interlock sources status`: the circuit table.
pub async fn sources_status(remote: &RemoteArgs) -> anyhow::Result<()> {
    let v = request(remote, reqwest::Method::GET, "/admin/sources", None).await?;
    let rows = v["sources"].as_array().cloned().unwrap_or_default();
    print_table(
        &[
            "SOURCE",
            "ENABLED",
            "CIRCUIT",
            "SINCE",
            "FAIL/OK",
            "P50_MS",
            "P99_MS",
            "LAST_ERROR",
        ],
        rows.iter().map(|s| {
            let c = &s["circuit"];
            let state = match (c["state"].as_str(), c["forced"].as_bool()) {
                (Some(st), Some(true)) => format!("{st} (forced)"),
                (Some(st), _) => st.to_string(),
                _ => "-".into(),
            };
            vec![
                s["id"].as_str().unwrap_or("").to_string(),
                s["enabled"].to_string(),
                state,
                c["since"]
                    .as_str()
                    .unwrap_or("-")
                    .chars()
                    .take(19)
                    .collect(),
                format!("{}/{}", c["window_failures"], c["window_successes"]),
                s["stats"]["p50_ms"].to_string(),
                s["stats"]["p99_ms"].to_string(),
                c["last_error"].as_str().unwrap_or("-").to_string(),
            ]
        }),
    );
    Ok(())
}
