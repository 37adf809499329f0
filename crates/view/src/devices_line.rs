//! The line `weir devices watch` prints per change of the device tracker:
//! a change's text form, kept here with the other forms of weir's objects.
//!
//! ```text
//! DEVICE_ADD loop5 7:5 size=0 ro=0 type=loop
//! DEVICE_CHANGE loop5 7:5 size=8388608 backing_file=/var/tmp/pv5.img
//! PV_FOUND loop5 7:5 uuid=HVjR5j-d0tK-j9jq-2vIT-B3XQ-WGSd-VQqFEU vg=vg0
//! VG_COMPLETE vg0 uuid=TXpiRI-ZeOc-6K6l-0sQf-fFVK-qq1S-0uBSTh seqno=3 pvs=2
//! VG_INCOMPLETE vg0 uuid=TXpiRI-... seqno=3 missing=1
//! PV_LOST loop5 7:5 uuid=HVjR5j-... vg=vg0
//! DEVICE_REMOVE loop5 7:5
//! VG_CHANGE vg0 uuid=TXpiRI-... seqno=4 old_seqno=3 changed=pvs,extent_count
//! PV_CHANGE loop6 7:6 uuid=6rpCcl-... vg=vg0 old_vg=
//! LV_ADD lv1 vg=vg0 uuid=Xc3fZk-... size=8388608 segtype=linear
//! LV_CHANGE lv1 vg=vg0 uuid=Xc3fZk-... changed=size size=16777216 old_size=8388608
//! LV_REMOVE lv1 vg=vg0 uuid=Xc3fZk-... size=16777216 segtype=linear
//! VG_REMOVE vg0 uuid=TXpiRI-... seqno=9
//! ```
//!
//! A change found by a whole re-read ends in ` (scan)`. Values use the
//! log's text escaping ([`escape`]), so a line stays one line.

use std::fmt::Write as _;

use weir_devices::change::attributes;
use weir_devices::{Change, ChangeKind};

use crate::bytes::escape;

/// One change as a line, without the newline.
pub fn change_line(c: &Change) -> String {
    let mut s = c.name().to_owned();
    match &c.kind {
        ChangeKind::DeviceAdd(d) => {
            let _ = write!(s, " {} {}:{}", d.name, d.major, d.minor);
            for (k, v) in attributes(d).into_iter().filter(|(k, _)| *k != "dev") {
                let _ = write!(s, " {k}={}", escape(&v));
            }
        }
        ChangeKind::DeviceChange { new, changed, .. } => {
            let _ = write!(s, " {} {}:{}", new.name, new.major, new.minor);
            let attrs = attributes(new);
            for (k, v) in &attrs {
                if changed.contains(k) {
                    let _ = write!(s, " {k}={}", escape(v));
                }
            }
            // An attribute that went away shows as empty.
            for k in changed {
                if !attrs.iter().any(|(a, _)| a == k) {
                    let _ = write!(s, " {k}=");
                }
            }
        }
        ChangeKind::DeviceRemove(d) => {
            let _ = write!(s, " {} {}:{}", d.name, d.major, d.minor);
        }
        ChangeKind::PvFound {
            dev,
            name,
            uuid,
            vg,
            duplicate_of,
        } => {
            let _ = write!(s, " {name} {dev} uuid={uuid}");
            if let Some(vg) = vg {
                let _ = write!(s, " vg={}", vg.name);
            }
            if let Some(d) = duplicate_of {
                let _ = write!(s, " duplicate_of={d}");
            }
        }
        ChangeKind::PvLost {
            dev,
            name,
            uuid,
            vg,
        } => {
            let _ = write!(s, " {name} {dev} uuid={uuid}");
            if let Some(vg) = vg {
                let _ = write!(s, " vg={}", vg.name);
            }
        }
        ChangeKind::VgComplete { vg, pv_count } => {
            let _ = write!(
                s,
                " {} uuid={} seqno={} pvs={pv_count}",
                vg.name, vg.uuid, vg.seqno
            );
        }
        ChangeKind::VgIncomplete { vg, missing } => {
            let _ = write!(
                s,
                " {} uuid={} seqno={} missing={}",
                vg.name,
                vg.uuid,
                vg.seqno,
                missing.len()
            );
        }
        ChangeKind::VgChange { old, vg, delta } => {
            let _ = write!(
                s,
                " {} uuid={} seqno={} old_seqno={} changed={}",
                vg.name,
                vg.uuid,
                vg.seqno,
                old.seqno,
                delta.changed().join(",")
            );
            if let Some(n) = &delta.old_name {
                let _ = write!(s, " old_name={n}");
            }
        }
        ChangeKind::VgRemove { vg } => {
            let _ = write!(s, " {} uuid={} seqno={}", vg.name, vg.uuid, vg.seqno);
        }
        ChangeKind::PvChange {
            dev,
            name,
            uuid,
            vg,
            old_vg,
        } => {
            let vg_name = |v: &Option<weir_lvm::assembly::VgRef>| {
                v.as_ref().map_or("", |v| v.name.as_str()).to_owned()
            };
            let _ = write!(
                s,
                " {name} {dev} uuid={uuid} vg={} old_vg={}",
                vg_name(vg),
                vg_name(old_vg)
            );
        }
        ChangeKind::LvAdd { vg, lv } | ChangeKind::LvRemove { vg, lv } => {
            let _ = write!(
                s,
                " {} vg={} uuid={} size={} segtype={}",
                lv.name, vg.name, lv.uuid, lv.size_bytes, lv.segtype
            );
        }
        ChangeKind::LvChange {
            vg,
            old,
            lv,
            changed,
        } => {
            let _ = write!(
                s,
                " {} vg={} uuid={} changed={}",
                lv.name,
                vg.name,
                lv.uuid,
                changed.join(",")
            );
            if changed.contains(&"name") {
                let _ = write!(s, " old_name={}", old.name);
            }
            if changed.contains(&"size") {
                let _ = write!(s, " size={} old_size={}", lv.size_bytes, old.size_bytes);
            }
            if changed.contains(&"segments") {
                let _ = write!(s, " segtype={} segments={}", lv.segtype, lv.segments);
            }
        }
    }
    if c.scan {
        s.push_str(" (scan)");
    }
    s
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    use std::path::PathBuf;

    use weir_devices::DevNum;
    use weir_devices::sysfs::{BlockDevice, Kind};
    use weir_lvm::Uuid;
    use weir_lvm::assembly::VgRef;

    use super::*;

    const PV: &str = "HVjR5jd0tKj9jq2vITB3XQWGSdVQqFEU";
    const VG: &str = "TXpiRIZeOc6K6l0sQffFVKqq1S0uBSTh";

    fn uuid(s: &str) -> Uuid {
        Uuid::parse(s.as_bytes()).unwrap()
    }

    fn vg() -> VgRef {
        VgRef {
            name: "vg0".into(),
            uuid: uuid(VG),
            seqno: 3,
        }
    }

    fn loop5(backing: &[u8]) -> BlockDevice {
        BlockDevice {
            name: "loop5".into(),
            major: 7,
            minor: 5,
            size_bytes: 8 << 20,
            read_only: false,
            removable: Some(false),
            rotational: Some(true),
            logical_block_size: Some(512),
            kind: Kind::Disk {
                partitions: Vec::new(),
            },
            holders: Vec::new(),
            slaves: Vec::new(),
            backing_file: Some(PathBuf::from(OsString::from_vec(backing.to_vec()))),
            model: None,
            serial: None,
            wwid: None,
            diskseq: Some(9),
            devname: None,
        }
    }

    fn line(kind: ChangeKind) -> String {
        change_line(&Change { kind, scan: false })
    }

    const DEV: DevNum = DevNum { major: 7, minor: 5 };

    #[test]
    fn device_add_lists_the_attributes_but_dev() {
        assert_eq!(
            line(ChangeKind::DeviceAdd(loop5(b"/var/tmp/pv5.img"))),
            "DEVICE_ADD loop5 7:5 size=8388608 ro=0 type=loop removable=0 rotational=1 \
             backing_file=/var/tmp/pv5.img diskseq=9"
        );
    }

    #[test]
    fn backing_files_are_escaped_into_one_line() {
        let l = line(ChangeKind::DeviceAdd(loop5(b"/tmp/a b\nc\\d\xff.img")));
        assert!(
            l.contains(" backing_file=/tmp/a b\\x0ac\\\\d\\xff.img diskseq=9"),
            "{l}"
        );
        assert!(!l.contains('\n'));
    }

    #[test]
    fn device_change_shows_the_new_values_and_empties_for_the_gone() {
        let old = loop5(b"/var/tmp/pv5.img");
        let mut new = old.clone();
        new.size_bytes = 0;
        new.backing_file = None;
        new.diskseq = Some(10);
        let changed = weir_devices::change::changed_attributes(&old, &new);
        let l = line(ChangeKind::DeviceChange {
            old: Box::new(old.clone()),
            new: Box::new(new.clone()),
            changed,
        });
        assert_eq!(l, "DEVICE_CHANGE loop5 7:5 size=0 diskseq=10 backing_file=");
        // The attach the other way round.
        let changed = weir_devices::change::changed_attributes(&new, &old);
        let l = line(ChangeKind::DeviceChange {
            old: Box::new(new),
            new: Box::new(loop5(b"/tmp/new\nline")),
            changed,
        });
        assert_eq!(
            l,
            "DEVICE_CHANGE loop5 7:5 size=8388608 backing_file=/tmp/new\\x0aline diskseq=9"
        );
    }

    #[test]
    fn device_remove_names_the_device() {
        assert_eq!(
            line(ChangeKind::DeviceRemove(loop5(b"/x"))),
            "DEVICE_REMOVE loop5 7:5"
        );
    }

    #[test]
    fn pv_found_with_and_without_its_vg_and_as_a_duplicate() {
        let found = |vg: Option<VgRef>, duplicate_of: Option<String>| {
            line(ChangeKind::PvFound {
                dev: DEV,
                name: "loop5".into(),
                uuid: uuid(PV),
                vg,
                duplicate_of,
            })
        };
        assert_eq!(
            found(Some(vg()), None),
            "PV_FOUND loop5 7:5 uuid=HVjR5j-d0tK-j9jq-2vIT-B3XQ-WGSd-VQqFEU vg=vg0"
        );
        assert_eq!(
            found(None, None),
            "PV_FOUND loop5 7:5 uuid=HVjR5j-d0tK-j9jq-2vIT-B3XQ-WGSd-VQqFEU"
        );
        assert_eq!(
            found(Some(vg()), Some("loop2".into())),
            "PV_FOUND loop5 7:5 uuid=HVjR5j-d0tK-j9jq-2vIT-B3XQ-WGSd-VQqFEU vg=vg0 \
             duplicate_of=loop2"
        );
    }

    #[test]
    fn pv_lost() {
        let lost = |vg| {
            line(ChangeKind::PvLost {
                dev: DEV,
                name: "loop5".into(),
                uuid: uuid(PV),
                vg,
            })
        };
        assert_eq!(
            lost(Some(vg())),
            "PV_LOST loop5 7:5 uuid=HVjR5j-d0tK-j9jq-2vIT-B3XQ-WGSd-VQqFEU vg=vg0"
        );
        assert_eq!(
            lost(None),
            "PV_LOST loop5 7:5 uuid=HVjR5j-d0tK-j9jq-2vIT-B3XQ-WGSd-VQqFEU"
        );
    }

    #[test]
    fn vg_complete_and_incomplete() {
        assert_eq!(
            line(ChangeKind::VgComplete {
                vg: vg(),
                pv_count: 2
            }),
            "VG_COMPLETE vg0 uuid=TXpiRI-ZeOc-6K6l-0sQf-fFVK-qq1S-0uBSTh seqno=3 pvs=2"
        );
        assert_eq!(
            line(ChangeKind::VgIncomplete {
                vg: vg(),
                missing: vec![uuid(PV), uuid(VG)]
            }),
            "VG_INCOMPLETE vg0 uuid=TXpiRI-ZeOc-6K6l-0sQf-fFVK-qq1S-0uBSTh seqno=3 missing=2"
        );
    }

    #[test]
    fn a_change_found_by_a_scan_says_so() {
        let c = Change {
            kind: ChangeKind::VgComplete {
                vg: vg(),
                pv_count: 1,
            },
            scan: true,
        };
        assert!(change_line(&c).ends_with(" pvs=1 (scan)"));
        assert!(change_line(&c).starts_with("VG_COMPLETE vg0 "));
    }
}
