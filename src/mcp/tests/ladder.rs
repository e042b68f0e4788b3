//! The modern validation ladder through `dispatch`: every rung, its status
//! and code, the order of rungs, and how header values are compared.

use serde_json::{json, Value};

use super::support::{
    assert_error, error_key, expect_call, modern, rpc, with_modern_meta, Request,
};
use crate::mcp::error_code as code;
use crate::mcp::{Dispatch, MODERN};

/// A modern request with full control over headers and `_meta`.
fn custom(headers: &[(&str, &str)], id: Value, method: &str, params: Value) -> Request {
    let mut all = vec![("mcp-protocol-version", MODERN)];
    all.extend_from_slice(headers);
    Request::json(&all, &rpc(id, method, params))
}

fn meta(version: Value, capabilities: bool) -> Value {
    let mut meta = json!({"io.modelcontextprotocol/protocolVersion": version});
    if capabilities {
        meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    }
    meta
}

#[test]
fn a_conforming_request_passes_every_rung() {
    let reply = modern(json!(1), "tools/list", json!({})).reply();
    assert_eq!(reply.status, 200);
    let call = expect_call(
        modern(
            json!(2),
            "tools/call",
            json!({"name": "interlock_list_sources", "arguments": {}}),
        )
        .dispatch(),
    );
    assert_eq!(call.called_as, "interlock_list_sources");
}

#[test]
fn each_rung_alone_with_its_status_and_code() {
    let list = "tools/list";
    let good_meta = json!({"_meta": meta(json!(MODERN), true)});
    let cases: Vec<(&str, Request, u16, i64)> = vec![
        (
            "rung 1: no _meta",
            custom(&[("mcp-method", list)], json!(1), list, json!({})),
            400,
            code::INVALID_PARAMS,
        ),
        (
            "rung 1: no params at all",
            custom(&[("mcp-method", list)], json!(1), list, Value::Null),
            400,
            code::INVALID_PARAMS,
        ),
        (
            "rung 1: no clientCapabilities",
            custom(
                &[("mcp-method", list)],
                json!(1),
                list,
                json!({"_meta": meta(json!(MODERN), false)}),
            ),
            400,
            code::INVALID_PARAMS,
        ),
        (
            "rung 2: no Mcp-Method",
            custom(&[], json!(1), list, good_meta.clone()),
            400,
            code::HEADER_MISMATCH,
        ),
        (
            "rung 2: _meta version differs from header",
            custom(
                &[("mcp-method", list)],
                json!(1),
                list,
                json!({"_meta": meta(json!("2025-06-18"), true)}),
            ),
            400,
            code::HEADER_MISMATCH,
        ),
        (
            "rung 2: _meta version not a string",
            custom(
                &[("mcp-method", list)],
                json!(1),
                list,
                json!({"_meta": meta(json!(2026), true)}),
            ),
            400,
            code::HEADER_MISMATCH,
        ),
        (
            "rung 2: Mcp-Method differs",
            custom(
                &[("mcp-method", "tools/call")],
                json!(1),
                list,
                good_meta.clone(),
            ),
            400,
            code::HEADER_MISMATCH,
        ),
        (
            "rung 2: Mcp-Method sent twice",
            custom(
                &[("mcp-method", list), ("mcp-method", list)],
                json!(1),
                list,
                good_meta.clone(),
            ),
            400,
            code::HEADER_MISMATCH,
        ),
        (
            "rung 4: initialize",
            modern(json!(1), "initialize", json!({})),
            404,
            code::METHOD_NOT_FOUND,
        ),
        (
            "rung 4: ping",
            modern(json!(1), "ping", json!({})),
            404,
            code::METHOD_NOT_FOUND,
        ),
        (
            "rung 4: unknown",
            modern(json!(1), "tools/delete", json!({})),
            404,
            code::METHOD_NOT_FOUND,
        ),
    ];
    for (label, request, status, expected) in cases {
        let reply = request.reply();
        assert_eq!(
            (
                reply.status,
                reply.body.as_ref().map(|b| b["error"]["code"].clone())
            ),
            (status, Some(json!(expected))),
            "{label}"
        );
    }
}

#[test]
fn rungs_fire_in_order_and_every_error_echoes_the_id() {
    // Fails rungs 1, 2 and 4 at once: rung 1 answers.
    let all_wrong = custom(&[], json!("order-1"), "ping", json!({})).reply();
    assert_error(&all_wrong, 400, code::INVALID_PARAMS, &json!("order-1"));
    assert_eq!(error_key(&all_wrong), json!("missing_request_meta"));
    // Fails rungs 2 and 4: rung 2 answers.
    let two_and_four = custom(
        &[],
        json!(42),
        "ping",
        json!({"_meta": meta(json!(MODERN), true)}),
    )
    .reply();
    assert_error(&two_and_four, 400, code::HEADER_MISMATCH, &json!(42));
    // Fails rung 2 on tools/call with an unknown tool: the header rung answers
    // before the tool is looked up.
    let params = with_modern_meta(json!({"name": "nope"}));
    let mismatch = custom(
        &[("mcp-method", "tools/call"), ("mcp-name", "other")],
        json!(7),
        "tools/call",
        params,
    );
    assert_error(&mismatch.reply(), 400, code::HEADER_MISMATCH, &json!(7));
    // Rung 4 alone: method not found with the id.
    assert_error(
        &modern(json!(-3), "resources/list", json!({})).reply(),
        404,
        code::METHOD_NOT_FOUND,
        &json!(-3),
    );
}

#[test]
fn mcp_name_is_required_for_tools_call_only() {
    let call = with_modern_meta(json!({"name": "interlock_list_sources", "arguments": {}}));
    let missing = custom(
        &[("mcp-method", "tools/call")],
        json!(1),
        "tools/call",
        call.clone(),
    )
    .reply();
    assert_error(&missing, 400, code::HEADER_MISMATCH, &json!(1));
    let wrong = custom(
        &[
            ("mcp-method", "tools/call"),
            ("mcp-name", "interlock_query"),
        ],
        json!(1),
        "tools/call",
        call,
    );
    assert_error(&wrong.reply(), 400, code::HEADER_MISMATCH, &json!(1));
    // tools/list and server/discover need no Mcp-Name.
    for method in ["tools/list", "server/discover"] {
        let params = with_modern_meta(json!({}));
        assert_eq!(
            custom(&[("mcp-method", method)], json!(1), method, params)
                .reply()
                .status,
            200,
            "{method}"
        );
    }
}

/// (label, headers besides the version, method, params, passes the ladder)
type HeaderCase<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str, Value, bool);

#[test]
fn header_values_are_trimmed_base64_decoded_and_case_sensitive() {
    let list = with_modern_meta(json!({}));
    let call = with_modern_meta(json!({"name": "interlock_list_sources", "arguments": {}}));
    // "interlock_list_sources" in the base64 sentinel.
    let encoded = "=?base64?aW50ZXJsb2NrX2xpc3Rfc291cmNlcw==?=";
    let cases: Vec<HeaderCase<'_>> = vec![
        (
            "trimmed method",
            vec![("mcp-method", "  tools/list\t")],
            "tools/list",
            list.clone(),
            true,
        ),
        (
            "upper-case method",
            vec![("mcp-method", "TOOLS/LIST")],
            "tools/list",
            list.clone(),
            false,
        ),
        (
            "header name case",
            vec![("MCP-METHOD", "tools/list")],
            "tools/list",
            list.clone(),
            true,
        ),
        (
            "sentinel name",
            vec![("mcp-method", "tools/call"), ("mcp-name", encoded)],
            "tools/call",
            call.clone(),
            true,
        ),
        (
            "trimmed sentinel",
            vec![
                ("mcp-method", "tools/call"),
                ("mcp-name", " =?base64?aW50ZXJsb2NrX2xpc3Rfc291cmNlcw==?= "),
            ],
            "tools/call",
            call.clone(),
            true,
        ),
        (
            "broken sentinel",
            vec![("mcp-method", "tools/call"), ("mcp-name", "=?base64?***?=")],
            "tools/call",
            call.clone(),
            false,
        ),
        (
            "name case",
            vec![
                ("mcp-method", "tools/call"),
                ("mcp-name", "Interlock_List_Sources"),
            ],
            "tools/call",
            call,
            false,
        ),
    ];
    for (label, headers, method, params, passes) in cases {
        let outcome = custom(&headers, json!(1), method, params).dispatch();
        let rejected = matches!(&outcome, Dispatch::Reply(reply) if reply.status == 400);
        assert_eq!(!rejected, passes, "{label}: {outcome:?}");
    }
}

#[test]
fn client_info_is_never_required() {
    let params = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}
    }});
    let reply = custom(
        &[("mcp-method", "server/discover")],
        json!(1),
        "server/discover",
        params,
    )
    .reply();
    assert_eq!(reply.status, 200);
}
