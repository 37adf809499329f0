//! `GET /v1/openapi.yaml`: the API's reference document, built into the
//! binary so that a daemon always describes itself as it is.

use axum::extract::RawQuery;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::inventory::bad_query;
use super::query::parse_empty;

/// `docs/openapi.yaml` (OpenAPI 3.1), the reference the tests check the
/// API against.
pub const OPENAPI_YAML: &str = include_str!("../../../../docs/openapi.yaml");

/// The handler.
pub(crate) async fn openapi(RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    parse_empty(q.as_deref()).map_err(bad_query)?;
    Ok(([(CONTENT_TYPE, "application/yaml")], OPENAPI_YAML).into_response())
}
