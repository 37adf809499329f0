//! How the API says no: every refusal or failure is a 4xx/5xx status with
//! the body `{"error":{"code":"<snake_case>","message":"..."}}`, where the
//! code is one of [`Code`] (stable, for programs) and the message is for
//! people. Also the error [`crate::api::serve`] returns.

use axum::http::header::HeaderName;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The trailer that says why a streamed answer, begun with 200, failed:
/// its value is the JSON body an error answer would have had.
pub(crate) const ERROR_TRAILER: HeaderName = HeaderName::from_static("weir-error");

/// The longest message a [`ERROR_TRAILER`] carries, in bytes: JSON may
/// show a byte in up to 6 characters, and the whole must stay under 16 KiB.
const MAX_TRAILER_MESSAGE: usize = 2048;

/// The machine-readable error codes of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// The request is malformed: bad JSON, a wrong type, a bad parameter.
    BadRequest,
    /// An index is outside the log (`from` past the end, before the
    /// oldest record, or a clear past the last record).
    BadRange,
    /// No such route.
    NotFound,
    /// No consumer has that name.
    UnknownConsumer,
    /// The log holds no watch of that directory tree.
    UnknownRoot,
    /// A consumer with that name already exists.
    ConsumerExists,
    /// The peer may not do this.
    Forbidden,
    /// The body is larger than the daemon accepts.
    PayloadTooLarge,
    /// The route exists, but not with this method.
    MethodNotAllowed,
    /// The body did not arrive in time.
    Timeout,
    /// What was asked for is not available: its source is off or failed,
    /// or too many streams are open.
    Unavailable,
    /// The log failed (I/O, no space, poisoned by an fsync failure).
    LogError,
    /// A bug in the daemon (a worker thread panicked).
    Internal,
}

impl Code {
    /// The code as it appears in the body.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::BadRequest => "bad_request",
            Code::BadRange => "bad_range",
            Code::NotFound => "not_found",
            Code::UnknownConsumer => "unknown_consumer",
            Code::UnknownRoot => "unknown_root",
            Code::ConsumerExists => "consumer_exists",
            Code::Forbidden => "forbidden",
            Code::PayloadTooLarge => "payload_too_large",
            Code::MethodNotAllowed => "method_not_allowed",
            Code::Timeout => "timeout",
            Code::Unavailable => "unavailable",
            Code::LogError => "log_error",
            Code::Internal => "internal",
        }
    }

    /// The status that goes with the code.
    pub fn status(self) -> StatusCode {
        match self {
            Code::BadRequest | Code::BadRange => StatusCode::BAD_REQUEST,
            Code::NotFound | Code::UnknownConsumer | Code::UnknownRoot => StatusCode::NOT_FOUND,
            Code::ConsumerExists => StatusCode::CONFLICT,
            Code::Forbidden => StatusCode::FORBIDDEN,
            Code::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Code::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Code::Timeout => StatusCode::REQUEST_TIMEOUT,
            Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Code::LogError | Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// One error answer: its code, the message, and sometimes more members of
/// the error object (the indexes appended before a failed append).
#[derive(Debug)]
pub(crate) struct ApiError {
    pub(crate) code: Code,
    pub(crate) status: StatusCode,
    pub(crate) message: String,
    pub(crate) extra: Option<(&'static str, serde_json::Value)>,
}

impl ApiError {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            status: code.status(),
            message: message.into(),
            extra: None,
        }
    }

    /// Adds a member to the error object.
    pub(crate) fn with(mut self, key: &'static str, value: serde_json::Value) -> ApiError {
        self.extra = Some((key, value));
        self
    }

    /// The body, as bytes.
    pub(crate) fn body(&self) -> String {
        let mut err = serde_json::json!({
            "code": self.code.as_str(),
            "message": self.message,
        });
        if let (Some((k, v)), Some(obj)) = (&self.extra, err.as_object_mut()) {
            obj.insert((*k).to_owned(), v.clone());
        }
        serde_json::json!({ "error": err }).to_string()
    }

    /// The error object as the value of a stream's [`ERROR_TRAILER`]: the
    /// body an error answer would have, with DEL escaped too (JSON leaves
    /// it raw; a header value may not hold it), and the message cut to
    /// [`MAX_TRAILER_MESSAGE`] bytes so that the trailer stays well under
    /// what HTTP clients accept (hyper: 16 KiB).
    pub(crate) fn trailer(&self) -> HeaderValue {
        let mut cut = self.message.len().min(MAX_TRAILER_MESSAGE);
        while !self.message.is_char_boundary(cut) {
            cut -= 1;
        }
        let short = ApiError {
            code: self.code,
            status: self.status,
            message: self.message[..cut].to_owned(),
            extra: self.extra.clone(),
        };
        let text = short.body().replace('\u{7f}', "\\u007f");
        HeaderValue::from_str(&text).unwrap_or_else(|_| {
            // Unreachable: JSON escapes every other control character.
            HeaderValue::from_static(r#"{"error":{"code":"internal","message":"(unprintable)"}}"#)
        })
    }

    /// A blocking task that did not finish: it panicked, or the runtime is
    /// shutting down.
    pub(crate) fn join(e: &tokio::task::JoinError) -> ApiError {
        tracing::error!(error = %e, "an API worker task failed");
        ApiError::new(Code::Internal, format!("a worker task failed: {e}"))
    }
}

impl From<weir_log::Error> for ApiError {
    fn from(e: weir_log::Error) -> ApiError {
        use weir_log::Error as E;
        let message = weir_view::chain::error_chain(&e);
        let (code, status) = match &e {
            E::UnknownConsumer(_) => (Code::UnknownConsumer, None),
            E::ConsumerExists(_) => (Code::ConsumerExists, None),
            E::BadConsumerName(_)
            | E::BadType(_)
            | E::UnknownType(_)
            | E::BadTypeRange(_)
            | E::MaskTooLong { .. }
            | E::FieldTooLong { .. }
            | E::RecordTooLarge { .. } => (Code::BadRequest, None),
            E::ClearBeyondEnd { .. } | E::Truncated { .. } => (Code::BadRange, None),
            // As with too many follow streams.
            E::TooManyConsumers { .. } | E::ConsumerStateFull { .. } => (Code::Unavailable, None),
            // The log cannot take writes now; it may later.
            E::NoSpace | E::Stalled { .. } | E::Closed => {
                (Code::LogError, Some(StatusCode::SERVICE_UNAVAILABLE))
            }
            _ => (Code::LogError, None),
        };
        ApiError {
            code,
            status: status.unwrap_or_else(|| code.status()),
            message,
            extra: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json_response(self.status, self.body())
    }
}

/// A JSON body with its status and content type.
pub(crate) fn json_response(status: StatusCode, body: impl Into<axum::body::Body>) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.into(),
    )
        .into_response()
}

/// Why [`crate::api::serve`] stopped before its shutdown signal.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `accept` on the listening socket failed with an error that is not
    /// about one connection or a passing shortage (the socket is unusable).
    #[error("accepting a connection on the API socket")]
    Accept(#[source] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailer_is_a_short_valid_header_value_holding_the_error_object() {
        // Control characters, DEL and multibyte characters, far longer
        // than a trailer may be: each control byte shows as 6 characters.
        let message: String = "\u{1}\u{7f}é".repeat(5000);
        let e = ApiError::new(Code::BadRange, message.clone());
        let v = e.trailer();
        assert!(v.len() < 16 << 10, "{} bytes", v.len());
        let back: serde_json::Value = serde_json::from_slice(v.as_bytes()).unwrap();
        assert_eq!(back["error"]["code"], "bad_range");
        let shown = back["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(shown) && shown.len() <= MAX_TRAILER_MESSAGE);
        assert!(shown.len() > MAX_TRAILER_MESSAGE - 4, "cut at a boundary");
    }
}
