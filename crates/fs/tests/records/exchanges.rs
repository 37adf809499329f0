//! RENAME_EXCHANGE: one RENME flagged EXCHANGE.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use crate::support::Base;
use crate::support::journal::describe_all;
use crate::support::scratch::{FsKind, Scratch};
use rustix::fs::{CWD, RenameFlags};
use weir_fs::ObjectId;
use weir_fs::record::FLAG_EXCHANGE;
use weir_log::{LogRecord, RecordType};

use crate::session::*;

/// RENAME_EXCHANGE: one RENME flagged EXCHANGE, `exchanged` naming the
/// entry that went the other way; for two files in one directory, then a
/// directory and a file across directories; then thousands at once, since
/// an exchange is two rename events back to back and the second must be
/// taken as the first's mirror, never as a rename of its own, however the
/// tracker's reads fall.
fn exchanges(kind: FsKind, base: &Base, s: &Scratch) {
    const PAIRS: usize = 3000;
    let what = format!("{kind}: exchanges");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(1));
    let root = sn.id(b"");
    let rh = root.hex();
    let _ = sn.step(|sn| {
        touch(&sn.path(b"one"));
        touch(&sn.path(b"other"));
        std::fs::create_dir_all(sn.path(b"d1/dm")).expect("mkdir");
        touch(&sn.path(b"d1/dm/inside"));
    });
    let (one, other) = (sn.id(b"one"), sn.id(b"other"));
    let (d1, dm) = (sn.id(b"d1"), sn.id(b"d1/dm"));
    let (oh, h1, onh) = (other.hex(), d1.hex(), one.hex());

    let rs = sn.step(|sn| exchange(&sn.path(b"one"), &sn.path(b"other")));
    assert_eq!(
        (sn.id(b"one"), sn.id(b"other")),
        (other.clone(), one.clone()),
        "{what}: swapped"
    );
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: FLAG_EXCHANGE,
            target: &one,
            parent: &root,
            name: b"other",
            fields: &[
                ("path", b"other"),
                ("sparent", rh.as_bytes()),
                ("sname", b"one"),
                ("spath", b"one"),
                ("exchanged", oh.as_bytes()),
            ],
        },
    );
    // Across directories, a directory with the file: the entry named
    // first is the directory (`type=dir`), and the file goes the other
    // way.
    let rs = sn.step(|sn| exchange(&sn.path(b"d1/dm"), &sn.path(b"other")));
    assert_eq!(
        (sn.id(b"d1/dm"), sn.id(b"other")),
        (one.clone(), dm.clone())
    );
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: FLAG_EXCHANGE,
            target: &dm,
            parent: &root,
            name: b"other",
            fields: &[
                ("path", b"other"),
                ("sparent", h1.as_bytes()),
                ("sname", b"dm"),
                ("spath", b"d1/dm"),
                ("type", b"dir"),
                ("exchanged", onh.as_bytes()),
            ],
        },
    );

    // Many at once, of distinct pairs (so that the kernel merges none),
    // without a pause: the tracker's reads then fall anywhere in the
    // stream, between an exchange's two events too. Files in two
    // directories, and a directory with contents in every tenth pair.
    let _ = sn.step(|sn| {
        std::fs::create_dir(sn.path(b"xs")).expect("mkdir");
        std::fs::create_dir(sn.path(b"ys")).expect("mkdir");
        for i in 0..PAIRS {
            touch(&sn.path(format!("xs/{i}").as_bytes()));
            if i % 10 == 0 {
                std::fs::create_dir(sn.path(format!("ys/{i}").as_bytes())).expect("mkdir");
                touch(&sn.path(format!("ys/{i}/inside").as_bytes()));
            } else {
                touch(&sn.path(format!("ys/{i}").as_bytes()));
            }
        }
    });
    let ids: Vec<(ObjectId, ObjectId)> = (0..PAIRS)
        .map(|i| {
            (
                sn.id(format!("xs/{i}").as_bytes()),
                sn.id(format!("ys/{i}").as_bytes()),
            )
        })
        .collect();
    let rs = sn.step(|sn| {
        for i in 0..PAIRS {
            exchange(
                &sn.path(format!("xs/{i}").as_bytes()),
                &sn.path(format!("ys/{i}").as_bytes()),
            );
        }
    });
    // The replay is right whatever the records say (the ids are kept);
    // checked first, so that a failure below is about the records alone.
    sn.finish();
    // One RENME EXCHANGE per pair, and nothing else: a pair is wrong if
    // its records are anything but that one.
    let mut by_target: HashMap<ObjectId, Vec<&LogRecord>> = HashMap::new();
    for r in &rs {
        if let Some(t) = ObjectId::from_bytes(&r.target) {
            by_target.entry(t).or_default().push(r);
        }
    }
    let mut wrong: Vec<usize> = Vec::new();
    for (i, (x, y)) in ids.iter().enumerate() {
        let about: Vec<&LogRecord> = [x, y]
            .into_iter()
            .flat_map(|id| by_target.get(id).into_iter().flatten().copied())
            .collect();
        let ok = match about[..] {
            [r] => {
                r.kind == RecordType::RENME
                    && r.flags == FLAG_EXCHANGE
                    && ObjectId::from_bytes(&r.target).as_ref() == Some(x)
                    && r.field("exchanged") == Some(y.hex().as_bytes())
            }
            _ => false,
        };
        if !ok {
            wrong.push(i);
        }
    }
    let shown: Vec<String> = wrong
        .iter()
        .take(3)
        .map(|&i| {
            let name = i.to_string().into_bytes();
            let rs: Vec<LogRecord> = rs
                .iter()
                .filter(|r| r.name == name || r.field("sname") == Some(&name[..]))
                .cloned()
                .collect();
            format!("pair {i}:\n{}", describe_all(&rs))
        })
        .collect();
    assert!(
        wrong.is_empty() && rs.len() == PAIRS,
        "{what}: {PAIRS} exchanges gave {} records; {} pairs not one RENME EXCHANGE:\n{}",
        rs.len(),
        wrong.len(),
        shown.join("\n")
    );
}

fn exchange(a: &Path, b: &Path) {
    rustix::fs::renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE)
        .unwrap_or_else(|e| panic!("exchange {} {}: {e}", a.display(), b.display()));
}

records_test!(
    exchanges_tmpfs,
    inner_exchanges_tmpfs,
    FsKind::Tmpfs,
    exchanges
);
records_test!(
    exchanges_ext4,
    inner_exchanges_ext4,
    FsKind::Ext4,
    exchanges
);
