//! `weir-contract`: the daemon's API document, `docs/openapi.yaml`, as the
//! API tests read it, and the judge of answers against it. Both suites
//! that check the API against the document use it: weir-daemon's, which
//! calls the router in process with hand-picked requests, and weir's,
//! which drives a real `weir run` with requests generated from the
//! document. One reading of the document and one validator, so that the
//! two cannot disagree about what it says.
//!
//! - [`Doc`]: the OpenAPI 3.1 document parsed into its [`Operation`]s
//!   (parameters, request body, declared responses), with local `$ref`s
//!   followed.
//! - [`Doc::check`]: a value against one of its schemas, by `jsonschema`
//!   (JSON Schema 2020-12, the dialect of OpenAPI 3.1).
//! - [`Doc::judge`]: an [`Answer`] against its operation: status declared,
//!   content type declared, body fitting the schema.
//!
//! It is a crate of its own, `publish = false`, and a dev-dependency only,
//! so that the validator and its dependencies stay out of every library.
#![forbid(unsafe_code)]

mod answer;
mod doc;
mod error;
mod schema;

pub use answer::{Answer, short};
pub use doc::{BodySpec, Doc, In, Operation, Param};
pub use error::{DocError, Mismatch};
pub use schema::types_of;

#[cfg(test)]
mod tests;
