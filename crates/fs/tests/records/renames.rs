//! RENME within and across directories, and over an existing file.

use std::time::Duration;

use crate::support::Base;
use crate::support::scratch::{FsKind, Scratch};
use weir_log::RecordType;

use crate::session::*;

/// RENME within a directory, across directories, of a directory, and over
/// an existing file (its last name and not). RENAME_EXCHANGE is
/// `exchanges`.
fn renames(kind: FsKind, base: &Base, s: &Scratch) {
    let what = format!("{kind}: renames");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(1));
    let root = sn.id(b"");
    let _ = sn.step(|sn| {
        for d in ["d1", "d2"] {
            std::fs::create_dir(sn.path(d.as_bytes())).expect("mkdir");
        }
        touch(&sn.path(b"d1/a"));
    });
    let (d1, d2) = (sn.id(b"d1"), sn.id(b"d2"));
    let a = sn.id(b"d1/a");
    let (h1, h2) = (d1.hex(), d2.hex());

    // Within a directory.
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"d1/a"), sn.path(b"d1/b")).expect("rename"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &a,
            parent: &d1,
            name: b"b",
            fields: &[
                ("path", b"d1/b"),
                ("sparent", h1.as_bytes()),
                ("sname", b"a"),
                ("spath", b"d1/a"),
            ],
        },
    );
    // Across directories, under another name; the id is the same.
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"d1/b"), sn.path(b"d2/c")).expect("rename"));
    assert_eq!(sn.id(b"d2/c"), a, "{what}: a rename keeps the handle");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &a,
            parent: &d2,
            name: b"c",
            fields: &[
                ("path", b"d2/c"),
                ("sparent", h1.as_bytes()),
                ("sname", b"b"),
                ("spath", b"d1/b"),
            ],
        },
    );
    // A directory with contents: one record (`type=dir`), and what it
    // holds then has paths through its new name.
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"d2"), sn.path(b"d1/d2m")).expect("rename"));
    let rh = root.hex();
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &d2,
            parent: &d1,
            name: b"d2m",
            fields: &[
                ("path", b"d1/d2m"),
                ("sparent", rh.as_bytes()),
                ("sname", b"d2"),
                ("spath", b"d2"),
                ("type", b"dir"),
            ],
        },
    );
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"d1/d2m/c"), sn.path(b"c")).expect("rename"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &a,
            parent: &root,
            name: b"c",
            fields: &[
                ("path", b"c"),
                ("sparent", h2.as_bytes()),
                ("sname", b"c"),
                ("spath", b"d1/d2m/c"),
            ],
        },
    );

    // Over an existing file with one name: `overwritten` is its id and
    // `overwritten_last` is 1.
    let _ = sn.step(|sn| touch(&sn.path(b"victim")));
    let victim = sn.id(b"victim");
    let vh = victim.hex();
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"c"), sn.path(b"victim")).expect("rename"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &a,
            parent: &root,
            name: b"victim",
            fields: &[
                ("path", b"victim"),
                ("sparent", rh.as_bytes()),
                ("sname", b"c"),
                ("spath", b"c"),
                ("overwritten", vh.as_bytes()),
                ("overwritten_last", b"1"),
            ],
        },
    );
    // Over a file that keeps another name: `overwritten_last` is 0.
    let _ = sn.step(|sn| {
        touch(&sn.path(b"two"));
        std::fs::hard_link(sn.path(b"two"), sn.path(b"d1/two-also")).expect("link");
    });
    let two = sn.id(b"two");
    let th = two.hex();
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"victim"), sn.path(b"two")).expect("rename"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &a,
            parent: &root,
            name: b"two",
            fields: &[
                ("path", b"two"),
                ("sparent", rh.as_bytes()),
                ("sname", b"victim"),
                ("spath", b"victim"),
                ("overwritten", th.as_bytes()),
                ("overwritten_last", b"0"),
            ],
        },
    );

    sn.finish();
}

records_test!(renames_tmpfs, inner_renames_tmpfs, FsKind::Tmpfs, renames);
records_test!(renames_ext4, inner_renames_ext4, FsKind::Ext4, renames);
