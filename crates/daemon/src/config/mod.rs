//! The daemon's configuration: one TOML file, every key also a `weir run`
//! flag, validated before anything starts.
//!
//! - this file: [`Config`] and its sections, with their defaults;
//! - `read`: the TOML file, key by key, so an unknown key or a value of the
//!   wrong type is reported by its full dotted name (`mounts.budget_percent`);
//! - `overrides`: [`ConfigOverrides`], the flags laid over the file;
//! - `validate`: the checks of values and of keys against each other;
//! - `render`: the configuration written back out as TOML;
//! - `options`: what each section becomes (weir-log `Options`, the
//!   trackers' options, weir-fs's for `[fs]`);
//! - `error`: [`ConfigError`] itself.
//!
//! Flags are named after keys: `--SECTION-KEY` with `_` as `-`
//! (`mounts.budget_percent` is `--mounts-budget-percent`); the top-level
//! `state_dir` and `socket` are `--state-dir` and `--socket`.

mod error;
mod options;
mod overrides;
mod read;
mod render;
mod validate;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;
use weir_mounts::BackendChoice;

pub use error::{ConfigError, flag_name};
pub use options::{HOST_KEEP_AGE_SECS, HOST_KEEP_MIB, Writers};
pub use overrides::ConfigOverrides;
pub use read::MAX_FILE_BYTES;
pub use validate::parse_mode;

/// The whole configuration. `Default` is what `weir run` uses with no file
/// and no flags, apart from `state_dir` and `socket`, which depend on who
/// runs it and are filled in by the binary.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Config {
    /// The file this configuration was read from, if any (not a key).
    #[serde(skip)]
    pub source: Option<PathBuf>,
    /// The state directory: the log (`log/`) and the inventory checkpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_dir: Option<PathBuf>,
    /// The API's Unix socket (ignored under socket activation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket: Option<PathBuf>,
    /// Who may use the socket.
    pub access: AccessConfig,
    /// The mount tracker.
    pub mounts: MountsConfig,
    /// The device and LVM tracker.
    pub devices: DevicesConfig,
    /// The filesystem tracker: the directory trees whose changes are
    /// logged.
    pub fs: FsConfig,
    /// Shipping the log to a broker.
    pub ship: ShipConfig,
    /// The changelog.
    pub log: LogConfig,
    /// The HTTP API's limits.
    pub api: ApiConfig,
    /// The daemon itself.
    pub daemon: DaemonConfig,
}

/// `[access]`: the socket's owner group and mode, and whether everyone may
/// read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AccessConfig {
    /// The group that owns the socket and may call every endpoint; `None`
    /// (an empty string in the file) leaves the socket to root alone.
    #[serde(serialize_with = "render::or_empty")]
    pub group: Option<String>,
    /// Read-only endpoints are open to every local user (the socket
    /// becomes 0666; mutations still need root or the group).
    pub public_read: bool,
    /// The socket's mode; `None` means 0660, or 0666 with `public_read`.
    #[serde(
        serialize_with = "render::mode",
        skip_serializing_if = "Option::is_none"
    )]
    pub socket_mode: Option<u32>,
}

impl Default for AccessConfig {
    fn default() -> Self {
        AccessConfig {
            group: Some("weir".to_owned()),
            public_read: false,
            socket_mode: None,
        }
    }
}

impl AccessConfig {
    /// The mode the socket gets: `socket_mode`, else 0660 or, with
    /// `public_read`, 0666.
    pub fn effective_mode(&self) -> u32 {
        self.socket_mode
            .unwrap_or(if self.public_read { 0o666 } else { 0o660 })
    }
}

/// `[mounts]`: the mount tracker.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MountsConfig {
    /// Whether to track mounts at all.
    pub enabled: bool,
    /// `auto`, `fanotify` or `mountinfo`.
    #[serde(serialize_with = "render::backend")]
    pub backend: BackendChoice,
    /// The share of one core, in percent, that whole-table readings may use.
    pub budget_percent: f64,
    /// Compare the whole table this often even without a notification;
    /// 0 turns the audit off.
    pub audit_secs: u64,
}

impl Default for MountsConfig {
    fn default() -> Self {
        let t = weir_mounts::TrackerOptions::default();
        MountsConfig {
            enabled: true,
            backend: t.backend,
            budget_percent: t.budget * 100.0,
            audit_secs: t.audit_interval.map_or(0, |d| d.as_secs()),
        }
    }
}

/// `[devices]`: the block device and LVM tracker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DevicesConfig {
    /// Whether to track block devices at all.
    pub enabled: bool,
    /// lvm.conf `devices/filter` patterns (`a|REGEX|`, `r|REGEX|`); empty
    /// accepts every device.
    pub filter: Vec<String>,
    /// Run `CMD VGNAME` each time a VG becomes complete; split on
    /// whitespace, no shell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_vg_complete: Option<String>,
}

impl Default for DevicesConfig {
    fn default() -> Self {
        DevicesConfig {
            enabled: true,
            filter: Vec::new(),
            on_vg_complete: None,
        }
    }
}

/// `[fs]`: the filesystem change journal (weir-fs). With no roots, which
/// is the default, no filesystem tracker runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FsConfig {
    /// The directories whose trees are watched: every change to them is
    /// logged (CREAT, UNLNK, RENME, ...). They may share a filesystem but
    /// not overlap. Each needs a fanotify filesystem mark, so root; a
    /// root that cannot be watched stops the daemon's start.
    pub watch: Vec<PathBuf>,
    /// A file kept open and written gets an MTIME record at most this
    /// often, in milliseconds; one closed after writing gets it at the
    /// close.
    pub mtime_interval_ms: u64,
    /// Whether a restart is content-exact: besides the namespace, every
    /// file is looked at, and those written or with attributes set while
    /// no daemon watched get an MTIME or SATTR record (a read of every
    /// directory, as a full walk costs).
    pub content: bool,
}

impl Default for FsConfig {
    fn default() -> Self {
        options::fs_defaults()
    }
}

/// `[ship]`: the log shipped to NATS JetStream or Kafka (weir-ship), as
/// `weir ship` does in the foreground. With no server, the default,
/// nothing is shipped; one sink at most.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ShipConfig {
    /// The NATS servers' URLs, comma-separated; `None` (an empty string
    /// in the file) ships nothing.
    #[serde(serialize_with = "render::or_empty")]
    pub nats: Option<String>,
    /// The Kafka bootstrap brokers, comma-separated (`host:9092`);
    /// `None` (an empty string in the file) ships nothing there.
    #[serde(serialize_with = "render::or_empty")]
    pub kafka: Option<String>,
    /// The host name on the broker; `None` (an empty string) is the
    /// machine's.
    #[serde(serialize_with = "render::or_empty")]
    pub host: Option<String>,
    /// The JetStream stream of the records, created if missing.
    pub stream: String,
    /// The Kafka topic of the records, created if missing (its progress
    /// topic is `<topic>-progress`).
    pub topic: String,
    /// Partitions of Kafka topics the shipper creates.
    pub partitions: u64,
    /// The log consumer that holds retention back for the broker; `None`
    /// (an empty string) is `ship-nats` or `ship-kafka`.
    #[serde(serialize_with = "render::or_empty")]
    pub consumer: Option<String>,
    /// The types shipped, as `weir log tail --mask` takes them; empty
    /// ships every type.
    pub mask: String,
    /// Replicas of a stream or topics the shipper creates.
    pub replicas: u64,
    /// How long a record waits for others to share its batch, ms.
    pub linger_ms: u64,
    /// librdkafka properties of the Kafka client (`security.protocol`,
    /// `ssl.ca.location`, `sasl.*`, ...), by name: `[ship.kafka_properties]`.
    pub kafka_properties: BTreeMap<String, String>,
}

impl Default for ShipConfig {
    fn default() -> Self {
        ShipConfig {
            nats: None,
            kafka: None,
            host: None,
            stream: "WEIR".to_owned(),
            topic: "weir".to_owned(),
            partitions: 1,
            consumer: None,
            mask: String::new(),
            replicas: 1,
            linger_ms: 50,
            kafka_properties: BTreeMap::new(),
        }
    }
}

/// What the log does when it reaches `max_mib` while a consumer still
/// needs the oldest segment (weir-log's `FullPolicy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OnFull {
    /// Evict the most idle consumer, with a MARK saying so.
    #[default]
    EvictMostIdle,
    /// Delete the oldest segments anyway.
    DropOldest,
}

impl std::str::FromStr for OnFull {
    type Err = ConfigError;
    /// `evict_most_idle` or `drop_oldest`.
    fn from_str(s: &str) -> Result<OnFull, ConfigError> {
        read::parse_on_full(s)
    }
}

/// How the log reserves a new segment's space (weir-log's `Preallocation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Preallocate {
    /// Zeros written ahead on ext4 and xfs (cheaper durable commits),
    /// `fallocate` alone elsewhere.
    #[default]
    Auto,
    /// `fallocate` alone: half the bytes written.
    Reserve,
    /// Zeros written ahead on any filesystem.
    ZeroFill,
}

impl std::str::FromStr for Preallocate {
    type Err = ConfigError;
    /// `auto`, `reserve` or `zero_fill`.
    fn from_str(s: &str) -> Result<Preallocate, ConfigError> {
        read::parse_preallocate(s)
    }
}

/// `[log]`: the changelog's options (weir-log `Options` and `Retention`).
/// Durations and limits of 0 mean "none" where the key says so.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LogConfig {
    /// Appended records reach the OS within this many milliseconds.
    pub flush_ms: u64,
    /// Records are fsynced at least this often; 0 only on request.
    pub sync_ms: u64,
    /// The size of each segment file, MiB.
    pub segment_mib: u64,
    /// How each segment's space is reserved.
    pub preallocate: Preallocate,
    /// Slots in the append ring (a power of two); unset, the opener's
    /// default (see [`LogConfig::options_for`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ring_slots: Option<u64>,
    /// The longest an append waits for room, milliseconds.
    pub append_timeout_ms: u64,
    /// The longest the committer waits before an fsync for the durable
    /// writers the last one released, microseconds; 0 not at all.
    pub group_commit_us: u64,
    /// The total size of the log's files (its segments and the spare), MiB.
    pub max_mib: u64,
    /// With no consumers, segments older than this are deleted; 0 never.
    pub max_age_secs: u64,
    /// The floor's size, MiB: segments every consumer has cleared are kept
    /// while they hold any of the newest this many MiB of the log and are
    /// younger than `keep_age_secs`; 0 no floor (deleted once cleared).
    pub keep_mib: u64,
    /// The floor's age: cleared segments whose newest record is older go;
    /// 0 no floor.
    pub keep_age_secs: u64,
    /// What to do at `max_mib` while consumers lag.
    pub on_full: OnFull,
    /// A consumer this many records behind is evicted; 0 never.
    pub max_idle_records: u64,
    /// A consumer that has not cleared for this long, while a record has
    /// waited for it as long, is evicted; 0 never.
    pub max_idle_secs: u64,
}

impl Default for LogConfig {
    fn default() -> Self {
        options::log_defaults()
    }
}

/// `[api]`: limits of the HTTP API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ApiConfig {
    /// The largest request body accepted.
    pub max_body_bytes: u64,
    /// The most `follow=true` streams open at once.
    pub max_followers: u64,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            max_body_bytes: 1 << 20,
            max_followers: 1024,
        }
    }
}

/// `[daemon]`: the host itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DaemonConfig {
    /// How often the inventory checkpoint is rewritten, if it changed.
    pub checkpoint_secs: u64,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig { checkpoint_secs: 5 }
    }
}
