//! A media change's new `diskseq`, which the kernel sets after the event.
//!
//! A media change (a loop device detached, a disc ejected) is announced
//! with a `change` uevent carrying `DISK_MEDIA_CHANGE=1` and the *old*
//! media's `DISKSEQ`. The kernel gives the disk its new number only after
//! sending it: a loop detach bumps it right after (`disk_force_media_change`),
//! a disc at its next open. No event follows, and the new number comes from
//! a counter shared by every disk, so it cannot be worked out from the
//! event's. When the tracker reads sysfs before the bump, the device waits
//! here and is read again until sysfs shows another number.

use std::time::{Duration, Instant};

use super::Inventory;
use crate::Error;
use crate::change::Change;
use crate::devnum::DevNum;
use crate::sysfs::BlockDevice;
use crate::uevent::{Action, Uevent};

/// A device whose media changed while sysfs still showed the old number.
#[derive(Clone, Copy, Debug)]
pub(super) struct Awaited {
    /// The old media's number, which sysfs showed.
    old: u64,
    /// When the media change was applied.
    since: Instant,
}

/// Whether `ev` announces a media change.
pub(super) fn is_media_change(ev: &Uevent) -> bool {
    ev.action == Action::Change && ev.get("DISK_MEDIA_CHANGE") == Some(b"1")
}

impl Inventory {
    /// After `ev`, applied with `dev` as read from sysfs: if `ev` is a
    /// media change and sysfs still showed its number, `dev` waits for
    /// its new one.
    pub(super) fn note_media_change(&mut self, ev: &Uevent, dev: &BlockDevice) {
        if is_media_change(ev)
            && !dev.is_partition()
            && let Some(old) = ev.diskseq
            && dev.diskseq == Some(old)
        {
            self.awaiting.insert(
                DevNum::of(dev),
                Awaited {
                    old,
                    since: Instant::now(),
                },
            );
        }
    }

    /// Whether a device waits for the new `diskseq` of a media change:
    /// [`recheck_diskseq`](Self::recheck_diskseq) is then due soon.
    pub fn awaits_diskseq(&self) -> bool {
        !self.awaiting.is_empty()
    }

    /// Reads again each device that waits for a media change's new
    /// `diskseq` and applies those whose number moved on. A device that
    /// has waited `patience` keeps the number sysfs shows (a disc gets its
    /// new one only when opened) and is no longer read. Returns the
    /// changes, in order.
    pub fn recheck_diskseq(&mut self, patience: Duration) -> Vec<Change> {
        let waiting: Vec<(DevNum, Awaited)> =
            self.awaiting.iter().map(|(dn, w)| (*dn, *w)).collect();
        let mut changes = Vec::new();
        for (dn, w) in waiting {
            let Some(entry) = self.devices.get(&dn) else {
                self.awaiting.remove(&dn);
                continue;
            };
            let name = entry.device.name.clone();
            match self.sysfs.refresh(&entry.device, None) {
                Ok(dev) if dev.diskseq != Some(w.old) => {
                    self.awaiting.remove(&dn);
                    changes.extend(self.put(dev, false));
                }
                Ok(_) if w.since.elapsed() >= patience => {
                    tracing::info!(
                        device = %name,
                        diskseq = w.old,
                        "no new diskseq after a media change; keeping the number sysfs shows"
                    );
                    self.awaiting.remove(&dn);
                }
                Ok(_) => {}
                // Its remove event is on the way.
                Err(Error::Vanished { .. }) => {
                    self.awaiting.remove(&dn);
                }
                Err(e) => {
                    tracing::warn!(device = %name, error = %e, "reading a block device");
                    self.awaiting.remove(&dn);
                }
            }
        }
        changes
    }
}
