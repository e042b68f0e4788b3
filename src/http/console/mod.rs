//! `/console`: the operator and approver web console, served by the gateway itself.
//!
//! The assets are compiled into the binary (no CDN, works offline). For console development,
//! `INTERLOCK_CONSOLE_DIR=<dir>` serves them from that directory instead, re-read on every
//! request.

use actix_web::{web, HttpResponse};

const INDEX: &str = include_str!("index.html");
const APP_JS: &str = include_str!("app.js");
const APP_CSS: &str = include_str!("app.css");

fn asset(name: &str) -> Option<(&'static str, String)> {
    let (builtin, mime) = match name {
        "" | "index.html" => (INDEX, "text/html; charset=utf-8"),
        "app.js" => (APP_JS, "text/javascript; charset=utf-8"),
        "app.css" => (APP_CSS, "text/css; charset=utf-8"),
        _ => return None,
    };
    let file = if name.is_empty() { "index.html" } else { name };
    let body = std::env::var_os("INTERLOCK_CONSOLE_DIR")
        .and_then(|dir| std::fs::read_to_string(std::path::Path::new(&dir).join(file)).ok())
        .unwrap_or_else(|| builtin.to_string());
    Some((mime, body))
}

async fn serve(path: Option<web::Path<String>>) -> HttpResponse {
    let name = path.map(|p| p.into_inner()).unwrap_or_default();
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
    cfg.route("/console", web::get().to(|| serve(None)))
        .route("/console/", web::get().to(|| serve(None)))
        .route(
            "/console/{file}",
            web::get().to(|p: web::Path<String>| serve(Some(p))),
        );
}
