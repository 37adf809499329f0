//! CREAT, MKDIR, MKNOD, SLINK, HLINK, UNLNK and RMDIR.

use std::time::Duration;

use crate::support::Base;
use crate::support::scratch::{FsKind, Scratch};
use crate::support::tree::show;
use rustix::fs::{CWD, FileType, Mode};
use weir_fs::record::FLAG_LAST;
use weir_log::RecordType;

use crate::session::*;

/// CREAT, MKDIR, MKNOD, SLINK, HLINK, UNLNK, RMDIR.
fn entries(kind: FsKind, base: &Base, s: &Scratch) {
    let what = format!("{kind}: entries");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(1));
    let root = sn.id(b"");

    // CREAT: a regular file in the root; its id is the live handle.
    let rs = sn.step(|sn| touch(&sn.path(b"f")));
    let f = sn.id(b"f");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::CREAT,
            flags: 0,
            target: &f,
            parent: &root,
            name: b"f",
            fields: &[("path", b"f")],
        },
    );

    // MKDIR, then a CREAT inside it: the path goes through it.
    let rs = sn.step(|sn| std::fs::create_dir(sn.path(b"d")).expect("mkdir"));
    let d = sn.id(b"d");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::MKDIR,
            flags: 0,
            target: &d,
            parent: &root,
            name: b"d",
            fields: &[("path", b"d")],
        },
    );
    let rs = sn.step(|sn| touch(&sn.path(b"d/g")));
    let g = sn.id(b"d/g");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::CREAT,
            flags: 0,
            target: &g,
            parent: &d,
            name: b"g",
            fields: &[("path", b"d/g")],
        },
    );

    // MKNOD, with the node's type.
    let nodes: [(&[u8], FileType, u64, &[u8]); 3] = [
        (b"fifo", FileType::Fifo, 0, b"fifo"),
        (
            b"null",
            FileType::CharacterDevice,
            rustix::fs::makedev(1, 3),
            b"char",
        ),
        (
            b"loopb",
            FileType::BlockDevice,
            rustix::fs::makedev(7, 0),
            b"block",
        ),
    ];
    for (name, ft, dev, ty) in nodes {
        let rel = join(b"d", name);
        let rs = sn.step(|sn| {
            rustix::fs::mknodat(CWD, sn.path(&rel), ft, Mode::from_raw_mode(0o600), dev)
                .unwrap_or_else(|e| panic!("mknod {}: {e}", show(&rel)))
        });
        let id = sn.id(&rel);
        check(
            &what,
            only(&what, &rs),
            &Want {
                kind: RecordType::MKNOD,
                flags: 0,
                target: &id,
                parent: &d,
                name,
                fields: &[("path", &rel), ("type", ty)],
            },
        );
    }
    let rs = sn.step(|sn| {
        // Bound and closed: the socket's node stays.
        drop(std::os::unix::net::UnixListener::bind(sn.path(b"d/sock")).expect("bind"));
    });
    let sock = sn.id(b"d/sock");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::MKNOD,
            flags: 0,
            target: &sock,
            parent: &d,
            name: b"sock",
            fields: &[("path", b"d/sock"), ("type", b"socket")],
        },
    );

    // SLINK (a dangling one: the link is what is recorded, never its
    // target).
    let rs = sn.step(|sn| std::os::unix::fs::symlink("nowhere", sn.path(b"d/l")).expect("symlink"));
    let l = sn.id(b"d/l");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::SLINK,
            flags: 0,
            target: &l,
            parent: &d,
            name: b"l",
            fields: &[("path", b"d/l")],
        },
    );

    // HLINK: a second name of `f`, in another directory; the target is
    // `f`'s id.
    let rs = sn.step(|sn| std::fs::hard_link(sn.path(b"f"), sn.path(b"d/f2")).expect("link"));
    assert_eq!(sn.id(b"d/f2"), f, "a hard link has its file's handle");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::HLINK,
            flags: 0,
            target: &f,
            parent: &d,
            name: b"f2",
            fields: &[("path", b"d/f2")],
        },
    );

    // UNLNK: the first of two names without LAST, the last one with it.
    let rs = sn.step(|sn| std::fs::remove_file(sn.path(b"f")).expect("unlink"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::UNLNK,
            flags: 0,
            target: &f,
            parent: &root,
            name: b"f",
            fields: &[("path", b"f")],
        },
    );
    let rs = sn.step(|sn| std::fs::remove_file(sn.path(b"d/f2")).expect("unlink"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::UNLNK,
            flags: FLAG_LAST,
            target: &f,
            parent: &d,
            name: b"f2",
            fields: &[("path", b"d/f2")],
        },
    );
    // A node's and a symlink's removal are UNLNKs too.
    for (name, id) in [
        (&b"fifo"[..], None),
        (b"l", Some(&l)),
        (b"sock", Some(&sock)),
    ] {
        let rel = join(b"d", name);
        let id = id.cloned().unwrap_or_else(|| sn.id(&rel));
        let rs = sn.step(|sn| std::fs::remove_file(sn.path(&rel)).expect("unlink"));
        check(
            &what,
            only(&what, &rs),
            &Want {
                kind: RecordType::UNLNK,
                flags: FLAG_LAST,
                target: &id,
                parent: &d,
                name,
                fields: &[("path", &rel)],
            },
        );
    }

    // RMDIR of an empty directory (its last name, as a directory's only
    // name always is).
    let rs = sn.step(|sn| std::fs::create_dir(sn.path(b"d/e")).expect("mkdir"));
    let e = sn.id(b"d/e");
    assert_eq!(only(&what, &rs).kind, RecordType::MKDIR, "{what}");
    let rs = sn.step(|sn| std::fs::remove_dir(sn.path(b"d/e")).expect("rmdir"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RMDIR,
            flags: FLAG_LAST,
            target: &e,
            parent: &d,
            name: b"e",
            fields: &[("path", b"d/e")],
        },
    );
    sn.finish();
}

records_test!(entries_tmpfs, inner_entries_tmpfs, FsKind::Tmpfs, entries);
records_test!(entries_ext4, inner_entries_ext4, FsKind::Ext4, entries);
