//! `GET /v1/status` (`weir status --json`): what the daemon says of itself,
//! as one typed object. The daemon fills it and serves it; the CLI reads it
//! back into the same struct, so the two cannot disagree on a name. Its
//! text form, the summary `weir status` prints, is [`crate::status_text`].
//!
//! Almost every member is an `Option`. The daemon sets each one it has
//! (null only where the field says so), but the CLI may ask a daemon of
//! another version, one started before an upgrade: a figure that daemon
//! does not report reads as `None` and one this struct does not know is
//! ignored, so the summary leaves out what it cannot show rather than
//! failing. A `None` serializes as `null`; no field is ever left out.

use std::os::unix::ffi::OsStrExt;

use serde::{Deserialize, Serialize};

use crate::bytes::ByteBuf;
use crate::json::to_sorted_string;

/// The status object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// weir's version.
    pub version: Option<String>,
    /// The daemon's pid.
    pub pid: Option<u32>,
    /// When it started, RFC 3339.
    pub started: Option<String>,
    /// When it started, ns since the epoch.
    pub started_ns: Option<u64>,
    /// Seconds since it started.
    pub uptime_seconds: Option<f64>,
    /// The state directory.
    pub state_dir: Option<String>,
    /// The API socket.
    pub socket: Option<String>,
    /// The configuration file; null when none was read.
    pub config: Option<String>,
    /// The mount tracker; null when mounts are not tracked.
    pub mounts: Option<MountsStatus>,
    /// The device tracker; null when devices are not tracked.
    pub devices: Option<DevicesStatus>,
    /// The filesystem tracker; null when no directory tree is watched
    /// (`[fs] watch` is empty), or from a daemon that predates it.
    pub fs: Option<FsStatus>,
    /// The shipper to a broker; null when `[ship]` names none, or from a
    /// daemon that predates it.
    pub ship: Option<ShipStatus>,
    /// The changelog.
    #[serde(default)]
    pub log: LogStatus,
    /// What the start found.
    pub reconcile: Option<ReconcileReport>,
    /// The API's followers, limits and access.
    #[serde(default)]
    pub api: ApiStatus,
}

/// The mount tracker.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MountsStatus {
    /// `fanotify` or `mountinfo`.
    pub backend: Option<String>,
    /// Why `auto` fell back to mountinfo; null when it did not.
    pub fallback_reason: Option<String>,
    /// Whether the tracker's thread still runs.
    pub running: Option<bool>,
    /// Mounts in the table.
    pub count: Option<u64>,
    /// fanotify events read.
    pub events: Option<u64>,
    /// Reads of the fanotify group that returned events.
    pub event_reads: Option<u64>,
    /// Times the tracker's loop woke.
    pub wakeups: Option<u64>,
    /// fanotify queue overflows.
    pub overflows: Option<u64>,
    /// Whole readings of the table.
    pub readings: Option<u64>,
    /// Changes logged.
    pub changes: Option<u64>,
    /// The tracker's CPU time.
    pub cpu_seconds: Option<f64>,
    /// Of that, the whole readings'.
    pub reading_cpu_seconds: Option<f64>,
    /// Changes logged as reconciled at start.
    pub reconciled: Option<u64>,
    /// Grows with every change of the table.
    pub generation: Option<u64>,
}

/// The device and LVM tracker.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DevicesStatus {
    /// The uevent groups it listens to: `kernel`, `udev` or `kernel+udev`.
    pub uevents: Option<String>,
    /// Whether the tracker's thread still runs.
    pub running: Option<bool>,
    /// Block devices.
    pub devices: Option<u64>,
    /// LVM physical volumes.
    pub pvs: Option<u64>,
    /// LVM volume groups.
    pub vgs: Option<u64>,
    /// uevents received.
    pub uevents_seen: Option<u64>,
    /// uevents refused (a sender other than the kernel or udevd).
    pub uevents_refused: Option<u64>,
    /// uevents applied to the inventory.
    pub uevents_applied: Option<u64>,
    /// Times the kernel dropped uevents.
    pub overflows: Option<u64>,
    /// Changes logged.
    pub changes: Option<u64>,
    /// `--on-vg-complete` commands run.
    pub activations: Option<u64>,
    /// Devices probed.
    pub probes: Option<u64>,
    /// Bytes read from devices.
    pub bytes_read: Option<u64>,
    /// Whole re-reads.
    pub resyncs: Option<u64>,
    /// Devices probed after LVM wrote to them, or polled.
    pub writes: Option<u64>,
    /// Times inotify dropped write events.
    pub write_overflows: Option<u64>,
    /// Devices watched for writes.
    pub watched: Option<u64>,
    /// Devices polled instead (past the inotify watch limit).
    pub unwatched: Option<u64>,
    /// Readings that found a metadata text being written.
    pub torn: Option<u64>,
    /// Metadata texts read.
    pub texts_read: Option<u64>,
    /// Their length.
    pub text_bytes_read: Option<u64>,
    /// Changes logged as reconciled at start.
    pub reconciled: Option<u64>,
    /// Changes with every change of the inventory.
    pub generation: Option<u64>,
}

/// The filesystem tracker: its counters (`weir_fs::TrackerStats`) and
/// each watched root (`weir_fs::RootStatus`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsStatus {
    /// Whether the tracker's thread still runs.
    pub running: Option<bool>,
    /// Reads of the fanotify group that returned events.
    pub reads: Option<u64>,
    /// Events read, on every watched filesystem (inside the roots or not).
    pub events: Option<u64>,
    /// Records logged.
    pub records: Option<u64>,
    /// Queue overflows, each followed by a comparison of every root with
    /// a walk.
    pub overflows: Option<u64>,
    /// Events dropped while a comparison was due.
    pub dropped: Option<u64>,
    /// Barrier rounds (`weir sync`).
    pub syncs: Option<u64>,
    /// Events the kernel has queued and the tracker not yet read.
    pub backlog: Option<u64>,
    /// The watched roots, in the order they were configured.
    #[serde(default)]
    pub roots: Vec<FsRootStatus>,
}

/// One watched root: what `weir fs` lists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsRootStatus {
    /// The root, absolute and without symlinks; bytes (a string when
    /// UTF-8, else an array of byte values).
    #[serde(default)]
    pub path: ByteBuf,
    /// The root directory's id (fsid and file handle), hex.
    pub id: Option<String>,
    /// The filesystem type.
    pub fstype: Option<String>,
    /// How its filesystem is marked: `filesystem`, or `btrfs-top-level`
    /// (a btrfs subvolume, marked through the top level).
    pub mark: Option<String>,
    /// The fsid its events carry, `val[0]:val[1]` in hex.
    pub fsid: Option<String>,
    /// `reading` while the tree is read for the first time (its changes
    /// wait in the queue), then `watching`; `removed` or `moved` once the
    /// root directory went and its watch ended.
    pub state: Option<String>,
    /// Entries in the tree below the root (the root not counted; while
    /// reading, those read so far).
    pub entries: Option<u64>,
    /// Directories in the tree, the root included.
    pub dirs: Option<u64>,
    /// Events that concerned the root.
    pub events: Option<u64>,
    /// Records logged for it.
    pub records: Option<u64>,
    /// Records decided by a look at the live entry (`VERIFIED`).
    pub verified: Option<u64>,
    /// Events about the rest of its filesystem, ignored.
    pub outside: Option<u64>,
    /// Comparisons with a walk (after lost events).
    pub compares: Option<u64>,
    /// Files written and waiting for their MTIME.
    pub dirty: Option<u64>,
    /// Events queued for the tracker and not yet read: one queue serves
    /// every root, so each root shows the same figure.
    pub backlog: Option<u64>,
    /// Its long work (the first reading, a reconciliation, a rescan) as
    /// far as it has gone; `null` when there is none.
    #[serde(default)]
    pub progress: Option<FsProgress>,
}

/// A watched root's long work, as far as it has gone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsProgress {
    /// `walking`, `loading`, `replaying`, `rescanning` or `comparing`.
    pub phase: Option<String>,
    /// What `done` and `total` count: `entries`, `records` or
    /// `directories`.
    pub unit: Option<String>,
    /// How much is done.
    pub done: Option<u64>,
    /// How much there is; `null` when not known (a walk of a tree never
    /// seen).
    pub total: Option<u64>,
}

impl FsProgress {
    /// The share done, in whole percent, when the total is known.
    pub fn percent(&self) -> Option<u64> {
        let (done, total) = (self.done?, self.total?);
        // Nothing to do is all done; in u128, so no figure overflows.
        let p = (u128::from(done.min(total)) * 100).checked_div(u128::from(total));
        Some(p.map_or(100, |p| u64::try_from(p).unwrap_or(100)))
    }

    /// As a table cell, one word: `rescanning:41%`, or `walking:52311`
    /// (entries so far) when the total is not known.
    pub fn cell(&self) -> String {
        let phase = self.phase.as_deref().unwrap_or("?");
        match (self.percent(), self.done) {
            (Some(p), _) => format!("{phase}:{p}%"),
            (None, Some(d)) => format!("{phase}:{d}"),
            (None, None) => phase.to_owned(),
        }
    }

    /// In words: `rescanning 41234 of 100001 directories (41%)`, or
    /// `walking 52311 entries`.
    pub fn words(&self) -> String {
        let phase = self.phase.as_deref().unwrap_or("?");
        let unit = self.unit.as_deref().unwrap_or("");
        let done = self.done.map_or_else(|| "?".to_owned(), |d| d.to_string());
        match (self.total, self.percent()) {
            (Some(t), Some(p)) => format!("{phase} {done} of {t} {unit} ({p}%)"),
            _ => format!("{phase} {done} {unit}"),
        }
    }
}

impl From<&weir_fs::Progress> for FsProgress {
    fn from(p: &weir_fs::Progress) -> FsProgress {
        FsProgress {
            phase: Some(p.phase.name().to_owned()),
            unit: Some(p.phase.unit().to_owned()),
            done: Some(p.done),
            total: p.total,
        }
    }
}

impl FsStatus {
    /// The tracker's state as the daemon reports it: whether its thread
    /// runs, its counters and its roots.
    pub fn new(
        running: bool,
        stats: &weir_fs::TrackerStats,
        roots: &[weir_fs::RootStatus],
    ) -> FsStatus {
        FsStatus {
            running: Some(running),
            reads: Some(stats.reads),
            events: Some(stats.events),
            records: Some(stats.records),
            overflows: Some(stats.overflows),
            dropped: Some(stats.dropped),
            syncs: Some(stats.syncs),
            backlog: Some(stats.backlog),
            roots: roots
                .iter()
                .map(|r| FsRootStatus {
                    backlog: Some(stats.backlog),
                    ..FsRootStatus::from(r)
                })
                .collect(),
        }
    }
}

impl From<&weir_fs::RootStatus> for FsRootStatus {
    fn from(r: &weir_fs::RootStatus) -> FsRootStatus {
        FsRootStatus {
            path: ByteBuf(r.path.as_os_str().as_bytes().to_vec()),
            id: Some(r.id.clone()),
            fstype: Some(r.fstype.clone()),
            mark: Some(r.mark.name().to_owned()),
            fsid: Some(r.fsid.clone()),
            state: Some(r.state.name().to_owned()),
            entries: Some(r.entries),
            dirs: Some(r.dirs),
            events: Some(r.events),
            records: Some(r.records),
            verified: Some(r.verified),
            outside: Some(r.outside),
            compares: Some(r.compares),
            dirty: Some(r.dirty),
            backlog: None,
            progress: r.progress.as_ref().map(FsProgress::from),
        }
    }
}

/// The shipper (`weir_ship::ShipReport`, and where it ships to).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShipStatus {
    /// The broker's kind: `nats` or `kafka`.
    pub sink: Option<String>,
    /// The broker's URLs, without credentials.
    pub url: Option<String>,
    /// The stream (NATS) or topic (Kafka) shipped into.
    pub stream: Option<String>,
    /// The host name shipped under.
    pub host: Option<String>,
    /// `connecting`, `shipping`, `retrying` or `stopped`.
    pub state: Option<String>,
    /// Records the broker has acknowledged since the daemon started.
    pub shipped: Option<u64>,
    /// The last index the broker holds for this host.
    pub acked_index: Option<u64>,
    /// Records published and not yet acknowledged.
    pub in_flight: Option<u64>,
    /// Durable records of the log the broker does not hold yet.
    pub lag: Option<u64>,
    /// Batches acknowledged.
    pub batches: Option<u64>,
    /// Times the shipper backed off and tried again.
    pub retries: Option<u64>,
    /// Records the log's retention dropped before they were shipped.
    pub gap_records: Option<u64>,
    /// The last error, until a batch succeeds after it; null when none.
    pub last_error: Option<String>,
}

/// The changelog (`weir_log::Stats`, and whether it is poisoned).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogStatus {
    /// The log's directory.
    pub dir: Option<String>,
    /// The oldest index kept.
    pub first_index: Option<u64>,
    /// The last index written.
    pub last_index: Option<u64>,
    /// The last index on disk for sure.
    pub durable_index: Option<u64>,
    /// Segment files.
    pub segments: Option<u64>,
    /// Their bytes.
    pub bytes: Option<u64>,
    /// The spare segment file's length (0 if none).
    pub spare_bytes: Option<u64>,
    /// Batches written.
    pub commits: Option<u64>,
    /// fsyncs.
    pub syncs: Option<u64>,
    /// Bytes written.
    pub bytes_written: Option<u64>,
    /// Writes that failed (and were retried).
    pub write_errors: Option<u64>,
    /// Consumers evicted.
    pub evictions: Option<u64>,
    /// Appends that waited for room in the ring.
    pub ring_full_waits: Option<u64>,
    /// Frames lifted past a stalled writer.
    pub lifted: Option<u64>,
    /// Frames spilled by writers a lap ahead.
    pub spilled: Option<u64>,
    /// fsyncs before which the committer waited for durable writers.
    pub group_commit_waits: Option<u64>,
    /// Of those waits, the ones that ran to their deadline.
    pub group_commit_deadlines: Option<u64>,
    /// Durable waits that found their record not yet durable.
    pub durable_waits: Option<u64>,
    /// Of those, the ones that slept on the futex.
    pub durable_sleeps: Option<u64>,
    /// Times polling was shut for a second.
    pub durable_poll_shuts: Option<u64>,
    /// Consumers registered.
    pub consumers: Option<u64>,
    /// The commit thread's CPU time, ns; null where /proc is not
    /// available.
    pub committer_cpu_ns: Option<u64>,
    /// Whether an fsync failure has poisoned the log.
    pub poisoned: Option<bool>,
}

/// The API.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiStatus {
    /// `follow` streams open.
    pub followers: Option<u64>,
    /// The most `follow` streams open at once.
    pub max_followers: Option<u64>,
    /// The largest request body accepted.
    pub max_body_bytes: Option<u64>,
    /// Whether anyone who can reach the socket may read.
    pub public_read: Option<bool>,
    /// The group whose members may use the API; null: only root and the
    /// daemon's uid.
    pub group: Option<String>,
}

/// What the daemon's start found: whether a checkpoint of the last
/// inventory was used, why not, and how many changes each source logged
/// as reconciled. The daemon builds it once, at start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconcileReport {
    /// Whether a checkpoint was read and compared with the live system.
    pub checkpoint_used: bool,
    /// Why no checkpoint was used (missing, damaged, another boot), when
    /// none was.
    pub not_used_reason: Option<String>,
    /// Whether the daemon that wrote the checkpoint stopped cleanly;
    /// `None` without a checkpoint.
    pub previous_clean: Option<bool>,
    /// Mount changes logged as reconciled; `None` when mounts are off.
    pub mounts: Option<u64>,
    /// Device and LVM changes logged as reconciled; `None` when devices
    /// are off.
    pub devices: Option<u64>,
}

impl Status {
    /// The object as the daemon serves it: compact, every object's keys
    /// in the order of their names, as `serde_json`'s maps keep them (so
    /// `weir status --json`, which prints the daemon's object as a map,
    /// gives the same bytes).
    pub fn to_json(&self) -> String {
        to_sorted_string(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn serves_sorted_keys_and_nulls_for_what_is_off() {
        let s = Status {
            version: Some("0.1.0".into()),
            pid: Some(7),
            log: LogStatus {
                first_index: Some(1),
                ..LogStatus::default()
            },
            reconcile: Some(ReconcileReport::default()),
            ..Status::default()
        };
        let text = s.to_json();
        assert!(
            text.starts_with(r#"{"api":{"followers":null,"group":null,"#),
            "{text}"
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["mounts"], Value::Null);
        assert_eq!(v["devices"], Value::Null);
        assert_eq!(v["fs"], Value::Null);
        assert_eq!(v["ship"], Value::Null);
        assert_eq!(v["config"], Value::Null);
        assert_eq!(v["log"]["first_index"], json!(1));
        assert_eq!(v["log"]["committer_cpu_ns"], Value::Null);
        assert_eq!(
            v["reconcile"],
            json!({"checkpoint_used": false, "not_used_reason": null,
                   "previous_clean": null, "mounts": null, "devices": null})
        );
        assert_eq!(serde_json::from_value::<Status>(v).unwrap(), s);
    }

    #[test]
    fn the_fs_section_has_every_figure_and_paths_as_bytes() {
        let s = Status {
            fs: Some(FsStatus {
                running: Some(true),
                reads: Some(3),
                events: Some(12),
                records: Some(10),
                overflows: Some(0),
                dropped: Some(0),
                syncs: Some(2),
                backlog: Some(0),
                roots: vec![
                    FsRootStatus {
                        path: ByteBuf(b"/srv".to_vec()),
                        id: Some("0a0b".into()),
                        fstype: Some("ext4".into()),
                        mark: Some("filesystem".into()),
                        fsid: Some("0000fd00:00000000".into()),
                        state: Some("watching".into()),
                        entries: Some(5),
                        dirs: Some(2),
                        events: Some(12),
                        records: Some(10),
                        verified: Some(1),
                        outside: Some(4),
                        compares: Some(0),
                        dirty: Some(0),
                        backlog: Some(0),
                        progress: None,
                    },
                    FsRootStatus {
                        path: ByteBuf(b"/x\xff".to_vec()),
                        ..FsRootStatus::default()
                    },
                ],
            }),
            ..Status::default()
        };
        let text = s.to_json();
        let v: Value = serde_json::from_str(&text).unwrap();
        let fs = &v["fs"];
        let keys: Vec<&String> = fs.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "backlog",
                "dropped",
                "events",
                "overflows",
                "reads",
                "records",
                "roots",
                "running",
                "syncs"
            ]
        );
        assert_eq!(
            fs["roots"][0],
            json!({"path": "/srv", "id": "0a0b", "fstype": "ext4", "mark": "filesystem",
                   "fsid": "0000fd00:00000000", "state": "watching", "entries": 5, "dirs": 2,
                   "events": 12, "records": 10, "verified": 1, "outside": 4, "compares": 0,
                   "dirty": 0, "backlog": 0, "progress": null})
        );
        // A path that is not UTF-8 is an array of its bytes; a figure not
        // reported is a null, never left out.
        assert_eq!(fs["roots"][1]["path"], json!([47, 120, 255]));
        assert_eq!(fs["roots"][1]["entries"], Value::Null);
        assert_eq!(fs["roots"][1].as_object().unwrap().len(), 16);
        assert_eq!(serde_json::from_value::<Status>(v).unwrap(), s);
        // A daemon that reports no roots, or an older one without them.
        let bare: FsStatus = serde_json::from_value(json!({"running": false})).unwrap();
        assert_eq!((bare.running, bare.roots.len()), (Some(false), 0));
    }

    #[test]
    fn reads_what_another_version_sends() {
        // Older: figures missing. Newer: figures this struct lacks.
        let s: Status = serde_json::from_value(json!({
            "version": "0.0.9",
            "mounts": {"backend": "mountinfo", "some_new_figure": 3},
            "log": {"last_index": 9}
        }))
        .unwrap();
        assert_eq!(s.version.as_deref(), Some("0.0.9"));
        assert_eq!(s.pid, None);
        let m = s.mounts.unwrap();
        assert_eq!((m.backend.as_deref(), m.count), (Some("mountinfo"), None));
        assert_eq!((s.log.first_index, s.log.last_index), (None, Some(9)));
        assert_eq!(s.reconcile, None);
        assert_eq!(s.fs, None);
        assert_eq!(s.api, ApiStatus::default());
    }
}
