//! A real full disk: ENOSPC from a filesystem that is really full.
//!
//! `full_disk` needs root, `unshare` and `mount`; without them it prints why
//! and skips. It re-runs this test binary under `unshare -m --propagation
//! private`, where a shell mounts a 4 MiB tmpfs on a fresh temporary
//! directory and execs the ignored test `full_disk_child`. The mount lives
//! only in that private mount namespace and is gone when the child exits,
//! so nothing changes on the host.
//!
//! The child fills the tmpfs with a filler file, appends durably until the
//! log reports `Error::NoSpace` (which must come, and must not hang),
//! checks the log is readable up to the last durable index, deletes the
//! filler, and checks that the same log catches up and appends again with
//! no acknowledged record lost.

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{Payload, check_log, read_dir};
use weir_log::{Error, Log, Options};

const DIR_ENV: &str = "WEIR_FULL_DISK_DIR";
const DONE: &str = "full-disk child finished:";

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn full_disk() {
    if !rustix::process::geteuid().is_root() {
        println!("skipped: the full-disk test needs root to mount a tmpfs");
        return;
    }
    if !have("unshare") || !have("mount") {
        println!("skipped: the full-disk test needs unshare and mount (util-linux)");
        return;
    }
    let mnt = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new("unshare")
        .args(["-m", "--propagation", "private", "--", "sh", "-c"])
        .arg(
            r#"mount -t tmpfs -o size=4m tmpfs "$1" && exec "$0" --exact full_disk_child --include-ignored --nocapture --test-threads=1"#,
        )
        .arg(&exe)
        .arg(mnt.path())
        .env(DIR_ENV, mnt.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn unshare");
    // The child must finish: a full disk may never block writers without bound.
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the full-disk child hung:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(status.success(), "the full-disk child failed: {status}");
    assert!(
        stdout.contains(DONE),
        "the child did not run the full-disk body"
    );
    // The tmpfs was private to the child's namespace.
    assert_eq!(std::fs::read_dir(mnt.path()).unwrap().count(), 0);
}

/// The body, run by `full_disk` inside a private mount namespace on a
/// 4 MiB tmpfs. Ignored so that a plain `cargo test` never runs it on the
/// host's filesystem.
#[test]
#[ignore = "run by full_disk inside a private mount namespace"]
fn full_disk_child() {
    let Some(root) = std::env::var_os(DIR_ENV) else {
        println!("skipped: full_disk runs this inside a private mount namespace");
        return;
    };
    let root = Path::new(&root);
    let st = rustix::fs::statvfs(root).unwrap();
    let size = st.f_blocks * st.f_frsize;
    assert!(
        size <= 8 << 20,
        "{} is not the small tmpfs ({size} bytes)",
        root.display()
    );
    let dir = root.join("log");
    let salt = 42;
    let log = Log::open(&dir, Options::default().segment_size(64 * 1024)).unwrap();
    let mut next = 1;
    let mut durable = 0;
    let mut appended = Vec::new();
    for _ in 0..5 {
        durable = Payload::new(salt, next)
            .with(|r| log.append_durable(r))
            .unwrap()
            .index();
        appended.push(next);
        next += 1;
    }

    // Fill the filesystem to the brim, then leave room for about three
    // segments.
    let filler = root.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0x5a; 64 * 1024];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(support::ENOSPC) => break,
            Err(e) => panic!("filling: {e}"),
        }
    }
    f.sync_all().unwrap();
    let full = f.metadata().unwrap().len();
    f.set_len(full.saturating_sub(200 * 1024)).unwrap();
    f.sync_all().unwrap();
    drop(f);
    println!("filler: {full} bytes, then 200 KiB freed");

    // Durable appends until the disk is full. Each durable commit takes a
    // 4 KiB block, so a segment holds a dozen or so; the fourth or fifth
    // segment cannot be allocated.
    let stuck = loop {
        let a = Payload::new(salt, next).with(|r| log.append(r)).unwrap();
        assert_eq!(a.index(), next);
        appended.push(next);
        next += 1;
        match log.wait_durable(a) {
            Ok(d) => durable = d.index(),
            Err(Error::NoSpace) => break a,
            Err(e) => panic!("expected NoSpace on a full disk, got {e:?}"),
        }
        assert!(next < 2000, "the disk never filled");
    };
    println!(
        "NoSpace at index {}, durable up to {durable}",
        stuck.index()
    );
    assert!(!log.is_poisoned(), "ENOSPC must not poison the log");

    // Readable up to the last durable index, live and from "another process".
    let live: Vec<_> = log.reader(1).map(|r| r.unwrap()).collect();
    assert!(live.len() as u64 >= durable);
    for (k, r) in live.iter().enumerate() {
        assert_eq!(r.index, k as u64 + 1);
        assert!(Payload::new(salt, r.index).matches(r), "{r:?}");
    }
    assert!(read_dir(&dir).len() as u64 >= durable);
    // Plain appends still return (queued) while the ring has room.
    for _ in 0..20 {
        let a = Payload::new(salt, next).with(|r| log.append(r)).unwrap();
        assert_eq!(a.index(), next);
        appended.push(next);
        next += 1;
    }

    std::fs::remove_file(&filler).unwrap();
    let mut synced = None;
    for _ in 0..10 {
        match log.sync() {
            Ok(d) => {
                synced = d;
                break;
            }
            Err(Error::NoSpace) => continue,
            Err(e) => panic!("sync after freeing space: {e:?}"),
        }
    }
    let synced = synced.expect("the log never caught up after space was freed");
    assert_eq!(synced.index(), next - 1);
    for _ in 0..100 {
        let d = Payload::new(salt, next)
            .with(|r| log.append_durable(r))
            .unwrap();
        assert_eq!(d.index(), next);
        appended.push(next);
        next += 1;
    }
    log.close().unwrap();

    // Every appended index exactly once, exact, gap-free; verify clean.
    let n = check_log(&dir, salt, next - 1);
    assert_eq!(n, next - 1);
    assert_eq!(appended, (1..next).collect::<Vec<_>>());
    let log = Log::open(&dir, Options::default().segment_size(64 * 1024)).unwrap();
    assert_eq!(log.recovery().next_index, next);
    assert!(log.recovery().torn.is_none());
    drop(log);
    println!("{DONE} {} records, NoSpace at {}", n, stuck.index());
}
