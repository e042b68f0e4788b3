//! TLS to a source: `verify-full` against the right CA works; against another CA, or
//! `require` against a server without TLS, the source is unavailable with "upstream TLS
//! refused". TLS to the control database: every connection encrypted with `verify-full`,
//! start-up refused with another CA or without TLS. The certificates are generated here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::env::demo_env_with;
use common::mcp::{call, MODERN};
use interlock::control::sources::TlsMode;
use interlock::pgcluster::{Cluster, ClusterOptions};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
use serde_json::json;

struct Pki {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

fn pki() -> Pki {
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    params
        .subject_alt_names
        .push(SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
    let cert = params.signed_by(&key, &ca, &ca_key).expect("cert");
    Pki {
        ca_pem: ca.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

/// Writes a file the server user can read (it owns the data directory).
fn write_for_server(pgdata: &Path, name: &str, contents: &str, mode: u32) {
    let path = pgdata.join(name);
    std::fs::write(&path, contents).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    let meta = std::fs::metadata(pgdata).expect("pgdata");
    std::os::unix::fs::chown(&path, Some(meta.uid()), Some(meta.gid())).expect("chown");
}

/// A private cluster in a new directory, with a server certificate for localhost and
/// 127.0.0.1 signed by a CA of its own in place (TLS is switched on by the test).
fn cluster_with_certificate(prefix: &str) -> (tempfile::TempDir, Cluster, Pki) {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let cluster = Cluster::start(&ClusterOptions {
        base_dir: dir.path().join("pg"),
        port: 0,
        fast: true,
        server_settings: Vec::new(),
    })
    .expect("cluster");
    let pki = pki();
    let pgdata = cluster.base_dir().join("pgdata");
    write_for_server(&pgdata, "server.crt", &pki.cert_pem, 0o644);
    write_for_server(&pgdata, "server.key", &pki.key_pem, 0o600);
    (dir, cluster, pki)
}

#[tokio::test]
async fn verify_full_accepts_the_right_ca_and_refuses_others() {
    let (dir, source, good) = cluster_with_certificate("interlock-tls-");
    let admin = source.connect("postgres").await.expect("connect");
    for sql in [
        "ALTER SYSTEM SET ssl = on",
        "SELECT pg_reload_conf()",
        "CREATE DATABASE shop",
    ] {
        admin.batch_execute(sql).await.expect(sql);
    }
    source
        .connect("shop")
        .await
        .expect("shop")
        .batch_execute(interlock::demo::SHOP_SQL)
        .await
        .expect("data");
    let good_ca = dir.path().join("good-ca.pem");
    std::fs::write(&good_ca, &good.ca_pem).expect("ca");
    let other_ca = dir.path().join("other-ca.pem");
    std::fs::write(&other_ca, pki().ca_pem).expect("ca");

    let (port, pw) = (
        source.port(),
        source.password_file().to_string_lossy().into_owned(),
    );
    let cases = [
        (TlsMode::VerifyFull, Some(good_ca.clone()), true),
        (TlsMode::Require, None, true),
        (TlsMode::VerifyFull, Some(other_ca.clone()), false),
    ];
    for (mode, ca, works) in cases {
        let (pw, ca_str) = (
            pw.clone(),
            ca.as_ref().map(|c| c.to_string_lossy().into_owned()),
        );
        let env = demo_env_with(
            |_| {},
            move |s| {
                s.port = Some(port);
                s.dbname = Some("shop".into());
                s.password_file = Some(pw);
                s.tls_mode = Some(mode);
                s.tls_ca_file = ca_str;
            },
        )
        .await;
        let a = call(
            &env.gateway.url(""),
            Some(&env.agent_key),
            MODERN,
            "interlock_query",
            json!({"source_id": "shop", "sql": "SELECT id FROM public.products WHERE id = 2"}),
        )
        .await;
        if works {
            assert_eq!(a.status, 200, "{mode:?}: {:?}", a.body);
            assert!(a.body["result"].is_object(), "{mode:?}: {:?}", a.body);
        } else {
            assert_eq!(
                a.body["error"]["data"]["reason"].as_str(),
                Some("upstream TLS refused"),
                "{mode:?}: {:?}",
                a.body
            );
        }
        // The connection the gateway opened really is encrypted.
        if works {
            let ssl_in_use: i64 = admin
                .query_one(
                    "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
                      WHERE a.application_name = 'interlock' AND s.ssl",
                    &[],
                )
                .await
                .expect("pg_stat_ssl")
                .get(0);
            assert!(ssl_in_use > 0, "{mode:?}: the source connection uses TLS");
        }
    }
}

/// The control database over TLS: with `verify-full` and the right CA every connection the
/// gateway opens to it (the pool, the audit writer's, the fleet channel) is encrypted, on a
/// server that refuses plain TCP; with another CA, or with TLS off, the gateway does not
/// start (it migrates at start-up) and says why.
#[tokio::test]
async fn the_control_database_over_tls_verify_full() {
    let (dir, control, good) = cluster_with_certificate("interlock-control-tls-");
    let pgdata = control.base_dir().join("pgdata");
    // Plain TCP refused from here on: only `hostssl` lines.
    let hba = std::fs::read_to_string(pgdata.join("pg_hba.conf")).expect("pg_hba");
    let ssl_only: String = hba
        .lines()
        .map(|l| match l.strip_prefix("host ") {
            Some(rest) => format!("hostssl {rest}\n"),
            None => format!("{l}\n"),
        })
        .collect();
    assert!(ssl_only.contains("hostssl"), "{hba}");
    let admin = control.connect("postgres").await.expect("connect");
    for sql in ["CREATE DATABASE interlock_ctl", "ALTER SYSTEM SET ssl = on"] {
        admin.batch_execute(sql).await.expect(sql);
    }
    write_for_server(&pgdata, "pg_hba.conf", &ssl_only, 0o600);
    admin
        .batch_execute("SELECT pg_reload_conf()")
        .await
        .expect("reload");
    let good_ca = dir.path().join("good-ca.pem");
    std::fs::write(&good_ca, &good.ca_pem).expect("ca");
    let other_ca = dir.path().join("other-ca.pem");
    std::fs::write(&other_ca, pki().ca_pem).expect("ca");

    let settings = |mode: TlsMode, ca: &Path| {
        let mut s = common::settings_for("interlock_ctl");
        s.control.port = control.port();
        s.control.user = interlock::pgcluster::SUPERUSER.into();
        s.control.password_file = control.password_file().to_string_lossy().into_owned();
        s.control.tls_mode = mode;
        s.control.tls_ca_file = ca.to_string_lossy().into_owned();
        s
    };
    for (mode, ca, needle) in [
        (TlsMode::VerifyFull, &other_ca, "certificate"),
        (TlsMode::Disable, &good_ca, "no encryption"),
    ] {
        let err = common::TestGateway::try_start(settings(mode, ca))
            .err()
            .unwrap_or_else(|| panic!("{mode:?} with {}: started", ca.display()));
        assert!(err.contains(needle), "{mode:?}: {err}");
    }

    let gw = common::TestGateway::start(settings(TlsMode::VerifyFull, &good_ca));
    let ready = common::http::get_json(&gw.url("/readyz"), "").await;
    assert_eq!(ready["status"], "ready", "{ready}");
    // Every connection of the gateway's to its control database is encrypted, the fleet
    // channel's among them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let rows = admin
            .query(
                "SELECT a.application_name, s.ssl FROM pg_stat_activity a \
                 JOIN pg_stat_ssl s USING (pid) WHERE a.datname = 'interlock_ctl'",
                &[],
            )
            .await
            .expect("pg_stat_ssl");
        let names: Vec<(String, bool)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert!(names.iter().all(|(_, ssl)| *ssl), "{names:?}");
        if names.iter().any(|(n, _)| n.starts_with("interlock-fleet")) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no fleet channel connection: {names:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    gw.stop().await;
}
