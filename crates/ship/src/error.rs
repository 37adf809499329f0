//! The shipper's errors: one variant per way shipping can fail.
//!
//! Broker errors keep the client's own error as their source; what the
//! shipper does about one (retry, stop) depends on the variant, never on
//! its text.

use crate::wire::{HostError, WireError};

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The host name cannot be shipped under.
    #[error("host name: {0}")]
    Host(#[from] HostError),
    /// The machine's host name cannot be read.
    #[error("reading the machine's host name (give the host name instead): {source}")]
    HostName {
        /// The read's error.
        #[source]
        source: std::io::Error,
    },
    /// The log refused a read, a clear or a registration.
    #[error("the log: {0}")]
    Log(#[from] weir_log::Error),
    /// No connection to the broker (down, unreachable, refused).
    #[error("cannot connect to NATS at {url}: {source}")]
    Connect {
        /// The server URL.
        url: String,
        /// The client's error.
        #[source]
        source: async_nats::ConnectError,
    },
    /// A JetStream API call failed: the stream's management, or a read.
    #[error("JetStream {op}: {source}")]
    JetStream {
        /// What was asked.
        op: &'static str,
        /// The client's error.
        #[source]
        source: async_nats::Error,
    },
    /// A publish was not acknowledged as stored.
    #[error("publishing to JetStream: {source}")]
    Publish {
        /// The client's error.
        #[source]
        source: async_nats::Error,
    },
    /// The stream exists but cannot hold this host's records as shipped.
    #[error("stream {stream}: {reason}")]
    StreamUnfit {
        /// The stream's name.
        stream: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A message on a weir subject is no shipped record.
    #[error("stream message {sequence} on {subject}: {source}")]
    BadMessage {
        /// Its stream sequence.
        sequence: u64,
        /// Its subject.
        subject: String,
        /// Why it does not decode.
        #[source]
        source: WireError,
    },
    /// The Kafka client refused its configuration (a property unknown or
    /// out of range).
    #[error("the Kafka client's configuration: {0}")]
    KafkaConfig(#[source] rdkafka::error::KafkaError),
    /// A Kafka request or a transaction's step failed.
    #[error("Kafka {op}: {source}")]
    Kafka {
        /// What was asked.
        op: &'static str,
        /// The client's error.
        #[source]
        source: rdkafka::error::KafkaError,
    },
    /// Another producer took this host's transactional id: another
    /// shipper ships under the same host name.
    #[error(
        "another shipper took this host's transactional id (it ships under the same host name): {source}"
    )]
    Fenced {
        /// The client's error.
        #[source]
        source: rdkafka::error::KafkaError,
    },
    /// The topic exists but cannot hold this host's records as shipped.
    #[error("topic {topic}: {reason}")]
    TopicUnfit {
        /// The topic's name.
        topic: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The host's consumer group holds a position weir did not write.
    #[error("the position in consumer group {group}, partition {partition}: {source}")]
    BadPosition {
        /// The group.
        group: String,
        /// The partition it is committed for.
        partition: i32,
        /// Why it does not parse.
        #[source]
        source: WireError,
    },
    /// A record on the Kafka topic is no shipped record.
    #[error("topic {topic}, partition {partition}, offset {offset}: {source}")]
    BadRecord {
        /// The topic.
        topic: String,
        /// Its partition.
        partition: i32,
        /// Its offset.
        offset: i64,
        /// Why it does not decode.
        #[source]
        source: WireError,
    },
    /// A reader's output refused a record (`weir fleet tail`'s stdout).
    #[error("writing a record out: {0}")]
    Output(#[source] std::io::Error),
    /// The broker holds an index of this log's incarnation that the log
    /// never made durable: the log was restored from an older copy, or
    /// another host ships under the same name. Shipping on would give two
    /// records one name.
    #[error(
        "the broker holds index {broker} of this log's incarnation, past its last index {log}: \
         the log was restored from an older copy, or another host ships under this name"
    )]
    BrokerAhead {
        /// The last index the broker holds.
        broker: u64,
        /// The log's last index.
        log: u64,
    },
}

impl Error {
    /// Whether retrying later can help: the broker or the network, not
    /// the configuration or the log.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::Connect { .. }
                | Error::JetStream { .. }
                | Error::Publish { .. }
                | Error::Kafka { .. }
        )
    }
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
