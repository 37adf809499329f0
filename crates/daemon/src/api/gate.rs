//! The middleware every request passes before any handler: it resolves
//! the route against [`ROUTES`](super::routes::ROUTES) (404 and 405 here,
//! as JSON), applies the access rule (403 and a warning naming the peer),
//! and counts the answer for `/metrics`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::ALLOW;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::access::allowed;
use super::context::Ctx;
use super::error::{ApiError, Code};
use super::peer::Peer;
use super::routes::{Resolved, label, resolve};

/// The middleware.
pub(crate) async fn gate(State(ctx): State<Arc<Ctx>>, req: Request, next: Next) -> Response {
    let route = label(req.uri().path());
    let res = match resolve(req.method().as_str(), req.uri().path()) {
        Resolved::NotFound => not_found(),
        Resolved::WrongMethod(allow) => wrong_method(&allow),
        Resolved::Route(spec) => {
            let peer = req.extensions().get::<Peer>();
            if allowed(peer, &ctx.state.access, ctx.uid, spec.mutation) {
                next.run(req).await
            } else {
                tracing::warn!(
                    uid = peer.map(|p| p.uid),
                    pid = peer.and_then(|p| p.pid),
                    method = %req.method(),
                    route = spec.path,
                    "refused an API request"
                );
                let what = if spec.mutation {
                    "change the log"
                } else {
                    "read"
                };
                ApiError::new(
                    Code::Forbidden,
                    format!(
                        "{} may not {what} here: that takes root, the daemon's user{}",
                        peer.map_or_else(
                            || "an unidentified peer".to_owned(),
                            |p| format!("uid {}", p.uid)
                        ),
                        ctx.state
                            .access
                            .group
                            .as_ref()
                            .map_or(String::new(), |(name, _)| format!(" or group {name}"))
                    ),
                )
                .into_response()
            }
        }
    };
    ctx.http.count(route, res.status().as_u16());
    res
}

/// 404 as JSON.
pub(crate) fn not_found() -> Response {
    ApiError::new(Code::NotFound, "no such route").into_response()
}

/// 405 as JSON, with `Allow`.
fn wrong_method(allow: &[&str]) -> Response {
    let mut methods = allow.to_vec();
    if methods.contains(&"GET") {
        methods.push("HEAD");
    }
    let list = methods.join(", ");
    let mut r =
        ApiError::new(Code::MethodNotAllowed, format!("this route takes {list}")).into_response();
    if let Ok(v) = list.parse() {
        r.headers_mut().insert(ALLOW, v);
    }
    debug_assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    r
}

/// The router's own 405 (unreachable past the gate; kept as JSON anyway).
pub(crate) async fn method_not_allowed() -> Response {
    ApiError::new(Code::MethodNotAllowed, "method not allowed").into_response()
}

/// The router's own 404 (unreachable past the gate; kept as JSON anyway).
pub(crate) async fn fallback() -> Response {
    not_found()
}
