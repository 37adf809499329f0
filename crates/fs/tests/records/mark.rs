//! The MARK a watch starts with.

use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use crate::support::Base;
use crate::support::journal::{describe, fsid, live_id};
use crate::support::scratch::{FsKind, Scratch};
use weir_fs::ObjectId;
use weir_log::RecordType;

use crate::session::*;

/// The MARK `fs root watched`: an empty root, then (another log) a root
/// that already holds a file, a directory and a file in it.
fn mark_at_start(kind: FsKind, base: &Base, s: &Scratch) {
    let root_bytes = s.root().as_os_str().as_bytes().to_vec();
    let fsid = fsid(s.root());
    let root_id = live_id(fsid, s.root());
    let fsid_text = format!("{:08x}:{:08x}", fsid[0], fsid[1]);
    for (n, (entries, dirs)) in [("0", "1"), ("3", "2")].into_iter().enumerate() {
        let what = format!("{kind}: mark at start, {entries} entries");
        if n == 1 {
            touch(&s.root().join("f"));
            std::fs::create_dir(s.root().join("d")).expect("mkdir d");
            touch(&s.root().join("d/g"));
        }
        let mut sn = Session::start(
            &what,
            s,
            &base.mkdir(&format!("log-mark-{n}")),
            Duration::from_secs(1),
        );
        let rs = std::mem::take(&mut sn.started);
        let r = only(&what, &rs);
        // A MARK has no parent.
        assert!(r.parent.is_empty(), "{what}: {}", describe(r));
        assert_eq!(r.kind, RecordType::MARK, "{what}: {}", describe(r));
        assert_eq!(r.flags, 0, "{what}: {}", describe(r));
        assert_eq!(r.name, b"fs root watched", "{what}: {}", describe(r));
        assert_eq!(
            ObjectId::from_bytes(&r.target).as_ref(),
            Some(&root_id),
            "{what}: the target is the root's id: {}",
            describe(r)
        );
        let want: Vec<(&str, &[u8])> = vec![
            ("source", b"fs"),
            ("root", &root_bytes),
            ("fstype", kind.fstype().as_bytes()),
            ("mark", b"filesystem"),
            ("fsid", fsid_text.as_bytes()),
            ("entries", entries.as_bytes()),
            ("dirs", dirs.as_bytes()),
        ];
        let got: Vec<(&str, &[u8])> = r
            .fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        assert_eq!(got, want, "{what}: fields of {}", describe(r));
        // The status agrees with the MARK.
        let st = &sn.tracker().roots()[0];
        assert_eq!(st.id, root_id.hex(), "{what}");
        assert_eq!(st.fsid, fsid_text, "{what}");
        assert_eq!(st.fstype, kind.fstype(), "{what}");
        assert_eq!(st.entries.to_string(), entries, "{what}");
        assert_eq!(st.dirs.to_string(), dirs, "{what}");
        if n == 0 {
            sn.finish();
        } else {
            // A root that held entries has no replay (it was never
            // described entry by entry): just stop.
            if let Some(t) = sn.tracker.take() {
                t.stop().expect("stop");
            }
        }
    }
}

records_test!(mark_tmpfs, inner_mark_tmpfs, FsKind::Tmpfs, mark_at_start);
records_test!(mark_ext4, inner_mark_ext4, FsKind::Ext4, mark_at_start);
