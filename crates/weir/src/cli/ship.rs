//! The options of `weir ship` (the log shipped to a broker, in the
//! foreground) and `weir fleet` (every host's records read back).

use clap::{Args, Subcommand};
use weir_log::TypeMask;

use super::log::parse_mask;

/// Where the broker is: NATS or Kafka, one of them. (A struct-level
/// group would take in every field, so that `--kafka` could not go with
/// `--topic` or `--kafka-property`: the choice is on the two fields.)
#[derive(Debug, Args)]
pub(crate) struct BrokerArgs {
    /// NATS server URLs, comma-separated (nats://host:4222).
    #[arg(
        long,
        value_name = "URL",
        required_unless_present = "kafka",
        conflicts_with = "kafka"
    )]
    pub(crate) nats: Option<String>,

    /// Kafka bootstrap brokers, comma-separated (host:9092).
    #[arg(long, value_name = "BROKERS")]
    pub(crate) kafka: Option<String>,

    /// The JetStream stream of the fleet's records (created if missing,
    /// with subjects weir.>; its progress stream is NAME_STATUS).
    #[arg(
        long,
        value_name = "NAME",
        default_value = "WEIR",
        conflicts_with = "kafka"
    )]
    pub(crate) stream: String,

    /// The Kafka topic of the fleet's records (created if missing; its
    /// progress topic is NAME-progress).
    #[arg(
        long,
        value_name = "NAME",
        default_value = "weir",
        conflicts_with = "nats"
    )]
    pub(crate) topic: String,

    /// A librdkafka property for the Kafka client (security.protocol,
    /// sasl.*, compression.type, ...); repeatable.
    #[arg(long = "kafka-property", value_name = "KEY=VALUE", value_parser = parse_property, conflicts_with = "nats")]
    pub(crate) kafka_properties: Vec<(String, String)>,
}

/// `KEY=VALUE`, both non-empty, and a key weir does not set itself.
pub(crate) fn parse_property(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() && !v.is_empty() => {
            weir_ship::kafka::check_property(k).map_err(|why| format!("{k}: {why}"))?;
            Ok((k.to_owned(), v.to_owned()))
        }
        _ => Err(format!("{text:?} is not KEY=VALUE")),
    }
}

#[derive(Debug, Args)]
pub(crate) struct ShipArgs {
    #[command(flatten)]
    pub(crate) broker: BrokerArgs,

    /// The host's name on the broker [default: the machine's host name].
    #[arg(long, value_name = "NAME")]
    pub(crate) host: Option<String>,

    /// The types shipped, as `weir log tail --mask` takes them [default:
    /// all].
    #[arg(long, value_name = "TYPES", value_parser = parse_mask, allow_hyphen_values = true)]
    pub(crate) mask: Option<TypeMask>,

    /// The log consumer that keeps retention from deleting what is not
    /// shipped yet [default: ship-nats or ship-kafka].
    #[arg(long, value_name = "NAME")]
    pub(crate) consumer: Option<String>,

    /// Replicas of a stream or topics this command creates.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) replicas: u16,

    /// Partitions of Kafka topics this command creates.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..), conflicts_with = "nats")]
    pub(crate) partitions: u16,

    /// How long a record waits for others to share its batch, ms (each
    /// batch costs the broker an fsync).
    #[arg(long, value_name = "MS", default_value_t = 50)]
    pub(crate) linger_ms: u64,
}

#[derive(Debug, Args)]
pub(crate) struct FleetArgs {
    #[command(subcommand)]
    pub(crate) command: FleetCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum FleetCommand {
    /// Print every host's records from the broker, merged, each line with
    /// its host.
    Tail(FleetTailArgs),
    /// List the hosts in the stream or topic: last index, last time and
    /// lag.
    Status(FleetStatusArgs),
}

#[derive(Debug, Args)]
pub(crate) struct FleetTailArgs {
    #[command(flatten)]
    pub(crate) broker: BrokerArgs,

    /// Only hosts whose name matches this glob (* and ?).
    #[arg(long, value_name = "GLOB")]
    pub(crate) host: Option<String>,

    /// Only these types, as `weir log tail --mask` takes them.
    #[arg(long, value_name = "TYPES", value_parser = parse_mask, allow_hyphen_values = true)]
    pub(crate) mask: Option<TypeMask>,

    /// Wait for new records after the last one.
    #[arg(short, long)]
    pub(crate) follow: bool,

    /// One JSON object per line: the record's JSON form with `host`.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct FleetStatusArgs {
    #[command(flatten)]
    pub(crate) broker: BrokerArgs,

    /// One JSON object per host, one per line.
    #[arg(long)]
    pub(crate) json: bool,
}
