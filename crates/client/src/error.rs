//! The client's errors, and the API's error object decoded: the daemon
//! answers a failed request with `{"error":{"code":"...","message":"..."}}`
//! and callers branch on the code ([`ErrorCode`]), never on the message.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// The most bytes of an error answer that are read.
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;

/// The most characters of an undecodable error answer kept for the message.
const EXCERPT_CHARS: usize = 200;

/// What can go wrong talking to the daemon.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Connecting to the socket failed for another reason than nobody
    /// listening (for example, permission denied).
    #[error("cannot connect to {}", socket.display())]
    Connect {
        /// The socket.
        socket: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The client's I/O runtime could not be built.
    #[error("cannot start the client's I/O runtime")]
    Runtime(#[source] std::io::Error),
    /// The HTTP exchange failed: the connection broke, or the answer was
    /// not valid HTTP/1.1.
    #[error("the HTTP exchange with the daemon failed")]
    Http(#[source] hyper::Error),
    /// The request path is not a valid request target.
    #[error("not a valid request target: {target:?}")]
    BadTarget {
        /// The target.
        target: String,
        /// Why.
        #[source]
        source: hyper::http::Error,
    },
    /// The daemon did not begin to answer in time.
    #[error("the daemon did not answer within {} s", after.as_secs())]
    Timeout {
        /// How long the client waited.
        after: Duration,
    },
    /// The daemon refused the request with an API error object.
    #[error("{message} (HTTP {status}, {code})")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The error's code.
        code: ErrorCode,
        /// The daemon's words, control characters escaped.
        message: String,
        /// After a failed append, the indexes of the records of the
        /// request appended before it (the error object's `appended`).
        appended: Vec<u64>,
    },
    /// A streamed answer, begun with a success status, failed: the daemon
    /// ended it with an API error object in its `weir-error` trailer
    /// (for example, a follow stream whose next record was
    /// garbage-collected while the client read slowly). The lines before
    /// it were whole.
    #[error("{message} ({code}, after part of the answer)")]
    Aborted {
        /// The error's code.
        code: ErrorCode,
        /// The daemon's words, control characters escaped.
        message: String,
    },
    /// The daemon answered with a failure status but no API error object.
    #[error("the daemon answered HTTP {status}: {excerpt:?}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the answer, lossily decoded.
        excerpt: String,
    },
    /// A request body could not be encoded as JSON.
    #[error("cannot encode the request as JSON")]
    Encode(#[source] serde_json::Error),
    /// A successful answer is not the JSON expected.
    #[error("the daemon's answer is not the JSON expected")]
    Decode(#[source] serde_json::Error),
    /// An answer read whole is longer than the client accepts.
    #[error("the daemon's answer is longer than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// A line of a streamed answer is longer than [`crate::MAX_LINE`].
    #[error("a line from the daemon is longer than {limit} bytes")]
    LineTooLong {
        /// The limit.
        limit: usize,
    },
    /// A streamed answer ended in the middle of a line.
    #[error("the daemon's answer ended in the middle of a line")]
    Truncated,
    /// A streamed answer broke off earlier: the call that saw the break
    /// returned [`Error::Http`], and the stream has nothing more.
    #[error("the daemon's answer broke off earlier")]
    Broken,
    /// Writing the answer out failed (for example, stdout was closed).
    #[error("cannot write the daemon's answer")]
    Write(#[source] std::io::Error),
}

impl Error {
    /// The API error code, when the daemon sent an error object.
    pub fn code(&self) -> Option<&ErrorCode> {
        match self {
            Error::Api { code, .. } | Error::Aborted { code, .. } => Some(code),
            _ => None,
        }
    }

    /// The indexes a failed append request did append (see
    /// [`Error::Api`]); empty for any other error.
    pub fn appended(&self) -> &[u64] {
        match self {
            Error::Api { appended, .. } => appended,
            _ => &[],
        }
    }

    /// The HTTP status of a refused request.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api { status, .. } | Error::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// The `code` of an API error object.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `bad_request`: malformed parameters or body.
    BadRequest,
    /// `bad_range`: an index outside the log.
    BadRange,
    /// `not_found`: no such route or object.
    NotFound,
    /// `unknown_consumer`: no consumer of that name.
    UnknownConsumer,
    /// `unknown_root`: the log holds no watch of that directory tree.
    UnknownRoot,
    /// `consumer_exists`: a consumer of that name is already registered.
    ConsumerExists,
    /// `forbidden`: this peer may not make this call.
    Forbidden,
    /// `payload_too_large`: the request body is over the daemon's limit.
    PayloadTooLarge,
    /// `unavailable`: the source is turned off or failed.
    Unavailable,
    /// `log_error`: the changelog failed.
    LogError,
    /// `method_not_allowed`: the route exists for other methods.
    MethodNotAllowed,
    /// `timeout`: the request's body did not arrive in time.
    Timeout,
    /// `internal`: the daemon failed while answering.
    Internal,
    /// A code this client does not know yet (a newer daemon), as sent.
    Unknown(String),
}

impl ErrorCode {
    const KNOWN: [(ErrorCode, &'static str); 13] = [
        (ErrorCode::BadRequest, "bad_request"),
        (ErrorCode::BadRange, "bad_range"),
        (ErrorCode::NotFound, "not_found"),
        (ErrorCode::UnknownConsumer, "unknown_consumer"),
        (ErrorCode::UnknownRoot, "unknown_root"),
        (ErrorCode::ConsumerExists, "consumer_exists"),
        (ErrorCode::Forbidden, "forbidden"),
        (ErrorCode::PayloadTooLarge, "payload_too_large"),
        (ErrorCode::Unavailable, "unavailable"),
        (ErrorCode::LogError, "log_error"),
        (ErrorCode::MethodNotAllowed, "method_not_allowed"),
        (ErrorCode::Timeout, "timeout"),
        (ErrorCode::Internal, "internal"),
    ];

    /// The code for its wire name.
    pub fn from_wire(s: &str) -> ErrorCode {
        ErrorCode::KNOWN
            .iter()
            .find(|(_, w)| *w == s)
            .map_or_else(|| ErrorCode::Unknown(s.to_owned()), |(c, _)| c.clone())
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::Unknown(s) => s,
            known => ErrorCode::KNOWN
                .iter()
                .find(|(c, _)| c == known)
                .map_or("", |(_, w)| w),
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Deserialize)]
struct Envelope {
    error: ErrorObject,
}

#[derive(Deserialize)]
struct ErrorObject {
    code: String,
    message: String,
    #[serde(default)]
    appended: Vec<u64>,
}

/// The trailer that carries a streamed answer's error object.
pub(crate) const ERROR_TRAILER: &str = "weir-error";

/// What a streamed answer's error trailer said: [`Error::Aborted`]'s
/// fields, kept to be returned again.
#[derive(Debug)]
pub(crate) struct Aborted {
    code: ErrorCode,
    message: String,
}

impl Aborted {
    /// The error, as often as it is asked for.
    pub(crate) fn to_error(&self) -> Error {
        Error::Aborted {
            code: self.code.clone(),
            message: self.message.clone(),
        }
    }
}

/// The error a streamed answer's trailers report, if any. A trailer that
/// is not an error object still says the stream failed.
pub(crate) fn from_trailers(trailers: &hyper::HeaderMap) -> Option<Aborted> {
    let value = trailers.get(ERROR_TRAILER)?;
    Some(match serde_json::from_slice::<Envelope>(value.as_bytes()) {
        Ok(Envelope { error }) => Aborted {
            code: ErrorCode::from_wire(&error.code),
            message: printable(&error.message),
        },
        Err(_) => Aborted {
            code: ErrorCode::Unknown(String::new()),
            message: printable(
                &String::from_utf8_lossy(value.as_bytes())
                    .chars()
                    .take(EXCERPT_CHARS)
                    .collect::<String>(),
            ),
        },
    })
}

/// The error for a failed answer with status `status` and body `body`.
pub(crate) fn from_answer(status: u16, body: &[u8]) -> Error {
    match serde_json::from_slice::<Envelope>(body) {
        Ok(Envelope { error }) => Error::Api {
            status,
            code: ErrorCode::from_wire(&error.code),
            message: printable(&error.message),
            appended: error.appended,
        },
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            Error::Status {
                status,
                excerpt: text.chars().take(EXCERPT_CHARS).collect(),
            }
        }
    }
}

/// The daemon's message with control characters escaped, so it cannot
/// move the cursor or forge lines on the terminal it is printed to.
fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_ones_are_kept() {
        for (code, wire) in ErrorCode::KNOWN {
            assert_eq!(ErrorCode::from_wire(wire), code);
            assert_eq!(code.as_str(), wire);
        }
        let other = ErrorCode::from_wire("teapot");
        assert_eq!(other, ErrorCode::Unknown("teapot".to_owned()));
        assert_eq!(other.to_string(), "teapot");
    }

    #[test]
    fn error_objects_are_decoded() {
        let e = from_answer(
            409,
            br#"{"error":{"code":"consumer_exists","message":"consumer x\nexists"}}"#,
        );
        assert_eq!(e.code(), Some(&ErrorCode::ConsumerExists));
        assert_eq!(e.status(), Some(409));
        assert_eq!(
            e.to_string(),
            "consumer x\\u{a}exists (HTTP 409, consumer_exists)"
        );
    }

    #[test]
    fn error_trailers_are_decoded() {
        let mut t = hyper::HeaderMap::new();
        assert!(from_trailers(&t).is_none(), "no trailer, no error");
        t.insert(
            ERROR_TRAILER,
            hyper::header::HeaderValue::from_static(
                r#"{"error":{"code":"bad_range","message":"index 4 was garbage-collected"}}"#,
            ),
        );
        let e = from_trailers(&t).unwrap().to_error();
        assert_eq!(e.code(), Some(&ErrorCode::BadRange));
        assert_eq!(e.status(), None);
        assert!(e.to_string().starts_with("index 4 was"), "{e}");
        t.insert(
            ERROR_TRAILER,
            hyper::header::HeaderValue::from_static("not json"),
        );
        let e = from_trailers(&t).unwrap().to_error();
        assert!(
            matches!(&e, Error::Aborted { message, .. } if message == "not json"),
            "{e:?}"
        );
    }

    #[test]
    fn other_failures_keep_a_bounded_excerpt() {
        let body = vec![b'x'; 10_000];
        let e = from_answer(502, &body);
        let Error::Status { status, excerpt } = &e else {
            panic!("{e:?}");
        };
        assert_eq!((*status, excerpt.len()), (502, EXCERPT_CHARS));
        assert_eq!(e.code(), None);
        let e = from_answer(500, br#"{"error":{"code":1}}"#);
        assert!(matches!(e, Error::Status { status: 500, .. }), "{e:?}");
    }
}
