//! The options of `weir run`: every key of the configuration file as a
//! flag.

use std::path::PathBuf;

use clap::Args;
use weir_mounts::BackendChoice;

use super::{backend_parser, parse_percent};

/// `weir run`: every key of the configuration file as a flag
/// (`--SECTION-KEY`, `_` as `-`), laid over the file. `--config`,
/// `--state-dir` and `--socket` are the global options; the socket may also
/// come from `$WEIR_SOCKET`. Precedence: flag, environment, file, default.
#[derive(Debug, Default, Args)]
pub(crate) struct RunArgs {
    /// Print the configuration in effect (defaults, file, environment and
    /// flags) as TOML, and exit.
    #[arg(long)]
    pub(crate) print_config: bool,

    /// The group that owns the socket and may use every endpoint; "" for
    /// none (root only) [default: weir].
    #[arg(long, value_name = "NAME", help_heading = "Access")]
    pub(crate) access_group: Option<String>,
    /// Open the read-only endpoints to every local user.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = "Access")]
    pub(crate) access_public_read: Option<bool>,
    /// The socket's mode, in octal [default: 0660, or 0666 with
    /// public read].
    #[arg(long, value_name = "MODE", value_parser = parse_mode, help_heading = "Access")]
    pub(crate) access_socket_mode: Option<u32>,

    /// Track mounts [default: true].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = "Mounts")]
    pub(crate) mounts_enabled: Option<bool>,
    /// fanotify, mountinfo, or auto [default: auto].
    #[arg(long, value_name = "BACKEND", value_parser = backend_parser(), help_heading = "Mounts")]
    pub(crate) mounts_backend: Option<BackendChoice>,
    /// The share of one CPU, in percent, whole-table readings may use
    /// [default: 5].
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent, help_heading = "Mounts")]
    pub(crate) mounts_budget_percent: Option<f64>,
    /// Compare the whole table this often; 0 turns it off [default: 30].
    #[arg(long, value_name = "SECS", help_heading = "Mounts")]
    pub(crate) mounts_audit_secs: Option<u64>,

    /// Track block devices and LVM [default: true].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = "Devices")]
    pub(crate) devices_enabled: Option<bool>,
    /// A device filter pattern (`a|REGEX|`, `r|REGEX|`); repeatable, in
    /// order; replaces the file's list.
    #[arg(long, value_name = "PATTERN", help_heading = "Devices")]
    pub(crate) devices_filter: Vec<String>,
    /// Run `CMD VGNAME` each time a VG becomes complete; "" for none.
    #[arg(long, value_name = "CMD", help_heading = "Devices")]
    pub(crate) devices_on_vg_complete: Option<String>,

    /// Watch this directory tree: log every change to it (CREAT, UNLNK,
    /// RENME, ...); repeatable; replaces the file's list. Needs root; a
    /// root that cannot be watched stops the start [default: none].
    #[arg(long, value_name = "PATH", help_heading = "Filesystem")]
    pub(crate) fs_watch: Vec<PathBuf>,
    /// A file kept open and written gets an MTIME record at most this
    /// often [default: 1000].
    #[arg(long, value_name = "MS", help_heading = "Filesystem")]
    pub(crate) fs_mtime_interval_ms: Option<u64>,
    /// Restarts are content-exact: every file is looked at, and those
    /// written or with attributes set while no daemon watched get an MTIME
    /// or SATTR record [default: false].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = "Filesystem")]
    pub(crate) fs_content: Option<bool>,

    /// Ship the log to NATS JetStream at these servers (comma-separated
    /// URLs); "" for none [default: none].
    #[arg(long, value_name = "URL", help_heading = "Shipping")]
    pub(crate) ship_nats: Option<String>,
    /// Ship the log to Kafka at these bootstrap brokers (comma-separated
    /// host:port); "" for none [default: none].
    #[arg(long, value_name = "BROKERS", help_heading = "Shipping")]
    pub(crate) ship_kafka: Option<String>,
    /// The host name on the broker; "" for the machine's [default: the
    /// machine's].
    #[arg(long, value_name = "NAME", help_heading = "Shipping")]
    pub(crate) ship_host: Option<String>,
    /// The JetStream stream, created if missing [default: WEIR].
    #[arg(long, value_name = "NAME", help_heading = "Shipping")]
    pub(crate) ship_stream: Option<String>,
    /// The Kafka topic, created if missing [default: weir].
    #[arg(long, value_name = "NAME", help_heading = "Shipping")]
    pub(crate) ship_topic: Option<String>,
    /// Partitions of Kafka topics the shipper creates [default: 1].
    #[arg(long, value_name = "N", help_heading = "Shipping")]
    pub(crate) ship_partitions: Option<u64>,
    /// The log consumer that holds retention back for the broker; "" for
    /// the sink's [default: ship-nats or ship-kafka].
    #[arg(long, value_name = "NAME", help_heading = "Shipping")]
    pub(crate) ship_consumer: Option<String>,
    /// The types shipped, as `weir log tail --mask` takes them [default:
    /// all].
    #[arg(
        long,
        value_name = "TYPES",
        allow_hyphen_values = true,
        help_heading = "Shipping"
    )]
    pub(crate) ship_mask: Option<String>,
    /// Replicas of a stream or topics the shipper creates [default: 1].
    #[arg(long, value_name = "N", help_heading = "Shipping")]
    pub(crate) ship_replicas: Option<u64>,
    /// How long a record waits for others to share its batch (each batch
    /// costs the broker an fsync) [default: 50].
    #[arg(long, value_name = "MS", help_heading = "Shipping")]
    pub(crate) ship_linger_ms: Option<u64>,
    /// A librdkafka property of the Kafka client (security.protocol,
    /// ssl.ca.location, sasl.*, ...); repeatable; each is set over the
    /// file's [ship.kafka_properties].
    #[arg(long, value_name = "KEY=VALUE", value_parser = super::ship::parse_property, help_heading = "Shipping")]
    pub(crate) ship_kafka_property: Vec<(String, String)>,

    /// Appended records reach the OS within this many ms [default: 10].
    #[arg(long, value_name = "MS", help_heading = "Log")]
    pub(crate) log_flush_ms: Option<u64>,
    /// Records are fsynced at least this often; 0 only on request
    /// [default: 5000].
    #[arg(long, value_name = "MS", help_heading = "Log")]
    pub(crate) log_sync_ms: Option<u64>,
    /// The size of each segment file [default: 8].
    #[arg(long, value_name = "MIB", help_heading = "Log")]
    pub(crate) log_segment_mib: Option<u64>,
    /// How a segment's space is reserved: auto (zeros written ahead on
    /// ext4 and xfs, for cheaper durable commits), reserve (fallocate
    /// alone) or zero_fill [default: auto].
    #[arg(long, value_name = "HOW", help_heading = "Log")]
    pub(crate) log_preallocate: Option<weir_daemon::config::Preallocate>,
    /// Slots in the append ring, a power of two [default: 65536].
    #[arg(long, value_name = "N", help_heading = "Log")]
    pub(crate) log_ring_slots: Option<u64>,
    /// The longest an append waits for room [default: 10000].
    #[arg(long, value_name = "MS", help_heading = "Log")]
    pub(crate) log_append_timeout_ms: Option<u64>,
    /// The longest the committer waits before an fsync for the durable
    /// writers the last one released; 0 never [default: 2000].
    #[arg(long, value_name = "US", help_heading = "Log")]
    pub(crate) log_group_commit_us: Option<u64>,
    /// The log's total size [default: 4096].
    #[arg(long, value_name = "MIB", help_heading = "Log")]
    pub(crate) log_max_mib: Option<u64>,
    /// Without consumers, delete segments older than this; 0 never
    /// [default: 0].
    #[arg(long, value_name = "SECS", help_heading = "Log")]
    pub(crate) log_max_age_secs: Option<u64>,
    /// The floor: segments every consumer has cleared stay while they
    /// hold any of the newest this many MiB of history (and are younger
    /// than --log-keep-age-secs); 0 deletes them once cleared
    /// [default: 256].
    #[arg(long, value_name = "MIB", help_heading = "Log")]
    pub(crate) log_keep_mib: Option<u64>,
    /// The floor's age: cleared segments older than this go; 0 no floor
    /// [default: 604800, a week].
    #[arg(long, value_name = "SECS", help_heading = "Log")]
    pub(crate) log_keep_age_secs: Option<u64>,
    /// At the size limit with lagging consumers: evict_most_idle or
    /// drop_oldest [default: evict_most_idle].
    #[arg(long, value_name = "POLICY", help_heading = "Log")]
    pub(crate) log_on_full: Option<weir_daemon::config::OnFull>,
    /// Evict a consumer this many records behind; 0 never.
    #[arg(long, value_name = "N", help_heading = "Log")]
    pub(crate) log_max_idle_records: Option<u64>,
    /// Evict a lagging consumer that has not cleared for this long; 0
    /// never [default: 30 days].
    #[arg(long, value_name = "SECS", help_heading = "Log")]
    pub(crate) log_max_idle_secs: Option<u64>,

    /// The largest request body accepted [default: 1048576].
    #[arg(long, value_name = "BYTES", help_heading = "API")]
    pub(crate) api_max_body_bytes: Option<u64>,
    /// The most `follow` streams open at once [default: 1024].
    #[arg(long, value_name = "N", help_heading = "API")]
    pub(crate) api_max_followers: Option<u64>,

    /// Rewrite the inventory checkpoint this often, when it changed
    /// [default: 5].
    #[arg(long, value_name = "SECS", help_heading = "Daemon")]
    pub(crate) daemon_checkpoint_secs: Option<u64>,
}

fn parse_mode(s: &str) -> Result<u32, String> {
    weir_daemon::config::parse_mode(s).map_err(str::to_owned)
}
