//! What each section becomes: weir-log's `Options`, the trackers' options.
//! The defaults of `[log]`, `[mounts]` and `[fs]` are read from those
//! crates' own defaults, so the two cannot drift apart; but for the log's
//! floor, which weir-log leaves off and a host sets (see
//! [`HOST_KEEP_MIB`]).

use std::time::Duration;

use weir_log::{FullPolicy, Options, Preallocation, Retention};

use super::{ConfigError, DevicesConfig, FsConfig, LogConfig, MountsConfig, OnFull, Preallocate};

const MIB: u64 = 1 << 20;

/// The floor's size on a host: the newest 256 MiB of history stay
/// readable (`weir log tail`) whatever consumers clear. A sixteenth of the
/// default size limit (4 GiB), so that consumers that lag have the rest;
/// and the size limit wins over it in any case. At a few hundred bytes a
/// record, about a million records: far more than a host's mounts and
/// devices write in a week, so the age is what usually binds.
pub const HOST_KEEP_MIB: u64 = 256;

/// The floor's age on a host: a week, long enough to look back over a
/// weekend or a maintenance window; older history goes once every
/// consumer has cleared it.
pub const HOST_KEEP_AGE_SECS: u64 = 7 * 24 * 3600;

/// Who appends to a log: what its ring is sized for when `[log]` leaves
/// `ring_slots` unset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Writers {
    /// Many threads at once (the daemon: its API, every tracker): weir-log's
    /// default ring, big enough that a writer preempted between reserving
    /// and publishing does not stall the others.
    Many,
    /// One thread (`weir fs watch`, whose tracker thread appends every
    /// record): a preempted writer stalls only itself, so the ring need
    /// only hold what the committer is behind by. Its 8192 slots are 1 MiB;
    /// weir-log's default is 8 MiB, resident once a lap has used them,
    /// which would be an eighth of the journal's memory on a tree of a
    /// million files.
    One,
}

impl Writers {
    /// The ring's slots for them.
    pub fn ring_slots(self) -> usize {
        match self {
            Writers::Many => Options::default().ring_slots,
            Writers::One => 8192,
        }
    }
}

/// `[log]`'s defaults, from weir-log's, and the host's floor.
pub(super) fn log_defaults() -> LogConfig {
    let o = Options::default();
    let r = &o.retention;
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    LogConfig {
        flush_ms: ms(o.flush_interval),
        sync_ms: o.sync_interval.map_or(0, ms),
        segment_mib: o.segment_size / MIB,
        preallocate: match o.preallocation {
            Preallocation::Reserve => Preallocate::Reserve,
            Preallocation::ZeroFill => Preallocate::ZeroFill,
            _ => Preallocate::Auto,
        },
        // Unset: each opener picks (`LogConfig::options_for`).
        ring_slots: None,
        append_timeout_ms: ms(o.append_timeout),
        group_commit_us: u64::try_from(o.group_commit_wait.as_micros()).unwrap_or(u64::MAX),
        max_mib: r.max_bytes / MIB,
        max_age_secs: r.max_age.map_or(0, |d| d.as_secs()),
        // weir-log's default is no floor, Lustre's clear-then-purge.
        keep_mib: HOST_KEEP_MIB,
        keep_age_secs: HOST_KEEP_AGE_SECS,
        on_full: match r.on_full {
            FullPolicy::DropOldest => OnFull::DropOldest,
            _ => OnFull::EvictMostIdle,
        },
        max_idle_records: r.max_idle_records.unwrap_or(0),
        max_idle_secs: r.max_idle_time.map_or(0, |d| d.as_secs()),
    }
}

/// `[fs]`'s defaults, from weir-fs's: no roots.
pub(super) fn fs_defaults() -> FsConfig {
    let t = weir_fs::TrackerOptions::default();
    FsConfig {
        watch: t.roots,
        mtime_interval_ms: u64::try_from(t.mtime_interval.as_millis()).unwrap_or(u64::MAX),
        content: t.content,
    }
}

/// 0 means "none".
fn nonzero<T>(v: u64, f: impl FnOnce(u64) -> T) -> Option<T> {
    (v != 0).then(|| f(v))
}

impl LogConfig {
    /// weir-log's options for this section (validated values assumed;
    /// weir-log checks them again when it opens), for a log with many
    /// writers, as the daemon's is.
    pub fn options(&self) -> Options {
        self.options_for(Writers::Many)
    }

    /// As [`LogConfig::options`], for a log written as `writers` say: the
    /// ring, when the file leaves it unset, is sized for them.
    pub fn options_for(&self, writers: Writers) -> Options {
        let retention = Retention {
            max_bytes: self.max_mib.saturating_mul(MIB),
            max_age: nonzero(self.max_age_secs, Duration::from_secs),
            on_full: match self.on_full {
                OnFull::EvictMostIdle => FullPolicy::EvictMostIdle,
                OnFull::DropOldest => FullPolicy::DropOldest,
            },
            max_idle_records: nonzero(self.max_idle_records, |n| n),
            max_idle_time: nonzero(self.max_idle_secs, Duration::from_secs),
            // 0 turns the floor off, in either key, as in weir-log.
            keep_bytes: self.keep_mib.saturating_mul(MIB),
            keep_age: Duration::from_secs(self.keep_age_secs),
        };
        Options::default()
            .segment_size(self.segment_mib.saturating_mul(MIB))
            .preallocation(match self.preallocate {
                Preallocate::Auto => Preallocation::Auto,
                Preallocate::Reserve => Preallocation::Reserve,
                Preallocate::ZeroFill => Preallocation::ZeroFill,
            })
            .flush_interval(Duration::from_millis(self.flush_ms))
            .sync_interval(nonzero(self.sync_ms, Duration::from_millis))
            .ring_slots(self.ring_slots.map_or(writers.ring_slots(), |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            }))
            .append_timeout(Duration::from_millis(self.append_timeout_ms))
            .group_commit_wait(Duration::from_micros(self.group_commit_us))
            .retention(retention)
    }
}

impl MountsConfig {
    /// The mount tracker's options, without a previous inventory.
    pub fn tracker_options(&self) -> weir_mounts::TrackerOptions {
        weir_mounts::TrackerOptions {
            backend: self.backend,
            budget: self.budget_percent / 100.0,
            audit_interval: nonzero(self.audit_secs, Duration::from_secs),
            ..weir_mounts::TrackerOptions::default()
        }
    }
}

impl DevicesConfig {
    /// The device tracker's options, without a previous inventory.
    pub fn tracker_options(&self) -> Result<weir_devices::TrackerOptions, ConfigError> {
        let filter =
            weir_devices::Filter::parse(&self.filter).map_err(|source| ConfigError::Filter {
                key: "devices.filter",
                source,
            })?;
        let on_vg_complete = self
            .on_vg_complete
            .as_deref()
            .map(|c| c.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .filter(|argv| !argv.is_empty());
        Ok(weir_devices::TrackerOptions {
            filter,
            on_vg_complete,
            ..weir_devices::TrackerOptions::default()
        })
    }
}

impl FsConfig {
    /// The filesystem tracker's options; `None` when no root is watched,
    /// and so no tracker runs. A daemon resumes: a root is compared with
    /// its tree as last logged (the persistent copy the host gives it,
    /// and the log after it), and what changed while no daemon watched is
    /// logged flagged `RECONCILED`.
    pub fn tracker_options(&self) -> Option<weir_fs::TrackerOptions> {
        (!self.watch.is_empty()).then(|| weir_fs::TrackerOptions {
            roots: self.watch.clone(),
            mtime_interval: Duration::from_millis(self.mtime_interval_ms),
            resume: true,
            content: self.content,
            ..weir_fs::TrackerOptions::default()
        })
    }
}
