//! InterLock interoperability check with the official Rust MCP SDK, rmcp 3.11.0.
//!
//! Runs the same steps as `python_client.py` with the SDK's two ways to start a client:
//!
//! * `initialize` — `ClientLifecycleMode::Initialize`, what `ClientConfig::default().serve(transport)`
//!   does: an `initialize` offering rmcp's `ProtocolVersion::LATEST` (2026-07-28); InterLock must answer
//!   with a handshake version (2025-11-25), and every later request is handshake dialect.
//! * `discover` — `ClientLifecycleMode::Discover { preferred_versions: [2026-07-28] }`: `server/discover`,
//!   then every request carries the 2026-07-28 `_meta` and the `Mcp-Method`/`Mcp-Name` mirrors.
//!
//! Steps: connect, list tools, interlock_list_sources, interlock_query on demo data, a refused query
//! (hr.salaries) and a wrong key (401), each checked against the dialect's rendering. Prints one JSON
//! summary line per mode; exits 1 when a check fails, 2 on a usage error.
//!
//! Usage: rmcp_client --endpoint http://127.0.0.1:8080/mcp --key <agent key> [--mode initialize|discover|both]
//!        [--strict]   (count the known rmcp 401/403 limitation as a failure; see RMCP_401_403_LIMITATION)

use std::time::{Duration, Instant};

use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceError,
    model::{CallToolRequestParams, CallToolResult, ClientConfig, Implementation, ProtocolVersion},
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Map, Value, json};

const DEMO_SOURCE: &str = "shop";
const READ_SQL: &str = "SELECT id, name FROM public.customers WHERE id = 1";
const REFUSED_SQL: &str = "SELECT amount_cents FROM hr.salaries";
const HANDSHAKE: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

type Client = RunningService<RoleClient, ClientConfig>;

const OTHER_TOOLS: [(&str, &str); 5] = [
    ("interlock_describe_access", r#"{}"#),
    ("interlock_describe_source", r#"{"source_id": "shop"}"#),
    ("interlock_discover", r#"{"source_id": "shop"}"#),
    (
        "interlock_related_documents",
        r#"{"asset_id": "interop-probe"}"#,
    ),
    (
        "interlock_approval_status",
        r#"{"approval_id": "00000000-0000-0000-0000-000000000000"}"#,
    ),
];

/// rmcp 3.11.0 does not surface a JSON-RPC error carried by a 401 or 403 response as an McpError:
/// `post_message_with_response_limits` turns a 401 with `WWW-Authenticate` into
/// `StreamableHttpError::AuthRequired` (body dropped) and an unchallenged 403 into
/// `UnexpectedServerResponse("HTTP 403 Forbidden: <body>")`. InterLock's modern dialect answers
/// refusals with exactly those statuses (contract), so with rmcp in Discover mode a refusal arrives as
/// a transport error. These are checked for what InterLock sent (status, header, body inside the
/// error text) and reported as `known_client_limitation`; `--strict` counts them as failures.
const RMCP_401_403_LIMITATION: &str = "rmcp 3.11.0 does not parse JSON-RPC error bodies of 401/403 responses \
(401 with WWW-Authenticate -> AuthRequired transport error, body dropped; unchallenged 403 -> \
UnexpectedServerResponse transport error with the body as text)";

struct Checks(Vec<Value>, bool);

impl Checks {
    fn record(&mut self, name: &str, ok: bool, detail: Value) -> bool {
        self.0
            .push(json!({"name": name, "ok": ok, "detail": detail}));
        ok
    }
    /// A check that passed only through a documented client limitation.
    fn record_limited(&mut self, name: &str, detail: Value) -> bool {
        let ok = !self.1;
        self.0.push(
            json!({"name": name, "ok": ok, "known_client_limitation": RMCP_401_403_LIMITATION,
                           "detail": detail}),
        );
        ok
    }
    fn failed(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|c| c["ok"] != json!(true))
            .map(|c| c["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

fn client_config() -> ClientConfig {
    let mut config = ClientConfig::default();
    config.client_info = Implementation::new("interlock-interop-rmcp", "0.0.0");
    config
}

fn lifecycle(mode: &str) -> ClientLifecycleMode {
    match mode {
        "discover" => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        _ => ClientLifecycleMode::Initialize,
    }
}

async fn connect(endpoint: &str, key: &str, mode: &str) -> Result<Client, String> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(endpoint.to_owned())
            .auth_header(key.to_owned()),
    );
    let started = client_config().serve_with_lifecycle(transport, lifecycle(mode));
    match tokio::time::timeout(CALL_TIMEOUT, started).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(error)) => Err(format!("{mode} startup failed: {error} ({error:?})")),
        Err(_) => Err(format!("{mode} startup timed out after {CALL_TIMEOUT:?}")),
    }
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .find_map(|c| c.as_text().map(|t| t.text.clone()))
        .unwrap_or_default()
}

/// One tool call, reduced to what the checks look at.
async fn call(client: &Client, name: &str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else {
        unreachable!("arguments are an object")
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    match tokio::time::timeout(CALL_TIMEOUT, client.call_tool(params)).await {
        Err(_) => json!({"form": "timeout"}),
        Ok(Ok(result)) => {
            let sc = result.structured_content.clone().unwrap_or(Value::Null);
            json!({
                "form": "tool-result",
                "isError": result.is_error,
                "status": sc.get("status"),
                "http_status": sc.get("http_status"),
                "key": sc.get("code"),
                "message": sc.get("message"),
                "text": text(&result).chars().take(300).collect::<String>(),
            })
        }
        Ok(Err(ServiceError::McpError(error))) => {
            let data = error.data.clone().unwrap_or(Value::Null);
            json!({
                "form": "jsonrpc-error",
                "code": error.code.0,
                "message": error.message,
                "status": data.get("status"),
                "key": data.get("code"),
                "reason": data.get("reason"),
            })
        }
        Ok(Err(other)) => json!({
            "form": "client-error",
            "error": other.to_string(),
            "debug": format!("{other:?}").chars().take(1500).collect::<String>(),
        }),
    }
}

fn is_str(v: &Value) -> bool {
    v.as_str().is_some_and(|s| !s.is_empty())
}

async fn run(endpoint: &str, key: &str, mode: &str, strict: bool) -> Result<Value, String> {
    let modern = mode == "discover";
    let mut checks = Checks(Vec::new(), strict);
    let client = connect(endpoint, key, mode).await?;

    let info = client.peer_info().ok_or("no peer info after startup")?;
    let version = info.protocol_version.to_string();
    if modern {
        checks.record(
            "negotiated-modern",
            version == "2026-07-28",
            json!({"protocol_version": version}),
        );
    } else {
        checks.record(
            "negotiated-handshake",
            HANDSHAKE.contains(&version.as_str()),
            json!({"protocol_version": version, "offered": ProtocolVersion::LATEST.to_string()}),
        );
    }
    let server_name = info.server_info.as_ref().map(|i| i.name.clone());
    checks.record(
        "server-info",
        server_name.as_deref() == Some("interlock"),
        json!({"server_info": info.server_info}),
    );
    checks.record(
        "tools-capability",
        info.capabilities.tools.is_some(),
        serde_json::to_value(&info.capabilities).unwrap_or(Value::Null),
    );

    let names: Vec<String> = match tokio::time::timeout(CALL_TIMEOUT, client.list_all_tools()).await
    {
        Ok(Ok(tools)) => tools.iter().map(|t| t.name.to_string()).collect(),
        Ok(Err(error)) => {
            checks.record(
                "tools-list",
                false,
                json!({"error": error.to_string(), "debug": format!("{error:?}")}),
            );
            Vec::new()
        }
        Err(_) => {
            checks.record("tools-list", false, json!({"error": "timeout"}));
            Vec::new()
        }
    };
    if !names.is_empty() {
        let missing: Vec<&str> = ["interlock_query", "interlock_list_sources"]
            .into_iter()
            .filter(|n| !names.iter().any(|m| m == n))
            .collect();
        checks.record(
            "tools-list",
            missing.is_empty(),
            json!({"missing": missing}),
        );
    }

    let o = call(&client, "interlock_list_sources", json!({})).await;
    let sources: Option<Map<String, Value>> = o["text"]
        .as_str()
        .and_then(|t| serde_json::from_str(t).ok());
    checks.record(
        "list-sources",
        o["form"] == "tool-result"
            && o["isError"] != json!(true)
            && sources.is_some_and(|s| s.contains_key(DEMO_SOURCE)),
        o,
    );

    let o = call(
        &client,
        "interlock_query",
        json!({"source_id": DEMO_SOURCE, "sql": READ_SQL}),
    )
    .await;
    let rows: Option<Vec<Value>> = o["text"]
        .as_str()
        .and_then(|t| serde_json::from_str(t).ok());
    checks.record(
        "query-demo-data",
        o["form"] == "tool-result"
            && o["isError"] != json!(true)
            && rows.is_some_and(|r| {
                r.len() == 1 && r[0]["id"] == json!(1) && r[0]["name"].is_string()
            }),
        o,
    );

    let o = call(
        &client,
        "interlock_query",
        json!({"source_id": DEMO_SOURCE, "sql": REFUSED_SQL}),
    )
    .await;
    if modern {
        let ok = o["form"] == "jsonrpc-error"
            && o["code"] == json!(-32602)
            && o["status"] == json!(403)
            && is_str(&o["key"])
            && is_str(&o["reason"]);
        // What InterLock put on the wire, as far as the transport error text shows it.
        let text = o["error"].as_str().unwrap_or_default();
        let limited = o["form"] == "client-error"
            && text.contains("HTTP 403")
            && text.contains(r#""code":-32602"#)
            && text.contains(r#""status":403"#);
        if !ok && limited {
            checks.record_limited("refusal-modern-jsonrpc-error", o);
        } else {
            checks.record("refusal-modern-jsonrpc-error", ok, o);
        }
    } else {
        let ok = o["form"] == "tool-result"
            && o["isError"] == json!(true)
            && o["status"] == json!("forbidden")
            && o["http_status"] == json!(403)
            && is_str(&o["key"])
            && is_str(&o["message"]);
        checks.record("refusal-handshake-tool-result", ok, o);
    }

    /// rmcp surfaces a modern 401/403 as a transport error carrying the status line.
    fn auth_status_unreadable(o: &Value) -> bool {
        let debug = o["debug"].as_str().unwrap_or_default();
        debug.contains("HTTP 403 Forbidden") || debug.contains("AuthRequired")
    }

    // The tools that answer "unavailable" (503): -32603 with data.status 503 in modern, a tool result
    // with structuredContent.status "unavailable" in the handshake dialect.
    let mut unavailable = Vec::new();
    let mut outcomes = Map::new();
    for (name, args) in OTHER_TOOLS {
        if !names.iter().any(|n| n == name) {
            continue;
        }
        let o = call(
            &client,
            name,
            serde_json::from_str(args).expect("static JSON"),
        )
        .await;
        let is_unavailable = if modern {
            o["form"] == "jsonrpc-error"
                && o["code"] == json!(-32603)
                && o["status"] == json!(503)
                && o["key"] == json!("unavailable")
        } else {
            o["form"] == "tool-result"
                && o["isError"] == json!(true)
                && o["status"] == json!("unavailable")
                && o["http_status"] == json!(503)
                && o["key"] == json!("unavailable")
        };
        if is_unavailable {
            unavailable.push(name);
        }
        outcomes.insert(name.to_owned(), o);
    }
    let misrendered: Vec<&String> = outcomes
        .iter()
        .filter(|(n, o)| {
            !unavailable.contains(&n.as_str())
                && (o["status"] == json!(503)
                    || o["status"] == json!("unavailable")
                    || o["http_status"] == json!(503)
                    // rmcp cannot read 401/403 bodies in Discover mode (docs/interop.md,
                    // finding 1): a known client limitation, not a misrendering.
                    || (o["form"] == "client-error" && !auth_status_unreadable(o)))
        })
        .map(|(n, _)| n)
        .collect();
    checks.record(
        "unavailable-rendering",
        misrendered.is_empty(),
        json!({"unavailable": unavailable, "misrendered": misrendered, "outcomes": outcomes}),
    );

    // After the refusal the same client must still work (a refusal is not a broken connection).
    let o = call(&client, "interlock_list_sources", json!({})).await;
    checks.record(
        "usable-after-refusal",
        o["form"] == "tool-result" && o["isError"] != json!(true),
        o,
    );
    let _ = client.cancel().await;

    // A wrong key: 401 rendered per dialect.
    match connect(endpoint, "ilk_not_a_valid_key", mode).await {
        Err(error) => {
            checks.record("unauthorized", false, json!({"error": error}));
        }
        Ok(bad) => {
            let _ = tokio::time::timeout(CALL_TIMEOUT, bad.list_all_tools()).await;
            let o = call(
                &bad,
                "interlock_query",
                json!({"source_id": DEMO_SOURCE, "sql": READ_SQL}),
            )
            .await;
            if modern {
                let ok = o["form"] == "jsonrpc-error"
                    && o["code"] == json!(-32602)
                    && o["status"] == json!(401)
                    && is_str(&o["key"]);
                // The challenge is `Bearer`, or with [oauth] on `Bearer resource_metadata=…`.
                let limited = o["form"] == "client-error"
                    && o["debug"].as_str().unwrap_or_default().contains(
                        r#"AuthRequired(AuthRequiredError { www_authenticate_header: "Bearer"#,
                    );
                if !ok && limited {
                    checks.record_limited("unauthorized-modern-jsonrpc-error", o);
                } else {
                    checks.record("unauthorized-modern-jsonrpc-error", ok, o);
                }
            } else {
                let ok = o["form"] == "tool-result"
                    && o["isError"] == json!(true)
                    && o["status"] == json!("unauthorized")
                    && o["http_status"] == json!(401)
                    && is_str(&o["key"]);
                checks.record("unauthorized-handshake-tool-result", ok, o);
            }
            let _ = bad.cancel().await;
        }
    }

    let failed = checks.failed();
    let limited: Vec<Value> = checks
        .0
        .iter()
        .filter(|c| c.get("known_client_limitation").is_some())
        .map(|c| c["name"].clone())
        .collect();
    Ok(json!({
        "client": "rmcp",
        "sdk": "3.11.0",
        "mode": mode,
        "endpoint": endpoint,
        "protocol_version": version,
        "tools": names,
        "unavailable_tools": unavailable,
        "checks": checks.0,
        "ok": failed.is_empty(),
        "known_client_limitations": limited,
        "failed": failed,
    }))
}

fn usage() -> ! {
    eprintln!(
        "usage: rmcp_client --endpoint URL --key AGENT_KEY [--mode initialize|discover|both] [--strict]"
    );
    std::process::exit(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut endpoint = None;
    let mut key = None;
    let mut mode = "both".to_owned();
    let mut strict = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--endpoint" => endpoint = args.next(),
            "--key" => key = args.next(),
            "--mode" => mode = args.next().unwrap_or_else(|| usage()),
            "--strict" => strict = true,
            _ => usage(),
        }
    }
    let (Some(endpoint), Some(key)) = (endpoint, key) else {
        usage()
    };
    let modes: Vec<&str> = match mode.as_str() {
        "both" => vec!["initialize", "discover"],
        "initialize" | "discover" => vec![mode.as_str()],
        _ => usage(),
    };

    let mut all_ok = true;
    for mode in modes {
        let started = Instant::now();
        let mut summary = match run(&endpoint, &key, mode, strict).await {
            Ok(summary) => summary,
            Err(error) => {
                json!({"client": "rmcp", "sdk": "3.11.0", "mode": mode, "endpoint": endpoint,
                                 "ok": false, "error": error})
            }
        };
        summary["elapsed_s"] = json!(started.elapsed().as_secs_f64());
        println!("{summary}");
        if summary["ok"] != json!(true) {
            all_ok = false;
            if let Some(error) = summary.get("error") {
                eprintln!("rmcp ({mode}): FAILED: {error}");
            }
            for c in summary["checks"].as_array().into_iter().flatten() {
                if c["ok"] != json!(true) {
                    eprintln!("rmcp ({mode}): check {} FAILED: {}", c["name"], c["detail"]);
                }
            }
        }
    }
    std::process::exit(if all_ok { 0 } else { 1 });
}
