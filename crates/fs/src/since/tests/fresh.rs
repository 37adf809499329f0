//! A directory's rename with what is below it, and each reason an answer
//! is `fresh`.

use super::*;

fn file(m: &mut Model<'_>, parent: &ObjectId, name: &[u8]) -> ObjectId {
    let id = m.fresh_id();
    m.log(Change::Create {
        parent: parent.clone(),
        name: name.to_vec(),
        entry: Entry {
            id: id.clone(),
            kind: Kind::File,
        },
        link: false,
    });
    id
}

#[test]
fn a_directory_renamed_carries_what_is_below_it() {
    let (_dir, log) = open();
    let root = oid(1);
    watched(&log, ROOT, &root);
    let mut m = Model {
        tree: Tree::new(root.clone()),
        next: 1,
        log: &log,
    };
    let d = m.fresh_id();
    m.log(Change::Create {
        parent: root.clone(),
        name: b"d".to_vec(),
        entry: Entry {
            id: d.clone(),
            kind: Kind::Dir,
        },
        link: false,
    });
    let old = file(&mut m, &d, b"old");
    file(&mut m, &d, b"kept");
    log.sync().unwrap();
    let since = log.last_index();
    file(&mut m, &d, b"new");
    m.log(Change::Remove {
        parent: d.clone(),
        name: b"old".to_vec(),
        entry: Entry {
            id: old,
            kind: Kind::File,
        },
        last: true,
    });
    m.log(Change::Rename {
        sparent: root.clone(),
        sname: b"d".to_vec(),
        parent: root.clone(),
        name: b"e".to_vec(),
        entry: Entry {
            id: d,
            kind: Kind::Dir,
        },
        overwritten: None,
        exchanged: None,
    });
    log.sync().unwrap();
    let got = changes(&log, Path::new(ROOT), since).unwrap();
    assert!(!got.fresh);
    assert_eq!(got.created, vec![b"e/new".to_vec()]);
    assert_eq!(got.removed, vec![b"d/old".to_vec()]);
    assert_eq!(
        got.renamed,
        vec![Renamed {
            from: b"d".to_vec(),
            to: b"e".to_vec()
        }]
    );
    assert_eq!(got.next, log.last_index());
}

#[test]
fn fresh_after_retention_removed_what_was_asked_for() {
    let (_dir, log) = open();
    watched(&log, ROOT, &oid(1));
    log.sync().unwrap();
    // As a log whose first index is 5 reads: records 3 and 4 are gone.
    let out = changes_from(log.reader(1), 5, Path::new(ROOT), 2).unwrap();
    assert_eq!(out.why, Some(Fresh::Retention { first: 5 }));
    assert!(out.fresh);
}

#[test]
fn fresh_when_the_watch_started_after_since_or_ended() {
    let (_dir, log) = open();
    let root = oid(1);
    let first = watched(&log, ROOT, &root);
    let mut m = Model {
        tree: Tree::new(root.clone()),
        next: 1,
        log: &log,
    };
    file(&mut m, &root, b"f");
    log.sync().unwrap();
    let before = changes(&log, Path::new(ROOT), first - 1).unwrap();
    assert_eq!(before.why, Some(Fresh::WatchStarted));
    let at = log.last_index();
    mark(&log, REMOVED, ROOT, &root, &[]);
    log.sync().unwrap();
    assert_eq!(
        changes(&log, Path::new(ROOT), at).unwrap().why,
        Some(Fresh::Ended)
    );
    // Asked again after the end: the root is not watched.
    let end = log.last_index();
    assert_eq!(
        changes(&log, Path::new(ROOT), end).unwrap().why,
        Some(Fresh::NotWatched)
    );
    assert!(matches!(
        changes(&log, Path::new("/elsewhere"), end),
        Err(Error::NotWatched { .. })
    ));
}

#[test]
fn fresh_after_lost_events_and_beside_another_root_on_the_filesystem() {
    let (_dir, log) = open();
    let root = oid(1);
    let at = watched(&log, ROOT, &root);
    mark(&log, LOST, ROOT, &root, &[]);
    log.sync().unwrap();
    assert_eq!(
        changes(&log, Path::new(ROOT), at).unwrap().why,
        Some(Fresh::EventsLost)
    );
    let at = log.last_index();
    // A root on another filesystem does not matter; one on this one does.
    watched(&log, "/other", &oid_on(9, 1));
    log.sync().unwrap();
    assert!(!changes(&log, Path::new(ROOT), at).unwrap().fresh);
    watched(&log, "/same", &oid(77));
    log.sync().unwrap();
    assert_eq!(
        changes(&log, Path::new(ROOT), at).unwrap().why,
        Some(Fresh::SharedFilesystem)
    );
}

#[test]
fn fresh_when_since_is_past_the_end() {
    let (_dir, log) = open();
    watched(&log, ROOT, &oid(1));
    log.sync().unwrap();
    let got = changes(&log, Path::new(ROOT), 99).unwrap();
    assert_eq!(got.why, Some(Fresh::Future { last: 1 }));
    assert_eq!(got.next, 1);
}
