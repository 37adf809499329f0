//! The uevent parser on both wire formats: real-shaped messages, every
//! refusal, the sender rule, and properties (no panic on any bytes; render
//! then parse gives the event back).

use proptest::prelude::*;
use weir_devices::uevent::{
    Action, MAX_MESSAGE, MAX_PROPERTIES, Source, Uevent, UeventError, parse, parse_received,
    render, render_libudev,
};
use weir_sys::uevent::{Creds, Message};

/// A kernel message as `losetup` makes the kernel send it.
const LOOP_CHANGE: &[u8] = b"change@/devices/virtual/block/loop3\0\
ACTION=change\0DEVPATH=/devices/virtual/block/loop3\0SUBSYSTEM=block\0\
MAJOR=7\0MINOR=3\0DEVNAME=loop3\0DEVTYPE=disk\0DISKSEQ=52\0SEQNUM=4711\0";

/// The libudev header before `props`, as udevd sends it.
fn udev_msg(props: &[u8]) -> Vec<u8> {
    let mut m = b"libudev\0".to_vec();
    m.extend_from_slice(&0xfeed_cafe_u32.to_be_bytes());
    m.extend_from_slice(&40u32.to_ne_bytes());
    m.extend_from_slice(&40u32.to_ne_bytes());
    m.extend_from_slice(&(props.len() as u32).to_ne_bytes());
    m.extend_from_slice(&[0xab; 16]); // filter hashes: not checked
    m.extend_from_slice(props);
    m
}

const UDEV_PROPS: &[u8] = b"ACTION=add\0DEVPATH=/devices/pci0000:00/0000:00:04.0/virtio1/block/vda/vda1\0\
SUBSYSTEM=block\0DEVNAME=/dev/vda1\0DEVTYPE=partition\0PARTN=1\0SEQNUM=900\0MAJOR=253\0MINOR=1\0\
USEC_INITIALIZED=12345\0DEVLINKS=/dev/disk/by-path/virtio-pci-0000:00:04.0-part1 /dev/disk/by-uuid/x\0";

#[test]
fn kernel_message() {
    let ev = parse(LOOP_CHANGE).unwrap();
    assert_eq!(ev.source, Source::Kernel);
    assert_eq!(ev.action, Action::Change);
    assert_eq!(ev.devpath, "/devices/virtual/block/loop3");
    assert_eq!(ev.subsystem, "block");
    assert!(ev.is_block());
    assert_eq!(ev.name(), "loop3");
    assert_eq!(ev.devtype.as_deref(), Some("disk"));
    assert_eq!(ev.devname.as_deref(), Some("loop3"));
    assert_eq!((ev.major, ev.minor), (Some(7), Some(3)));
    assert_eq!(ev.seqnum, Some(4711));
    assert_eq!(ev.diskseq, Some(52));
    assert_eq!(ev.props.len(), 9);
    assert_eq!(ev.get("DISKSEQ"), Some(&b"52"[..]));
    assert_eq!(ev.get("NOPE"), None);
    assert_eq!(render(&ev), LOOP_CHANGE);
}

#[test]
fn udev_message() {
    let msg = udev_msg(UDEV_PROPS);
    let ev = parse(&msg).unwrap();
    assert_eq!(ev.source, Source::Udev);
    assert_eq!(ev.action, Action::Add);
    assert_eq!(ev.name(), "vda1");
    assert_eq!(ev.devname.as_deref(), Some("/dev/vda1"));
    assert_eq!(ev.devtype.as_deref(), Some("partition"));
    assert_eq!((ev.major, ev.minor), (Some(253), Some(1)));
    assert_eq!(ev.diskseq, None);
    assert_eq!(ev.get("PARTN"), Some(&b"1"[..]));
    // Rendered back as udev sends it (hashes zeroed), it parses the same.
    assert_eq!(parse(&render_libudev(&ev)).unwrap(), ev);
    // Rendered in the kernel format, only the source changes.
    let k = parse(&render(&ev)).unwrap();
    assert_eq!(k.source, Source::Kernel);
    assert_eq!(
        Uevent {
            source: Source::Udev,
            ..k
        },
        ev
    );
}

#[test]
fn udev_header_may_be_longer_and_properties_later() {
    // A newer udevd with a longer header: the properties start after it.
    let mut m = udev_msg(b"");
    m[12..16].copy_from_slice(&48u32.to_ne_bytes());
    m[16..20].copy_from_slice(&48u32.to_ne_bytes());
    m[20..24].copy_from_slice(&(UDEV_PROPS.len() as u32).to_ne_bytes());
    m.extend_from_slice(&[0; 8]);
    m.extend_from_slice(UDEV_PROPS);
    assert_eq!(parse(&m).unwrap().action, Action::Add);
}

#[test]
fn actions() {
    for (word, action) in [
        ("add", Action::Add),
        ("remove", Action::Remove),
        ("move", Action::Move),
        ("online", Action::Online),
        ("offline", Action::Offline),
        ("bind", Action::Bind),
        ("unbind", Action::Unbind),
        ("frobnicate", Action::Unknown("frobnicate".into())),
    ] {
        let msg =
            format!("{word}@/devices/x\0ACTION={word}\0DEVPATH=/devices/x\0SUBSYSTEM=block\0");
        let ev = parse(msg.as_bytes()).unwrap();
        assert_eq!(ev.action, action);
        assert_eq!(ev.action.as_str(), word);
        assert!(ev.is_block());
    }
    let net = parse(b"add@/devices/n\0ACTION=add\0DEVPATH=/devices/n\0SUBSYSTEM=net\0").unwrap();
    assert!(!net.is_block());
}

fn err(msg: &[u8]) -> UeventError {
    parse(msg).expect_err("must be refused")
}

#[test]
fn kernel_refusals() {
    use UeventError::*;
    assert_eq!(err(b""), Empty);
    assert_eq!(err(b"add@/d"), BadHeader, "no NUL after the header");
    assert_eq!(err(b"add/d\0ACTION=add\0"), BadHeader);
    assert_eq!(err(b"@/d\0ACTION=add\0"), BadHeader);
    assert_eq!(err(b"add@d\0ACTION=add\0"), BadHeader);
    let ok = b"add@/d\0ACTION=add\0DEVPATH=/d\0SUBSYSTEM=block\0";
    assert!(parse(ok).is_ok());
    assert_eq!(
        err(b"add@/d\0ACTION=remove\0DEVPATH=/d\0SUBSYSTEM=block\0"),
        HeaderMismatch
    );
    assert_eq!(
        err(b"add@/d\0ACTION=add\0DEVPATH=/e\0SUBSYSTEM=block\0"),
        HeaderMismatch
    );
    assert_eq!(
        err(b"add@/d\0ACTION=add\0DEVPATH=/d\0SUBSYSTEM=block"),
        Unterminated
    );
    assert_eq!(
        err(b"add@/d\0ACTION=add\0\0DEVPATH=/d\0SUBSYSTEM=block\0"),
        EmptyProperty { index: 1 }
    );
    assert_eq!(err(b"add@/d\0ACTION=add\0DEVPATH\0"), NoEquals { index: 1 });
    assert_eq!(err(b"add@/d\0=x\0"), BadKey { index: 0 });
    assert_eq!(err(b"add@/d\0AC\xffTION=add\0"), BadKey { index: 0 });
    assert_eq!(
        err(b"add@/d\0ACTION=add\0DEVPATH=/d\0SUBSYSTEM=block\0ACTION=add\0"),
        DuplicateKey {
            key: "ACTION".into()
        }
    );
    assert_eq!(
        err(b"add@/d\0DEVPATH=/d\0SUBSYSTEM=block\0"),
        MissingKey { key: "ACTION" }
    );
    assert_eq!(
        err(b"add@/d\0ACTION=add\0SUBSYSTEM=block\0"),
        MissingKey { key: "DEVPATH" }
    );
    assert_eq!(
        err(b"add@/d\0ACTION=add\0DEVPATH=/d\0"),
        MissingKey { key: "SUBSYSTEM" }
    );
    assert_eq!(
        err(b"add@/d\0ACTION=add\0DEVPATH=/d\0SUBSYSTEM=\xff\0"),
        BadText { key: "SUBSYSTEM" }
    );
    assert_eq!(
        err(b"add@/d\0ACTION=\0DEVPATH=/d\0SUBSYSTEM=block\0"),
        BadText { key: "ACTION" }
    );
}

#[test]
fn numbers_must_be_plain_decimal_in_range() {
    let with = |extra: &str| {
        let m = format!("add@/d\0ACTION=add\0DEVPATH=/d\0SUBSYSTEM=block\0{extra}\0");
        parse(m.as_bytes())
    };
    assert_eq!(with("MAJOR=4294967295").unwrap().major, Some(u32::MAX));
    assert_eq!(
        with("SEQNUM=18446744073709551615").unwrap().seqnum,
        Some(u64::MAX)
    );
    for (bad, key) in [
        ("MAJOR=4294967296", "MAJOR"),
        ("MINOR=-1", "MINOR"),
        ("MINOR=+1", "MINOR"),
        ("SEQNUM=", "SEQNUM"),
        ("SEQNUM=18446744073709551616", "SEQNUM"),
        ("DISKSEQ=0x10", "DISKSEQ"),
        ("DISKSEQ= 1", "DISKSEQ"),
    ] {
        assert_eq!(
            with(bad).unwrap_err(),
            UeventError::BadNumber { key },
            "{bad}"
        );
    }
}

#[test]
fn udev_refusals() {
    use UeventError::*;
    assert!(matches!(err(b"libudev\0short"), BadUdevHeader { .. }));
    let mut m = udev_msg(UDEV_PROPS);
    m[8] ^= 1;
    assert_eq!(
        err(&m),
        BadMagic {
            magic: 0xfeed_cafe ^ 0x0100_0000
        }
    );

    let patched = |at: usize, v: u32| {
        let mut m = udev_msg(UDEV_PROPS);
        m[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        parse(&m)
    };
    // header_size below the known header, properties inside the header,
    // past the end, or with an offset + length that overflows.
    assert!(matches!(patched(12, 39), Err(BadUdevHeader { .. })));
    assert!(matches!(patched(16, 8), Err(BadUdevHeader { .. })));
    assert!(matches!(patched(16, 41), Err(BadUdevHeader { .. })));
    assert!(matches!(patched(20, u32::MAX), Err(BadUdevHeader { .. })));
    assert!(matches!(patched(16, u32::MAX), Err(BadUdevHeader { .. })));
    // A shorter length cuts the block mid-property.
    assert_eq!(patched(20, 5).unwrap_err(), Unterminated);
    // An empty block has no ACTION.
    assert_eq!(patched(20, 0).unwrap_err(), MissingKey { key: "ACTION" });
}

#[test]
fn size_limits() {
    let mut big = b"add@/d\0ACTION=add\0DEVPATH=/d\0SUBSYSTEM=block\0X=".to_vec();
    big.resize(MAX_MESSAGE + 1, b'x');
    big.push(0);
    assert_eq!(
        err(&big),
        UeventError::TooLong {
            len: MAX_MESSAGE + 2
        }
    );

    let mut many = b"add@/d\0ACTION=add\0DEVPATH=/d\0SUBSYSTEM=block\0".to_vec();
    for i in 0..MAX_PROPERTIES {
        many.extend_from_slice(format!("K{i}=v\0").as_bytes());
    }
    assert_eq!(err(&many), UeventError::TooManyProperties);
}

fn received(port_id: u32, uid: Option<u32>, truncated: bool) -> Message {
    Message {
        len: 0,
        truncated,
        port_id,
        group: Some(1),
        creds: uid.map(|uid| Creds {
            pid: 0,
            uid,
            gid: 0,
        }),
    }
}

#[test]
fn sender_rule() {
    let udev = udev_msg(UDEV_PROPS);
    assert!(parse_received(&received(0, Some(0), false), LOOP_CHANGE).is_ok());
    // A kernel-format message from a process's port is forged.
    assert_eq!(
        parse_received(&received(1234, Some(0), false), LOOP_CHANGE),
        Err(UeventError::UntrustedSender {
            port_id: 1234,
            uid: Some(0)
        })
    );
    assert!(parse_received(&received(777, Some(0), false), &udev).is_ok());
    assert_eq!(
        parse_received(&received(777, Some(1000), false), &udev),
        Err(UeventError::UntrustedSender {
            port_id: 777,
            uid: Some(1000)
        })
    );
    assert_eq!(
        parse_received(&received(777, None, false), &udev),
        Err(UeventError::UntrustedSender {
            port_id: 777,
            uid: None
        })
    );
    assert_eq!(
        parse_received(&received(0, Some(0), true), LOOP_CHANGE),
        Err(UeventError::Truncated)
    );
}

/// A valid event: the required keys, some typed optional ones and free
/// properties (keys without `=`/NUL, values without NUL, unique keys).
fn arb_event() -> impl Strategy<Value = Uevent> {
    let word = "[a-z]{1,10}";
    let devpath = "(/[a-zA-Z0-9:._@-]{1,12}){1,5}";
    let extra = prop::collection::btree_map(
        "[A-Z_][A-Z0-9_]{0,12}",
        prop::collection::vec(1u8..=255, 0..40),
        0..12,
    );
    (
        word,
        devpath,
        "[a-z]{1,8}",
        prop::option::of(any::<u32>()),
        prop::option::of(any::<u64>()),
        extra,
    )
        .prop_map(|(action, devpath, subsystem, major, seqnum, extra)| {
            let mut props = vec![
                ("ACTION".to_owned(), action.clone().into_bytes()),
                ("DEVPATH".to_owned(), devpath.clone().into_bytes()),
                ("SUBSYSTEM".to_owned(), subsystem.clone().into_bytes()),
            ];
            if let Some(m) = major {
                props.push(("MAJOR".into(), m.to_string().into_bytes()));
            }
            if let Some(s) = seqnum {
                props.push(("SEQNUM".into(), s.to_string().into_bytes()));
            }
            let typed = [
                "ACTION",
                "DEVPATH",
                "SUBSYSTEM",
                "MAJOR",
                "MINOR",
                "SEQNUM",
                "DISKSEQ",
                "DEVNAME",
                "DEVTYPE",
            ];
            props.extend(
                extra
                    .into_iter()
                    .filter(|(k, _)| !typed.contains(&k.as_str())),
            );
            Uevent {
                source: Source::Kernel,
                action: Action::from_word(&action),
                devpath,
                subsystem,
                devtype: None,
                devname: None,
                major,
                minor: None,
                seqnum,
                diskseq: None,
                props,
            }
        })
}

proptest! {
    #[test]
    fn any_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse(&bytes);
        let mut udev = b"libudev\0".to_vec();
        udev.extend_from_slice(&bytes);
        let _ = parse(&udev);
    }

    #[test]
    fn kernel_round_trip(ev in arb_event()) {
        let bytes = render(&ev);
        prop_assert_eq!(parse(&bytes).unwrap(), ev.clone());
        let udev = Uevent { source: Source::Udev, ..ev };
        prop_assert_eq!(parse(&render_libudev(&udev)).unwrap(), udev);
    }

    #[test]
    fn damaged_messages_never_panic(ev in arb_event(), cut in any::<prop::sample::Index>(), flip in any::<prop::sample::Index>(), bit in 0u8..8) {
        for mut bytes in [render(&ev), render_libudev(&ev)] {
            let i = flip.index(bytes.len());
            bytes[i] ^= 1 << bit;
            let _ = parse(&bytes);
            bytes.truncate(cut.index(bytes.len()));
            // A cut message may still parse (at a property boundary), but
            // then it renders back to exactly what was parsed.
            if let Ok(again) = parse(&bytes) && again.source == Source::Kernel {
                prop_assert_eq!(render(&again), bytes);
            }
        }
    }
}
