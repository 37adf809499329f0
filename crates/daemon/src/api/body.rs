//! Reading a request body: bounded in size (413 past the limit, without
//! reading further) and in time (408 when it stalls), then parsed as JSON
//! (400 with serde's message on any mistake).

use std::time::Duration;

use axum::body::Body;
use axum::http::HeaderMap;
use axum::http::header::CONTENT_LENGTH;
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};

use super::error::{ApiError, Code};
use super::requests;

/// How long a client may take to send its body.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Reads the whole body, at most `limit` bytes.
pub(crate) async fn read(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::new(
            Code::PayloadTooLarge,
            format!("the body is larger than {limit} bytes"),
        )
    };
    // Refuse a declared size at once rather than read up to the limit.
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let collect = Limited::new(body, limit).collect();
    match tokio::time::timeout(BODY_TIMEOUT, collect).await {
        Err(_) => Err(ApiError::new(
            Code::Timeout,
            format!(
                "the body did not arrive within {} s",
                BODY_TIMEOUT.as_secs()
            ),
        )),
        Ok(Ok(c)) => Ok(c.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(e)) => Err(ApiError::new(
            Code::BadRequest,
            format!("reading the body: {e}"),
        )),
    }
}

/// Reads and parses a JSON body.
pub(crate) async fn json<T: serde::de::DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<T, ApiError> {
    let bytes = read(headers, body, limit).await?;
    parse(&bytes)
}

/// Parses a JSON body.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    requests::parse(bytes)
        .map_err(|e| ApiError::new(Code::BadRequest, format!("bad JSON body: {e}")))
}

/// Reads a body that may be empty (then `T::default()`).
pub(crate) async fn json_or_default<T: serde::de::DeserializeOwned + Default>(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<T, ApiError> {
    let bytes = read(headers, body, limit).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    parse(&bytes)
}
