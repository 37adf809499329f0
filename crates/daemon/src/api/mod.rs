//! The daemon's API: HTTP/1.1 and JSON over a Unix socket, so that
//! `curl --unix-socket` works. `docs/openapi.yaml` is its reference (also
//! served at `GET /v1/openapi.yaml`); the tests check the two agree.
//!
//! - [`serve`] accepts connections (`server`), reading each peer's
//!   credentials (`peer`) once; [`router`] is the same service without a
//!   socket, for tests.
//! - Every request passes `gate` first: the route table (`routes`), the
//!   access rule (`access`) and the request counters.
//! - Handlers: `inventory` (mounts, devices, PVs, VGs, rendered by
//!   weir-view and cached by generation in `cache`), `fs` (the watched
//!   directory trees), `records` and `tail` (reading, following,
//!   appending; a subtree's records filtered here), `consumers`, `sync`,
//!   `status`, `metrics`, `openapi`.
//! - Hostile input: query strings ([`query`]) and bodies (`body`,
//!   [`requests`]) are bounded and strictly parsed; every refusal is a
//!   4xx with the JSON error body of `error`.
//! - Follow streams share one commit notifier (`commits`), which renders
//!   each new record once into a shared `window`; each stream's `cursor`
//!   copies from it, or reads the log itself when outside it.

mod access;
mod body;
mod cache;
mod commits;
mod consumers;
mod context;
mod cursor;
mod error;
mod fs;
mod fs_changes;
mod fs_rescan;
mod gate;
pub mod head;
mod inventory;
mod metrics;
mod openapi;
mod peer;
pub mod query;
mod records;
pub mod requests;
mod routes;
mod server;
mod state;
mod status;
mod sync;
mod tail;
mod window;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};

pub use error::{Code, Error};
pub use openapi::OPENAPI_YAML;
pub use peer::{Peer, PeerError};
pub use routes::{ROUTES, RouteSpec};
pub use server::serve;
pub use state::{Access, ApiState, DaemonInfo, Limits, ReconcileReport, ShipView};

use context::Ctx;

/// The API as a service, without a socket: what [`serve`] runs for each
/// connection. Requests carry the peer's credentials as a [`Peer`]
/// extension; a request without one is treated as an unknown peer (it may
/// read only when `public_read`). For tests and in-process callers.
///
/// The router owns a commit-notifier thread, stopped when the last clone
/// of the router is dropped.
pub fn router(state: Arc<ApiState>) -> Router {
    build(Ctx::new(state))
}

fn build(ctx: Arc<Ctx>) -> Router {
    Router::new()
        .route("/v1/mounts", get(inventory::mounts))
        .route("/v1/devices", get(inventory::devices))
        .route("/v1/lvm/pvs", get(inventory::pvs))
        .route("/v1/lvm/lvs", get(inventory::lvs))
        .route("/v1/lvm/vgs", get(inventory::vgs))
        .route("/v1/fs", get(fs::list))
        .route("/v1/fs/changes", get(fs_changes::changes))
        .route("/v1/fs/rescan", post(fs_rescan::rescan))
        .route("/v1/log/records", get(records::read).post(records::append))
        .route("/v1/log/stats", get(status::log_stats))
        .route(
            "/v1/log/consumers",
            get(consumers::list).post(consumers::register),
        )
        .route(
            "/v1/log/consumers/{name}",
            get(consumers::get).delete(consumers::deregister),
        )
        .route("/v1/log/consumers/{name}/clear", post(consumers::clear))
        .route("/v1/sync", post(sync::sync))
        .route("/v1/status", get(status::status))
        .route("/metrics", get(metrics::metrics))
        .route("/v1/openapi.yaml", get(openapi::openapi))
        .fallback(gate::fallback)
        .method_not_allowed_fallback(gate::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            ctx.clone(),
            gate::gate,
        ))
        .with_state(ctx)
}
