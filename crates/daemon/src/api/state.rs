//! What the API serves from: the log, the trackers, the access rules, the
//! limits and the facts about the running daemon. The host builds one
//! [`ApiState`] at start and hands it to [`crate::api::serve`].

use std::path::PathBuf;
use std::sync::Arc;

// The start's report is part of the status object, which weir-view defines
// for the daemon and the CLI alike.
pub use weir_view::status::ReconcileReport;

/// Everything a request may read or change.
///
/// The trackers are shared: at shutdown the host drops the server first,
/// then takes them back (`Arc::try_unwrap`) to stop them. The API holds
/// no other reference once [`crate::api::serve`] has returned.
pub struct ApiState {
    /// The changelog.
    pub log: Arc<weir_log::Log>,
    /// The mount tracker, `None` when mounts are not tracked.
    pub mounts: Option<Arc<weir_mounts::Tracker>>,
    /// The device and LVM tracker, `None` when devices are not tracked.
    pub devices: Option<Arc<weir_devices::Tracker>>,
    /// The filesystem tracker, `None` when no directory tree is watched.
    pub fs: Option<Arc<weir_fs::Tracker>>,
    /// The shipper, `None` when `[ship]` names no server.
    pub ship: Option<ShipView>,
    /// Who may read and who may change.
    pub access: Access,
    /// Facts about this daemon, for `/v1/status`.
    pub info: DaemonInfo,
    /// Bounds on what one client may cost.
    pub limits: Limits,
    /// What the start found when it compared the system with the last
    /// inventory, for `/v1/status`.
    pub reconcile: ReconcileReport,
}

/// What the API shows of the shipper: its live counters, and where it
/// ships.
#[derive(Clone, Debug)]
pub struct ShipView {
    /// The shipper's counters.
    pub stats: Arc<weir_ship::ShipStats>,
    /// The sink's kind: `nats` or `kafka`.
    pub sink: &'static str,
    /// The servers, without credentials.
    pub url: String,
    /// The stream (NATS) or topic (Kafka).
    pub stream: String,
    /// The host name shipped under.
    pub host: String,
}

impl ShipView {
    /// The `ship` section of `/v1/status`, its lag against the log's
    /// last durable index.
    pub fn status(&self, durable_index: u64) -> weir_view::status::ShipStatus {
        let r = self.stats.report();
        weir_view::status::ShipStatus {
            sink: Some(self.sink.to_owned()),
            url: Some(self.url.clone()),
            stream: Some(self.stream.clone()),
            host: Some(self.host.clone()),
            state: Some(r.state.name().to_owned()),
            shipped: Some(r.shipped),
            acked_index: Some(r.acked_index),
            in_flight: Some(r.in_flight),
            lag: Some(r.lag(durable_index)),
            batches: Some(r.batches),
            retries: Some(r.retries),
            gap_records: Some(r.gap_records),
            last_error: r.last_error,
        }
    }
}

/// The access rules (see the daemon contract).
///
/// Mutations are allowed for root, the daemon's own uid and members of
/// `group`; reads for the same peers, and for everyone when `public_read`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// The group whose members may use the API: its name (for messages)
    /// and gid. `None`: only root and the daemon's uid.
    pub group: Option<(String, u32)>,
    /// Whether anyone who can reach the socket may read.
    pub public_read: bool,
}

/// Facts about the running daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonInfo {
    /// weir's version.
    pub version: String,
    /// The daemon's pid.
    pub pid: u32,
    /// When it started, ns since the epoch.
    pub started_ns: u64,
    /// The state directory.
    pub state_dir: PathBuf,
    /// The API socket.
    pub socket: PathBuf,
    /// The configuration file, if one was read.
    pub config: Option<PathBuf>,
}

impl DaemonInfo {
    /// This process, started now, with this crate's version.
    pub fn current(state_dir: PathBuf, socket: PathBuf, config: Option<PathBuf>) -> DaemonInfo {
        DaemonInfo {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            pid: std::process::id(),
            started_ns: now_ns(),
            state_dir,
            socket,
            config,
        }
    }
}

/// Bounds on what one client may cost the daemon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest request body accepted; larger ones get 413.
    pub max_body_bytes: usize,
    /// How many `follow=true` streams may be open at once; more get 503.
    pub max_followers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 1 << 20,
            max_followers: 1024,
        }
    }
}

/// Now, ns since the epoch (0 if the clock is before it).
pub(crate) fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
