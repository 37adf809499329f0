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

use serde::{Deserialize, Serialize};

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
        assert_eq!(s.api, ApiStatus::default());
    }
}
