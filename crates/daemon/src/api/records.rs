//! `GET /v1/log/records` (read, optionally follow) and
//! `POST /v1/log/records` (append).
//!
//! A read starts at `from`, or after a consumer's cleared index with its
//! mask (narrowed by `mask`), or at the oldest record; `since_ns`,
//! `until_ns` and `path` (a subtree of the watched trees) narrow what it
//! shows. Its range is
//! checked before the answer starts, so a bad one is a 400, not a broken
//! stream.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::header::{CONTENT_TYPE, TE, TRAILER};
use axum::http::{HeaderMap, HeaderValue, Version};
use axum::response::{IntoResponse, Response};

use super::body;
use super::context::Ctx;
use super::cursor::Cursor;
use super::error::{ApiError, Code, ERROR_TRAILER, json_response};
use super::inventory::bad_query;
use super::query::{Format, RecordsQuery, parse_empty};
use super::requests::AppendRequest;
use super::tail::Tail;

/// `GET /v1/log/records`.
pub(crate) async fn read(
    State(ctx): State<Arc<Ctx>>,
    version: Version,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let q = RecordsQuery::parse(q.as_deref()).map_err(bad_query)?;
    let log = &ctx.state.log;
    let (from, mask) = match &q.consumer {
        Some(name) => {
            let c = log
                .consumer_list()
                .into_iter()
                .find(|c| &c.name == name)
                .ok_or_else(|| weir_log::Error::UnknownConsumer(name.clone()))?;
            let mask = match &q.mask {
                Some(m) => c.mask.intersection(m),
                None => c.mask,
            };
            (Some(q.from.unwrap_or(c.cleared + 1)), Some(mask))
        }
        None => (q.from, q.mask.clone()),
    };
    // Up to what `append` has answered, committed or not: a client reads
    // back what it just wrote without waiting for the commit.
    let (first, last) = (log.first_index(), log.last_appended());
    if let Some(from) = from {
        check_range(from, first, last)?;
    }
    let follow = if q.follow {
        Some(ctx.follower().ok_or_else(|| {
            ApiError::new(
                Code::Unavailable,
                format!(
                    "too many follow streams (at most {})",
                    ctx.state.limits.max_followers
                ),
            )
        })?)
    } else {
        None
    };
    let mut cursor = Cursor::new(
        from.unwrap_or(first),
        mask,
        q.format,
        q.limit,
        from.is_none(),
    );
    if let Some((since, until)) = q.times {
        cursor = cursor.with_times(since, until);
    }
    if let Some(p) = q.path {
        cursor = cursor.with_path(p);
    }
    let tail = Tail::new(ctx.clone(), cursor, follow);
    let kind = match q.format {
        Format::Json => "application/x-ndjson",
        Format::Text => "text/plain; charset=utf-8",
    };
    let trailers = accepts_trailers(version, &headers);
    let mut res = ([(CONTENT_TYPE, kind)], tail.into_body(trailers)).into_response();
    if trailers {
        // HTTP/1.1 sends only trailer fields announced in the head.
        res.headers_mut()
            .insert(TRAILER, HeaderValue::from(ERROR_TRAILER));
    }
    Ok(res)
}

/// Whether trailers reach the client: an HTTP/1.1 request whose `TE`
/// lists `trailers` (RFC 9110, 10.1.4). The token is compared whole, as
/// hyper does before it sends any trailer: were the two rules to differ,
/// hyper would drop the error trailer and end the body cleanly. HTTP/1.0
/// has no chunked body, so no trailer either.
fn accepts_trailers(version: Version, headers: &HeaderMap) -> bool {
    version == Version::HTTP_11
        && headers.get_all(TE).iter().any(|v| {
            v.to_str().is_ok_and(|v| {
                v.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("trailers"))
            })
        })
}

/// `from` must name a record still in the log or appended, or the next
/// one to come. 0 means the same as 1.
fn check_range(from: u64, first: u64, last: u64) -> Result<(), ApiError> {
    let from = from.max(1);
    if from > last.saturating_add(1) {
        return Err(ApiError::new(
            Code::BadRange,
            format!(
                "from={from} is past the end of the log (the next index is {})",
                last.saturating_add(1)
            ),
        ));
    }
    if from < first {
        return Err(ApiError::new(
            Code::BadRange,
            format!("index {from} was garbage-collected; the oldest retained index is {first}"),
        ));
    }
    Ok(())
}

/// `POST /v1/log/records`.
pub(crate) async fn append(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    parse_empty(q.as_deref()).map_err(bad_query)?;
    let req: AppendRequest = body::json(&headers, body, ctx.state.limits.max_body_bytes).await?;
    // Check every record before appending any, so that a bad one in the
    // middle does not leave half a request in the log.
    for (i, r) in req.records.iter().enumerate() {
        let fields = r.log_fields();
        ctx.state
            .log
            .check(&r.record(&fields))
            .map_err(|e| ApiError::from(e).with("record", serde_json::json!(i)))?;
    }
    let log = ctx.state.log.clone();
    let indexes = tokio::task::spawn_blocking(move || append_all(&log, &req))
        .await
        .map_err(|e| ApiError::join(&e))??;
    Ok(json_response(
        axum::http::StatusCode::OK,
        serde_json::json!({ "indexes": indexes }).to_string(),
    ))
}

/// Appends the records in order (then waits for durability if asked).
/// If one fails, the error says which indexes were appended before it;
/// with `durable`, once those are durable, as `weir log write --sync`
/// prints only durable indexes (and none if that wait fails too).
fn append_all(log: &weir_log::Log, req: &AppendRequest) -> Result<Vec<u64>, ApiError> {
    let mut indexes = Vec::with_capacity(req.records.len());
    let mut last = None;
    let mut failed = None;
    for r in &req.records {
        let fields = r.log_fields();
        match log.append(&r.record(&fields)) {
            Ok(a) => {
                indexes.push(a.index());
                last = Some(a);
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    if let (true, Some(a)) = (req.durable, last) {
        log.wait_durable(a).map_err(ApiError::from)?;
    }
    match failed {
        Some(e) => Err(ApiError::from(e).with("appended", serde_json::json!(indexes))),
        None => Ok(indexes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        // An empty log: only 1 (or 0).
        assert!(check_range(1, 1, 0).is_ok());
        assert!(check_range(0, 1, 0).is_ok());
        assert!(check_range(2, 1, 0).is_err());
        // Records 5..=9: 5 to 10.
        assert!(check_range(4, 5, 9).is_err());
        assert!(check_range(5, 5, 9).is_ok());
        assert!(check_range(10, 5, 9).is_ok());
        assert!(check_range(11, 5, 9).is_err());
        assert!(check_range(u64::MAX, 5, u64::MAX - 1).is_ok());
    }

    #[test]
    fn te_trailers_is_found_among_other_codings_as_hyper_finds_it() {
        let te = |v: &[&str]| {
            let mut h = HeaderMap::new();
            for v in v {
                h.append(TE, HeaderValue::from_str(v).unwrap());
            }
            accepts_trailers(Version::HTTP_11, &h)
        };
        assert!(te(&["trailers"]));
        assert!(te(&["gzip;q=0.5, Trailers"]));
        assert!(te(&["gzip", "trailers"]));
        assert!(!te(&[]));
        assert!(!te(&["gzip, trailersx"]));
        // hyper takes `trailers;q=1` as another token and would drop the
        // trailer: the body must be cut off instead.
        assert!(!te(&["trailers;q=1"]));
        let mut h = HeaderMap::new();
        h.insert(TE, HeaderValue::from_static("trailers"));
        assert!(!accepts_trailers(Version::HTTP_10, &h));
    }
}
