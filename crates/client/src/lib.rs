//! weir-client: a small client for the daemon's HTTP/1.1 + JSON API on its
//! Unix socket, for the `weir` command line (and anything else that wants
//! one blocking call at a time).
//!
//! The daemon renders listings (text and JSON) itself; a listing here is
//! bytes streamed from the socket to a writer, unparsed, so `weir mounts`
//! costs one connection and one request. Each [`Client`] owns a
//! current-thread tokio runtime and one HTTP/1.1 connection; its calls
//! block, so callers need no async code.
//!
//! ```no_run
//! use weir_client::{Client, default_socket};
//! # fn main() -> Result<(), weir_client::Error> {
//! if let Some(mut c) = Client::connect(&default_socket())? {
//!     c.get_text("/v1/mounts?format=text", &mut std::io::stdout().lock())?;
//! }
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod client;
mod error;
mod lines;
mod query;
mod socket;

pub use client::{Client, MAX_JSON_BODY};
pub use error::{Error, ErrorCode};
pub use lines::{LineStream, MAX_LINE, Next};
pub use query::{PathQuery, encode_bytes, encode_component};
pub use socket::{SYSTEM_SOCKET, default_socket, fallback_socket};
