//! Names that are not UTF-8, hold a newline or are 255 bytes long.

use std::time::Duration;

use crate::support::Base;
use crate::support::scratch::{FsKind, Scratch};
use weir_log::RecordType;

use crate::session::*;

/// Names that are not UTF-8, hold newlines, or are 255 bytes long, as a
/// record's name, in `path` and `spath`, and as a directory on the way.
fn names(kind: FsKind, base: &Base, s: &Scratch) {
    let what = format!("{kind}: names");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(1));
    let root = sn.id(b"");
    let long = |c: u8| {
        let mut n = b"long-".to_vec();
        n.resize(255, c);
        n
    };
    let hostile: Vec<Vec<u8>> = vec![
        b"\xff\xfe-not-utf8".to_vec(),
        b"\xc3(".to_vec(),
        b"nl\nin the middle".to_vec(),
        b"trailing newline\n".to_vec(),
        b"\n".to_vec(),
        long(b'x'),
        [b"\x80".as_slice(), &long(b'y')[1..]].concat(),
    ];
    // A directory with a hostile name, holding them all.
    let dname = b"dir\nwith \xffnewline".to_vec();
    let rs = sn.step(|sn| std::fs::create_dir(sn.path(&dname)).expect("mkdir"));
    let d = sn.id(&dname);
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::MKDIR,
            flags: 0,
            target: &d,
            parent: &root,
            name: &dname,
            fields: &[("path", &dname)],
        },
    );
    let dh = d.hex();
    for (i, n) in hostile.iter().enumerate() {
        let rel = join(&dname, n);
        let rs = sn.step(|sn| touch(&sn.path(&rel)));
        let id = sn.id(&rel);
        check(
            &what,
            only(&what, &rs),
            &Want {
                kind: RecordType::CREAT,
                flags: 0,
                target: &id,
                parent: &d,
                name: n,
                fields: &[("path", &rel)],
            },
        );
        // Renamed to the root under another hostile name.
        let mut to = hostile[(i + 1) % hostile.len()].clone();
        to[0] = if to[0] == b'r' { b's' } else { b'r' };
        let rs = sn.step(|sn| std::fs::rename(sn.path(&rel), sn.path(&to)).expect("rename"));
        check(
            &what,
            only(&what, &rs),
            &Want {
                kind: RecordType::RENME,
                flags: 0,
                target: &id,
                parent: &root,
                name: &to,
                fields: &[
                    ("path", &to),
                    ("sparent", dh.as_bytes()),
                    ("sname", n),
                    ("spath", &rel),
                ],
            },
        );
    }
    // And the decoder gives them back: the replay (checked against the
    // live names by `finish`) holds every one.
    sn.finish();
}

records_test!(names_tmpfs, inner_names_tmpfs, FsKind::Tmpfs, names);
records_test!(names_ext4, inner_names_ext4, FsKind::Ext4, names);
