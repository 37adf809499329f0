//! The consumer routes: list, one, register, clear, deregister.
//!
//! Changes persist the consumer file (a rename and an fsync), so they run
//! on blocking threads. Answers use `weir_view::consumer::consumer_json`,
//! the form of `weir log consumer list --json`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use weir_log::{ConsumerInfo, Log, TypeMask};
use weir_view::consumer::consumer_json;

use super::body;
use super::context::Ctx;
use super::error::{ApiError, Code, json_response};
use super::inventory::bad_query;
use super::query::parse_empty;
use super::requests::{ClearRequest, RegisterRequest};

/// The `{name}` of the path, or a 400.
fn name(p: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    p.map(|Path(n)| n).map_err(|e| {
        ApiError::new(
            Code::BadRequest,
            format!("bad consumer name in the path: {e}"),
        )
    })
}

fn one(log: &Log, name: &str) -> Result<ConsumerInfo, ApiError> {
    log.consumer_list()
        .into_iter()
        .find(|c| c.name == name)
        .ok_or_else(|| weir_log::Error::UnknownConsumer(name.to_owned()).into())
}

/// Runs a consumer change on a blocking thread.
async fn blocking<T: Send + 'static>(
    ctx: &Arc<Ctx>,
    f: impl FnOnce(&Log) -> Result<T, weir_log::Error> + Send + 'static,
) -> Result<T, ApiError> {
    let log = ctx.state.log.clone();
    Ok(tokio::task::spawn_blocking(move || f(&log))
        .await
        .map_err(|e| ApiError::join(&e))??)
}

/// `GET /v1/log/consumers`.
pub(crate) async fn list(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    parse_empty(q.as_deref()).map_err(bad_query)?;
    let list: Vec<_> = ctx
        .state
        .log
        .consumer_list()
        .iter()
        .map(consumer_json)
        .collect();
    Ok(json_response(
        StatusCode::OK,
        serde_json::Value::from(list).to_string(),
    ))
}

/// `GET /v1/log/consumers/{name}`.
pub(crate) async fn get(
    State(ctx): State<Arc<Ctx>>,
    p: Result<Path<String>, PathRejection>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let name = name(p)?;
    parse_empty(q.as_deref()).map_err(bad_query)?;
    let c = one(&ctx.state.log, &name)?;
    Ok(json_response(StatusCode::OK, consumer_json(&c).to_string()))
}

/// `POST /v1/log/consumers`: 201 `{"id","name"}`.
pub(crate) async fn register(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    parse_empty(q.as_deref()).map_err(bad_query)?;
    let req: RegisterRequest = body::json(&headers, body, ctx.state.limits.max_body_bytes).await?;
    let mask = match &req.mask {
        Some(m) => TypeMask::parse(m)?,
        None => TypeMask::all(),
    };
    let name = req.name.clone();
    let id = blocking(&ctx, move |log| log.register(&name, mask)).await?;
    tracing::info!(consumer = %req.name, id, "registered a consumer");
    Ok(json_response(
        StatusCode::CREATED,
        serde_json::json!({ "id": id, "name": req.name }).to_string(),
    ))
}

/// `POST /v1/log/consumers/{name}/clear`: the consumer after clearing.
pub(crate) async fn clear(
    State(ctx): State<Arc<Ctx>>,
    p: Result<Path<String>, PathRejection>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let name = name(p)?;
    parse_empty(q.as_deref()).map_err(bad_query)?;
    let req: ClearRequest =
        body::json_or_default(&headers, body, ctx.state.limits.max_body_bytes).await?;
    let c = blocking(&ctx, move |log| log.clear(&name, req.index)).await?;
    Ok(json_response(StatusCode::OK, consumer_json(&c).to_string()))
}

/// `DELETE /v1/log/consumers/{name}`: 204.
pub(crate) async fn deregister(
    State(ctx): State<Arc<Ctx>>,
    p: Result<Path<String>, PathRejection>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let name = name(p)?;
    parse_empty(q.as_deref()).map_err(bad_query)?;
    let n = name.clone();
    blocking(&ctx, move |log| log.deregister(&n)).await?;
    tracing::info!(consumer = %name, "deregistered a consumer");
    Ok(StatusCode::NO_CONTENT.into_response())
}
