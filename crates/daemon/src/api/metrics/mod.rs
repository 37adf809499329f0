//! `GET /metrics`: the Prometheus text exposition (format 0.0.4): the log's
//! counters, indexes and commit/durable latency histograms and consumer lag
//! (`log`), events per source and the mount tracker's reading budget
//! (`sources`), the shipper's figures (`ship`), and the API's own
//! request counts.

mod log;
mod ship;
mod sources;
mod text;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::{RawQuery, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use super::context::Ctx;
use super::error::ApiError;
use super::inventory::bad_query;
use super::query::parse_empty;
use text::Out;

/// Requests answered, by route pattern and status.
#[derive(Default)]
pub(crate) struct HttpCounters(Mutex<BTreeMap<(&'static str, u16), u64>>);

impl HttpCounters {
    /// Counts one answer.
    pub(crate) fn count(&self, route: &'static str, status: u16) {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry((route, status)).or_default() += 1;
    }

    fn snapshot(&self) -> Vec<((&'static str, u16), u64)> {
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        m.iter().map(|(k, v)| (*k, *v)).collect()
    }
}

/// The handler.
pub(crate) async fn metrics(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    parse_empty(q.as_deref()).map_err(bad_query)?;
    Ok((
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        render(&ctx),
    )
        .into_response())
}

fn render(ctx: &Ctx) -> String {
    let mut o = Out::default();
    log::write(&mut o, &ctx.state.log);
    sources::write(&mut o, ctx);
    let st = &ctx.state;
    let shipper = st.ship.as_ref().map(|h| h.status(st.log.durable_index()));
    ship::write(&mut o, shipper.as_ref());
    o.one(
        "weir_api_followers",
        "gauge",
        "Open follow streams.",
        ctx.followers.load(std::sync::atomic::Ordering::Relaxed),
    );
    let name = "weir_http_requests_total";
    o.family(
        name,
        "counter",
        "API requests answered, by route and status.",
    );
    for ((route, status), n) in ctx.http.snapshot() {
        o.sample(
            name,
            &[("route", route), ("status", &status.to_string())],
            n,
        );
    }
    o.0
}
