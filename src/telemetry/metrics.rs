//! The process-wide `metrics` recorder (Prometheus), installed once at start-up; `GET
//! /metrics` renders what it holds.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// How often histogram samples are folded into their summaries.
const UPKEEP_EVERY: Duration = Duration::from_secs(1);

/// Installs the process-wide recorder once (several gateways in one test process share it).
///
/// The recorder keeps each histogram sample until upkeep folds it into the summary, so a
/// thread runs upkeep every second: without it, a gateway nobody scrapes would keep every
/// sample of every call (about 15 per governed call) for as long as it runs.
pub fn install() {
    HANDLE.get_or_init(|| match PrometheusBuilder::new().install_recorder() {
        Ok(h) => {
            let upkeep = h.clone();
            let spawned = std::thread::Builder::new()
                .name("metrics-upkeep".into())
                .spawn(move || loop {
                    std::thread::sleep(UPKEEP_EVERY);
                    upkeep.run_upkeep();
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "the metrics upkeep thread could not be started");
            }
            Some(h)
        }
        Err(e) => {
            tracing::warn!(error = %e, "the metrics recorder could not be installed");
            None
        }
    });
}

/// The installed recorder, if [`install`] succeeded.
pub fn handle() -> Option<&'static PrometheusHandle> {
    HANDLE.get().and_then(Option::as_ref)
}
