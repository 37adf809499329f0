//! [`UeventError`]: why a netlink message is not a uevent weir accepts.

/// Why a message was refused. Every check of [`parse`](super::parse) and
/// [`parse_received`](super::parse_received) has its own variant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UeventError {
    /// The message is empty.
    #[error("empty uevent")]
    Empty,
    /// Longer than [`MAX_MESSAGE`](super::MAX_MESSAGE).
    #[error("uevent of {len} bytes is too long")]
    TooLong {
        /// Its length.
        len: usize,
    },
    /// The socket cut the message to fit the buffer.
    #[error("uevent truncated by the receive buffer")]
    Truncated,
    /// A kernel message whose first field is not `ACTION@/DEVPATH`.
    #[error("kernel uevent without an ACTION@DEVPATH header")]
    BadHeader,
    /// The kernel header names another action or devpath than the
    /// `ACTION=` and `DEVPATH=` properties.
    #[error("kernel uevent header disagrees with ACTION/DEVPATH")]
    HeaderMismatch,
    /// A `libudev` message without udev's magic (0xfeedcafe, big endian).
    #[error("libudev uevent with bad magic {magic:#010x}")]
    BadMagic {
        /// The magic found, read big endian.
        magic: u32,
    },
    /// A `libudev` header whose sizes or offsets fall outside the message.
    #[error("libudev header: {what}")]
    BadUdevHeader {
        /// Which check failed.
        what: &'static str,
    },
    /// The last property is not ended by a NUL.
    #[error("uevent properties not NUL-terminated")]
    Unterminated,
    /// An empty property (two NULs in a row).
    #[error("empty uevent property #{index}")]
    EmptyProperty {
        /// Its position among the properties.
        index: usize,
    },
    /// A property without `=`.
    #[error("uevent property #{index} has no '='")]
    NoEquals {
        /// Its position among the properties.
        index: usize,
    },
    /// A property whose key is empty or not UTF-8.
    #[error("uevent property #{index} has an empty or non-UTF-8 key")]
    BadKey {
        /// Its position among the properties.
        index: usize,
    },
    /// The same key twice: which one counts would be a guess.
    #[error("uevent property {key} appears twice")]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// More than [`MAX_PROPERTIES`](super::MAX_PROPERTIES) properties.
    #[error("too many uevent properties")]
    TooManyProperties,
    /// A property every uevent has (`ACTION`, `DEVPATH`, `SUBSYSTEM`) is
    /// missing.
    #[error("uevent without {key}")]
    MissingKey {
        /// The key.
        key: &'static str,
    },
    /// A property weir reads as text (`ACTION`, `DEVPATH`, `DEVNAME`, ...)
    /// is empty or not UTF-8, or `DEVPATH` does not start with `/`.
    #[error("uevent {key} is not valid text")]
    BadText {
        /// The key.
        key: &'static str,
    },
    /// A numeric property (`MAJOR`, `MINOR`, `SEQNUM`, `DISKSEQ`) is not a
    /// decimal number in range.
    #[error("uevent {key} is not a number")]
    BadNumber {
        /// The key.
        key: &'static str,
    },
    /// The sender is not who may send this kind of message: a kernel-format
    /// message not from port 0, or a udev message not from uid 0.
    #[error("uevent from untrusted sender (port {port_id}, uid {uid:?})")]
    UntrustedSender {
        /// The sender's netlink port id.
        port_id: u32,
        /// The sender's uid, if credentials came with it.
        uid: Option<u32>,
    },
}
