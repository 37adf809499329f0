//! The mountinfo backend's pacing: a lone change is read at once, while a
//! storm is read about once, at its pause, rather than every
//! `min_interval` all through it (each reading holds the namespace lock
//! the mounters need). In a private mount namespace.

mod support;

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::mount::{MountFlags, UnmountFlags, mount, mount_bind, unmount};
use weir_mounts::{BackendChoice, Tracker, TrackerOptions};

use support::in_private_namespace;

const STORM: usize = 1000;

fn seen(t: &Tracker, p: &Path) -> bool {
    let point = p.as_os_str().as_bytes();
    t.mounts().iter().any(|m| *m.mount_point == *point)
}

#[test]
fn a_lone_mount_is_read_at_once_and_a_storm_at_its_pause() {
    if !in_private_namespace("a_lone_mount_is_read_at_once_and_a_storm_at_its_pause") {
        return;
    }
    let opts = TrackerOptions {
        backend: BackendChoice::Mountinfo,
        // Generous, so that only the pacing holds readings back.
        budget: 1.0,
        audit_interval: None,
        // Far above the 1 ms between the storm's mounts, so that a loaded
        // machine descheduling the mounter does not end the storm early
        // (with the default 20 ms, a 2-core host could).
        quiet: Duration::from_millis(250),
        ..TrackerOptions::default()
    };
    let (quiet, max_delay) = (opts.quiet, opts.max_delay);
    let t = Tracker::start(None, opts, None).expect("start tracker");
    let d = tempfile::tempdir().unwrap();
    mount("weirtest", d.path(), "tmpfs", MountFlags::empty(), None).expect("mount tmpfs");

    // Lone: read without a sync, well before max_delay would force it.
    let t0 = Instant::now();
    while !seen(&t, d.path()) {
        assert!(
            t0.elapsed() < max_delay / 2,
            "a lone mount waited: {:?}",
            t.stats()
        );
        std::thread::sleep(Duration::from_millis(1));
    }

    // After a pause, a storm with none as long as `quiet`.
    std::thread::sleep(quiet + Duration::from_millis(50));
    let src = d.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let targets: Vec<_> = (0..STORM).map(|i| d.path().join(format!("t{i}"))).collect();
    let before = t.stats().readings;
    for p in &targets {
        std::fs::create_dir(p).unwrap();
        mount_bind(&src, p).expect("bind mount");
        std::thread::sleep(Duration::from_millis(1));
    }
    let t1 = Instant::now();
    while !targets.iter().all(|p| seen(&t, p)) {
        assert!(t1.elapsed() < max_delay * 2, "{:?}", t.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
    let readings = t.stats().readings - before;
    // One at the first mount, one at the pause; a few more if the storm
    // was descheduled for longer than `quiet`, or outlasted `max_delay`.
    // Reading every `min_interval` would take 20 or more over this storm.
    assert!(
        readings <= 6,
        "{readings} readings in the storm: {:?}",
        t.stats()
    );

    t.sync().unwrap();
    assert!(targets.iter().all(|p| seen(&t, p)));
    t.stop().unwrap();
    unmount(d.path(), UnmountFlags::DETACH).expect("detach the tmpfs");
}

/// Regression: under fanotify every mount of a storm woke the tracker, at
/// about 40 µs of CPU per wakeup in this VM. Events were read one by one as
/// they came, and the mountinfo fd, left in the poll set with an empty mask
/// while a comparison was pending, still reported each change as POLLERR
/// (which no mask turns off). Now a storm's events gather for `batch`
/// before each read, and the fd is left out of the set.
#[test]
fn a_fanotify_storm_is_read_a_few_events_at_a_time() {
    if !in_private_namespace("a_fanotify_storm_is_read_a_few_events_at_a_time") {
        return;
    }
    let opts = TrackerOptions {
        backend: BackendChoice::Fanotify,
        audit_interval: None,
        // Ten times the default, so that a loaded machine stretching the
        // 1 ms gaps still leaves many events to each read.
        batch: Duration::from_millis(50),
        ..TrackerOptions::default()
    };
    let gap = Duration::from_millis(1);
    let t = Tracker::start(None, opts, None).expect("start tracker");
    let d = tempfile::tempdir().unwrap();
    mount("weirtest", d.path(), "tmpfs", MountFlags::empty(), None).expect("mount tmpfs");
    let src = d.path().join("src");
    std::fs::create_dir(&src).unwrap();
    t.sync().unwrap();
    let before = t.stats();
    // Spaced as a mount(8) storm's are, not all at once, so that each
    // mount's event is there to be read on its own.
    let targets: Vec<_> = (0..STORM / 4)
        .map(|i| d.path().join(format!("t{i}")))
        .collect();
    for p in &targets {
        std::fs::create_dir(p).unwrap();
        mount_bind(&src, p).expect("bind mount");
        std::thread::sleep(gap);
    }
    let t1 = Instant::now();
    while !targets.iter().all(|p| seen(&t, p)) {
        assert!(t1.elapsed() < Duration::from_secs(10), "{:?}", t.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
    let s = t.stats();
    let events = s.events - before.events;
    let reads = s.event_reads - before.event_reads;
    let wakeups = s.wakeups - before.wakeups;
    assert_eq!(events, targets.len() as u64, "{s:?}");
    // Tens of events per read and one wakeup per read. The bug was a
    // read per mount, and a wakeup per mount even with reads batched.
    assert!(
        reads <= events / 2,
        "{reads} reads for {events} events: {s:?}"
    );
    assert!(
        wakeups <= events / 2,
        "{wakeups} wakeups for {events} events: {s:?}"
    );
    t.stop().unwrap();
}
