//! Tests of the mountinfo parser and writer, on lines this kernel wrote
//! and on hostile ones.

use proptest::prelude::*;

use super::*;
use crate::model::{Mount, MountFlags, Propagation, SuperFlags};

fn one(line: &[u8]) -> Mount {
    match parse_line(line) {
        Ok(m) => m,
        Err(e) => panic!("{e}: {}", String::from_utf8_lossy(line)),
    }
}

fn kind(text: &[u8]) -> ParseErrorKind {
    parse(text).expect_err("should not parse").kind().clone()
}

#[test]
fn parses_a_real_root_line() {
    let m = one(
        b"27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534",
    );
    assert_eq!(
        (m.id, m.parent_id, m.old_id, m.old_parent_id),
        (27, 1, 27, 1)
    );
    assert_eq!((m.major, m.minor), (254, 0));
    assert_eq!(&*m.root, b"/");
    assert_eq!(&*m.mount_point, b"/");
    assert_eq!(m.flags, MountFlags::RELATIME);
    assert_eq!(&*m.fstype, b"ext4");
    assert_eq!(m.subtype, None);
    assert_eq!(&*m.source, b"/dev/vda");
    assert_eq!(m.super_flags, SuperFlags::default());
    assert_eq!(
        &*m.fs_options,
        b"discard,resv_strict,resuid=65534,resgid=65534"
    );
    assert!(m.propagation.is_private());
}

#[test]
fn parses_the_man_page_example() {
    let m = one(b"36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue");
    assert_eq!(&*m.root, b"/mnt1");
    assert_eq!(&*m.mount_point, b"/mnt2");
    assert_eq!(m.flags, MountFlags::NOATIME);
    assert_eq!(m.propagation.master, Some(1));
    assert_eq!(&*m.fs_options, b"errors=continue");
}

#[test]
fn parses_a_real_table() {
    // /proc/self/mountinfo of the test VM (kernel 6.18), abridged.
    let text = b"22 27 0:21 / /proc rw,relatime - proc proc rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334460k,nr_inodes=3083615,mode=755
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
28 27 0:25 / /mnt/sandboxing/model_tools_env/v1/python ro,nosuid,nodev,relatime - tmpfs model_tools_unavailable ro,size=4k,mode=755
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    let t = parse(text).unwrap();
    assert_eq!(t.len(), 6);
    assert_eq!(
        &*t[1].fs_options,
        b"size=12334460k,nr_inodes=3083615,mode=755"
    );
    let ro = &t[3];
    assert_eq!(
        ro.flags,
        MountFlags(
            MountFlags::RDONLY.0
                | MountFlags::NOSUID.0
                | MountFlags::NODEV.0
                | MountFlags::RELATIME.0
        )
    );
    assert_eq!(ro.super_flags, SuperFlags::RDONLY);
    assert_eq!(&*ro.fs_options, b"size=4k,mode=755");
    assert_eq!(&*t[5].fstype, b"cgroup2");
    assert!(t[5].fs_options.is_empty());
    // Without the last newline, the same table.
    assert_eq!(parse(&text[..text.len() - 1]).unwrap(), t);
}

#[test]
fn decodes_escapes_in_paths_and_source() {
    // Written by this kernel for mounts made on such directories.
    let m = one(br"64 63 0:40 / /tmp/mi/base/a\040b rw,relatime unbindable - tmpfs my\040src rw,sync,dirsync,lazytime,size=1024k");
    assert_eq!(&*m.mount_point, b"/tmp/mi/base/a b");
    assert_eq!(&*m.source, b"my src");
    assert!(m.propagation.unbindable);
    let m = one(br"65 63 0:41 / /tmp/mi/base/new\012line ro,relatime - tmpfs s\012rc ro");
    assert_eq!(&*m.mount_point, b"/tmp/mi/base/new\nline");
    assert_eq!(&*m.source, b"s\nrc");
    let m = one(br"66 63 0:42 / /tmp/mi/base/back\134slash rw,relatime - tmpfs x rw");
    assert_eq!(&*m.mount_point, b"/tmp/mi/base/back\\slash");
    let m = one(br"68 63 0:44 / /tmp/mi/base/tab\011x rw,nosuid - tmpfs t rw");
    assert_eq!(&*m.mount_point, b"/tmp/mi/base/tab\tx");
    // A bind of a deleted directory: its root gets `//deleted`.
    let m = one(b"68 63 0:39 /d/sub//deleted /tmp/mi3/dd rw,relatime - tmpfs t rw");
    assert_eq!(&*m.root, b"/d/sub//deleted");
}

#[test]
fn decodes_escapes_in_fs_options() {
    // overlayfs escapes `,` with seq_show_option; the user's `\,` shows.
    let m = one(br"67 63 0:40 / /tmp/mi3/m rw,relatime - overlay ov rw,lowerdir=/tmp/mi3/l\134\054x:/tmp/mi3/l\040y,upperdir=/tmp/mi3/u,workdir=/tmp/mi3/w,uuid=on");
    assert_eq!(
        &*m.fs_options,
        &b"lowerdir=/tmp/mi3/l\\,x:/tmp/mi3/l y,upperdir=/tmp/mi3/u,workdir=/tmp/mi3/w,uuid=on"[..]
    );
}

#[test]
fn keeps_raw_non_utf8_bytes() {
    // The kernel escapes only four bytes: 0xff is written as it is.
    let m = one(b"67 63 0:43 / /tmp/mi/base/x\xffy rw,relatime - tmpfs dot.src rw");
    assert_eq!(&*m.mount_point, b"/tmp/mi/base/x\xffy");
    // A dot in the source is no subtype.
    assert_eq!(&*m.fstype, b"tmpfs");
    assert_eq!(m.subtype, None);
    assert_eq!(&*m.source, b"dot.src");
}

#[test]
fn reads_propagation() {
    let m = one(b"70 63 0:45 / /tmp/mi/base/dst ro,relatime shared:2 master:1 - tmpfs s rw");
    assert_eq!(
        m.propagation,
        Propagation {
            shared: Some(2),
            master: Some(1),
            propagate_from: None,
            unbindable: false
        }
    );
    assert_eq!(
        m.flags,
        MountFlags(MountFlags::RDONLY.0 | MountFlags::RELATIME.0)
    );
    assert_eq!(m.super_flags, SuperFlags::default());
    // From a chroot that cannot see the master's peers.
    let m = one(b"66 63 0:40 / /C rw,relatime master:2 propagate_from:1 - tmpfs a rw");
    assert_eq!(
        (m.propagation.master, m.propagation.propagate_from),
        (Some(2), Some(1))
    );
    let m = one(b"1 1 0:1 / / rw shared:1 master:2 propagate_from:3 unbindable - t s rw");
    assert_eq!(
        m.propagation,
        Propagation {
            shared: Some(1),
            master: Some(2),
            propagate_from: Some(3),
            unbindable: true
        }
    );
    assert_eq!(
        m.propagation.to_text(),
        "shared:1 master:2 propagate_from:3 unbindable"
    );
}

#[test]
fn skips_unknown_optional_fields_and_options() {
    let m = one(b"1 1 0:1 / / rw,relatime,newflag shared:7 future:9 tag - t s rw");
    assert_eq!(m.propagation.shared, Some(7));
    assert_eq!(m.flags, MountFlags::RELATIME);
    // An empty optional field (two spaces) is an unknown one too.
    let m = one(b"1 1 0:1 / / rw  - t s rw");
    assert!(m.propagation.is_private());
}

#[test]
fn splits_the_subtype() {
    let m = one(b"100 30 0:50 / /mnt/remote rw,nosuid,nodev,relatime shared:200 - fuse.sshfs user@host:/home/user rw,user_id=0,group_id=0");
    assert_eq!(&*m.fstype, b"fuse");
    assert_eq!(m.subtype.as_deref(), Some(&b"sshfs"[..]));
    assert_eq!(m.fstype_full(), b"fuse.sshfs");
    assert_eq!(&*m.source, b"user@host:/home/user");
    let m = one(b"45 25 0:40 / /run/user/1000/gvfs rw,nosuid,nodev,relatime shared:99 - fuse.gvfsd-fuse gvfsd-fuse rw,user_id=1000,group_id=1000");
    assert_eq!(m.subtype.as_deref(), Some(&b"gvfsd-fuse"[..]));
    let m = one(b"50 27 0:60 / /mnt/host rw,relatime - 9p hostshare rw,sync,dirsync,access=client,trans=virtio");
    assert_eq!(&*m.fstype, b"9p");
    assert_eq!(
        m.super_flags,
        SuperFlags(SuperFlags::SYNCHRONOUS.0 | SuperFlags::DIRSYNC.0)
    );
    assert_eq!(&*m.fs_options, b"access=client,trans=virtio");
    // Split at the first dot only.
    let m = one(b"1 1 0:1 / / rw - fuse.a.b s rw");
    assert_eq!(
        (&*m.fstype, m.subtype.as_deref()),
        (&b"fuse"[..], Some(&b"a.b"[..]))
    );
}

#[test]
fn keeps_an_empty_source() {
    // mount(2) with devname "": two spaces in a row, not one field less.
    let m = one(b"63 43 0:39 / /tmp/mi/base rw,relatime - tmpfs  rw,size=1024k,mode=755");
    assert_eq!(&*m.source, b"");
    assert_eq!(&*m.fs_options, b"size=1024k,mode=755");
}

#[test]
fn reads_super_flags() {
    let m = one(b"1 1 0:1 / / ro - t s ro,sync,dirsync,lazytime,foo=bar");
    assert_eq!(
        m.super_flags,
        SuperFlags(
            SuperFlags::RDONLY.0
                | SuperFlags::SYNCHRONOUS.0
                | SuperFlags::DIRSYNC.0
                | SuperFlags::LAZYTIME.0
        )
    );
    assert_eq!(m.flags, MountFlags::RDONLY);
    assert_eq!(&*m.fs_options, b"foo=bar");
    assert_eq!(m.super_options(), b"ro,sync,dirsync,lazytime,foo=bar");
    // Only a leading run is flags: a later `sync` is the filesystem's.
    let m = one(b"1 1 0:1 / / rw - t s rw,mand,x=1,sync");
    assert_eq!(m.super_flags, SuperFlags::MANDLOCK);
    assert_eq!(&*m.fs_options, b"x=1,sync");
    let m = one(b"1 1 0:1 / / rw - t s rw");
    assert_eq!(m.super_flags, SuperFlags::default());
    assert!(m.fs_options.is_empty());
}

#[test]
fn reads_every_mount_flag() {
    let m = one(
        b"1 1 0:1 / / ro,nosuid,nodev,noexec,noatime,nodiratime,relatime,nosymfollow,idmapped - t s rw",
    );
    assert_eq!(m.flags, MountFlags(0x1ff));
    assert_eq!(
        m.flags.to_text(),
        "ro,nosuid,nodev,noexec,noatime,nodiratime,relatime,nosymfollow,idmapped"
    );
}

#[test]
fn parses_a_long_mount_point() {
    // 700 components of `/d ir`: 3500 bytes decoded, 5600 escaped.
    let path = b"/d\\040ir".repeat(700);
    let line = [&b"1 1 0:1 / "[..], &path, b" rw - t s rw"].concat();
    let m = one(&line);
    assert_eq!(m.mount_point.len(), 3500);
    assert_eq!(&*m.mount_point, &b"/d ir".repeat(700)[..]);
    let path = [&b"/"[..], &[b'x'; 5000]].concat();
    let m = one(&[&b"1 1 0:1 / "[..], &path, b" rw - t s rw"].concat());
    assert_eq!(&*m.mount_point, &path[..]);
}

#[test]
fn numbers_up_to_u32() {
    let m = one(b"4294967295 0 4294967295:4294967295 / / rw shared:18446744073709551615 - t s rw");
    assert_eq!((m.id, m.old_id), (u64::from(u32::MAX), u32::MAX));
    assert_eq!((m.major, m.minor), (u32::MAX, u32::MAX));
    assert_eq!(m.propagation.shared, Some(u64::MAX));
}

#[test]
fn rejects_bad_lines() {
    use ParseErrorKind as K;
    assert!(matches!(
        kind(b"36 35 98:0 /mnt1"),
        K::MissingField(Field::MountPoint)
    ));
    assert!(matches!(kind(b"36"), K::MissingField(Field::ParentId)));
    assert!(matches!(kind(b"36 35 98:0 / / rw"), K::NoSeparator));
    assert!(matches!(
        kind(b"36 35 98:0 / / rw shared:1 t s rw"),
        K::NoSeparator
    ));
    assert!(matches!(
        kind(b"36 35 98:0 / / rw -"),
        K::MissingField(Field::FsType)
    ));
    assert!(matches!(
        kind(b"36 35 98:0 / / rw - t"),
        K::MissingField(Field::Source)
    ));
    assert!(matches!(
        kind(b"36 35 98:0 / / rw - t s"),
        K::MissingField(Field::SuperOptions)
    ));
    assert!(matches!(
        kind(b"36 35 98:0 / / rw - t s rw x"),
        K::TooManyFields(_)
    ));
    // A trailing space is an empty extra field.
    assert!(matches!(
        kind(b"36 35 98:0 / / rw - t s rw "),
        K::TooManyFields(_)
    ));
    assert!(matches!(
        kind(b"x 35 98:0 / / rw - t s rw"),
        K::BadNumber {
            field: Field::Id,
            ..
        }
    ));
    assert!(matches!(
        kind(b"36 -1 98:0 / / rw - t s rw"),
        K::BadNumber {
            field: Field::ParentId,
            ..
        }
    ));
    assert!(matches!(
        kind(b"4294967296 1 98:0 / / rw - t s rw"),
        K::BadNumber {
            field: Field::Id,
            ..
        }
    ));
    assert!(matches!(
        kind(b"99999999999999999999999999 1 98:0 / / rw - t s rw"),
        K::BadNumber {
            field: Field::Id,
            ..
        }
    ));
    assert!(matches!(
        kind(b"  98:0 / / rw - t s rw"),
        K::BadNumber {
            field: Field::Id,
            ..
        }
    ));
    for dev in ["98", "98:", ":0", "x:y", "98:0:1", "4294967296:0", "+1:0"] {
        let line = format!("36 35 {dev} / / rw - t s rw");
        assert!(matches!(kind(line.as_bytes()), K::BadDev(_)), "{dev}");
    }
    assert!(matches!(
        kind(b"36 35 98:0 / / shared:1 - t s rw"),
        K::BadOptions {
            field: Field::Options,
            ..
        }
    ));
    assert!(matches!(
        kind(b"36 35 98:0 / / rw - t s sync"),
        K::BadOptions {
            field: Field::SuperOptions,
            ..
        }
    ));
    assert!(matches!(
        kind(b"36 35 98:0 / / rw - t s "),
        K::BadOptions { .. }
    ));
    assert!(matches!(
        kind(b"36 35 98:0 / / rw shared:x - t s rw"),
        K::BadTag(_)
    ));
    assert!(matches!(
        kind(b"36 35 98:0 / / rw master: - t s rw"),
        K::BadTag(_)
    ));
    assert!(matches!(
        kind(b"36 35 98:0 / / rw shared:99999999999999999999 - t s rw"),
        K::BadTag(_)
    ));
}

#[test]
fn rejects_empty_lines_but_not_empty_text() {
    assert_eq!(parse(b"").unwrap(), vec![]);
    let good = b"1 1 0:1 / / rw - t s rw";
    let mut text = good.to_vec();
    text.extend_from_slice(b"\n\n");
    text.extend_from_slice(good);
    let e = parse(&text).unwrap_err();
    assert_eq!((e.line(), e.kind()), (2, &ParseErrorKind::EmptyLine));
    assert_eq!(parse(b"\n").unwrap_err().kind(), &ParseErrorKind::EmptyLine);
    // Two newlines at the end: the last line is empty.
    let e = parse(&[&good[..], b"\n\n"].concat()).unwrap_err();
    assert_eq!((e.line(), e.kind()), (2, &ParseErrorKind::EmptyLine));
}

#[test]
fn error_messages_name_the_line_and_escape_bytes() {
    let text = b"1 1 0:1 / / rw - t s rw\n2 1 0:1 / / rw - t s rw\n3 1 x:y / / rw - t s rw\n";
    assert_eq!(
        parse(text).unwrap_err().to_string(),
        r#"line 3: bad major:minor "x:y""#
    );
    let e = parse(b"1 1 \x1b[31m\xff\"\\ / / rw - t s rw").unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"line 1: bad major:minor "\x1b[31m\xff\"\\""#
    );
    let long = [&b"1 "[..], &[b'9'; 100], b" 0:1 / / rw - t s rw"].concat();
    let e = parse(&long).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("line 1: bad parent id \"{}\"...", "9".repeat(64))
    );
    let e = crate::Error::from(e);
    assert!(e.to_string().starts_with("mountinfo: line 1: "));
}

/// A mountinfo text of `n` mounts like those of a large container host.
fn generated(n: u32) -> Vec<u8> {
    let mut text = Vec::new();
    for i in 0..n {
        let line = format!(
            "{} {} 0:{} / /var/lib/containers/storage/overlay/{:064x}/merged rw,nodev,relatime shared:{} master:{} - overlay overlay rw,lowerdir=/var/lib/containers/storage/overlay/l/ABCDEFGH:/var/lib/containers/storage/overlay/l/IJKLMNOP,upperdir=/u/{i},workdir=/w/{i}\n",
            i + 100,
            if i == 0 { 1 } else { 100 + i / 2 },
            i + 50,
            u64::from(i) * 0x9e37_79b9,
            i + 1,
            i / 3 + 1,
        );
        text.extend_from_slice(line.as_bytes());
    }
    text
}

#[test]
fn parses_ten_thousand_mounts() {
    let text = generated(10_000);
    let t = parse(&text).unwrap();
    assert_eq!(t.len(), 10_000);
    assert_eq!(t[9_999].old_id, 10_099);
    assert_eq!(t[9_999].parent_id, 100 + 9_999 / 2);
    assert_eq!(
        t[42].fs_options.rsplit(|&b| b == b'=').next().unwrap(),
        b"/w/42"
    );
    // Every line was written as the kernel would.
    assert!(render(&t) == text);
}

#[test]
fn renders_as_the_kernel_writes() {
    for line in [
        &br"64 63 0:40 / /tmp/mi/base/a\040b rw,relatime unbindable - tmpfs my\040src rw,sync,dirsync,lazytime,size=1024k"[..],
        br"65 63 0:41 / /tmp/mi/base/new\012line ro,relatime - tmpfs s\012rc ro",
        br"63 43 0:39 / /tmp/mi/base rw,relatime - tmpfs  rw,size=1024k,mode=755",
        br"70 63 0:45 / /tmp/mi/base/dst ro,relatime shared:2 master:1 - tmpfs s rw",
        br"66 63 0:40 / /C rw,relatime master:2 propagate_from:1 - tmpfs a rw",
        br"100 30 0:50 / /mnt/remote rw,nosuid,nodev,relatime shared:200 - fuse.sshfs user@host:/home/user rw,user_id=0,group_id=0",
        b"67 63 0:43 / /tmp/mi/base/x\xffy rw,relatime - tmpfs dot.src rw",
    ] {
        assert_eq!(
            render_line(&one(line)),
            [line, b"\n"].concat(),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn renders_ambiguous_mounts_readably() {
    let mut m = one(b"1 1 0:1 / / rw - t s rw");
    m.fs_options = b"sync,x".to_vec().into();
    m.fstype = b"a.b".to_vec().into();
    let line = render_line(&m);
    assert_eq!(line, b"1 1 0:1 / / rw - a\\056b s rw,\\163ync,x\n");
    assert_eq!(parse(&line).unwrap(), vec![m]);
}

fn bytes() -> impl Strategy<Value = Box<[u8]>> {
    proptest::collection::vec(
        prop_oneof![
            4 => b'a'..=b'z',
            1 => prop::sample::select(&b" \t\n\\.,=:-/\xff\x00"[..]),
            1 => any::<u8>(),
        ],
        0..24,
    )
    .prop_map(Vec::into_boxed_slice)
}

fn group() -> impl Strategy<Value = Option<u64>> {
    prop::option::of(any::<u64>())
}

prop_compose! {
    fn mount()(
        id in any::<u32>(),
        parent in any::<u32>(),
        major in any::<u32>(),
        minor in any::<u32>(),
        root in bytes(),
        mount_point in bytes(),
        fstype in bytes(),
        subtype in prop::option::of(bytes()),
        source in bytes(),
        flags in 0u32..0x200,
        super_flags in 0u32..0x20,
        fs_options in bytes(),
        shared in group(),
        master in group(),
        propagate_from in group(),
        unbindable in any::<bool>(),
    ) -> Mount {
        Mount {
            id: id.into(),
            parent_id: parent.into(),
            old_id: id,
            old_parent_id: parent,
            major,
            minor,
            root,
            mount_point,
            fstype,
            subtype,
            source,
            flags: MountFlags(flags),
            super_flags: SuperFlags(super_flags),
            fs_options,
            propagation: Propagation { shared, master, propagate_from, unbindable },
        }
    }
}

proptest! {
    #[test]
    fn render_then_parse_is_identity(table in proptest::collection::vec(mount(), 0..8)) {
        let text = render(&table);
        prop_assert_eq!(parse(&text), Ok(table));
    }

    #[test]
    fn arbitrary_bytes_never_panic(text in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse(&text);
    }

    #[test]
    fn mangled_lines_never_panic(
        m in mount(),
        cut in any::<prop::sample::Index>(),
        byte in prop::sample::select(&b" \n-:,\\0x"[..]),
        insert in any::<bool>(),
    ) {
        // Near-valid lines reach deeper into the parser than random bytes.
        let mut line = render_line(&m);
        let i = cut.index(line.len());
        if insert { line.insert(i, byte) } else { line[i] = byte }
        if let Ok(t) = parse(&line) {
            prop_assert_eq!(parse(&render(&t)), Ok(t));
        }
    }
}
