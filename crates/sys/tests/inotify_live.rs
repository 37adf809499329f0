//! inotify against real files: `IN_CLOSE_WRITE` on a watched file, the end
//! of a watch (`IN_IGNORED`), and the errno of a failed `add_watch`.
//!
//! No waits: a `close(2)` has queued its event by the time it returns, and
//! so have `unlink(2)` and `inotify_rm_watch(2)`. That holds only while no
//! other thread of the process forks: a child holds a copy of every file
//! open at the fork until it execs, which delays that file's last close
//! and its events. So no test here starts a process; the loop device test,
//! which runs losetup, is in `inotify_loop.rs`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use weir_sys::inotify::{
    Event, IN_CLOSE_NOWRITE, IN_CLOSE_WRITE, IN_DELETE_SELF, IN_IGNORED, IN_MASK_ADD, Inotify, Wd,
};

fn ev(wd: Wd, mask: u32, name: &[u8]) -> Event {
    Event {
        wd,
        mask,
        cookie: 0,
        name: name.to_vec(),
    }
}

/// One `read_batch`, checking that its count is what it appended.
fn read(ino: &mut Inotify) -> Vec<Event> {
    let mut out = Vec::new();
    let n = ino.read_batch(&mut out).expect("read_batch");
    assert_eq!(n, out.len(), "read_batch must count what it appended");
    out
}

fn open_write(p: &Path) {
    drop(
        OpenOptions::new()
            .write(true)
            .open(p)
            .expect("open for writing"),
    );
}

fn open_read(p: &Path) {
    drop(File::open(p).expect("open read-only"));
}

/// Whether the fd is readable now, without waiting.
fn readable(ino: &Inotify) -> bool {
    let mut fds = [PollFd::new(ino, PollFlags::IN)];
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    poll(&mut fds, Some(&zero)).expect("poll") == 1
}

#[test]
fn close_write_on_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    std::fs::write(&f, b"x").unwrap();
    let mut ino = Inotify::open().unwrap();
    let wd = ino.add_watch(&f, IN_CLOSE_WRITE).unwrap();
    assert!(read(&mut ino).is_empty(), "nothing queued yet");
    assert!(!readable(&ino));

    // The read-only close comes first and gives nothing: the one event
    // read is the write's.
    open_read(&f);
    open_write(&f);
    assert!(readable(&ino), "POLLIN through AsFd");
    let got = read(&mut ino);
    assert_eq!(got, [ev(wd, IN_CLOSE_WRITE, b"")]);
    assert!(!got[0].ignored() && !got[0].overflowed());
    assert!(read(&mut ino).is_empty());

    // Written through the fd before the close: still one close event.
    let mut w = OpenOptions::new().append(true).open(&f).unwrap();
    w.write_all(b"more").unwrap();
    drop(w);
    assert_eq!(read(&mut ino), [ev(wd, IN_CLOSE_WRITE, b"")]);

    // A second watch on the inode is the same watch; IN_MASK_ADD widens it.
    let again = ino.add_watch(&f, IN_CLOSE_NOWRITE | IN_MASK_ADD).unwrap();
    assert_eq!(again, wd);
    open_read(&f);
    open_write(&f);
    assert_eq!(
        read(&mut ino),
        [ev(wd, IN_CLOSE_NOWRITE, b""), ev(wd, IN_CLOSE_WRITE, b"")]
    );

    // rm_watch: IN_IGNORED, then nothing more from the file.
    ino.rm_watch(wd).unwrap();
    let got = read(&mut ino);
    assert_eq!(got, [ev(wd, IN_IGNORED, b"")]);
    assert!(got[0].ignored());
    open_write(&f);
    assert!(read(&mut ino).is_empty());
    assert_eq!(ino.rm_watch(wd), Err(Errno::INVAL));
}

#[test]
fn deleting_the_watched_file_ends_the_watch() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("gone");
    std::fs::write(&f, b"x").unwrap();
    let mut ino = Inotify::open().unwrap();
    let wd = ino.add_watch(&f, IN_CLOSE_WRITE | IN_DELETE_SELF).unwrap();
    std::fs::remove_file(&f).unwrap();
    let got = read(&mut ino);
    assert_eq!(got, [ev(wd, IN_DELETE_SELF, b""), ev(wd, IN_IGNORED, b"")]);
    assert!(got[1].ignored());
    assert_eq!(ino.rm_watch(wd), Err(Errno::INVAL));
}

#[test]
fn a_directory_watch_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut ino = Inotify::open().unwrap();
    let wd = ino.add_watch(dir.path(), IN_CLOSE_WRITE).unwrap();
    let long = "n".repeat(255);
    for name in ["a", "fifteen-bytes-x", "sixteen-bytes-xx", &long] {
        std::fs::write(dir.path().join(name), b"x").unwrap();
    }
    let want: Vec<_> = ["a", "fifteen-bytes-x", "sixteen-bytes-xx", &long]
        .iter()
        .map(|n| ev(wd, IN_CLOSE_WRITE, n.as_bytes()))
        .collect();
    assert_eq!(read(&mut ino), want);
}

/// More events than one 64 KiB read holds: one `read_batch` returns them
/// all, in order.
#[test]
fn one_read_batch_drains_several_reads() {
    let limit: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16384);
    // Each event here is 16 + 16 bytes: 4000 of them take two reads.
    let n = 4000.min(limit / 2);
    let dir = tempfile::tempdir().unwrap();
    let mut ino = Inotify::open().unwrap();
    let wd = ino.add_watch(dir.path(), IN_CLOSE_WRITE).unwrap();
    let names: Vec<String> = (0..n).map(|i| format!("f{i}")).collect();
    for name in &names {
        // Distinct names: the kernel merges only identical events.
        File::create(dir.path().join(name)).unwrap();
    }
    let got = read(&mut ino);
    assert_eq!(got.len(), n, "limit {limit}");
    assert!(got.iter().all(|e| e.wd == wd && e.mask == IN_CLOSE_WRITE));
    assert!(
        got.iter()
            .map(|e| &e.name[..])
            .eq(names.iter().map(|s| s.as_bytes()))
    );
    assert!(read(&mut ino).is_empty());
}

#[test]
fn add_watch_keeps_the_errno() {
    let dir = tempfile::tempdir().unwrap();
    let ino = Inotify::open().unwrap();
    assert_eq!(
        ino.add_watch(&dir.path().join("missing"), IN_CLOSE_WRITE),
        Err(Errno::NOENT)
    );
    // IN_ONLYDIR on a file.
    let f = dir.path().join("f");
    std::fs::write(&f, b"").unwrap();
    assert_eq!(
        ino.add_watch(&f, IN_CLOSE_WRITE | weir_sys::inotify::IN_ONLYDIR),
        Err(Errno::NOTDIR)
    );
    // An empty mask watches nothing, and the kernel refuses it.
    assert_eq!(ino.add_watch(&f, 0), Err(Errno::INVAL));
    assert_eq!(ino.rm_watch(Wd(12345)), Err(Errno::INVAL));
}
