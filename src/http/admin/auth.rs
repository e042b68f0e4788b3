//! Who is calling the admin API: an approver (with the sources it may approve) or an
//! operator. Agents get 403.

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse};
use serde_json::json;

use crate::control::identities::{Identity, IdentityKind};
use crate::pipeline::identity::{bearer, Resolved, Use};
use crate::AppState;

#[derive(Clone)]
pub struct AdminCaller {
    pub identity: Arc<Identity>,
    /// For approvers: the sources they may approve. Operators see every source.
    pub scopes: Vec<String>,
    /// The credential, when it was an access token (for the audit record).
    pub credential: Option<serde_json::Value>,
}

impl AdminCaller {
    pub fn is_operator(&self) -> bool {
        self.identity.kind == IdentityKind::Operator
    }

    /// Whether this caller may see things of `source`.
    pub fn sees(&self, source: &str) -> bool {
        self.is_operator() || self.scopes.iter().any(|s| s == source)
    }
}

/// Which identity kinds an admin endpoint admits.
pub trait Admits {
    const KINDS: &'static [IdentityKind];
}

/// Operator keys only.
pub struct Operators;
impl Admits for Operators {
    const KINDS: &'static [IdentityKind] = &[IdentityKind::Operator];
}

/// Approver keys only (deciding on approvals).
pub struct Approvers;
impl Admits for Approvers {
    const KINDS: &'static [IdentityKind] = &[IdentityKind::Approver];
}

/// Approver or operator keys (reading approvals, events, whoami).
pub struct Staff;
impl Admits for Staff {
    const KINDS: &'static [IdentityKind] = &[IdentityKind::Approver, IdentityKind::Operator];
}

/// The admin caller as a handler argument: extracting it authenticates the request (or
/// reuses the `/admin` gate's resolution) and checks that its kind is one `K` admits,
/// answering 401/403/503 itself otherwise. Handlers never repeat that preamble.
pub struct Admin<K: Admits> {
    pub caller: AdminCaller,
    kinds: std::marker::PhantomData<K>,
}

impl<K: Admits> std::ops::Deref for Admin<K> {
    type Target = AdminCaller;

    fn deref(&self) -> &AdminCaller {
        &self.caller
    }
}

impl<K: Admits + 'static> actix_web::FromRequest for Admin<K> {
    type Error = actix_web::Error;
    type Future = futures_util::future::LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let refused = |res: HttpResponse| {
                actix_web::error::InternalError::from_response("admin caller refused", res).into()
            };
            let Some(state) = req.app_data::<actix_web::web::Data<AppState>>().cloned() else {
                return Err(refused(error(
                    actix_web::http::StatusCode::INTERNAL_SERVER_ERROR,
                    "failed",
                    "the gateway state is missing",
                )));
            };
            let caller = admin(&req, &state, K::KINDS).await.map_err(refused)?;
            Ok(Admin {
                caller,
                kinds: std::marker::PhantomData,
            })
        })
    }
}

/// The id in a path, or the 404 a malformed one gets (indistinguishable from an absent one):
/// "no <what> with that id".
pub fn path_id(raw: &str, what: &str) -> Result<uuid::Uuid, HttpResponse> {
    uuid::Uuid::parse_str(raw).map_err(|_| {
        error(
            actix_web::http::StatusCode::NOT_FOUND,
            "not_found",
            &format!("no {what} with that id"),
        )
    })
}

pub fn error(status: actix_web::http::StatusCode, code: &str, message: &str) -> HttpResponse {
    let mut res = HttpResponse::build(status);
    if let Some(challenge) = crate::mcp::bearer_challenge(status.as_u16(), code) {
        res.insert_header(("WWW-Authenticate", challenge));
    }
    res.json(json!({"error": message, "code": code}))
}

/// Resolves the caller and checks its kind is one of `allowed`. Under `/admin` the gate
/// has already resolved it (kept in the request's extensions), so only the kind is checked.
pub async fn admin(
    req: &HttpRequest,
    state: &AppState,
    allowed: &[IdentityKind],
) -> Result<AdminCaller, HttpResponse> {
    use actix_web::HttpMessage;
    let known = req.extensions().get::<AdminCaller>().cloned();
    let caller = match known {
        Some(caller) => caller,
        None => resolve(req, state).await?,
    };
    if !allowed.contains(&caller.identity.kind) {
        return Err(forbidden(allowed, &caller.identity));
    }
    Ok(caller)
}

fn forbidden(allowed: &[IdentityKind], identity: &Identity) -> HttpResponse {
    let who = allowed
        .iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(" or ");
    error(
        actix_web::http::StatusCode::FORBIDDEN,
        "forbidden",
        &format!(
            "this endpoint needs an {who} key; yours belongs to an {}",
            identity.kind
        ),
    )
}

/// Resolves the key of the request to an approver or operator (with an approver's
/// scopes); 401 without a valid key, 403 for an agent's.
pub async fn resolve(req: &HttpRequest, state: &AppState) -> Result<AdminCaller, HttpResponse> {
    use actix_web::http::StatusCode;
    let Some(key) = bearer(
        req.headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
    ) else {
        return Err(error(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "send Authorization: Bearer <approver or operator key>",
        ));
    };
    let unavailable = |what: &str| error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", what);
    let principal = match state.identities.resolve_bearer(key).await {
        Ok(Resolved::Caller(p)) => p,
        Ok(Resolved::UnknownKey) => {
            return Err(error(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "the key is not recognised or was revoked",
            ))
        }
        Ok(Resolved::InvalidToken(why)) => {
            return Err(error(
                StatusCode::UNAUTHORIZED,
                "invalid_token",
                &format!("the access token is not accepted: {why}"),
            ))
        }
        Ok(Resolved::ProviderUnavailable(why)) => {
            tracing::warn!(error = %why, "admin token check failed");
            return Err(unavailable("identity provider unavailable; retry shortly"));
        }
        Err(e) => {
            tracing::error!(error = %e, "admin identity lookup failed");
            return Err(unavailable("control database unavailable"));
        }
    };
    if !principal.may(Use::Admin) {
        return Err(error(
            StatusCode::FORBIDDEN,
            "insufficient_scope",
            "the access token does not carry the admin scope; ask your identity provider for a token with it (see WWW-Authenticate)",
        ));
    }
    let identity = Arc::clone(&principal.identity);
    let staff = [IdentityKind::Approver, IdentityKind::Operator];
    if !staff.contains(&identity.kind) {
        return Err(forbidden(&staff, &identity));
    }
    let scopes = if identity.kind == IdentityKind::Approver {
        scopes_of(state, &identity).await.map_err(|e| {
            tracing::error!(error = %e, "approver scope lookup failed");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "control database unavailable",
            )
        })?
    } else {
        Vec::new()
    };
    Ok(AdminCaller {
        identity,
        scopes,
        credential: principal.credential(),
    })
}

async fn scopes_of(
    state: &AppState,
    identity: &Identity,
) -> Result<Vec<String>, crate::control::ControlError> {
    let client = state.control.get().await?;
    crate::control::roles::approver_scopes(&client, identity.id).await
}

/// `GET /admin/whoami`: who the key belongs to, so consoles can offer the right pages.
pub async fn whoami(caller: Admin<Staff>) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "name": caller.identity.name,
        "kind": caller.identity.kind,
        "scopes": caller.scopes,
    }))
}

/// How a refused control-database operation answers on the admin API.
pub fn control_error(e: crate::control::ControlError) -> HttpResponse {
    use crate::control::ControlError;
    use actix_web::http::StatusCode;
    match e {
        ControlError::NotFound(m) => error(StatusCode::NOT_FOUND, "not_found", &m),
        ControlError::Conflict(m) => error(StatusCode::CONFLICT, "conflict", &m),
        ControlError::Invalid(m) => error(StatusCode::BAD_REQUEST, "invalid", &m),
        other => {
            tracing::error!(error = %other, "admin operation failed");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "control database unavailable",
            )
        }
    }
}
