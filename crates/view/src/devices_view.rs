//! The one renderer of `weir devices`, as lsblk's users expect it: the
//! inventory and the mount table in, the bytes out. The CLI calls it on its
//! own scan and mount snapshot, the daemon on its trackers', so both print
//! the same bytes.
//!
//! - **Which devices.** As lsblk: detached loop devices (size 0) and RAM
//!   disks are left out, and so is whatever the device filter rejects;
//!   `all` shows them all (a rejected device's `LVM` cell then says why it
//!   was not read, `filtered`, and its JSON object has `"filtered": true`).
//! - **A tree.** Partitions under their disk, holders (device-mapper)
//!   under each device they are built on, drawn with lsblk's `├─`/`└─`; a
//!   device whose parents are all left out is a root. `list` prints each
//!   device once, by device number, without the drawing, as `lsblk -l`.
//! - **Columns** as `-o` chose them ([`DevColumns`]); several mount points
//!   take a line each, as lsblk's MOUNTPOINTS does.
//! - **JSON** is the machine form: one flat object per listed device (the
//!   tree is in each object's `parent`, `partitions`, `holders` and
//!   `slaves`), every field whatever the columns and `list`.

use std::collections::{HashMap, HashSet};

use weir_devices::change::device_type;
use weir_devices::sysfs::{BlockDevice, Kind};
use weir_devices::{DevNum, Entry, Inventory, Probe};
use weir_lvm::Uuid;
use weir_mounts::Mount;

use crate::bytes::escape;
use crate::chain::error_chain;
use crate::devices_columns::{DevColumn, DevColumns};
use crate::lvm_table::{probe_word, vg_names};
use crate::lvm_view::Format;
use crate::table::{Align, human_size, render as table};

/// The RAM disk driver's major (`/dev/ram0`): lsblk hides its disks.
const RAM_MAJOR: u32 = 1;

/// How deep a tree is drawn: sysfs has no cycles, but a snapshot taken
/// while devices change is not trusted to be a tree.
const MAX_DEPTH: usize = 32;

/// What `weir devices` was asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DevicesOptions {
    /// `-a`: every device, the empty and the filtered ones too.
    pub all: bool,
    /// `-l`: a flat list instead of the tree.
    pub list: bool,
    /// `-o`: the table's columns.
    pub columns: DevColumns,
}

/// What `weir devices [--json] [-a] [-l] [-o COLUMNS]` prints for this
/// inventory and mount table.
pub fn render(inv: &Inventory, mounts: &[Mount], opts: &DevicesOptions, format: Format) -> String {
    let ctx = Ctx::new(inv, mounts, opts.all);
    match format {
        Format::Json => crate::lvm_json::devices_json(
            inv,
            ctx.shown.iter().filter_map(|&dn| inv.get(dn)),
            |d| ctx.mountpoints(d),
        ),
        Format::Text => ctx.table(opts),
    }
}

/// Whether `weir devices` lists `e` without `-a`.
pub fn listed_by_default(inv: &Inventory, e: &Entry) -> bool {
    let d = &e.device;
    let empty = d.size_bytes == 0 && (device_type(d) == "loop" || d.major == RAM_MAJOR);
    !empty && inv.accepts(d)
}

struct Ctx<'a> {
    inv: &'a Inventory,
    /// The listed devices, in lsblk's order (by `dev_t`).
    shown: Vec<DevNum>,
    mounts: HashMap<DevNum, Vec<&'a Mount>>,
    vg_of: HashMap<Uuid, String>,
}

/// One line of the tree: a device, how its name is drawn, and how the
/// lines of its further mount points are.
struct Row<'a> {
    e: &'a Entry,
    prefix: String,
    more: String,
}

impl<'a> Ctx<'a> {
    fn new(inv: &'a Inventory, mounts: &'a [Mount], all: bool) -> Ctx<'a> {
        let mut shown: Vec<DevNum> = inv
            .devices()
            .filter(|e| all || listed_by_default(inv, e))
            .map(|e| DevNum::of(&e.device))
            .collect();
        shown.sort_by_key(|dn| dn.dev_t());
        let mut by_dev: HashMap<DevNum, Vec<&Mount>> = HashMap::new();
        for m in mounts {
            by_dev
                .entry(DevNum {
                    major: m.major,
                    minor: m.minor,
                })
                .or_default()
                .push(m);
        }
        Ctx {
            inv,
            shown,
            mounts: by_dev,
            vg_of: vg_names(inv),
        }
    }

    /// The device's mount points, sorted, each once (bind mounts of one
    /// filesystem share its device).
    fn mountpoints(&self, d: &BlockDevice) -> Vec<&'a [u8]> {
        let mut v: Vec<&[u8]> = self
            .mounts
            .get(&DevNum::of(d))
            .map(|ms| ms.iter().map(|m| &*m.mount_point).collect())
            .unwrap_or_default();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The listed devices `d` hangs under: a partition's disk, a holder's
    /// slaves.
    fn parents(&self, d: &BlockDevice, shown: &HashSet<DevNum>) -> Vec<DevNum> {
        let names: Vec<&str> = match &d.kind {
            Kind::Partition { parent, .. } => vec![parent.as_str()],
            Kind::Disk { .. } => d.slaves.iter().map(String::as_str).collect(),
        };
        names
            .into_iter()
            .filter_map(|n| self.inv.by_name(n))
            .map(|e| DevNum::of(&e.device))
            .filter(|dn| shown.contains(dn))
            .collect()
    }

    /// The rows: in tree order, or for `list` each device once by `dev_t`,
    /// as `lsblk -l` orders them.
    fn rows(&self, list: bool) -> Vec<Row<'a>> {
        if list {
            return self
                .shown
                .iter()
                .filter_map(|&dn| self.inv.get(dn))
                .map(|e| Row {
                    e,
                    prefix: String::new(),
                    more: String::new(),
                })
                .collect();
        }
        let shown: HashSet<DevNum> = self.shown.iter().copied().collect();
        let mut roots = Vec::new();
        let mut children: HashMap<DevNum, Vec<&Entry>> = HashMap::new();
        for &dn in &self.shown {
            let Some(e) = self.inv.get(dn) else { continue };
            let parents = self.parents(&e.device, &shown);
            if parents.is_empty() {
                roots.push(e);
            }
            for p in parents {
                children.entry(p).or_default().push(e);
            }
        }
        // Partitions by number first, then holders by device number.
        for kids in children.values_mut() {
            kids.sort_by_key(|e| match e.device.kind {
                Kind::Partition { number, .. } => (0, number, DevNum::of(&e.device).dev_t()),
                Kind::Disk { .. } => (1, 0, DevNum::of(&e.device).dev_t()),
            });
        }
        let mut out = Vec::new();
        for e in roots {
            walk(e, "", None, &children, &mut Vec::new(), &mut out);
        }
        out
    }

    fn table(&self, opts: &DevicesOptions) -> String {
        let cols = &opts.columns.0;
        let mut lines = Vec::new();
        for row in self.rows(opts.list) {
            let points = self.mountpoints(&row.e.device);
            lines.push(
                cols.iter()
                    .map(|&c| self.cell(c, &row, &points))
                    .collect::<Vec<_>>(),
            );
            // Further mount points: a line each, as lsblk's MOUNTPOINTS.
            if cols.contains(&DevColumn::Mountpoints) {
                for p in points.iter().skip(1) {
                    lines.push(
                        cols.iter()
                            .map(|c| match c {
                                DevColumn::Name => row.more.clone(),
                                DevColumn::Mountpoints => escape(p),
                                _ => String::new(),
                            })
                            .collect(),
                    );
                }
            }
        }
        let headers: Vec<(&str, Align)> = cols.iter().map(|c| (c.header(), c.align())).collect();
        table(&headers, &lines)
    }

    fn cell(&self, c: DevColumn, row: &Row<'_>, points: &[&[u8]]) -> String {
        let e = row.e;
        let d = &e.device;
        let flag = |b: bool| if b { "1" } else { "0" }.to_owned();
        let opt = |s: &Option<String>| s.clone().unwrap_or_default();
        match c {
            DevColumn::Name => format!("{}{}", row.prefix, d.name),
            DevColumn::Kname => d.name.clone(),
            DevColumn::Path => d.dev_path().display().to_string(),
            // lsblk's own layout, so the colons line up.
            DevColumn::MajMin => format!("{:>3}:{:<3}", d.major, d.minor),
            DevColumn::Rm => flag(d.removable.unwrap_or(false)),
            DevColumn::Size => human_size(d.size_bytes),
            DevColumn::Ro => flag(d.read_only),
            DevColumn::Type => device_type(d).to_owned(),
            DevColumn::Mountpoint | DevColumn::Mountpoints => {
                points.first().map(|p| escape(p)).unwrap_or_default()
            }
            // What the superblock says; for a device not read (filtered)
            // or holding a filesystem unknown here, the mounted type.
            DevColumn::Fstype => match (&e.fsid, &e.probe) {
                (Some(id), _) => id.fstype.to_owned(),
                (None, Probe::Pv(_)) => "LVM2_member".to_owned(),
                (None, _) => self
                    .mounts
                    .get(&DevNum::of(d))
                    .and_then(|ms| ms.first())
                    .map(|m| escape(&m.fstype))
                    .unwrap_or_default(),
            },
            DevColumn::Uuid => e
                .fsid
                .as_ref()
                .and_then(|id| id.uuid.clone())
                .unwrap_or_default(),
            DevColumn::Label => e
                .fsid
                .as_ref()
                .and_then(|id| id.label.as_deref())
                .map(escape)
                .unwrap_or_default(),
            DevColumn::Rota => d.rotational.map(flag).unwrap_or_default(),
            DevColumn::LogSec => d
                .logical_block_size
                .map(|n| n.to_string())
                .unwrap_or_default(),
            DevColumn::BackFile => d
                .backing_file
                .as_ref()
                .map(|p| escape(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str())))
                .unwrap_or_default(),
            DevColumn::Model => opt(&d.model),
            DevColumn::Serial => opt(&d.serial),
            DevColumn::Wwn => opt(&d.wwid),
            DevColumn::DiskSeq => d.diskseq.map(|n| n.to_string()).unwrap_or_default(),
            DevColumn::Pkname => match &d.kind {
                Kind::Partition { parent, .. } => parent.clone(),
                Kind::Disk { .. } => d.slaves.first().cloned().unwrap_or_default(),
            },
            DevColumn::Lvm => match &e.probe {
                Probe::Pv(pv) => match self.vg_of.get(&pv.uuid()) {
                    Some(vg) => format!("PV of {vg}"),
                    None => "PV".to_owned(),
                },
                Probe::Failed(err) => format!("error: {}", error_chain(err.as_ref())),
                other => probe_word(other).to_owned(),
            },
            DevColumn::Vg => e
                .probe
                .pv()
                .and_then(|pv| self.vg_of.get(&pv.uuid()))
                .cloned()
                .unwrap_or_default(),
        }
    }
}

/// Adds `e` and, below it, its children. `last` is `None` for a root,
/// else whether `e` is its parent's last child; `prefix` is the drawing
/// its ancestors leave on the left.
fn walk<'a>(
    e: &'a Entry,
    prefix: &str,
    last: Option<bool>,
    children: &HashMap<DevNum, Vec<&'a Entry>>,
    path: &mut Vec<DevNum>,
    out: &mut Vec<Row<'a>>,
) {
    let dn = DevNum::of(&e.device);
    let (own, below) = match last {
        None => (String::new(), String::new()),
        Some(true) => (format!("{prefix}└─"), format!("{prefix}  ")),
        Some(false) => (format!("{prefix}├─"), format!("{prefix}│ ")),
    };
    let kids = children.get(&dn).map(Vec::as_slice).unwrap_or_default();
    let more = if kids.is_empty() {
        below.clone()
    } else {
        format!("{below}│ ")
    };
    out.push(Row {
        e,
        prefix: own,
        more: more.trim_end().to_owned(),
    });
    if path.len() >= MAX_DEPTH || path.contains(&dn) {
        return;
    }
    path.push(dn);
    for (i, kid) in kids.iter().enumerate() {
        let last = i + 1 == kids.len();
        walk(kid, &below, Some(last), children, path, out);
    }
    path.pop();
}

#[cfg(test)]
#[path = "devices_view_tests.rs"]
mod tests;
