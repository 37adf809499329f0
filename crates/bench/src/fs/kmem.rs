//! The kernel memory an inotify watcher takes: its watches' slab objects,
//! and the machine's `Slab` and `MemAvailable`, read before and after it
//! set them up.
//!
//! Each inotify watch is an `inotify_inode_mark` object, and the first
//! mark on an inode also hangs an `fsnotify_mark_connector` on it (the
//! watch also pins the inode and its dentry in the cache, which no counter
//! here shows: they were in the cache already, the tree being warm, but can
//! no longer be reclaimed). SLUB usually merges these caches with others
//! of their size, so `/proc/slabinfo` has no line of their own; the
//! cache's directory in `/sys/kernel/slab` still counts the merged cache's
//! objects, and their size with metadata (`slab_size`). Other users of a
//! merged cache move its count too: on a busy machine a delta is the
//! watcher's give or take their churn, which a watcher of 100,000
//! directories dwarfs. `Slab` and `MemAvailable` move with everything
//! else the machine does, and are reported as such.

use serde_json::{Value, json};

/// One slab cache's objects in use and their size.
#[derive(Debug, Clone, Copy)]
struct Cache {
    objects: u64,
    obj_bytes: u64,
}

impl Cache {
    /// `name`'s count, from `/sys/kernel/slab/NAME`, or else its line in
    /// `/proc/slabinfo` (active objects, object size).
    fn read(name: &str) -> Option<Cache> {
        let dir = format!("/sys/kernel/slab/{name}");
        let first = |f: &str| -> Option<u64> {
            std::fs::read_to_string(format!("{dir}/{f}"))
                .ok()?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        if let (Some(objects), Some(obj_bytes)) = (first("objects"), first("slab_size")) {
            return Some(Cache { objects, obj_bytes });
        }
        let text = std::fs::read_to_string("/proc/slabinfo").ok()?;
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))?;
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(3)
            .map_while(|v| v.parse().ok())
            .collect();
        match f[..] {
            [active, _, size] => Some(Cache {
                objects: active,
                obj_bytes: size,
            }),
            _ => None,
        }
    }
}

/// The counters at one instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    marks: Option<Cache>,
    connectors: Option<Cache>,
    slab_kib: Option<u64>,
    avail_kib: Option<u64>,
}

impl Snapshot {
    pub(crate) fn now() -> Snapshot {
        Snapshot {
            marks: Cache::read("inotify_inode_mark"),
            connectors: Cache::read("fsnotify_mark_connector"),
            slab_kib: meminfo_kib("Slab"),
            avail_kib: meminfo_kib("MemAvailable"),
        }
    }

    /// The `inotify_inode_mark` objects in use, if readable.
    pub(crate) fn marks(&self) -> Option<u64> {
        self.marks.map(|c| c.objects)
    }
}

fn meminfo_kib(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// What changed from one snapshot to another, for `watches` watches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Delta {
    pub(crate) watches: u64,
    /// Objects gained, and their bytes (`None`: unreadable); the
    /// machine's `Slab` and `MemAvailable` changes.
    mark_objects: Option<i64>,
    mark_bytes: Option<i64>,
    connector_objects: Option<i64>,
    connector_bytes: Option<i64>,
    slab_kib: Option<i64>,
    avail_kib: Option<i64>,
}

/// The figure the issue anchors an inotify watch's cost at, when the slab
/// counters cannot be read: 1.7 KiB per watch.
pub(crate) const ANCHOR_BYTES_PER_WATCH: f64 = 1.7 * 1024.0;

impl Delta {
    pub(crate) fn between(a: &Snapshot, b: &Snapshot, watches: u64) -> Delta {
        let d = |x: Option<u64>, y: Option<u64>| Some(y? as i64 - x? as i64);
        let cache = |x: Option<Cache>, y: Option<Cache>| match (x, y) {
            (Some(x), Some(y)) => {
                let n = y.objects as i64 - x.objects as i64;
                (Some(n), Some(n * y.obj_bytes as i64))
            }
            _ => (None, None),
        };
        let (mark_objects, mark_bytes) = cache(a.marks, b.marks);
        let (connector_objects, connector_bytes) = cache(a.connectors, b.connectors);
        Delta {
            watches,
            mark_objects,
            mark_bytes,
            connector_objects,
            connector_bytes,
            slab_kib: d(a.slab_kib, b.slab_kib),
            avail_kib: d(a.avail_kib, b.avail_kib),
        }
    }

    /// The measured bytes per watch (marks and connectors gained over the
    /// watches), when the mark count moved by at least half the watches:
    /// less means it did not count them (another cache, or not readable).
    pub(crate) fn per_watch_bytes(&self) -> Option<f64> {
        let objs = self.mark_objects?;
        if self.watches == 0 || (objs as f64) < self.watches as f64 / 2.0 {
            return None;
        }
        let bytes = self.mark_bytes? + self.connector_bytes.unwrap_or(0).max(0);
        Some(bytes as f64 / self.watches as f64)
    }

    /// The kernel memory of the watches: measured per watch, else the
    /// anchor's; and which.
    pub(crate) fn estimate_bytes(&self) -> (f64, bool) {
        match self.per_watch_bytes() {
            Some(b) => (b * self.watches as f64, true),
            None => (ANCHOR_BYTES_PER_WATCH * self.watches as f64, false),
        }
    }

    /// One line for the report.
    pub(crate) fn text(&self) -> String {
        let (est, measured) = self.estimate_bytes();
        let opt = |v: Option<i64>| v.map_or("?".to_owned(), |v| format!("{v:+}"));
        format!(
            "{} watches: {:.1} MiB of kernel memory ({}; the issue's 1.7 KiB per watch would make {:.1} MiB); inotify_inode_mark {} objects ({} B), fsnotify_mark_connector {} ({} B); Slab {} KiB, MemAvailable {} KiB (machine-wide, noisy)",
            self.watches,
            est / (1 << 20) as f64,
            if measured {
                format!(
                    "{:.0} B per watch measured from the slab counters",
                    self.per_watch_bytes().unwrap_or(f64::NAN)
                )
            } else {
                "watches x 1.7 KiB, the issue's figure: the slab counters did not show them".into()
            },
            ANCHOR_BYTES_PER_WATCH * self.watches as f64 / (1 << 20) as f64,
            opt(self.mark_objects),
            opt(self.mark_bytes),
            opt(self.connector_objects),
            opt(self.connector_bytes),
            opt(self.slab_kib),
            opt(self.avail_kib),
        )
    }

    pub(crate) fn json(&self) -> Value {
        let (est, measured) = self.estimate_bytes();
        json!({
            "watches": self.watches,
            "kernel_bytes": est.round() as i64,
            "per_watch_bytes": self.per_watch_bytes().map(|b| crate::report::round(b, 1)),
            "per_watch_measured": measured,
            "anchor_kernel_bytes": (ANCHOR_BYTES_PER_WATCH * self.watches as f64).round() as i64,
            "inotify_inode_mark_objects": self.mark_objects,
            "inotify_inode_mark_bytes": self.mark_bytes,
            "fsnotify_mark_connector_objects": self.connector_objects,
            "fsnotify_mark_connector_bytes": self.connector_bytes,
            "slab_kib_delta": self.slab_kib,
            "mem_available_kib_delta": self.avail_kib,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(marks: u64, conns: u64) -> Snapshot {
        Snapshot {
            marks: Some(Cache {
                objects: marks,
                obj_bytes: 80,
            }),
            connectors: Some(Cache {
                objects: conns,
                obj_bytes: 24,
            }),
            slab_kib: Some(1000),
            avail_kib: Some(5000),
        }
    }

    #[test]
    fn a_watch_costs_its_mark_and_connector_or_the_anchor() {
        let d = Delta::between(&snap(100, 50), &snap(1100, 1050), 1000);
        assert_eq!(d.per_watch_bytes(), Some(104.0));
        assert_eq!(d.estimate_bytes(), (104_000.0, true));
        // The counter did not move: not these watches' cache.
        let d = Delta::between(&snap(100, 50), &snap(101, 50), 1000);
        assert_eq!(d.per_watch_bytes(), None);
        assert_eq!(d.estimate_bytes(), (1000.0 * ANCHOR_BYTES_PER_WATCH, false));
    }
}
