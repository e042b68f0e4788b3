//! `/console`: the operator and approver web console, served by the gateway itself.
//!
//! The assets are compiled into the binary (no CDN, works offline): the page, its stylesheet
//! and its script, native ES modules under `js/` that the browser loads itself (no build
//! step; `index.html` loads the entry module `js/main.js`, which imports the rest). Only the
//! files listed in [`ASSETS`] are served; any other name is a 404. For console development,
//! `INTERLOCK_CONSOLE_DIR=<dir>` serves those files from that directory instead, re-read on
//! every request.

use actix_web::{web, HttpResponse};

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// One served file: its path under `/console/` (and in this directory), its embedded text and
/// its content type.
macro_rules! asset {
    ($path:literal, $mime:expr) => {
        ($path, include_str!($path), $mime)
    };
}

/// Every file the console serves.
const ASSETS: &[(&str, &str, &str)] = &[
    asset!("index.html", HTML),
    asset!("app.css", CSS),
    // The entry module, then the pages and the shared modules they import.
    asset!("js/main.js", JS),
    asset!("js/sources.js", JS),
    asset!("js/webhooks.js", JS),
    asset!("js/approvals.js", JS),
    asset!("js/approval-view.js", JS),
    asset!("js/audit.js", JS),
    asset!("js/activity.js", JS),
    asset!("js/session.js", JS),
    asset!("js/api.js", JS),
    asset!("js/events.js", JS),
    asset!("js/charts.js", JS),
    asset!("js/tables.js", JS),
    asset!("js/widgets.js", JS),
    asset!("js/format.js", JS),
    asset!("js/dom.js", JS),
];

fn asset(name: &str) -> Option<(&'static str, String)> {
    let file = if name.is_empty() { "index.html" } else { name };
    let &(_, builtin, mime) = ASSETS.iter().find(|(path, _, _)| *path == file)?;
    let body = std::env::var_os("INTERLOCK_CONSOLE_DIR")
        .and_then(|dir| std::fs::read_to_string(std::path::Path::new(&dir).join(file)).ok())
        .unwrap_or_else(|| builtin.to_string());
    Some((mime, body))
}

async fn serve(name: String) -> HttpResponse {
    match asset(&name) {
        Some((mime, body)) => HttpResponse::Ok()
            .content_type(mime)
            .insert_header(("Cache-Control", "no-cache"))
            .insert_header(("X-Content-Type-Options", "nosniff"))
            .insert_header((
                "Content-Security-Policy",
                "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
            ))
            .body(body),
        None => HttpResponse::NotFound().finish(),
    }
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/console", web::get().to(|| serve(String::new())))
        .route("/console/", web::get().to(|| serve(String::new())))
        .route(
            "/console/{file}",
            web::get().to(|p: web::Path<String>| serve(p.into_inner())),
        )
        .route(
            "/console/js/{file}",
            web::get().to(|p: web::Path<String>| serve(format!("js/{}", p.into_inner()))),
        );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `./name.js` modules a module imports.
    fn imports(source: &str) -> Vec<&str> {
        source
            .split("from \"./")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect()
    }

    #[test]
    fn every_module_on_disk_is_served_and_every_import_resolves() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/http/console/js");
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let path = format!("js/{name}");
            assert!(
                ASSETS.iter().any(|(p, _, mime)| *p == path && *mime == JS),
                "{path} is not in ASSETS"
            );
        }
        let (_, index, _) = ASSETS[0];
        assert!(index.contains(r#"<script type="module" src="/console/js/main.js"></script>"#));
        for (path, text, _) in ASSETS.iter().filter(|(p, _, _)| p.starts_with("js/")) {
            for import in imports(text) {
                let target = format!("js/{import}");
                assert!(
                    ASSETS.iter().any(|(p, _, _)| *p == target),
                    "{path} imports {target}, which is not served"
                );
            }
        }
    }

    #[test]
    fn only_the_listed_files_are_served() {
        assert_eq!(asset("").map(|(mime, _)| mime), Some(HTML));
        assert_eq!(asset("js/main.js").map(|(mime, _)| mime), Some(JS));
        for name in [
            "app.js",
            "main.js",
            "mod.rs",
            "js/",
            "js/../mod.rs",
            "../mod.rs",
            "js/x.js",
        ] {
            assert!(asset(name).is_none(), "{name} is served");
        }
    }
}
