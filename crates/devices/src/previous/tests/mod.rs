//! Tests of the previous state without devices: a [`World`] of made-up
//! block devices, PVs and VGs stands for a scan, and a log on a `MemFs`
//! holds the records.

mod diff;
mod props;
mod tail;

use std::path::PathBuf;
use std::sync::Arc;

use weir_log::mem::MemFs;
use weir_log::{Log, LogRecord, Options};
use weir_lvm::Uuid;
use weir_lvm::assembly::VgRef;

use super::current::{Current, CurrentDevice, CurrentPv, CurrentVg};
use crate::devnum::DevNum;
use crate::sysfs::{BlockDevice, Kind};

/// Uuid number `n` of kind `tag` (`b'P'` for PVs, `b'V'` for VGs).
pub(super) fn uuid(tag: u8, n: u32) -> Uuid {
    let mut b = [b'0'; 32];
    b[0] = tag;
    let digits = n.to_string();
    b[32 - digits.len()..].copy_from_slice(digits.as_bytes());
    Uuid(b)
}

/// Loop device `loopN` (7:N): attached to `/var/tmp/pvN.img` with 16 MiB,
/// or unattached with size 0, as sysfs shows both.
pub(super) fn loop_dev(n: u32, attached: bool) -> BlockDevice {
    BlockDevice {
        name: format!("loop{n}"),
        major: 7,
        minor: n,
        size_bytes: if attached { 16 << 20 } else { 0 },
        read_only: false,
        removable: Some(false),
        rotational: Some(false),
        logical_block_size: Some(512),
        kind: Kind::Disk {
            partitions: Vec::new(),
        },
        holders: Vec::new(),
        slaves: Vec::new(),
        backing_file: attached.then(|| PathBuf::from(format!("/var/tmp/pv{n}.img"))),
        model: None,
        serial: None,
        wwid: None,
        diskseq: Some(100 + u64::from(n) + if attached { 1000 } else { 0 }),
        devname: Some(format!("loop{n}")),
    }
}

/// `sda` (8:0), a disk with partitions `sda1` and `sda2`.
pub(super) fn sda() -> BlockDevice {
    BlockDevice {
        name: "sda".into(),
        major: 8,
        minor: 0,
        size_bytes: 1 << 30,
        rotational: Some(true),
        kind: Kind::Disk {
            partitions: vec!["sda1".into(), "sda2".into()],
        },
        backing_file: None,
        model: Some("QEMU HARDDISK".into()),
        serial: Some("QM0001".into()),
        diskseq: Some(1),
        ..loop_dev(0, false)
    }
}

/// Partition `sda<n>` (8:n).
pub(super) fn sda_part(n: u32) -> BlockDevice {
    BlockDevice {
        name: format!("sda{n}"),
        minor: n,
        size_bytes: 256 << 20,
        kind: Kind::Partition {
            number: n,
            parent: "sda".into(),
        },
        ..sda()
    }
}

/// A VG: which PVs its metadata lists.
#[derive(Clone, Debug)]
pub(super) struct VgDef {
    pub(super) name: String,
    pub(super) uuid: Uuid,
    pub(super) seqno: u64,
    pub(super) members: Vec<Uuid>,
    /// Its LVs: name, uuid and extents, each one linear segment on the
    /// first member.
    pub(super) lvs: Vec<(String, Uuid, u64)>,
}

/// A system as a scan would find it. A VG is known when one of its PVs
/// is present, and complete when all are; a PV listed by a known VG is in
/// it; of several devices with one PV uuid, the first by number is used.
#[derive(Clone, Debug, Default)]
pub(super) struct World {
    pub(super) devices: Vec<(BlockDevice, Option<Uuid>)>,
    pub(super) vgs: Vec<VgDef>,
}

impl World {
    pub(super) fn with(mut self, dev: BlockDevice, pv: Option<Uuid>) -> World {
        self.devices
            .retain(|(d, _)| DevNum::of(d) != DevNum::of(&dev));
        self.devices.push((dev, pv));
        self.devices.sort_by_key(|(d, _)| DevNum::of(d));
        self
    }

    pub(super) fn without(mut self, name: &str) -> World {
        self.devices.retain(|(d, _)| d.name != name);
        self
    }

    pub(super) fn vg(mut self, name: &str, n: u32, members: &[Uuid]) -> World {
        self.vgs.push(VgDef {
            name: name.into(),
            uuid: uuid(b'V', n),
            seqno: 7,
            members: members.to_vec(),
            lvs: Vec::new(),
        });
        self
    }

    /// Adds LV `name` (uuid `n` of kind `L`) of `extents` to VG `vg`.
    pub(super) fn lv(mut self, vg: &str, name: &str, n: u32, extents: u64) -> World {
        let v = self.vgs.iter_mut().find(|v| v.name == vg).expect("the VG");
        v.lvs.push((name.into(), uuid(b'L', n), extents));
        self
    }

    /// VG `vg`'s metadata as its text would give it.
    fn meta(vg: &VgDef) -> weir_lvm::VgMeta {
        use weir_lvm::{AreaOn, LvMeta, LvSegment, PvMeta, SegArea};
        weir_lvm::VgMeta {
            name: vg.name.clone(),
            id: vg.uuid,
            seqno: vg.seqno,
            status: vec!["READ".into(), "WRITE".into()],
            extent_size: 8192,
            metadata_copies: 0,
            pvs: vg
                .members
                .iter()
                .enumerate()
                .map(|(i, u)| PvMeta {
                    key: format!("pv{i}"),
                    id: *u,
                    device_hint: String::new(),
                    status: vec!["ALLOCATABLE".into()],
                    flags: Vec::new(),
                    dev_size: 32768,
                    pe_start: 2048,
                    pe_count: 10,
                    pe_alloc: 0,
                })
                .collect(),
            lvs: vg
                .lvs
                .iter()
                .map(|(name, id, extents)| LvMeta {
                    name: name.clone(),
                    id: *id,
                    status: vec!["READ".into(), "WRITE".into(), "VISIBLE".into()],
                    visible: true,
                    flags: Vec::new(),
                    extents: *extents,
                    allocation_policy: None,
                    segments: vec![LvSegment {
                        start_extent: 0,
                        extent_count: *extents,
                        seg_type: "striped".into(),
                        stripe_count: 1,
                        stripe_size: 0,
                        areas: vec![SegArea {
                            on: AreaOn::Pv(vg.members[0]),
                            start: 0,
                        }],
                        links: Vec::new(),
                        zero_new_blocks: false,
                    }],
                })
                .collect(),
        }
    }

    fn present(&self, pv: &Uuid) -> bool {
        self.devices.iter().any(|(_, p)| p.as_ref() == Some(pv))
    }

    fn known(&self, vg: &VgDef) -> bool {
        vg.members.iter().any(|m| self.present(m))
    }

    fn vg_ref(vg: &VgDef) -> VgRef {
        VgRef {
            name: vg.name.clone(),
            uuid: vg.uuid,
            seqno: vg.seqno,
        }
    }

    /// The scan's view of this world.
    pub(super) fn current(&self) -> Current<'_> {
        let number_of = |name: &str| {
            self.devices
                .iter()
                .find(|(d, _)| d.name == name)
                .map(|(d, _)| DevNum::of(d))
        };
        let devices = self
            .devices
            .iter()
            .map(|(d, pv)| CurrentDevice {
                device: d,
                parent: match &d.kind {
                    Kind::Partition { parent, .. } => number_of(parent),
                    Kind::Disk { .. } => None,
                },
                pv: pv.map(|u| {
                    let first = self
                        .devices
                        .iter()
                        .find(|(_, p)| *p == Some(u))
                        .map(|(f, _)| f.name.clone());
                    CurrentPv {
                        uuid: u,
                        vg: self
                            .vgs
                            .iter()
                            .find(|v| v.members.contains(&u))
                            .map(World::vg_ref),
                        duplicate_of: first.filter(|f| *f != d.name),
                    }
                }),
            })
            .collect();
        let vgs = self
            .vgs
            .iter()
            .filter(|v| self.known(v))
            .map(|v| {
                let missing: Vec<Uuid> = v
                    .members
                    .iter()
                    .filter(|m| !self.present(m))
                    .copied()
                    .collect();
                CurrentVg {
                    meta: Arc::new(World::meta(v)),
                    vg: World::vg_ref(v),
                    pv_count: v.members.len(),
                    complete: missing.is_empty() && !v.members.is_empty(),
                    missing,
                }
            })
            .collect();
        Current { devices, vgs }
    }
}

/// A log on a `MemFs` (its lock file in a real temporary directory).
pub(super) struct MemLog {
    _dir: tempfile::TempDir,
    pub(super) log: Log,
}

impl MemLog {
    pub(super) fn new() -> MemLog {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options::default().fs(Arc::new(MemFs::new()));
        let log = Log::open(dir.path(), opts).unwrap();
        MemLog { _dir: dir, log }
    }

    /// Every record, from `from` on.
    pub(super) fn records(&self, from: u64) -> Vec<LogRecord> {
        self.log.sync().unwrap();
        let mut r = self.log.reader(from);
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            out.push(rec);
        }
        out
    }
}

/// A record's field as text.
pub(super) fn field<'a>(r: &'a LogRecord, key: &str) -> &'a str {
    let v = r
        .field(key)
        .unwrap_or_else(|| panic!("{} has no {key}: {r:?}", r.kind));
    std::str::from_utf8(v).unwrap()
}
