//! inotify on a block device node, the watch weir-devices makes: a loop
//! device attached for the test (as root), closed after a write.
//!
//! Apart from `inotify_live.rs` because it runs losetup: see there.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use weir_sys::inotify::{Event, IN_CLOSE_WRITE, IN_IGNORED, Inotify, Wd};

fn ev(wd: Wd, mask: u32, name: &[u8]) -> Event {
    Event {
        wd,
        mask,
        cookie: 0,
        name: name.to_vec(),
    }
}

fn read(ino: &mut Inotify) -> Vec<Event> {
    let mut out = Vec::new();
    ino.read_batch(&mut out).expect("read_batch");
    out
}

/// A loop device this test attached, detached (by its path only) on drop.
struct Loop {
    dev: PathBuf,
}

impl Loop {
    fn attach(backing: &Path) -> Option<Loop> {
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(backing)
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "skipping: losetup -f failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        let dev = String::from_utf8(out.stdout).ok()?;
        Some(Loop {
            dev: PathBuf::from(dev.trim()),
        })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let ok = Command::new("losetup")
            .arg("-d")
            .arg(&self.dev)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("could not detach {}", self.dev.display());
        }
    }
}

/// The watch weir-devices makes: a block device node, for the close of a
/// write (as LVM's commands do on a PV's node).
#[test]
fn close_write_on_a_loop_device_node() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping: needs root to attach a loop device");
        return;
    }
    if !Path::new("/dev/loop-control").exists() {
        eprintln!("skipping: no /dev/loop-control");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("disk");
    File::create(&backing).unwrap().set_len(1 << 20).unwrap();
    let Some(lo) = Loop::attach(&backing) else {
        return;
    };
    let mut ino = Inotify::open().unwrap();
    let wd = ino.add_watch(&lo.dev, IN_CLOSE_WRITE).unwrap();
    // A read-only open and close is no write.
    drop(File::open(&lo.dev).unwrap());
    let mut w = OpenOptions::new().write(true).open(&lo.dev).unwrap();
    w.write_all(&[0x5A; 512]).unwrap();
    drop(w);
    assert_eq!(read(&mut ino), [ev(wd, IN_CLOSE_WRITE, b"")]);
    ino.rm_watch(wd).unwrap();
    assert_eq!(read(&mut ino), [ev(wd, IN_IGNORED, b"")]);
    drop(lo);
}
