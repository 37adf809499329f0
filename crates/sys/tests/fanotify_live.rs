//! fanotify mount events against real mounts, made inside a private mount
//! namespace (see `support`), and the errno an unprivileged caller gets.

mod support;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use rustix::mount::{MountFlags, UnmountFlags, mount, mount_bind, mount_move};
use weir_sys::fanotify::{MountEvent, MountWatch};
use weir_sys::statmount::{Statmounter, mask};
use weir_sys::statx::mount_id_unique;

/// Reads until the queue is empty.
fn drain(w: &mut MountWatch) -> Vec<MountEvent> {
    let mut out = Vec::new();
    loop {
        let before = out.len();
        let n = w.read_batch(&mut out).expect("read_batch");
        assert_eq!(
            out.len() - before,
            n,
            "read_batch must count what it appended"
        );
        if n == 0 {
            return out;
        }
    }
}

#[test]
fn attach_move_detach() {
    support::run_in_private_ns("inner_attach_move_detach");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_attach_move_detach() {
    let Some(base) = support::private_base() else {
        return;
    };
    let mut w = MountWatch::open().expect("fanotify with FAN_REPORT_MNT (6.15+)");
    let mut out = Vec::new();
    assert_eq!(w.read_batch(&mut out).unwrap(), 0, "nothing queued yet");
    assert!(out.is_empty());

    let a = base.mkdir("a");
    mount("weir-ev", &a, "tmpfs", MountFlags::empty(), None).unwrap();
    let id = mount_id_unique(&a).unwrap();
    // Readable through AsFd, as a poll loop would see it.
    let mut fds = [PollFd::new(&w, PollFlags::IN)];
    let ready = poll(
        &mut fds,
        Some(&Timespec {
            tv_sec: 5,
            tv_nsec: 0,
        }),
    )
    .unwrap();
    assert_eq!(ready, 1);
    assert_eq!(drain(&mut w), [MountEvent::Attach(id)]);

    // A move is one event, and the mount keeps its id.
    let c = base.mkdir("c");
    mount_move(&a, &c).unwrap();
    assert_eq!(drain(&mut w), [MountEvent::Move(id)]);
    assert_eq!(mount_id_unique(&c).unwrap(), id);
    let sm = Statmounter::new().stat(id, mask::MNT_POINT).unwrap();
    assert_eq!(sm.mnt_point.as_deref(), Some(support::bytes(&c)));

    rustix::mount::unmount(&c, UnmountFlags::empty()).unwrap();
    assert_eq!(drain(&mut w), [MountEvent::Detach(id)]);

    // Several changes come in order, in one batch.
    let mut ids = Vec::new();
    for name in ["x", "y", "z"] {
        let p = base.mkdir(name);
        mount_bind(base.path(), &p).unwrap();
        ids.push(mount_id_unique(&p).unwrap());
    }
    let mut out = Vec::new();
    assert_eq!(w.read_batch(&mut out).unwrap(), 3);
    let want: Vec<_> = ids.iter().map(|&i| MountEvent::Attach(i)).collect();
    assert_eq!(out, want);
    assert_eq!(w.read_batch(&mut out).unwrap(), 0);
}

#[test]
fn queue_overflow_is_reported() {
    support::run_in_private_ns("inner_queue_overflow_is_reported");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_queue_overflow_is_reported() {
    let Some(base) = support::private_base() else {
        return;
    };
    let limit: usize = std::fs::read_to_string("/proc/sys/fs/fanotify/max_queued_events")
        .expect("read max_queued_events")
        .trim()
        .parse()
        .unwrap();
    assert!(
        limit <= 200_000,
        "max_queued_events {limit} too large to fill here"
    );
    let src = base.mkdir("src");
    let t = base.mkdir("t");
    let mut w = MountWatch::open().unwrap();
    // Stacked on one directory: no need for thousands of directories.
    for _ in 0..limit + 100 {
        mount_bind(&src, &t).unwrap();
    }
    let events = drain(&mut w);
    let overflows = events
        .iter()
        .filter(|e| **e == MountEvent::Overflow)
        .count();
    assert_eq!(overflows, 1, "{} events", events.len());
    assert_eq!(events.last(), Some(&MountEvent::Overflow));
    let attached: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            MountEvent::Attach(id) => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(attached.len() + 1, events.len(), "only attaches besides");
    eprintln!(
        "{} mounts, limit {limit}: {} attach events, then the overflow",
        limit + 100,
        attached.len()
    );
    assert!(
        (limit - 1..=limit).contains(&attached.len()),
        "{} attaches for a limit of {limit}",
        attached.len()
    );
    // Unique ids only grow.
    assert!(attached.windows(2).all(|p| p[0] < p[1]));
    drop(w);
}

#[test]
fn unprivileged_watch_is_eperm() {
    support::run_as_nobody("inner_unprivileged_watch_is_eperm");
}

#[test]
#[ignore = "run by its outer test as uid 65534"]
fn inner_unprivileged_watch_is_eperm() {
    if !support::inner_as_nobody() {
        return;
    }
    let e = MountWatch::open().unwrap_err();
    eprintln!("as uid 65534: {e}");
    assert_eq!(e.errno(), Some(Errno::PERM), "{e}");
    // Reading the table needs no privilege.
    let root = mount_id_unique(std::path::Path::new("/")).unwrap();
    assert!(
        weir_sys::listmount::listmount_all()
            .unwrap()
            .contains(&root)
    );
    let sm = Statmounter::new().stat(root, mask::MNT_POINT).unwrap();
    assert_eq!(sm.mnt_point.as_deref(), Some(&b"/"[..]));
}
