//! Kernel uevents: the typed [`Uevent`], parsed from either wire format.
//!
//! The kernel multicasts `ACTION@DEVPATH\0KEY=VALUE\0…`; udevd re-sends the
//! event after its rules with a binary `libudev\0` header (systemd's
//! `struct monitor_netlink_header`) and its own properties. Both are
//! hostile input: [`parse`] checks every offset and length, bounds the
//! message and its property count, and refuses ambiguity (duplicate keys,
//! a header that disagrees with `ACTION=`/`DEVPATH=`).
//!
//! [`parse_received`] adds the sender rule the socket layer only reports:
//! kernel-format messages must come from the kernel (port 0), udev's from
//! uid 0.

mod error;
mod parse;
mod render;

use weir_sys::uevent::Message;

pub use error::UeventError;
pub use parse::parse;
pub use render::{render, render_libudev};

/// The longest message accepted. The kernel's are under 2 KiB, udevd's
/// under 8 KiB; more is not a uevent.
pub const MAX_MESSAGE: usize = 64 * 1024;
/// The most properties accepted (the kernel sends at most 64; udev adds its
/// `ID_*`, `DEVLINKS`, `TAGS`...).
pub const MAX_PROPERTIES: usize = 1024;

/// Which wire format a uevent came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// The kernel's own message (`ACTION@DEVPATH` header).
    Kernel,
    /// udevd's re-sent message (`libudev` header).
    Udev,
}

/// What happened to the device.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `add`.
    Add,
    /// `remove`.
    Remove,
    /// `change` (media change, resize, loop attach/detach, a `DISK_RO`...).
    Change,
    /// `move` (renamed or reparented).
    Move,
    /// `online`.
    Online,
    /// `offline`.
    Offline,
    /// `bind` (a driver attached).
    Bind,
    /// `unbind`.
    Unbind,
    /// An action word this parser does not know (a newer kernel), kept as sent.
    Unknown(String),
}

impl Action {
    /// The action word as the kernel spells it.
    pub fn as_str(&self) -> &str {
        match self {
            Action::Add => "add",
            Action::Remove => "remove",
            Action::Change => "change",
            Action::Move => "move",
            Action::Online => "online",
            Action::Offline => "offline",
            Action::Bind => "bind",
            Action::Unbind => "unbind",
            Action::Unknown(s) => s,
        }
    }

    /// The action for a word; unknown words become [`Action::Unknown`].
    pub fn from_word(word: &str) -> Action {
        match word {
            "add" => Action::Add,
            "remove" => Action::Remove,
            "change" => Action::Change,
            "move" => Action::Move,
            "online" => Action::Online,
            "offline" => Action::Offline,
            "bind" => Action::Bind,
            "unbind" => Action::Unbind,
            other => Action::Unknown(other.to_owned()),
        }
    }
}

/// One uevent. The typed fields are read from `props`, which holds every
/// property in the order sent (including `ACTION`, `DEVPATH`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uevent {
    /// The wire format it came in.
    pub source: Source,
    /// `ACTION`.
    pub action: Action,
    /// `DEVPATH`: the device's path under /sys (`/devices/.../block/sda`).
    pub devpath: String,
    /// `SUBSYSTEM` (`block`, `net`, ...).
    pub subsystem: String,
    /// `DEVTYPE` (`disk`, `partition`), if sent.
    pub devtype: Option<String>,
    /// `DEVNAME`: the node's path relative to /dev (`sda`, `mapper/x`).
    pub devname: Option<String>,
    /// `MAJOR`.
    pub major: Option<u32>,
    /// `MINOR`.
    pub minor: Option<u32>,
    /// `SEQNUM`: the kernel's event counter.
    pub seqnum: Option<u64>,
    /// `DISKSEQ`: the disk's sequence number (5.15+), new for each media.
    pub diskseq: Option<u64>,
    /// Every property, keys UTF-8, values as sent.
    pub props: Vec<(String, Vec<u8>)>,
}

impl Uevent {
    /// The value of property `key`.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.props
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }

    /// Whether this is a block device's event (`SUBSYSTEM=block`).
    pub fn is_block(&self) -> bool {
        self.subsystem == "block"
    }

    /// The device's name: the last component of `DEVPATH` (`sda1`), which
    /// is its entry in /sys/class/block.
    pub fn name(&self) -> &str {
        self.devpath.rsplit('/').next().unwrap_or(&self.devpath)
    }
}

/// Parses a message read from a [`weir_sys::uevent::UeventSocket`] and
/// applies the sender rule: a kernel-format message must come from the
/// kernel (port 0), a udev one from uid 0. Anyone can open a uevent socket
/// and unicast to ours, so anything else is [`UeventError::UntrustedSender`].
/// A truncated message is [`UeventError::Truncated`].
pub fn parse_received(msg: &Message, bytes: &[u8]) -> Result<Uevent, UeventError> {
    if msg.truncated {
        return Err(UeventError::Truncated);
    }
    let ev = parse(bytes)?;
    let trusted = match ev.source {
        Source::Kernel => msg.port_id == 0,
        Source::Udev => msg.uid() == Some(0),
    };
    if !trusted {
        return Err(UeventError::UntrustedSender {
            port_id: msg.port_id,
            uid: msg.uid(),
        });
    }
    Ok(ev)
}
