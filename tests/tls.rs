//! TLS to a source: `verify-full` against the right CA works; against another CA, or
//! `require` against a server without TLS, the source is unavailable with "upstream TLS
//! refused". The certificates are generated here.
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

#[tokio::test]
async fn verify_full_accepts_the_right_ca_and_refuses_others() {
    let dir = tempfile::Builder::new()
        .prefix("interlock-tls-")
        .tempdir()
        .expect("dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let source = Cluster::start(&ClusterOptions {
        base_dir: dir.path().join("pg"),
        port: 0,
        fast: true,
    })
    .expect("cluster");
    let good = pki();
    let pgdata = source.base_dir().join("pgdata");
    write_for_server(&pgdata, "server.crt", &good.cert_pem, 0o644);
    write_for_server(&pgdata, "server.key", &good.key_pem, 0o600);
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
