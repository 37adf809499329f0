//! mountinfo texts kept as files: captures of this project's test VM
//! (kernel 6.18) and a hand-made hostile one, parsed both directly and
//! through [`MountinfoFile`], plus the live /proc/self/mountinfo.
//!
//! - `mountinfo-vm.txt`: /proc/self/mountinfo of the VM, as it is.
//! - `mountinfo-vm-escapes.txt`: the lines under /tmp/mi in a private
//!   mount namespace where mounts were made on names with a space, tab,
//!   newline, backslash, 0xff and `,=`, with an empty source, shared and
//!   slave propagation, an overlay whose lowerdir holds `\,` and a bind of
//!   a deleted directory.
//! - `mountinfo-hostile.txt`: valid but odd lines no kernel writes today;
//!   the last one has no newline.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::path::PathBuf;

use weir_mounts::mountinfo::{MountinfoFile, parse, render};
use weir_mounts::{Mount, MountFlags, SuperFlags};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn parse_fixture(name: &str) -> (Vec<u8>, Vec<Mount>) {
    let text = std::fs::read(fixture(name)).unwrap();
    let table = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    (text, table)
}

fn at<'a>(table: &'a [Mount], mount_point: &[u8]) -> &'a Mount {
    table
        .iter()
        .find(|m| &*m.mount_point == mount_point)
        .unwrap_or_else(|| panic!("no {}", String::from_utf8_lossy(mount_point)))
}

#[test]
fn parses_the_vm_capture() {
    let (text, t) = parse_fixture("mountinfo-vm.txt");
    assert_eq!(t.len(), text.iter().filter(|&&b| b == b'\n').count());
    let root = at(&t, b"/");
    assert_eq!(&*root.fstype, b"ext4");
    assert_eq!((root.major, root.minor), (254, 0));
    let py = at(&t, b"/mnt/sandboxing/model_tools_env/v1/python");
    assert!(py.flags.contains(MountFlags::RDONLY));
    assert_eq!(py.super_flags, SuperFlags::RDONLY);
    // The kernel's own text comes back byte for byte.
    assert!(render(&t) == text);
}

#[test]
fn parses_the_vm_capture_with_escapes() {
    let (text, t) = parse_fixture("mountinfo-vm-escapes.txt");
    assert_eq!(t.len(), 11);
    // Byte for byte but for overlay's `\054`: a decoded `,` is written
    // back as it is, since only the filesystem knows which are separators.
    let rendered = render(&t);
    for (a, b) in rendered
        .split(|&b| b == b'\n')
        .zip(text.split(|&b| b == b'\n'))
    {
        let overlay = b.windows(4).any(|w| w == b"\\054");
        assert_eq!(a == b, !overlay, "{}", String::from_utf8_lossy(b));
    }
    assert_eq!(parse(&rendered).unwrap(), t);
    assert_eq!(&*at(&t, b"/tmp/mi").source, b"");
    let ab = at(&t, b"/tmp/mi/a b");
    assert_eq!(&*ab.source, b"my src");
    assert!(ab.propagation.unbindable);
    assert_eq!(
        ab.super_flags,
        SuperFlags(SuperFlags::SYNCHRONOUS.0 | SuperFlags::DIRSYNC.0 | SuperFlags::LAZYTIME.0)
    );
    assert_eq!(&*ab.fs_options, b"size=1024k");
    assert_eq!(&*at(&t, b"/tmp/mi/new\nline").source, b"s\nrc");
    assert_eq!(&*at(&t, b"/tmp/mi/back\\slash").source, b"x\\y");
    assert_eq!(&*at(&t, b"/tmp/mi/x\xffy").source, b"dot.src");
    assert_eq!(
        at(&t, b"/tmp/mi/tab\tx").flags,
        MountFlags(0xff & !MountFlags::RDONLY.0 & !MountFlags::RELATIME.0)
    );
    let dst = at(&t, b"/tmp/mi/dst");
    assert_eq!(
        (dst.propagation.shared, dst.propagation.master),
        (Some(2), Some(1))
    );
    assert_eq!(&*at(&t, b"/tmp/mi/comma,eq=").root, b"/sub");
    assert!(
        at(&t, b"/tmp/mi/ov")
            .fs_options
            .starts_with(b"lowerdir=/tmp/mi/l\\,x:/tmp/mi/l y,")
    );
    assert_eq!(&*at(&t, b"/tmp/mi/dd").root, b"/d/sub//deleted");
}

#[test]
fn parses_the_hostile_fixture() {
    let (text, t) = parse_fixture("mountinfo-hostile.txt");
    assert_eq!(text.last(), Some(&b','));
    assert_eq!(t.len(), 14);
    assert_eq!(t[1].old_id, u32::MAX);
    let long = &t[2];
    assert!(long.mount_point.len() > 4000);
    assert!(long.mount_point.starts_with(b"/very long\tpath/"));
    assert_eq!(&*t[3].root, b"/\xff\xfe\x01\r");
    assert_eq!(&*t[3].mount_point, b"/raw\xff\x80\x7f\x1b[31mred");
    assert_eq!(t[4].propagation.shared, Some(1));
    assert_eq!(t[4].propagation.master, Some(2));
    assert!(t[4].propagation.unbindable);
    assert_eq!(t[4].flags, MountFlags::RELATIME);
    assert_eq!((&*t[5].root, &*t[5].source), (&b""[..], &b""[..]));
    assert_eq!(
        (&*t[6].mount_point, &*t[6].fstype, &*t[6].source),
        (&b"-"[..], &b"-"[..], &b"-"[..])
    );
    assert_eq!(&*t[7].mount_point, b"shared:1");
    assert!(t[7].propagation.is_private());
    let stray = &t[8];
    assert_eq!(&*stray.mount_point, b"/stray\\x\\400\\09\\");
    assert_eq!(
        (&*stray.fstype, stray.subtype.as_deref()),
        (&b"fuse"[..], Some(&b"a.b c"[..]))
    );
    assert_eq!(&*stray.source, b"src\\");
    assert_eq!(t[9].flags, MountFlags(0x1ff));
    assert_eq!(t[9].super_flags, SuperFlags(0x1f));
    assert_eq!(&*t[9].fs_options, b"foo=bar,sync");
    assert_eq!(&*t[10].source, b"user@host:/home/a b");
    assert_eq!(&*t[11].fs_options, b"lowerdir=/l\\,x:/l y,,trailing=");
    assert_eq!(t[12].subtype.as_deref(), Some(&b""[..]));
    assert_eq!(&*t[13].mount_point, b"/nl\nin\npath");
    assert!(t[13].fs_options.is_empty());
    assert_eq!(parse(&render(&t)).unwrap(), t);
}

#[test]
fn mountinfo_file_rereads_from_the_start() {
    let path = fixture("mountinfo-vm-escapes.txt");
    let text = std::fs::read(&path).unwrap();
    let mut f = MountinfoFile::open(&path).unwrap();
    assert!(f.last_bytes().is_empty());
    let first = f.read().unwrap();
    assert_eq!(f.last_bytes(), &text[..]);
    assert_eq!(f.read().unwrap(), first);
    assert_eq!(first, parse(&text).unwrap());
}

#[test]
fn mountinfo_file_grows_past_its_first_buffer() {
    let mut text = Vec::new();
    for i in 0..3000u32 {
        writeln!(
            text,
            "{} 1 0:{i} / /mnt/a\\040rather\\040long\\040name/number/{i} rw,relatime shared:{i} - tmpfs tmpfs rw,size=1024k",
            i + 2
        )
        .unwrap();
    }
    assert!(text.len() > 256 * 1024);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mountinfo");
    File::create(&path).unwrap().write_all(&text).unwrap();
    let mut f = MountinfoFile::open(&path).unwrap();
    let t = f.read().unwrap();
    assert_eq!(t.len(), 3000);
    assert_eq!(f.last_bytes(), &text[..]);
    // A shorter file read again: only the new bytes count.
    File::create(&path)
        .unwrap()
        .write_all(&text[..100])
        .unwrap();
    f.read_bytes().unwrap();
    assert_eq!(f.last_bytes(), &text[..100]);
}

#[test]
fn mountinfo_file_reports_what_failed() {
    let e = MountinfoFile::open("/nonexistent/mountinfo".as_ref()).unwrap_err();
    assert!(matches!(
        e,
        weir_mounts::Error::Io {
            what: "opening mountinfo",
            ..
        }
    ));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mountinfo");
    std::fs::write(&path, b"1 1 0:1 / / rw - t s rw\n2 1 0:1 / / rw - t s\n").unwrap();
    let e = MountinfoFile::open(&path).unwrap().read().unwrap_err();
    assert_eq!(e.to_string(), "mountinfo: line 2: missing super options");
}

#[test]
fn reads_this_process_mountinfo() {
    let mut f = MountinfoFile::open_self().unwrap();
    let t = f.read().unwrap();
    assert!(t.iter().any(|m| &*m.mount_point == b"/"));
    // Every line parsed, and the fd is usable for polling.
    assert_eq!(
        t.len(),
        f.last_bytes().iter().filter(|&&b| b == b'\n').count()
    );
    let fd = f.as_fd().try_clone_to_owned().unwrap();
    assert!(File::from(fd).metadata().unwrap().is_file());
    let again = f.read().unwrap();
    assert!(again.iter().any(|m| &*m.mount_point == b"/"));
}
