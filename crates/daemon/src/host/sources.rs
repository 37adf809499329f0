//! The sources the daemon hosts: the mount tracker and the device tracker,
//! started from the configuration and the last run's inventory, and the
//! filesystem tracker, which resumes from the log itself (each root's last
//! description there), not from the checkpoint; all shared with the API
//! and the checkpointer, and stopped at the end.

use std::sync::Arc;

use tracing::{info, warn};
use weir_log::Log;

use super::previous::Prior;
use crate::checkpoint::Checkpoint;
use crate::config::Config;
use crate::{Error, Result};

/// The running trackers; each `None` when its source is off. Cloning shares
/// them.
#[derive(Clone)]
pub(crate) struct Sources {
    /// The mount tracker.
    pub(crate) mounts: Option<Arc<weir_mounts::Tracker>>,
    /// The device and LVM tracker.
    pub(crate) devices: Option<Arc<weir_devices::Tracker>>,
    /// The filesystem tracker: `None` when `[fs] watch` lists no root.
    pub(crate) fs: Option<Arc<weir_fs::Tracker>>,
}

impl Sources {
    /// Starts the enabled trackers, each with its part of the checkpoint,
    /// so that each logs what changed while no daemon watched. A tracker
    /// that cannot start stops the daemon's start: a source that is on but
    /// silently missing would be worse than a clear error.
    pub(crate) fn start(
        config: &Config,
        state_dir: &std::path::Path,
        log: &Arc<Log>,
        prior: &Prior,
    ) -> Result<Sources> {
        let same_boot = prior.same_boot();
        let previous = prior.checkpoint.as_ref();
        let mounts = if config.mounts.enabled {
            let opts = weir_mounts::TrackerOptions {
                previous: previous.and_then(|c| c.mounts.clone()),
                same_boot,
                ..config.mounts.tracker_options()
            };
            let t = weir_mounts::Tracker::start(Some(log.clone()), opts, None)
                .map_err(Error::Mounts)?;
            match t.fallback_reason() {
                Some(why) => warn!(
                    backend = %t.backend(),
                    why = %weir_view::chain::error_chain(why),
                    "tracking mounts without fanotify"
                ),
                None => info!(backend = %t.backend(), mounts = t.len(), "tracking mounts"),
            }
            Some(Arc::new(t))
        } else {
            None
        };
        let devices = if config.devices.enabled {
            let opts = weir_devices::TrackerOptions {
                previous: previous.and_then(|c| c.devices.clone()),
                ..config.devices.tracker_options()?
            };
            // On failure the mount tracker, already started, stops when
            // `mounts` is dropped here.
            let t = weir_devices::Tracker::start(Some(log.clone()), opts, None)
                .map_err(Error::Devices)?;
            let (n, pvs, vgs) =
                t.with_inventory(|inv| (inv.devices().count(), inv.pv_count(), inv.vgs().len()));
            info!(
                devices = n,
                pvs,
                vgs,
                udev = t.groups().udev,
                "tracking block devices"
            );
            Some(Arc::new(t))
        } else {
            None
        };
        // No fallback for a root that cannot be watched (no privilege, a
        // filesystem without file handles): a tree the configuration
        // names but nothing logs would be silently missing. On failure
        // the trackers above stop as they are dropped here.
        let fs = match config.fs.tracker_options() {
            Some(opts) => {
                let opts = weir_fs::TrackerOptions {
                    index: Some(state_dir.join(weir_fs::INDEX_FILE)),
                    ..opts
                };
                let t =
                    weir_fs::Tracker::start(Some(log.clone()), opts, None).map_err(Error::Fs)?;
                for r in t.roots() {
                    info!(
                        root = %r.path.display(),
                        fstype = %r.fstype,
                        mark = %r.mark,
                        entries = r.entries,
                        "watching a directory tree"
                    );
                }
                Some(Arc::new(t))
            }
            None => None,
        };
        Ok(Sources {
            mounts,
            devices,
            fs,
        })
    }

    /// The name of a tracker whose thread has ended, if one has.
    pub(crate) fn ended(&self) -> Option<&'static str> {
        if self.mounts.as_ref().is_some_and(|t| t.is_finished()) {
            return Some("mounts");
        }
        if self.devices.as_ref().is_some_and(|t| t.is_finished()) {
            return Some("devices");
        }
        if self.fs.as_ref().is_some_and(|t| t.is_finished()) {
            return Some("fs");
        }
        None
    }

    /// The inventory trackers' generations: when they are unchanged, so is
    /// the inventory. The filesystem tracker has none: its state is the
    /// log's, and it is no part of the checkpoint.
    pub(crate) fn generations(&self) -> (Option<u64>, Option<u64>) {
        (
            self.mounts.as_ref().map(|t| t.generation()),
            self.devices.as_ref().map(|t| t.generation()),
        )
    }

    /// The inventory as last logged, for the checkpoint file.
    pub(crate) fn checkpoint(&self, boot_id: &str, clean: bool) -> Checkpoint {
        Checkpoint {
            boot_id: boot_id.to_owned(),
            written_ns: now_ns(),
            clean,
            mounts: self.mounts.as_ref().map(|t| t.checkpoint()),
            devices: self.devices.as_ref().map(|t| t.checkpoint()),
        }
    }

    /// The changes each tracker logged as reconciled at its start.
    pub(crate) fn reconciled(&self) -> (Option<u64>, Option<u64>) {
        (
            self.mounts.as_ref().map(|t| t.stats().reconciled),
            self.devices.as_ref().map(|t| t.stats().reconciled),
        )
    }

    /// The `STATUS=` line: how much is tracked.
    pub(crate) fn status_line(&self) -> String {
        let mounts = self.mounts.as_ref().map(|t| t.len());
        let devices = self
            .devices
            .as_ref()
            .map(|t| t.with_inventory(|inv| (inv.devices().count(), inv.vgs().len())));
        let trees = self.fs.as_ref().map(|t| t.roots().len());
        crate::notify::status_line(mounts, devices, trees)
    }

    /// Stops every tracker; every other holder (the API, the checkpointer)
    /// must have let go. The filesystem tracker's stop first logs every
    /// change made before it (its own barrier). Returns the first failure,
    /// after stopping them all.
    pub(crate) fn stop(self) -> Result<()> {
        let mounts = self.mounts.map(|t| match Arc::try_unwrap(t) {
            Ok(t) => t.stop().map_err(Error::Mounts),
            // Still shared: the last holder's drop stops it.
            Err(_) => {
                warn!("the mount tracker is still in use; it stops when released");
                Ok(())
            }
        });
        let devices = self.devices.map(|t| match Arc::try_unwrap(t) {
            Ok(t) => t.stop().map_err(Error::Devices),
            Err(_) => {
                warn!("the device tracker is still in use; it stops when released");
                Ok(())
            }
        });
        let fs = self.fs.map(|t| match Arc::try_unwrap(t) {
            Ok(t) => t.stop().map_err(Error::Fs),
            Err(_) => {
                warn!("the filesystem tracker is still in use; it stops when released");
                Ok(())
            }
        });
        mounts
            .unwrap_or(Ok(()))
            .and(devices.unwrap_or(Ok(())))
            .and(fs.unwrap_or(Ok(())))
    }
}

/// Now, ns since the epoch (0 if the clock is before it).
pub(crate) fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
