//! RENME into the tree from outside it (`IN`) and out of it (`OUT`).

use std::time::Duration;

use crate::support::Base;
use crate::support::journal::{describe_all, live_id};
use crate::support::scratch::{FsKind, Scratch};
use crate::support::tree::show;
use weir_fs::record::{FLAG_COMPARE, FLAG_IN, FLAG_OUT};
use weir_log::RecordType;

use crate::session::*;

/// RENME into the tree from outside it (`IN`; a directory's contents
/// follow flagged `COMPARE`) and out of it (`OUT`).
fn moves(kind: FsKind, base: &Base, s: &Scratch) {
    let what = format!("{kind}: moves");
    // Outside the root, on the same filesystem (the root's sibling).
    let outside = s.mount_point().join("outside");
    std::fs::create_dir(&outside).expect("mkdir outside");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(1));
    let root = sn.id(b"");
    let rh = root.hex();
    let out_id = live_id(sn.fsid, &outside);
    let outh = out_id.hex();

    // A file moved in.
    touch(&outside.join("fin"));
    let rs = sn.step(|sn| std::fs::rename(outside.join("fin"), sn.path(b"fin")).expect("rename"));
    let fin = sn.id(b"fin");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: FLAG_IN,
            target: &fin,
            parent: &root,
            name: b"fin",
            fields: &[
                ("path", b"fin"),
                ("sparent", outh.as_bytes()),
                ("sname", b"fin"),
                ("type", b"file"),
            ],
        },
    );

    // A directory with contents, made outside while watched (those
    // changes are outside the tree: no records), then moved in.
    let rs = sn.step(|_| {
        let m = outside.join("m");
        std::fs::create_dir_all(m.join("sub/deeper")).expect("mkdir");
        touch(&m.join("f"));
        touch(&m.join("sub/g"));
        std::os::unix::fs::symlink("f", m.join("sub/l")).expect("symlink");
    });
    assert!(
        rs.is_empty(),
        "{what}: records outside the tree:\n{}",
        describe_all(&rs)
    );
    let rs = sn.step(|sn| std::fs::rename(outside.join("m"), sn.path(b"m")).expect("rename"));
    let m = sn.id(b"m");
    assert!(!rs.is_empty(), "{what}: no record for a move in");
    check(
        &what,
        &rs[0],
        &Want {
            kind: RecordType::RENME,
            flags: FLAG_IN,
            target: &m,
            parent: &root,
            name: b"m",
            fields: &[
                ("path", b"m"),
                ("sparent", outh.as_bytes()),
                ("sname", b"m"),
                ("type", b"dir"),
            ],
        },
    );
    // Its contents: each once, parents first, flagged COMPARE.
    let contents: [(&[u8], RecordType); 5] = [
        (b"m/f", RecordType::CREAT),
        (b"m/sub", RecordType::MKDIR),
        (b"m/sub/deeper", RecordType::MKDIR),
        (b"m/sub/g", RecordType::CREAT),
        (b"m/sub/l", RecordType::SLINK),
    ];
    assert_eq!(
        rs.len(),
        1 + contents.len(),
        "{what}: the move in and its contents:\n{}",
        describe_all(&rs)
    );
    for (rel, ty) in contents {
        let r = rs[1..]
            .iter()
            .find(|r| r.field("path") == Some(rel))
            .unwrap_or_else(|| {
                panic!("{what}: no record of {}:\n{}", show(rel), describe_all(&rs))
            });
        let (dir, name) = rel.split_at(rel.iter().rposition(|&b| b == b'/').expect("a slash"));
        let (parent, id) = (sn.id(dir), sn.id(rel));
        check(
            &what,
            r,
            &Want {
                kind: ty,
                flags: FLAG_COMPARE,
                target: &id,
                parent: &parent,
                name: &name[1..],
                fields: &[("path", rel)],
            },
        );
        // Parents first: a record's directory is the root's or came
        // before it.
        if dir != b"m" {
            let at = |p: &[u8]| rs.iter().position(|r| r.field("path") == Some(p));
            assert!(
                at(dir) < at(rel),
                "{what}: {} before its directory",
                show(rel)
            );
        }
    }

    // Moved out, under another name: `parent` is the directory outside,
    // and the record has no `path` (there is none in the tree).
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"m"), outside.join("m-out")).expect("rename"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: FLAG_OUT,
            target: &m,
            parent: &out_id,
            name: b"m-out",
            fields: &[
                ("sparent", rh.as_bytes()),
                ("sname", b"m"),
                ("spath", b"m"),
                ("type", b"dir"),
            ],
        },
    );
    // Changes inside it now are outside the tree.
    let rs = sn.step(|_| touch(&outside.join("m-out/sub/late")));
    assert!(
        rs.is_empty(),
        "{what}: records outside the tree:\n{}",
        describe_all(&rs)
    );
    sn.finish();
}

records_test!(moves_tmpfs, inner_moves_tmpfs, FsKind::Tmpfs, moves);
records_test!(moves_ext4, inner_moves_ext4, FsKind::Ext4, moves);
