//! OpenTelemetry traces (issue 30): a gateway exporting to a real OTLP/HTTP receiver (this
//! test's own, decoding the protobuf with the official protocol definitions), its spans
//! checked against what the call did: the audit record's steps, refusal and sequence, the
//! statement PostgreSQL saw in `pg_stat_activity`, the parent the caller sent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::env::{demo_env_with, DemoEnv};
use common::mcp::{call, rpc, Answer, HANDSHAKE, MODERN};
use common::receiver::Receiver;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use serde_json::json;

/// One exported span, flattened.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    trace_id: String,
    span_id: String,
    parent: String,
    /// 2 server, 3 client, 1 internal.
    kind: i32,
    attrs: BTreeMap<String, String>,
    /// 2: error.
    status: i32,
    links: Vec<(String, String)>,
    start: u64,
    /// The whole span as exported (attributes, events, status message, links), as text.
    raw: String,
}

impl Span {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).map(String::as_str)
    }
}

fn decode(receiver: &Receiver) -> Vec<Span> {
    let mut out = Vec::new();
    for r in receiver.received() {
        let req = ExportTraceServiceRequest::decode(r.body.as_slice()).expect("OTLP protobuf");
        for rs in req.resource_spans {
            for ss in rs.scope_spans {
                for s in ss.spans {
                    let attrs = s
                        .attributes
                        .iter()
                        .map(|kv| {
                            let v = match kv.value.as_ref().and_then(|v| v.value.clone()) {
                                Some(Any::StringValue(s)) => s,
                                Some(Any::IntValue(i)) => i.to_string(),
                                Some(Any::BoolValue(b)) => b.to_string(),
                                Some(Any::DoubleValue(d)) => d.to_string(),
                                other => format!("{other:?}"),
                            };
                            (kv.key.clone(), v)
                        })
                        .collect();
                    out.push(Span {
                        name: s.name.clone(),
                        trace_id: hex::encode(&s.trace_id),
                        span_id: hex::encode(&s.span_id),
                        parent: hex::encode(&s.parent_span_id),
                        kind: s.kind,
                        attrs,
                        status: s.status.as_ref().map_or(0, |st| st.code),
                        links: s
                            .links
                            .iter()
                            .map(|l| (hex::encode(&l.trace_id), hex::encode(&l.span_id)))
                            .collect(),
                        start: s.start_time_unix_nano,
                        raw: format!("{s:?}"),
                    });
                }
            }
        }
    }
    out.sort_by_key(|s| s.start);
    out
}

/// The spans of the trace whose server span carries `request_id`, once the server span and
/// its audit span have arrived.
async fn trace_of(receiver: &Receiver, request_id: &str) -> Vec<Span> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let spans = decode(receiver);
        if let Some(root) = spans
            .iter()
            .find(|s| s.kind == 2 && s.attr("interlock.request_id") == Some(request_id))
        {
            let trace: Vec<Span> = spans
                .iter()
                .filter(|s| s.trace_id == root.trace_id)
                .cloned()
                .collect();
            let ended = trace.iter().any(|s| s.name == "interlock.audit.append");
            if ended || Instant::now() > deadline {
                return trace;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no trace for request {request_id}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn traced_env(adjust: impl FnOnce(&mut interlock::Settings)) -> (DemoEnv, Receiver) {
    let receiver = Receiver::start().await;
    let url = receiver.url.clone();
    let env = demo_env_with(
        |s| {
            s.telemetry.otlp_endpoint = url;
            s.telemetry.schedule_delay_ms = 50;
            s.telemetry.export_timeout_ms = 2000;
            adjust(s);
        },
        |_| {},
    )
    .await;
    (env, receiver)
}

fn request_id(a: &Answer) -> String {
    a.headers["x-request-id"].to_str().unwrap().to_string()
}

fn root(trace: &[Span]) -> &Span {
    trace.iter().find(|s| s.kind == 2).expect("server span")
}

/// The step spans, children of the request's span, in the order they began.
fn steps(trace: &[Span]) -> Vec<&Span> {
    let root = root(trace);
    trace
        .iter()
        .filter(|s| s.parent == root.span_id && s.kind == 1)
        .collect()
}

fn names(spans: &[&Span]) -> Vec<String> {
    spans.iter().map(|s| s.name.clone()).collect()
}

#[tokio::test]
async fn a_governed_read_is_one_trace_with_a_span_per_step_and_its_statement_in_postgresql() {
    let (env, receiver) = traced_env(|_| {}).await;
    let a = env
        .query("SELECT id, status FROM public.orders WHERE id = 424242 OR status = 'very-secret'")
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    let rid = request_id(&a);
    let record = env.audit_of(&rid).await;
    let trace = trace_of(&receiver, &rid).await;
    let root = root(&trace);

    // The request's span: HTTP server and MCP conventions, and the audit record's place.
    assert_eq!(root.name, "tools/call interlock_query");
    for (key, want) in [
        ("http.request.method", "POST"),
        ("http.route", "/mcp"),
        ("http.response.status_code", "200"),
        ("mcp.method.name", "tools/call"),
        ("mcp.protocol.version", MODERN),
        ("interlock.dialect", "modern"),
        ("gen_ai.tool.name", "interlock_query"),
        ("gen_ai.operation.name", "execute_tool"),
        ("jsonrpc.request.id", "1"),
        ("interlock.outcome", "ok"),
        ("interlock.identity", "demo-agent"),
        ("interlock.source", "shop"),
    ] {
        assert_eq!(root.attr(key), Some(want), "{key}: {root:?}");
    }
    assert_eq!(
        root.attr("interlock.audit.seq"),
        Some(record["seq"].to_string().as_str()),
        "{record}"
    );
    // ... and the record leads back to the trace.
    assert_eq!(
        record["decision"]["trace_id"],
        json!(root.trace_id),
        "{record}"
    );

    // One span per step the record lists, in its order, each a child of the request's.
    let step_spans = steps(&trace);
    let recorded: Vec<String> = record["decision"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    assert_eq!(names(&step_spans), recorded);
    for s in &step_spans {
        assert_eq!(s.attr("interlock.step.outcome"), Some("passed"), "{s:?}");
    }

    // The statement: a client span inside execution, without a value.
    let execution = step_spans.iter().find(|s| s.name == "execution").unwrap();
    let db = trace
        .iter()
        .find(|s| s.kind == 3)
        .expect("database client span");
    assert_eq!(db.parent, execution.span_id);
    assert_eq!(db.name, "SELECT public.orders");
    assert_eq!(db.attr("db.system.name"), Some("postgresql"));
    assert_eq!(db.attr("db.namespace"), Some(env.shop_db.as_str()));
    assert_eq!(db.attr("db.operation.name"), Some("SELECT"));
    assert_eq!(db.attr("db.collection.name"), Some("public.orders"));
    let text = db.attr("db.query.text").expect("sanitized text");
    assert!(text.contains("FROM public.orders WHERE id = ?"), "{text}");
    for s in &trace {
        let all = format!("{s:?}");
        assert!(
            !all.contains("424242") && !all.contains("very-secret"),
            "a literal was exported: {all}"
        );
    }
    // The audit commit, inside the audit step.
    let audit = step_spans.iter().find(|s| s.name == "audit").unwrap();
    let append = trace
        .iter()
        .find(|s| s.name == "interlock.audit.append")
        .unwrap();
    assert_eq!(append.parent, audit.span_id);
    assert_eq!(
        append.attr("interlock.audit.seq"),
        root.attr("interlock.audit.seq")
    );

    // PostgreSQL saw the statement with the database span's trace context: the read
    // connection, idle in the pool, still shows its last statement.
    let traceparent = format!("/*traceparent='00-{}-{}-01'*/", db.trace_id, db.span_id);
    let seen = env.shop_statements("%traceparent%").await;
    assert!(
        seen.iter()
            .any(|q| q.ends_with(&traceparent) && q.contains("424242")),
        "{traceparent} not in {seen:?}"
    );
    // The decision and the audit record are of the statement without it.
    assert!(!record["statement"]
        .as_str()
        .unwrap()
        .contains("traceparent"));
}

#[tokio::test]
async fn a_refusal_ends_the_tree_at_the_step_that_refused_with_its_code_and_rule() {
    let (env, receiver) = traced_env(|_| {}).await;
    let base = env.gateway.url("");
    // (key, arguments, the step whose span must be last, the code).
    let cases = [
        (
            None,
            json!({"source_id": "shop", "sql": "SELECT 1"}),
            "identity",
            "unauthenticated",
        ),
        (
            Some(env.agent_key.as_str()),
            json!({"source_id": "nowhere", "sql": "SELECT 1"}),
            "source",
            "unknown_source",
        ),
        (
            Some(env.agent_key.as_str()),
            json!({"source_id": "shop", "sql": "SELECT * FROM pg_catalog.pg_authid"}),
            "policy",
            "",
        ),
        (
            Some(env.agent_key.as_str()),
            json!({"source_id": "shop", "sql": "DELETE FROM public.orders WHERE id = $1", "params": [1]}),
            "policy",
            "approval_needs_literals",
        ),
    ];
    for (key, args, step, code) in cases {
        let a = call(&base, key, MODERN, "interlock_query", args.clone()).await;
        let rid = request_id(&a);
        let record = env.audit_of(&rid).await;
        let decision = &record["decision"];
        assert_eq!(decision["verdict"], "refuse", "{args}: {record}");
        if !code.is_empty() {
            assert_eq!(decision["code"], code, "{args}: {record}");
        }
        let trace = trace_of(&receiver, &rid).await;
        let root = root(&trace);
        let step_spans = steps(&trace);
        let governance: Vec<&&Span> = step_spans.iter().filter(|s| s.name != "audit").collect();
        let last = governance.last().expect("a step");
        assert_eq!(last.name, step, "{args}: {:?}", names(&step_spans));
        assert_eq!(decision["refused_at"], json!(step), "{record}");
        assert_eq!(last.attr("interlock.step.outcome"), Some("refused"));
        assert_eq!(last.status, 2, "error status: {last:?}");
        let code = decision["code"].as_str().unwrap();
        for span in [*last, root] {
            assert_eq!(span.attr("interlock.refusal.code"), Some(code), "{span:?}");
            assert_eq!(span.attr("error.type"), Some(code), "{span:?}");
            assert_eq!(
                span.attr("security_rule.name"),
                decision["rule"].as_str(),
                "{span:?}"
            );
        }
        // Nothing ran after the refusal but the audit of it.
        assert!(
            !trace.iter().any(|s| s.kind == 3),
            "no statement after a refusal"
        );
        assert_eq!(step_spans.last().unwrap().name, "audit");
        assert_eq!(root.attr("interlock.outcome"), Some("refused"));
    }

    // Refused by its plan, in the cost step: the plan ran (its EXPLAIN is the one statement,
    // inside cost) and nothing after it.
    env.access(
        "[[policies]]\nsource = \"shop\"\nname = \"cost\"\nrules = [{ kind = \"max_cost\", value = 1 }]\n",
    )
    .await;
    let a = env.query("SELECT id FROM public.orders").await;
    let rid = request_id(&a);
    let record = env.audit_of(&rid).await;
    assert_eq!(record["decision"]["code"], "cost_exceeded", "{record}");
    let trace = trace_of(&receiver, &rid).await;
    let step_spans = steps(&trace);
    let cost = step_spans
        .iter()
        .find(|s| s.name == "cost")
        .expect("cost step");
    assert_eq!(cost.attr("interlock.refusal.code"), Some("cost_exceeded"));
    assert!(!step_spans.iter().any(|s| s.name == "execution"));
    let plan = trace.iter().find(|s| s.kind == 3).expect("the plan's span");
    assert_eq!(plan.parent, cost.span_id);
    assert_eq!(plan.attr("db.operation.name"), Some("EXPLAIN"));
    env.access("[[policies]]\nsource = \"shop\"\nname = \"cost\"\nrules = []\n")
        .await;

    // Refused by the rate limit: the second call of a budget of one.
    env.access(
        "[[identities]]\nname = \"demo-agent\"\nkind = \"agent\"\nrate = \"1/h\"\nburst = 1\n",
    )
    .await;
    let list = || {
        call(
            &base,
            Some(&env.agent_key),
            MODERN,
            "interlock_list_sources",
            json!({}),
        )
    };
    list().await;
    let a = list().await;
    let rid = request_id(&a);
    let record = env.audit_of(&rid).await;
    assert_eq!(record["decision"]["code"], "rate_limited", "{record}");
    let trace = trace_of(&receiver, &rid).await;
    let governance: Vec<String> = names(&steps(&trace))
        .into_iter()
        .filter(|n| n != "audit")
        .collect();
    assert_eq!(governance.last().map(String::as_str), Some("rate_limit"));
    let limited = steps(&trace)
        .into_iter()
        .find(|s| s.name == "rate_limit")
        .cloned()
        .unwrap();
    assert_eq!(limited.attr("interlock.refusal.code"), Some("rate_limited"));
    assert_eq!(limited.status, 2);
    env.access(
        "[[identities]]\nname = \"demo-agent\"\nkind = \"agent\"\nrate = \"100000/s\"\nburst = 100000\n",
    )
    .await;

    // An open circuit leaves the call unanswered: its step ends `unavailable`, no statement.
    let opened = common::http::client()
        .post(env.gateway.url("/admin/sources/shop/circuit"))
        .bearer_auth(&env.operator_key)
        .json(&json!({"action": "open", "reason": "trace test"}))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let a = env.query("SELECT id FROM public.orders WHERE id = 3").await;
    let rid = request_id(&a);
    let record = env.audit_of(&rid).await;
    assert_eq!(record["outcome"], "error", "{record}");
    let trace = trace_of(&receiver, &rid).await;
    let last = steps(&trace)
        .into_iter()
        .rev()
        .find(|s| s.name != "audit")
        .cloned()
        .unwrap();
    assert_eq!(
        last.attr("interlock.step.outcome"),
        Some("unavailable"),
        "{last:?}"
    );
    assert_eq!(last.status, 2);
    assert_eq!(root(&trace).attr("error.type"), Some("unavailable"));
    assert!(!trace.iter().any(|s| s.kind == 3));
    common::http::client()
        .post(env.gateway.url("/admin/sources/shop/circuit"))
        .bearer_auth(&env.operator_key)
        .json(&json!({"action": "reset", "reason": "trace test done"}))
        .send()
        .await
        .unwrap();

    // A write is queued at execution: the queue's span carries the approval.
    let a = env
        .query("UPDATE public.orders SET status = 'held' WHERE id = 1")
        .await;
    let rid = request_id(&a);
    let record = env.audit_of(&rid).await;
    let trace = trace_of(&receiver, &rid).await;
    let execution = steps(&trace)
        .into_iter()
        .find(|s| s.name == "execution")
        .cloned()
        .unwrap();
    assert_eq!(execution.attr("interlock.step.outcome"), Some("queued"));
    let enqueue = trace
        .iter()
        .find(|s| s.name == "interlock.approval.enqueue")
        .unwrap();
    assert_eq!(enqueue.parent, execution.span_id);
    assert_eq!(
        enqueue.attr("interlock.approval.id"),
        record["approval_id"].as_str()
    );
}

#[tokio::test]
async fn the_caller_s_trace_context_becomes_the_parent_from_the_header_or_from_meta() {
    let (env, receiver) = traced_env(|_| {}).await;
    let header_parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let meta_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let send = |traceparent: Option<&'static str>, meta: Option<&'static str>| {
        let url = env.gateway.url("/mcp");
        let key = env.agent_key.clone();
        async move {
            let mut params = json!({"name": "interlock_list_sources", "arguments": {}});
            if let Some(m) = meta {
                params["_meta"] = json!({"traceparent": m, "tracestate": "vendor=opaque"});
            }
            let mut req = common::http::client()
                .post(url)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", HANDSHAKE)
                .bearer_auth(key)
                .json(&json!({"jsonrpc": "2.0", "id": "req-7", "method": "tools/call", "params": params}));
            if let Some(t) = traceparent {
                req = req.header("traceparent", t);
            }
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), 200);
            res.headers()["x-request-id"].to_str().unwrap().to_string()
        }
    };
    // (header, _meta, the parent the request's span must have)
    let cases = [
        (Some(header_parent), None, Some(header_parent)),
        (None, Some(meta_parent), Some(meta_parent)),
        // _meta travels with the message: it wins over the hop's header.
        (Some(header_parent), Some(meta_parent), Some(meta_parent)),
        // An invalid traceparent is ignored: the call starts its own trace.
        (Some("00-zz-nonsense-01"), None, None),
    ];
    for (header, meta, want) in cases {
        let rid = send(header, meta).await;
        let trace = trace_of(&receiver, &rid).await;
        let root = root(&trace);
        assert_eq!(root.attr("jsonrpc.request.id"), Some("req-7"));
        assert_eq!(root.attr("mcp.protocol.version"), Some(HANDSHAKE));
        match want {
            Some(parent) => {
                let parts: Vec<&str> = parent.split('-').collect();
                assert_eq!(root.trace_id, parts[1], "{header:?} {meta:?}");
                assert_eq!(root.parent, parts[2], "{header:?} {meta:?}");
            }
            None => {
                assert!(root.parent.is_empty(), "{root:?}");
                assert_ne!(root.trace_id, "0af7651916cd43dd8448eb211c80319c");
            }
        }
        let record = env.audit_of(&rid).await;
        assert_eq!(record["decision"]["trace_id"], json!(root.trace_id));
    }

    // Methods outside the governed pipeline are traced too.
    let a = rpc(&env.gateway.url(""), None, HANDSHAKE, 9, "ping", json!({})).await;
    assert_eq!(a.status, 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !decode(&receiver)
        .iter()
        .any(|s| s.name == "ping" && s.kind == 2)
    {
        assert!(Instant::now() < deadline, "no ping span");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_sensitive_relation_s_statement_is_never_exported_as_text() {
    let (env, receiver) = traced_env(|s| {
        s.telemetry.sensitive_relations = [(
            "shop".to_string(),
            vec!["public.customers".parse().unwrap()],
        )]
        .into();
    })
    .await;
    let a = env
        .query("SELECT id FROM public.customers WHERE id = 1")
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    let trace = trace_of(&receiver, &request_id(&a)).await;
    let db = trace.iter().find(|s| s.kind == 3).expect("client span");
    assert!(db.attr("db.query.text").is_none(), "{db:?}");
    assert!(db.attr("db.collection.name").is_none(), "{db:?}");
    assert_eq!(
        db.attr("interlock.db.query.withheld"),
        Some("sensitive_relation")
    );
    assert!(!format!("{trace:?}").contains("customers"), "{trace:?}");
}

#[tokio::test]
async fn a_collector_that_is_down_changes_no_answer_and_its_dropped_spans_are_counted() {
    let (env, receiver) = traced_env(|s| s.telemetry.export_timeout_ms = 300).await;
    receiver.set_up(false);
    let base = env.gateway.url("");
    let mut answers = Vec::new();
    for i in 0..20 {
        let a = env
            .query(&format!("SELECT id FROM public.orders WHERE id = {i}"))
            .await;
        answers.push((a.status, a.body["result"]["isError"].clone()));
    }
    assert!(
        answers
            .iter()
            .all(|(status, err)| *status == 200 && *err == json!(false)),
        "{answers:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let metrics = common::http::get_text(&env.gateway.url("/metrics"), &env.operator_key).await;
        let dropped = metrics.lines().find(|l| {
            l.starts_with("interlock_trace_spans_dropped_total") && l.contains("export_failed")
        });
        if let Some(line) = dropped {
            let n: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(n > 0.0, "{line}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no dropped spans counted:\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Back up: spans flow again.
    receiver.set_up(true);
    let a = call(
        &base,
        Some(&env.agent_key),
        MODERN,
        "interlock_list_sources",
        json!({}),
    )
    .await;
    let trace = trace_of(&receiver, &request_id(&a)).await;
    assert_eq!(root(&trace).name, "tools/call interlock_list_sources");
}

#[test]
fn tracing_off_builds_no_exporter() {
    let off = interlock::telemetry::traces::TelemetrySettings::default();
    assert!(!off.is_on());
    let tracing = interlock::telemetry::traces::Tracing::start(&off).unwrap();
    assert!(!tracing.is_on());
}

#[tokio::test]
async fn an_approved_write_s_execution_links_to_the_call_that_queued_it_and_to_the_decision() {
    let (env, receiver) = traced_env(|_| {}).await;
    let gw = &env.gateway;
    let id = common::approvals::queue(
        gw,
        &env.agent_key,
        "shop",
        "UPDATE public.orders SET status = 'traced' WHERE id = 2",
    )
    .await;
    let queued = decode(&receiver);
    common::approvals::approve(gw, &env.approver_key, &id, json!({})).await;
    common::approvals::wait(gw, &env.approver_key, &id, |a| a["state"] == "executed").await;

    let deadline = Instant::now() + Duration::from_secs(15);
    let (spans, execute) = loop {
        let spans = decode(&receiver);
        if let Some(e) = spans
            .iter()
            .find(|s| s.name == "interlock.approval.execute")
            .cloned()
        {
            break (spans, e);
        }
        assert!(Instant::now() < deadline, "no execution span");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(execute.attr("interlock.approval.id"), Some(id.as_str()));
    assert_eq!(execute.attr("interlock.outcome"), Some("executed"));
    assert!(execute.parent.is_empty(), "a root of its own");
    // Linked to the span of the call that queued it ...
    let enqueue = queued
        .iter()
        .chain(&spans)
        .find(|s| {
            s.name == "interlock.approval.enqueue"
                && s.attr("interlock.approval.id") == Some(id.as_str())
        })
        .expect("enqueue span");
    let queuing_call = spans
        .iter()
        .find(|s| s.trace_id == enqueue.trace_id && s.kind == 2)
        .unwrap();
    assert!(
        execute
            .links
            .contains(&(queuing_call.trace_id.clone(), queuing_call.span_id.clone())),
        "{:?}",
        execute.links
    );
    // ... and to the approver's decision.
    let decision = spans
        .iter()
        .find(|s| s.attr("http.route") == Some("/admin/approvals/{id}/approve"))
        .expect("decision span");
    assert_eq!(decision.attr("interlock.approval.id"), Some(id.as_str()));
    assert!(
        execute
            .links
            .contains(&(decision.trace_id.clone(), decision.span_id.clone())),
        "{:?}",
        execute.links
    );
    // The write itself: a client span of the execution's trace.
    let write = spans
        .iter()
        .find(|s| s.kind == 3 && s.trace_id == execute.trace_id)
        .expect("client span");
    assert_eq!(write.name, "UPDATE public.orders");
    assert!(!format!("{write:?}").contains("traced'"), "{write:?}");
    // The outcome's audit record names the execution's trace.
    let db = common::admin(&env.control_db).await;
    let row = db
        .query_one(
            "SELECT decision FROM audit_records WHERE approval_id = $1 AND tool = 'approval.outcome'",
            &[&uuid::Uuid::parse_str(&id).unwrap()],
        )
        .await
        .unwrap();
    let detail: serde_json::Value = row.get(0);
    assert_eq!(detail["trace_id"], json!(execute.trace_id), "{detail}");
}

#[tokio::test]
async fn a_collector_that_hangs_fills_the_bounded_queue_and_spans_are_dropped_not_calls() {
    // A collector that accepts connections and never answers.
    let hole = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/traces", hole.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = hole.accept().await {
            held.push(socket);
        }
    });
    let env = demo_env_with(
        |s| {
            s.telemetry.otlp_endpoint = url;
            s.telemetry.max_queue_size = 2;
            s.telemetry.max_export_batch_size = 1;
            s.telemetry.schedule_delay_ms = 10;
            s.telemetry.export_timeout_ms = 30_000;
        },
        |_| {},
    )
    .await;
    let started = Instant::now();
    for i in 0..5 {
        let a = env
            .query(&format!("SELECT id FROM public.orders WHERE id = {i}"))
            .await;
        assert_eq!(a.status, 200, "{:?}", a.body);
        assert_eq!(a.body["result"]["isError"], json!(false), "{:?}", a.body);
    }
    // Answered while the one export in flight waits out its 30 s.
    assert!(started.elapsed() < Duration::from_secs(20));
    let metrics = common::http::get_text(&env.gateway.url("/metrics"), &env.operator_key).await;
    let line = metrics
        .lines()
        .find(|l| l.starts_with("interlock_trace_spans_dropped_total") && l.contains("queue_full"))
        .unwrap_or_else(|| panic!("no queue_full drops counted:\n{metrics}"));
    // Five calls of a dozen spans each, at most two pending at a time.
    let n: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n >= 40.0, "{line}");
}

#[tokio::test]
async fn an_unsampled_call_exports_nothing_and_its_record_names_no_trace() {
    let (env, receiver) = traced_env(|s| s.telemetry.sampling_ratio = 0.0).await;
    let a = env
        .query("SELECT id FROM public.orders WHERE id = 777001")
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    let record = env.audit_of(&request_id(&a)).await;
    assert!(record["decision"].get("trace_id").is_none(), "{record}");
    // The source still sees the trace context, marked not sampled (flags 00), so a
    // downstream decision agrees with ours.
    let seen = env.shop_statements("%777001%traceparent%").await;
    assert!(seen.iter().any(|q| q.ends_with("-00'*/")), "{seen:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        decode(&receiver).is_empty(),
        "nothing sampled, nothing sent"
    );
}

/// Requests answered before, or without, a handler's own span still have exactly one server
/// span, under the caller's parent, with the status and the refusal's code: refused by the
/// edge guard, by the one-credential rule, by the framework (a body over the limit, an unknown
/// method), by the proxy before its call began, a legacy listing that has no span of its own,
/// and a path no route matched (named by its method alone); a request a handler traces keeps
/// its one span; an unknown path outside the governed routes is not traced.
#[tokio::test]
async fn requests_no_handler_traced_have_their_span_with_the_refusal_code() {
    let (env, receiver) = traced_env(|_| {}).await;
    let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let http = common::http::client();
    let mcp = env.gateway.url("/mcp");
    let auth = format!("Bearer {}", env.agent_key);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let send = |request: reqwest::RequestBuilder| async move {
        let res = request.header("traceparent", parent).send().await.unwrap();
        let rid = res.headers()["x-request-id"].to_str().unwrap().to_string();
        (res.status().as_u16(), rid)
    };
    // Not traced: first, so that the spans of the cases after it prove the export went by.
    let (status, untraced) = send(http.get(env.gateway.url("/nowhere"))).await;
    assert_eq!(status, 404);
    // (what, request, status, name, route, code)
    let cases = [
        (
            "a Host not allowed",
            http.post(&mcp).header("Host", "evil.example").json(&ping),
            403,
            "POST /mcp",
            Some("/mcp"),
            Some("forbidden_host"),
        ),
        (
            "two Authorization headers",
            http.post(&mcp)
                .header("Authorization", &auth)
                .header("Authorization", &auth)
                .json(&ping),
            400,
            "POST /mcp",
            Some("/mcp"),
            Some("invalid_request"),
        ),
        (
            "a body over the limit",
            http.post(&mcp)
                .header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .body(vec![b' '; 2 << 20]),
            413,
            "POST /mcp",
            Some("/mcp"),
            Some("payload_too_large"),
        ),
        (
            "a method the route does not have",
            http.put(&mcp).header("Authorization", &auth),
            405,
            "PUT /mcp",
            Some("/mcp"),
            Some("method_not_allowed"),
        ),
        (
            "a proxy body that is not an object",
            http.post(env.gateway.url("/v1/sources/shop/query"))
                .header("Authorization", &auth)
                .json(&json!([])),
            400,
            "POST /v1/sources/{id}/query",
            Some("/v1/sources/{id}/query"),
            Some("invalid_request"),
        ),
        (
            "a governed path no route matched",
            http.get(env.gateway.url("/mcp/nowhere"))
                .header("Authorization", &auth),
            404,
            "GET",
            None,
            Some("not_found"),
        ),
        (
            "the legacy tool listing",
            http.get(env.gateway.url("/mcp/tools/list"))
                .header("Authorization", &auth),
            200,
            "GET /mcp/tools/list",
            Some("/mcp/tools/list"),
            None,
        ),
        (
            "a ping, traced by its handler",
            http.post(&mcp)
                .header("Authorization", &auth)
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", HANDSHAKE)
                .json(&ping),
            200,
            "ping",
            Some("/mcp"),
            None,
        ),
    ];
    for (what, request, status, name, route, code) in cases {
        let (got, rid) = send(request).await;
        assert_eq!(got, status, "{what}");
        let deadline = Instant::now() + Duration::from_secs(15);
        let spans = loop {
            let spans: Vec<Span> = decode(&receiver)
                .into_iter()
                .filter(|s| s.kind == 2 && s.attr("interlock.request_id") == Some(rid.as_str()))
                .collect();
            if !spans.is_empty() {
                break spans;
            }
            assert!(Instant::now() < deadline, "{what}: no server span");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        // One span per request: a handler's span is not doubled by the fallback.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let again = decode(&receiver)
            .into_iter()
            .filter(|s| s.kind == 2 && s.attr("interlock.request_id") == Some(rid.as_str()))
            .count();
        assert_eq!(again, 1, "{what}: {spans:?}");
        let span = &spans[0];
        assert_eq!(span.name, name, "{what}");
        assert_eq!(span.attr("http.route"), route, "{what}");
        assert_eq!(span.trace_id, "0af7651916cd43dd8448eb211c80319c", "{what}");
        assert_eq!(span.parent, "b7ad6b7169203331", "{what}");
        assert_eq!(
            span.attr("http.response.status_code"),
            Some(status.to_string().as_str()),
            "{what}"
        );
        assert_eq!(span.attr("error.type"), code, "{what}");
        assert_eq!(span.attr("interlock.refusal.code"), code, "{what}");
    }
    assert!(
        !decode(&receiver)
            .iter()
            .any(|s| s.attr("interlock.request_id") == Some(untraced.as_str())),
        "an unknown path outside the governed routes is not traced"
    );
}

/// RUNTIME.md: no literal, parameter value, result value, API key or bearer token is ever
/// exported. Every span the calls below make is scanned whole — attributes, events, status
/// messages, links — for each of those values: a read with literals and a `$1`, a value
/// only the result holds, refusals at several steps, the cost step's EXPLAIN, a statement
/// PostgreSQL rejects quoting the offending value, and an approved write.
#[tokio::test]
async fn no_value_of_any_call_is_exported_in_any_span() {
    let (env, receiver) = traced_env(|_| {}).await;
    let gw = &env.gateway;
    common::admin(&env.shop_db)
        .await
        .batch_execute(
            "INSERT INTO public.products (id, sku, name, price_cents)
             VALUES (90001, 'SKU-RESULT-SECRET', 'result-secret-name', 1)",
        )
        .await
        .expect("insert");
    env.access(
        "[[policies]]\nsource = \"shop\"\nname = \"cost\"\nrules = [{ kind = \"max_cost\", value = 100000000 }]\n",
    )
    .await;
    let mut requests = Vec::new();
    for (sql, params) in [
        // Literals and a parameter in a read that runs (through the cost step's EXPLAIN).
        ("SELECT id FROM public.orders WHERE status = 'literal-secret-1' OR id = 31337001 OR customer_id = $1", json!([73737001])),
        // A value only the result holds.
        ("SELECT sku, name FROM public.products WHERE id = 90001", json!([])),
        // Refusals: authorization, resolution, a function family, a parameter of the wrong type.
        ("SELECT amount_cents FROM hr.salaries WHERE amount_cents = 31337002", json!([])),
        ("SELECT nope FROM public.orders WHERE status = 'literal-secret-2'", json!([])),
        ("SELECT md5('literal-secret-3')", json!([])),
        ("SELECT id FROM public.orders WHERE id = $1", json!(["param-secret-4"])),
        // PostgreSQL rejects it, quoting the value in its message.
        ("SELECT id FROM public.orders WHERE id = 'pgerror-secret-5'::int", json!([])),
    ] {
        let a = env.agent_query(json!({"sql": sql, "params": params})).await;
        requests.push(request_id(&a));
    }
    let id = common::approvals::queue(
        gw,
        &env.agent_key,
        "shop",
        "UPDATE public.orders SET status = 'write-secret-6' WHERE id = 3",
    )
    .await;
    common::approvals::approve(gw, &env.approver_key, &id, json!({})).await;
    common::approvals::wait(gw, &env.approver_key, &id, |a| a["state"] == "executed").await;
    for rid in &requests {
        trace_of(&receiver, rid).await;
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while !decode(&receiver)
        .iter()
        .any(|s| s.name == "interlock.approval.execute")
    {
        assert!(Instant::now() < deadline, "no execution span");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let spans = decode(&receiver);
    // The scan covers every kind of span the calls made.
    for name in [
        "cost",
        "execution",
        "interlock.approval.execute",
        "interlock.audit.append",
    ] {
        assert!(spans.iter().any(|s| s.name == name), "no {name} span");
    }
    assert!(spans
        .iter()
        .any(|s| s.attr("db.operation.name") == Some("EXPLAIN")));
    assert!(
        spans.iter().any(|s| s.status == 2),
        "refusals export error statuses"
    );
    let secrets = [
        "literal-secret",
        "31337001",
        "31337002",
        "73737001",
        "param-secret",
        "pgerror-secret",
        "write-secret",
        "SKU-RESULT-SECRET",
        "result-secret-name",
        env.agent_key.as_str(),
        env.approver_key.as_str(),
        env.operator_key.as_str(),
    ];
    let mut leaks = Vec::new();
    for s in &spans {
        for secret in secrets {
            if s.raw.contains(secret) {
                leaks.push(format!("{secret} in {}: {}", s.name, s.raw));
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
}
