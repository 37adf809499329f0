//! The reading budget as `Tracker::stats` shows it: full at the start,
//! drained by `sync()` (which bypasses it but pays), and a change that
//! arrives while it is in debt held back (throttled, counted as deferred)
//! until `max_delay` forces its reading. In a private mount namespace.

mod support;

use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use weir_mounts::{BackendChoice, Tracker, TrackerOptions};

use support::in_private_namespace;

#[test]
fn a_change_while_the_budget_is_in_debt_is_deferred_then_forced() {
    if !in_private_namespace("a_change_while_the_budget_is_in_debt_is_deferred_then_forced") {
        return;
    }
    let opts = TrackerOptions {
        backend: BackendChoice::Mountinfo,
        // The smallest share: 1 µs of tokens back per ms.
        budget: 0.001,
        max_delay: Duration::from_millis(500),
        audit_interval: None,
        ..TrackerOptions::default()
    };
    let t = Tracker::start(None, opts, None).expect("start tracker");
    let s = t.stats();
    assert_eq!(s.budget_capacity_ns, 20_000_000);
    assert_eq!(s.budget_tokens_ns, 20_000_000, "full at the start: {s:?}");
    assert!(!s.budget_throttled);
    assert_eq!(s.budget_deferred, 0);

    // Each sync reads the whole table and charges its CPU time.
    let t0 = Instant::now();
    while t.stats().budget_tokens_ns > -2_000_000 {
        assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t.stats());
        t.sync().unwrap();
    }
    assert!(!t.stats().budget_throttled, "nothing is wanted yet");

    let d = tempfile::tempdir().unwrap();
    rustix::mount::mount(
        "weirtest",
        d.path(),
        "tmpfs",
        rustix::mount::MountFlags::empty(),
        None,
    )
    .expect("mount tmpfs");
    let point = d.path().as_os_str().as_bytes().to_vec();
    let seen = || t.mounts().iter().any(|m| *m.mount_point == *point);
    // POLLPRI wakes the thread; the budget holds the reading back.
    let t1 = Instant::now();
    while !t.stats().budget_throttled {
        assert!(!seen(), "read despite the debt: {:?}", t.stats());
        assert!(t1.elapsed() < Duration::from_secs(5), "{:?}", t.stats());
        std::thread::sleep(Duration::from_millis(1));
    }
    let s = t.stats();
    assert_eq!(s.budget_deferred, 1, "{s:?}");
    assert!(s.budget_tokens_ns < 0, "{s:?}");
    // `max_delay` forces it, or the repaid debt lets it run.
    while !seen() {
        assert!(t1.elapsed() < Duration::from_secs(10), "{:?}", t.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
    let s = t.stats();
    assert!(!s.budget_throttled, "{s:?}");
    assert_eq!(s.budget_deferred, 1, "{s:?}");
    rustix::mount::unmount(d.path(), rustix::mount::UnmountFlags::empty()).unwrap();
    t.stop().unwrap();
}
