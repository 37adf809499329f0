//! The line `weir devices watch` prints per change.
//!
//! ```text
//! DEVICE_ADD loop5 7:5 size=0 ro=0 type=loop
//! DEVICE_CHANGE loop5 7:5 size=8388608 backing_file=/var/tmp/pv5.img
//! PV_FOUND loop5 7:5 uuid=HVjR5j-d0tK-j9jq-2vIT-B3XQ-WGSd-VQqFEU vg=vg0
//! VG_COMPLETE vg0 uuid=TXpiRI-ZeOc-6K6l-0sQf-fFVK-qq1S-0uBSTh seqno=3 pvs=2
//! VG_INCOMPLETE vg0 uuid=TXpiRI-... seqno=3 missing=1
//! PV_LOST loop5 7:5 uuid=HVjR5j-... vg=vg0
//! DEVICE_REMOVE loop5 7:5
//! ```
//!
//! A change found by a whole re-read ends in ` (scan)`. Values use the
//! log's text escaping ([`crate::text::escape`]), so a line stays one line.

use std::fmt::Write as _;

use weir_devices::change::attributes;
use weir_devices::{Change, ChangeKind};

use crate::text::escape;

/// One change as a line, without the newline.
pub(crate) fn change_line(c: &Change) -> String {
    let mut s = c.name().to_owned();
    match &c.kind {
        ChangeKind::DeviceAdd(d) => {
            let _ = write!(s, " {} {}:{}", d.name, d.major, d.minor);
            for (k, v) in attributes(d).into_iter().filter(|(k, _)| *k != "dev") {
                let _ = write!(s, " {k}={}", escape(v.as_bytes()));
            }
        }
        ChangeKind::DeviceChange { new, changed, .. } => {
            let _ = write!(s, " {} {}:{}", new.name, new.major, new.minor);
            for (k, v) in attributes(new) {
                if changed.contains(&k) {
                    let _ = write!(s, " {k}={}", escape(v.as_bytes()));
                }
            }
            // An attribute that went away shows as empty.
            for k in changed {
                if !attributes(new).iter().any(|(a, _)| a == k) {
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
    }
    if c.scan {
        s.push_str(" (scan)");
    }
    s
}
