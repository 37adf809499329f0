//! The uevent socket against a real event: attaching a loop device makes
//! the kernel announce it (`add`, or `change` for a node that existed), and
//! the message must carry the kernel's sender facts (port 0, group 1,
//! uid 0). Needs root and losetup(8); the loop device is detached by path.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use weir_sys::uevent::{Groups, MAX_MESSAGE, Message, Recv, UEVENT_GROUP_KERNEL, UeventSocket};

/// A loop device this test attached; detached by path on drop.
struct LoopDev(PathBuf);

impl LoopDev {
    fn attach(image: &Path) -> LoopDev {
        let out = Command::new("losetup")
            .args(["--show", "-f"])
            .arg(image)
            .output()
            .expect("run losetup");
        assert!(out.status.success(), "losetup: {out:?}");
        let path = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        assert!(path.starts_with("/dev/loop"), "losetup printed {path:?}");
        LoopDev(PathBuf::from(path))
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

fn have_losetup() -> bool {
    Command::new("losetup")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The `KEY=VALUE` properties of a kernel-format message, with the header.
fn fields(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

/// Receives until a message about `name` with one of `actions` arrives, or
/// 10 s pass.
fn wait_for(sock: &mut UeventSocket, name: &str, actions: &[&str]) -> (Message, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = vec![0u8; MAX_MESSAGE];
    let devname = format!("DEVNAME={name}");
    loop {
        match sock.recv(&mut buf).expect("recv") {
            Recv::Message(m) => {
                let f = fields(&buf[..m.len]);
                let action = f.iter().find_map(|p| p.strip_prefix("ACTION="));
                if f.contains(&devname) && action.is_some_and(|a| actions.contains(&a)) {
                    return (m, f);
                }
            }
            Recv::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                assert!(!left.is_zero(), "no {actions:?} uevent for {name}");
                let mut fds = [PollFd::new(&*sock, PollFlags::IN)];
                let timeout = Timespec {
                    tv_sec: 0,
                    tv_nsec: 200_000_000,
                };
                poll(&mut fds, Some(&timeout)).expect("poll");
            }
            Recv::Overflow => panic!("receive buffer overflowed"),
        }
    }
}

#[test]
fn loop_attach_and_detach_are_announced_by_the_kernel() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping: needs root to attach a loop device");
        return;
    }
    if !have_losetup() {
        eprintln!("skipping: needs losetup(8) from util-linux");
        return;
    }
    let mut sock = UeventSocket::open(Groups {
        kernel: true,
        udev: false,
    })
    .expect("open the uevent socket");
    // Root gets the forced size; the kernel reports twice what was set.
    assert!(sock.recv_buffer_size().unwrap() >= weir_sys::uevent::RCVBUF_BYTES);

    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("disk.img");
    std::fs::write(&image, vec![0u8; 1 << 20]).unwrap();
    let dev = LoopDev::attach(&image);
    let name = dev.0.file_name().unwrap().to_str().unwrap().to_owned();

    let (m, f) = wait_for(&mut sock, &name, &["add", "change"]);
    assert_eq!(m.port_id, 0, "kernel messages come from port 0");
    assert_eq!(m.group, Some(UEVENT_GROUP_KERNEL));
    assert_eq!(m.uid(), Some(0));
    assert_eq!(m.creds.map(|c| c.pid), Some(0));
    assert!(!m.truncated);
    // The kernel's header is ACTION@DEVPATH.
    let header = &f[0];
    assert!(
        header.contains('@') && header.ends_with(&format!("/{name}")),
        "{f:?}"
    );
    assert!(f.contains(&"SUBSYSTEM=block".to_owned()), "{f:?}");

    drop(dev);
    let (m, _) = wait_for(&mut sock, &name, &["change", "remove"]);
    assert_eq!(m.port_id, 0);

    // A buffer too small for the message is reported as truncated.
    let dev = LoopDev::attach(&image);
    let mut tiny = [0u8; 8];
    let deadline = Instant::now() + Duration::from_secs(10);
    let m = loop {
        match sock.recv(&mut tiny).expect("recv") {
            Recv::Message(m) => break m,
            Recv::WouldBlock => {
                assert!(Instant::now() < deadline, "no uevent after attach");
                std::thread::sleep(Duration::from_millis(20));
            }
            Recv::Overflow => panic!("receive buffer overflowed"),
        }
    };
    assert!(m.truncated);
    assert_eq!(m.len, tiny.len());
    drop(dev);
}
