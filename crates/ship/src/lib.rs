//! `weir-ship`: the changelog shipped off the host into NATS JetStream or
//! Kafka, exactly once, and a fleet's records read back.
//!
//! Every host owns a gap-free index, so the broker itself can say where
//! a host's shipping stands. The shipper asks it at every start and goes
//! on after the last record it holds, whatever crashed in between: the
//! host, the shipper, the broker or the network. The log's consumer
//! cursor only keeps retention from deleting what is not shipped yet.
//!
//! - [`wire`]: the record on the wire (the log's JSON form with host and
//!   incarnation), subjects and message ids.
//! - [`nats`]: the JetStream sink: the stream, the last record of a host,
//!   atomic batches.
//! - [`kafka`]: the Kafka sink: a transaction per batch, committed with
//!   the host's position in a consumer group of its own.
//! - [`Sink`]: either, behind the calls the shipping loop makes.
//! - [`Shipper`]: the loop that reads the log, publishes, and clears.
//! - [`fleet`]: `weir fleet tail` and `weir fleet status`.
//! - [`machine_host`]: the name a host ships under by default.
//!
//! The schema and the subject scheme are documented in `docs/fleet.md`.
#![forbid(unsafe_code)]

mod error;
pub mod fleet;
mod hostname;
pub mod kafka;
pub mod nats;
mod shipper;
mod sink;
mod stats;
pub mod wire;

pub use crate::error::{Error, Result};
pub use crate::hostname::machine_host;
pub use crate::shipper::{ShipOptions, Shipper};
pub use crate::sink::Sink;
pub use crate::stats::{ShipReport, ShipState, ShipStats};
