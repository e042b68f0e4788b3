//! `--arguments`, `--arguments-file`, `--arguments-stdin`: exclusive, JSON objects only,
//! checked before anything is launched or sent.

use serde_json::{json, Value};

use crate::common::{client_raw, client_with, gateway, s, temp_file, Via};

const READ: &str =
    r#"{"source_id":"shop","sql":"SELECT id FROM public.products ORDER BY id LIMIT 1"}"#;

fn rows(stdout: &str) -> Value {
    let v: Value = serde_json::from_str(stdout).expect("JSON output");
    serde_json::from_str(v["result"]["content"][0]["text"].as_str().expect("text")).expect("rows")
}

#[test]
fn the_three_forms_are_mutually_exclusive() {
    let file = temp_file("exclusive.json", "{}");
    // An endpoint nothing listens on: a usage error must come before any connection.
    let base = [
        "tools",
        "call",
        "interlock_query",
        "--endpoint",
        "http://127.0.0.1:9/mcp",
    ];
    for extra in [
        vec!["--arguments", "{}", "--arguments-stdin"],
        vec!["--arguments", "{}", "--arguments-file", s(&file)],
        vec!["--arguments-file", s(&file), "--arguments-stdin"],
    ] {
        let mut args = base.to_vec();
        args.extend(extra.iter().copied());
        let run = client_raw(&args, Some("{}"));
        assert_eq!(run.code, 2, "{extra:?}: {}", run.stderr);
        assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
    }
}

#[test]
fn arguments_must_be_a_json_object() {
    let base = [
        "tools",
        "call",
        "interlock_query",
        "--endpoint",
        "http://127.0.0.1:9/mcp",
    ];
    let array_file = temp_file("array.json", "[1, 2]");
    for extra in [
        vec!["--arguments", "[]"],
        vec!["--arguments", "not json"],
        vec!["--arguments-file", s(&array_file)],
        vec!["--arguments-file", "/nonexistent/args.json"],
        vec!["--arguments-stdin"],
    ] {
        let mut args = base.to_vec();
        args.extend(extra.iter().copied());
        let run = client_raw(&args, Some("\"a string\""));
        assert_eq!(run.code, 2, "{extra:?}: {}", run.stderr);
        assert!(run.stderr.contains("usage"), "{}", run.stderr);
    }
}

#[test]
fn each_form_reaches_the_tool() {
    gateway();
    let file = temp_file("read.json", READ);
    let inline = client_with(
        Via::Http,
        &["tools", "call", "interlock_query", "--arguments", READ],
        Some(&gateway().agent_key),
        None,
    );
    let from_file = client_with(
        Via::Stdio,
        &[
            "tools",
            "call",
            "interlock_query",
            "--arguments-file",
            s(&file),
        ],
        Some(&gateway().agent_key),
        None,
    );
    let from_stdin = client_with(
        Via::Http,
        &["tools", "call", "interlock_query", "--arguments-stdin"],
        Some(&gateway().agent_key),
        Some(READ),
    );
    for run in [&inline, &from_file, &from_stdin] {
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(rows(&run.stdout), json!([{"id": 1}]));
    }
}

#[test]
fn no_arguments_means_an_empty_object() {
    let run = client_with(
        Via::Stdio,
        &["tools", "call", "interlock_list_sources"],
        Some(&gateway().agent_key),
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}
