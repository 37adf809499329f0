//! Where a shipper ships: NATS JetStream or Kafka, behind the three calls
//! the shipping loop makes (where the host stands, publish a batch,
//! refresh its progress). Each sink keeps its exactness its own way (an
//! atomic batch and a last-by-subject read, a transaction and a committed
//! position); the loop is the same.

use std::time::Duration;

use weir_log::Incarnation;

use crate::error::{Error, Result};
use crate::kafka::{self, Kafka, KafkaOptions};
use crate::nats::{Nats, NatsOptions, Outgoing, check_stream_name};

/// A sink and how to reach it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Sink {
    /// A JetStream stream.
    Nats(NatsOptions),
    /// A Kafka topic.
    Kafka(KafkaOptions),
}

impl From<NatsOptions> for Sink {
    fn from(o: NatsOptions) -> Sink {
        Sink::Nats(o)
    }
}

impl From<KafkaOptions> for Sink {
    fn from(o: KafkaOptions) -> Sink {
        Sink::Kafka(o)
    }
}

impl Sink {
    /// `nats` or `kafka`: the sink's name in status, metrics and the
    /// default consumer's name (`ship-<kind>`).
    pub fn kind(&self) -> &'static str {
        match self {
            Sink::Nats(_) => "nats",
            Sink::Kafka(_) => "kafka",
        }
    }

    /// The servers, as status and logs show them (no credentials).
    pub fn shown(&self) -> String {
        match self {
            Sink::Nats(o) => o.shown_url(),
            Sink::Kafka(o) => o.brokers.clone(),
        }
    }

    /// The stream or topic the records go to.
    pub fn target(&self) -> &str {
        match self {
            Sink::Nats(o) => &o.stream,
            Sink::Kafka(o) => &o.topic,
        }
    }

    /// The most records a batch holds by default: an atomic batch's
    /// limit on NATS; on Kafka a transaction's fixed cost (its commit,
    /// the position) is shared by more.
    pub fn batch(&self) -> usize {
        match self {
            Sink::Nats(_) => crate::nats::MAX_BATCH,
            Sink::Kafka(_) => kafka::BATCH,
        }
    }

    /// How long one request may wait.
    pub(crate) fn timeout(&self) -> Duration {
        match self {
            Sink::Nats(o) => o.timeout,
            Sink::Kafka(o) => o.timeout,
        }
    }

    /// Whether the stream or topic name can be used.
    pub(crate) fn check(&self) -> Result<()> {
        match self {
            Sink::Nats(o) => check_stream_name(&o.stream).map_err(|reason| Error::StreamUnfit {
                stream: o.stream.clone(),
                reason,
            }),
            Sink::Kafka(o) => {
                kafka::check_topic_name(&o.topic).map_err(|reason| Error::TopicUnfit {
                    topic: o.topic.clone(),
                    reason,
                })
            }
        }
    }

    /// Connects for a host, and says what a user should hear about the
    /// stream's or topic's durability.
    pub(crate) async fn connect(&self, host_token: &str) -> Result<(Conn, Vec<String>)> {
        match self {
            Sink::Nats(o) => {
                let (n, w) = Nats::connect(o).await?;
                Ok((Conn::Nats(Box::new(n)), w))
            }
            Sink::Kafka(o) => {
                let (k, w) = Kafka::connect(o).await?;
                Ok((Conn::Kafka(k.session(host_token).await?), w))
            }
        }
    }
}

/// A connected sink.
#[derive(Debug)]
pub(crate) enum Conn {
    // Boxed: a JetStream context is kilobytes.
    Nats(Box<Nats>),
    Kafka(kafka::Session),
}

impl Conn {
    /// The incarnation and index of the host's last record the sink holds.
    pub(crate) async fn last(
        &self,
        host_token: &str,
        mine: Incarnation,
    ) -> Result<Option<(Incarnation, u64)>> {
        match self {
            Conn::Nats(n) => Ok(n
                .last(host_token)
                .await?
                .map(|s| (s.incarnation, s.record.index))),
            Conn::Kafka(k) => k.last(mine).await,
        }
    }

    /// Whether [`Conn::publish`] takes the host's progress message along
    /// with the batch (Kafka: in its transaction).
    pub(crate) fn progress_in_batches(&self) -> bool {
        matches!(self, Conn::Kafka(_))
    }

    /// Publishes a batch, and with it the host's progress message where
    /// the sink takes it ([`Conn::progress_in_batches`]); returns once the
    /// sink holds all of it.
    pub(crate) async fn publish(
        &self,
        inc: Incarnation,
        msgs: Vec<Outgoing>,
        progress: Option<String>,
    ) -> Result<()> {
        match self {
            Conn::Nats(n) => n.publish(msgs).await,
            Conn::Kafka(k) => k.publish(inc, msgs, progress).await,
        }
    }

    /// Replaces the host's progress message.
    pub(crate) async fn put_status(&self, host_token: &str, json: String) -> Result<()> {
        match self {
            Conn::Nats(n) => n.put_status(host_token, json).await,
            Conn::Kafka(k) => k.put_status(json).await,
        }
    }
}
