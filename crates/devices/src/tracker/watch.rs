//! [`Watches`]: seeing LVM write metadata to devices that are already
//! attached, which no uevent reports.
//!
//! An LVM command writes its metadata through the device node and closes
//! it; the kernel then queues `IN_CLOSE_WRITE` for that node's inode, before
//! the command has returned. udevd's `watch` option turns that into a
//! `change` uevent and LVM's event activation runs a `pvscan` for it, on
//! every PV the command wrote. Here the watch is inotify's own: one watch
//! per device LVM would read, and on its event one probe of that device
//! (the label and mda headers; the text only if it is new, so one text read
//! and one parse serve every PV of the VG).
//!
//! - Where udevd runs, it synthesizes a `change` uevent (with `SYNTH_UUID`)
//!   for the same write; the write was probed already, so the first such
//!   echo after a write only refreshes the device's sysfs snapshot
//!   ([`Watches::take_echo`]).
//! - A watch that cannot be added (the `fs.inotify.max_user_watches`
//!   limit, a node that is not there) leaves the device *unwatched*: it is
//!   probed on a timer and by every `sync`, and the limit is named in one
//!   warning, so no device goes stale silently.
//! - A queue overflow loses writes: every watched device is probed again.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use rustix::fs::FileType;
use rustix::io::Errno;
use weir_sys::inotify::{Event, IN_CLOSE_WRITE, IN_DONT_FOLLOW, Inotify, Wd};

use crate::devnum::DevNum;
use crate::inventory::Inventory;
use crate::sysfs::Sysfs;
use crate::{Error, Result};

/// The sysctl that bounds inotify watches per user.
pub(super) const WATCH_SYSCTL: &str = "fs.inotify.max_user_watches";

/// What one read of the queue found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Written {
    /// The devices closed after writing, each once, in the order seen.
    pub(super) devices: Vec<DevNum>,
    /// The kernel dropped events: any watched device may have been written.
    pub(super) overflow: bool,
}

/// The watches on device nodes, and the devices that could not be watched.
#[derive(Debug)]
pub(super) struct Watches {
    /// `None` when inotify itself could not be had: every device is then
    /// unwatched.
    ino: Option<Inotify>,
    by_wd: HashMap<Wd, DevNum>,
    by_dev: HashMap<DevNum, Wd>,
    /// Devices LVM would read that have no watch.
    unwatched: BTreeSet<DevNum>,
    /// At most this many watches (tests stand it in for the sysctl).
    limit: Option<usize>,
    /// The limit was named in a warning already.
    warned: bool,
    /// Devices whose node could not be watched for another reason, said
    /// once each.
    warned_nodes: HashSet<DevNum>,
    /// Whether udevd echoes each write as a `change` uevent.
    udev_echoes: bool,
    /// Devices written and probed whose echo has not come yet.
    echoes: HashSet<DevNum>,
    events: Vec<Event>,
}

impl Watches {
    /// An inotify instance; `udev_echoes` when udevd runs and will echo
    /// writes, `limit` to hold the watches below the system's limit.
    pub(super) fn open(udev_echoes: bool, limit: Option<usize>) -> Watches {
        let ino = match Inotify::open() {
            Ok(i) => Some(i),
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "no inotify instance: LVM metadata writes are found by probing every device each second"
                );
                None
            }
        };
        Watches {
            ino,
            by_wd: HashMap::new(),
            by_dev: HashMap::new(),
            unwatched: BTreeSet::new(),
            limit,
            warned: false,
            warned_nodes: HashSet::new(),
            udev_echoes,
            echoes: HashSet::new(),
            events: Vec::new(),
        }
    }

    /// Watches the node of every block device `sysfs` lists, before the
    /// first scan, so that a write during the scan is not missed. The scan
    /// then decides which to keep ([`Watches::update_all`]). Best effort:
    /// a node that is not there, or not a block device, is left for
    /// `update_all`.
    pub(super) fn prewatch(&mut self, sysfs: &Sysfs) {
        let Some(ino) = &self.ino else { return };
        let Ok(names) = sysfs.names() else { return };
        for name in names {
            if self.limit.is_some_and(|l| self.by_dev.len() >= l) {
                return;
            }
            // sysfs writes a `/` in a device name as `!` (cciss!c0d0).
            let path = Path::new("/dev").join(name.replace('!', "/"));
            let Ok(st) = rustix::fs::stat(&path) else {
                continue;
            };
            if FileType::from_raw_mode(st.st_mode) != FileType::BlockDevice {
                continue;
            }
            let dn = DevNum {
                major: rustix::fs::major(st.st_rdev),
                minor: rustix::fs::minor(st.st_rdev),
            };
            if let Ok(wd) = ino.add_watch(&path, IN_CLOSE_WRITE | IN_DONT_FOLLOW) {
                self.by_wd.insert(wd, dn);
                self.by_dev.insert(dn, wd);
            }
        }
    }

    /// The fd to poll for writes.
    pub(super) fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.ino.as_ref().map(AsFd::as_fd)
    }

    /// How many devices are watched.
    pub(super) fn watched(&self) -> usize {
        self.by_dev.len()
    }

    /// The devices LVM would read that have no watch.
    pub(super) fn unwatched(&self) -> impl Iterator<Item = DevNum> + '_ {
        self.unwatched.iter().copied()
    }

    /// How many devices are unwatched.
    pub(super) fn unwatched_count(&self) -> usize {
        self.unwatched.len()
    }

    /// Whether any device is unwatched.
    pub(super) fn any_unwatched(&self) -> bool {
        !self.unwatched.is_empty()
    }

    /// Watches every device of `inv` LVM would read, and no other.
    pub(super) fn update_all(&mut self, inv: &Inventory) {
        let known: Vec<DevNum> = self.by_dev.keys().chain(&self.unwatched).copied().collect();
        for dn in known {
            self.update(dn, inv);
        }
        let all: Vec<DevNum> = inv.devices().map(|e| DevNum::of(&e.device)).collect();
        for dn in all {
            self.update(dn, inv);
        }
    }

    /// Watches device `dn` if LVM would read it, else drops its watch:
    /// after any event about it.
    pub(super) fn update(&mut self, dn: DevNum, inv: &Inventory) {
        let want = inv.readable(dn);
        if !want {
            self.unwatched.remove(&dn);
            self.echoes.remove(&dn);
            self.warned_nodes.remove(&dn);
            if let Some(wd) = self.by_dev.remove(&dn) {
                self.by_wd.remove(&wd);
                if let Some(ino) = &self.ino {
                    // EINVAL: the kernel dropped it already (node gone).
                    let _ = ino.rm_watch(wd);
                }
            }
            return;
        }
        if self.by_dev.contains_key(&dn) {
            return;
        }
        let Some(path) = inv.get(dn).map(|e| e.device.dev_path()) else {
            return;
        };
        let full = self.limit.is_some_and(|l| self.by_dev.len() >= l);
        let added = match &self.ino {
            None => Err(None),
            Some(_) if full => Err(Some(Errno::NOSPC)),
            Some(ino) => ino
                .add_watch(&path, IN_CLOSE_WRITE | IN_DONT_FOLLOW)
                .map_err(Some),
        };
        match added {
            Ok(wd) => {
                // The kernel gives one wd per inode: a node another device
                // shared loses its old owner.
                if let Some(other) = self.by_wd.insert(wd, dn)
                    && other != dn
                {
                    self.by_dev.remove(&other);
                    self.unwatched.insert(other);
                }
                self.by_dev.insert(dn, wd);
                self.unwatched.remove(&dn);
            }
            Err(errno) => {
                if errno == Some(Errno::NOSPC) && !self.warned {
                    self.warned = true;
                    tracing::warn!(
                        watched = self.by_dev.len(),
                        "the inotify watch limit is reached ({WATCH_SYSCTL}): \
                         devices past it are probed for LVM metadata writes every second \
                         and by every sync instead; raise {WATCH_SYSCTL} to watch them"
                    );
                } else if let Some(errno) = errno.filter(|e| *e != Errno::NOSPC)
                    && self.warned_nodes.insert(dn)
                {
                    tracing::warn!(
                        path = %path.display(),
                        error = %errno,
                        "cannot watch a device node for LVM metadata writes; probing it every second instead"
                    );
                }
                self.unwatched.insert(dn);
            }
        }
    }

    /// Reads every queued event: the devices written, and whether events
    /// were lost. A watch the kernel dropped (`IN_IGNORED`: its node went
    /// away) is forgotten, and its device is unwatched until an event about
    /// it watches it again.
    pub(super) fn take(&mut self) -> Result<Written> {
        let mut out = Written::default();
        let Some(ino) = &mut self.ino else {
            return Ok(out);
        };
        self.events.clear();
        match ino.read_batch(&mut self.events) {
            Ok(_) => {}
            // Bytes that do not decode lose the rest of that read: as an
            // overflow, everything is probed again.
            Err(weir_sys::Error::InotifyDecode(_)) => out.overflow = true,
            Err(e) => return Err(Error::Sys(e)),
        }
        let mut seen = HashSet::new();
        for ev in &self.events {
            if ev.overflowed() {
                out.overflow = true;
                continue;
            }
            let Some(&dn) = self.by_wd.get(&ev.wd) else {
                continue;
            };
            if ev.ignored() {
                self.by_wd.remove(&ev.wd);
                self.by_dev.remove(&dn);
                self.unwatched.insert(dn);
                continue;
            }
            if ev.mask & IN_CLOSE_WRITE != 0 && seen.insert(dn) {
                out.devices.push(dn);
            }
        }
        Ok(out)
    }

    /// Every watched device, for probing after lost events.
    pub(super) fn all_watched(&self) -> Vec<DevNum> {
        let mut v: Vec<DevNum> = self.by_dev.keys().copied().collect();
        v.sort();
        v
    }

    /// Device `dn` was written and probed: udevd's echo of that write, if
    /// it runs, needs no probe.
    pub(super) fn wrote(&mut self, dn: DevNum) {
        if self.udev_echoes {
            self.echoes.insert(dn);
        }
    }

    /// Whether a synthesized `change` of device `dn` is the echo of a write
    /// probed already (at most one echo per write is taken for one).
    pub(super) fn take_echo(&mut self, dn: DevNum) -> bool {
        self.echoes.remove(&dn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watches(udev: bool) -> Watches {
        Watches {
            ino: None,
            by_wd: HashMap::new(),
            by_dev: HashMap::new(),
            unwatched: BTreeSet::new(),
            limit: None,
            warned: false,
            warned_nodes: HashSet::new(),
            udev_echoes: udev,
            echoes: HashSet::new(),
            events: Vec::new(),
        }
    }

    #[test]
    fn an_echo_is_taken_once_per_write_and_only_with_udev() {
        let dn = DevNum { major: 7, minor: 3 };
        let mut w = watches(true);
        assert!(!w.take_echo(dn), "no write, no echo");
        w.wrote(dn);
        w.wrote(dn);
        assert!(w.take_echo(dn));
        assert!(!w.take_echo(dn), "a second change is probed");
        let mut w = watches(false);
        w.wrote(dn);
        assert!(!w.take_echo(dn), "without udevd nobody echoes");
    }

    #[test]
    fn without_inotify_nothing_is_read() {
        let mut w = watches(false);
        assert_eq!(w.take().unwrap(), Written::default());
        assert!(w.fd().is_none());
    }
}
